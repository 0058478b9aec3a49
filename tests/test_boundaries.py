"""Boundary conditions: each fills ghost cells and does what its name says."""

import numpy as np
import pytest

import swe

CHANNEL = swe.Grid(nx=100, ny=1, x=(0.0, 1000.0))
XC = np.asarray(CHANNEL.xc)


def test_wall_reflects_and_outflow_lets_a_wave_leave():
    eta0 = 0.2 * np.exp(-((XC - 500.0) / 50.0) ** 2)
    results = {}
    for name, east in (("wall", swe.Wall()), ("outflow", swe.Outflow())):
        model = swe.ShallowWater(CHANNEL, bed=-10.0, boundaries=swe.Boundaries(
            west=swe.Outflow(), east=east))
        s0 = swe.State.from_surface(model, eta=eta0[None, :])
        results[name] = swe.simulate(model, s0, t_end=90.0, save_at=[0.0, 90.0])
    # c = 9.9 m/s: by t = 90 s both halves of the hump have left through open ends...
    eta_out = np.asarray(results["outflow"].final.h) - 10.0
    assert np.abs(eta_out).max() < 0.02 * 0.1
    # ...while a wall sends the east-going half back into the channel.
    eta_wall = np.asarray(results["wall"].final.h) - 10.0
    assert eta_wall.max() > 0.05


def test_inflow_adds_its_discharge():
    width = CHANNEL.y[1] - CHANNEL.y[0]
    for q in (0.5, lambda t: 0.05 * t):
        model = swe.ShallowWater(CHANNEL, boundaries=swe.Boundaries(west=swe.Inflow(q)))
        s0 = swe.State(h=np.ones((1, 100)), hu=0.0, hv=0.0)
        r = swe.simulate(model, s0, t_end=20.0, save_at=[0.0, 20.0])
        added = float(r.mass()[-1] - r.mass()[0])
        expected = width * (0.5 * 20.0 if not callable(q) else 0.05 * 20.0**2 / 2)
        assert abs(added - expected) / expected < 1e-12  # the face flux is imposed


def test_inflow_wets_a_dry_channel():
    model = swe.ShallowWater(CHANNEL, bed=0.001 * (1000.0 - XC)[None, :],
                             boundaries=swe.Boundaries(west=swe.Inflow(1.0)))
    s0 = swe.State(h=np.zeros((1, 100)), hu=0.0, hv=0.0)
    r = swe.simulate(model, s0, t_end=60.0, save_at=[0.0, 60.0])
    # All the imposed discharge, to round-off, so the clip of h at 0 in dry cells removed
    # none of it; and the water has run downhill beyond the inflow's own cell.
    width = CHANNEL.y[1] - CHANNEL.y[0]
    assert abs(float(r.mass()[-1]) - 60.0 * width) / (60.0 * width) < 1e-12
    assert int((np.asarray(r.final.h) > 1e-3).sum()) > 20  # 42 cells at t = 60 s


@pytest.mark.parametrize("stage", [1.0, lambda t: 1.0 + 0.0 * t])
def test_stage_fills_a_basin_to_its_level(stage):
    model = swe.ShallowWater(CHANNEL, bed=-1.0, friction=swe.LinearDrag(0.01),
                             boundaries=swe.Boundaries(west=swe.Stage(stage)))
    s0 = swe.State.from_surface(model, eta=0.5)
    r = swe.simulate(model, s0, t_end=3000.0, save_at=[0.0, 3000.0])
    eta = np.asarray(r.final.h) - 1.0
    assert np.abs(eta - 1.0).max() < 0.01


def test_lake_at_rest_is_kept_by_matching_stage_and_outflow():
    grid = swe.Grid(nx=20, ny=16, x=(0.0, 20.0), y=(0.0, 16.0))
    X, Y = (np.asarray(a) for a in grid.cell_centers())
    bed = -1.0 + 0.5 * np.exp(-((X - 10) ** 2 + (Y - 8) ** 2) / 10.0)
    model = swe.ShallowWater(grid, bed=bed, boundaries=swe.Boundaries(
        west=swe.Stage(0.25), east=swe.Outflow(), south=swe.Periodic(), north=swe.Periodic()))
    s0 = swe.State.from_surface(model, eta=0.25)
    r = swe.simulate(model, s0, t_end=20.0)
    assert float(np.abs(r.final.hu).max()) < 1e-12
    assert float(np.abs(r.final.hv).max()) < 1e-12

"""Source terms against exact solutions of their ODEs (uniform states, no fluxes)."""

import numpy as np
import pytest

import swe

from .helpers import periodic

GRID = swe.Grid(nx=12, ny=10, x=(0.0, 1200.0), y=(0.0, 1000.0))


def test_rain_and_point_sources_add_exact_volumes():
    X, _ = (np.asarray(a) for a in GRID.cell_centers())
    model = swe.ShallowWater(GRID, bed=-2.0 + 0.001 * X, sources=(
        swe.Rain(1e-5), swe.PointSource(300.0, 500.0, lambda t: 2.0 + 0.1 * t)))
    s0 = swe.State.from_surface(model, eta=0.0)
    r = swe.simulate(model, s0, t_end=100.0, save_at=[0.0, 100.0])
    added = float(r.mass()[-1] - r.mass()[0])
    area = 1200.0 * 1000.0
    expected = 1e-5 * area * 100.0 + (2.0 * 100.0 + 0.05 * 100.0**2)
    assert abs(added - expected) / expected < 1e-12


def test_evaporation_never_takes_more_than_there_is():
    model = swe.ShallowWater(GRID, sources=swe.Rain(-1e-3))
    s0 = swe.State(h=np.full((10, 12), 0.05), hu=0.0, hv=0.0)
    r = swe.simulate(model, s0, t_end=100.0, save_at=[0.0, 25.0, 100.0], dt=1.0)
    np.testing.assert_allclose(np.asarray(r.states.h[1]), 0.025, rtol=1e-12)
    assert 0.0 <= float(r.final.h.min()) < 1e-15


def test_uniform_wind_accelerates_at_tau_over_rho():
    model = swe.ShallowWater(GRID, boundaries=periodic(),
                             wind=swe.WindStress(tau_x=0.2, tau_y=lambda t: -0.1))
    s0 = swe.State(h=np.full((10, 12), 3.0), hu=0.0, hv=0.0)
    r = swe.simulate(model, s0, t_end=50.0)
    np.testing.assert_allclose(np.asarray(r.final.hu), 0.2 / 1000.0 * 50.0, rtol=1e-10)
    np.testing.assert_allclose(np.asarray(r.final.hv), -0.1 / 1000.0 * 50.0, rtol=1e-10)


def test_inertial_oscillation_on_an_f_plane():
    f = 1e-3
    model = swe.ShallowWater(GRID, boundaries=periodic(), coriolis=swe.FPlane(f))
    s0 = swe.State(h=np.full((10, 12), 10.0), hu=10.0 * 0.5, hv=0.0)
    t_end = 2 * np.pi / f / 4
    r = swe.simulate(model, s0, t_end=t_end, dt=t_end / 400, integrator="ssprk3")
    u = np.asarray(r.final.hu) / 10.0
    v = np.asarray(r.final.hv) / 10.0
    np.testing.assert_allclose(u, 0.5 * np.cos(f * t_end), atol=1e-6)
    np.testing.assert_allclose(v, -0.5 * np.sin(f * t_end), atol=1e-6)


@pytest.mark.parametrize("law,rate", [
    (swe.LinearDrag(0.01), lambda h, u: 0.01 / h),
    (swe.Manning(0.03), lambda h, u: 9.81 * 0.03**2 * abs(u) / h ** (4 / 3)),
    (swe.Chezy(50.0), lambda h, u: 9.81 * abs(u) / (50.0**2 * h)),
])
def test_friction_decays_the_flow_and_never_reverses_it(law, rate):
    model = swe.ShallowWater(GRID, boundaries=periodic(), friction=law)
    h0, u0 = 0.5, 2.0
    s0 = swe.State(h=np.full((10, 12), h0), hu=h0 * u0, hv=0.0)
    # Small steps: close to the exact decay, integrated here with a fine RK4. (The
    # semi-implicit treatment is first order in k dt: 4% off at k dt = 0.01 over 400 steps.)
    r = swe.simulate(model, s0, t_end=200.0, dt=0.1, save_at=[0.0, 200.0])
    u, t, dt = u0, 0.0, 0.01
    while t < 200.0 - 1e-9:
        k1 = -rate(h0, u) * u
        k2 = -rate(h0, u + dt / 2 * k1) * (u + dt / 2 * k1)
        k3 = -rate(h0, u + dt / 2 * k2) * (u + dt / 2 * k2)
        k4 = -rate(h0, u + dt * k3) * (u + dt * k3)
        u, t = u + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4), t + dt
    got = np.asarray(r.final.hu) / h0
    np.testing.assert_allclose(got, u, rtol=0.02)
    # Huge steps: semi-implicit friction still only damps (stiff limit h -> 1 mm).
    thin = swe.State(h=np.full((10, 12), 1e-3), hu=1e-3 * u0, hv=0.0)
    r = swe.simulate(model, thin, t_end=100.0, dt=10.0, save_at=[0.0, 10.0, 100.0])
    hu = np.asarray(r.states.hu)
    assert np.all(hu >= 0.0) and np.all(np.diff(hu[:, 0, 0]) <= 0.0)

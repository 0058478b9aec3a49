"""Radial dam break: a cylinder of deep water collapses over a shallower lake (2-D).

The default scenario. A circular wall of radius ``radius`` (m) holding ``h_in`` (m) is removed
at t = 0 over a flat bed covered by ``h_out`` (m); ``h_out=0`` makes it a dry-bed break.
The domain is a square of side ``size`` (m) with reflective walls and ``n`` cells a side.
"""

import numpy as np

import swe


# What each build() parameter means and its units (shown by `swe info <scenario>`).
PARAMETERS = {
    "n": ("cells along each side", "1"),
    "radius": ("radius of the water cylinder", "m"),
    "h_in": ("water depth inside the cylinder", "m"),
    "h_out": ("water depth outside the cylinder; 0 for a dry bed", "m"),
    "t_end": ("run length", "s"),
    "size": ("side of the square domain", "m"),
}


def build(n=200, radius=250.0, h_in=10.0, h_out=1.0, t_end=30.0, size=2000.0):
    grid = swe.Grid(nx=n, ny=n, x=(-size / 2, size / 2), y=(-size / 2, size / 2))
    X, Y = (np.asarray(a) for a in grid.cell_centers())
    model = swe.ShallowWater(grid, bed=0.0, g=9.81)
    h0 = np.where(X**2 + Y**2 <= radius**2, h_in, h_out)
    state0 = swe.State(h=h0, hu=0.0, hv=0.0)
    gauges = [("centre", 0.0, 0.0), ("r_half", size / 4, 0.0), ("diagonal", size / 4, size / 4)]
    return swe.Scenario(
        model, state0, t_end=t_end, save_at=t_end / 10, gauges=gauges,
        metadata=dict(title="Radial dam break",
                      description="Collapse of a water cylinder over a flat, wet or dry bed"),
        arrival_threshold=0.01 + h_out)

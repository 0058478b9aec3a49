"""Shared set-ups for the tests: smooth exact solutions and bumpy beds."""

import numpy as np

import swe
from validation.smooth_convergence import cell_average  # noqa: F401  (one copy)
from validation.smooth_convergence import simple_wave as _simple_wave


def simple_wave(s, t, *, g=9.81, h0=1.0, eps=0.1, wavelength=1.0):
    """Exact right-going simple wave before it breaks (validation's, with these defaults)."""
    return _simple_wave(s, t, wavelength=wavelength, g=g, h0=h0, eps=eps)


def bumpy_bed(grid):
    """Gaussian bumps, a ripple, and an island that rises above eta = 0.5."""
    X, Y = (np.asarray(a) for a in grid.cell_centers())
    Lx = grid.x[1] - grid.x[0]
    Ly = grid.y[1] - grid.y[0]
    x = (X - grid.x[0]) / Lx
    y = (Y - grid.y[0]) / Ly
    return (0.3 * np.exp(-((x - 0.3) ** 2 + (y - 0.3) ** 2) / 0.01)
            + 0.9 * np.exp(-((x - 0.7) ** 2 + (y - 0.6) ** 2) / 0.006)
            + 0.05 * np.sin(7 * x) * np.cos(5 * y))


def periodic():
    return swe.Boundaries(west=swe.Periodic(), east=swe.Periodic(), south=swe.Periodic(),
                          north=swe.Periodic())

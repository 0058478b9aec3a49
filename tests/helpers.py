"""Shared set-ups for the tests: smooth exact solutions and bumpy beds."""

import numpy as np

import swe
from validation.smooth_convergence import cell_average  # noqa: F401  (one copy)


def simple_wave(s, t, *, g=9.81, h0=1.0, eps=0.1, wavelength=1.0):
    """Exact right-going simple wave (Riemann invariant u - 2c constant) before it breaks.

    ``c(xi) = c0 + eps sin(2 pi xi / wavelength)``, ``u = 2 (c - c0)``, carried along
    characteristics ``s = xi + (3 c(xi) - 2 c0) t``. Returns ``(h, u)`` at points ``s``.
    """
    c0 = np.sqrt(g * h0)
    k = 2 * np.pi / wavelength
    xi = np.array(s, dtype=float)
    for _ in range(60):
        c = c0 + eps * np.sin(k * xi)
        f = xi + (3 * c - 2 * c0) * t - s
        xi = xi - f / (1 + 3 * eps * k * np.cos(k * xi) * t)
    c = c0 + eps * np.sin(k * xi)
    return c * c / g, 2 * (c - c0)


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

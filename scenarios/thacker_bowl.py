"""Thacker's planar surface sloshing in a paraboloid bowl: moving shorelines, exact solution.

The bowl is ``B(x, y) = h0 ((x^2 + y^2) / a^2 - 1)`` (m): depth ``h0`` (m) at the centre and
the still-water shoreline on the circle of radius ``a`` (m). A planar free surface tilts and
rotates around the bowl with angular frequency ``omega = sqrt(2 g h0) / a`` (1/s) while the
water moves as a uniform current rotating with it; the wet region is a disc whose
shoreline travels up and down the bowl walls. The exact solution (Thacker 1981, J. Fluid
Mech. 107, 499, planar case; the GeoClaw "bowl-slosh" test) is

    h = max(0, (sigma h0 / a^2) (2 x cos(omega t) + 2 y sin(omega t) - sigma) - B),
    u = -sigma omega sin(omega t),   v = sigma omega cos(omega t)   (wet cells),

with ``sigma`` (m) the orbit radius of the centre of the water disc. The domain is the
square [-2a, 2a]^2 (m) with ``n`` cells a side and walls (never reached by the water); the
run lasts ``periods`` periods ``2 pi / omega`` (s). :func:`exact` gives the solution at any
time for validation: after one period the water is back where it started, so ``h`` can
be compared with the initial state directly.
"""

import math

import numpy as np

import swe


# What each build() parameter means and its units (shown by `swe info <scenario>`).
PARAMETERS = {
    "n": ("cells along each side", "1"),
    "a": ("radius of the still-water shoreline", "m"),
    "sigma": ("orbit radius of the centre of the water disc", "m"),
    "h0": ("still-water depth at the centre of the bowl", "m"),
    "periods": ("run length in sloshing periods 2 pi / omega", "1"),
    "g": ("gravitational acceleration", "m/s^2"),
}


def exact(X, Y, t, a=1.0, sigma=0.5, h0=0.1, g=9.81):
    """The exact ``(h, u, v)`` (m, m/s, m/s) at points ``(X, Y)`` (m) and time ``t`` (s).

    ``u`` and ``v`` are zero on dry points.
    """
    X = np.asarray(X, dtype=float)
    Y = np.asarray(Y, dtype=float)
    omega = math.sqrt(2.0 * g * h0) / a
    bed = h0 * ((X**2 + Y**2) / a**2 - 1.0)
    c, s = math.cos(omega * t), math.sin(omega * t)
    eta = sigma * h0 / a**2 * (2.0 * X * c + 2.0 * Y * s - sigma)
    h = np.maximum(eta - bed, 0.0)
    wet = h > 0.0
    u = np.where(wet, -sigma * omega * s, 0.0)
    v = np.where(wet, sigma * omega * c, 0.0)
    return h, u, v


def build(n=100, a=1.0, sigma=0.5, h0=0.1, periods=1.0, g=9.81):
    grid = swe.Grid(nx=n, ny=n, x=(-2.0 * a, 2.0 * a), y=(-2.0 * a, 2.0 * a))
    X, Y = (np.asarray(c) for c in grid.cell_centers())
    bed = h0 * ((X**2 + Y**2) / a**2 - 1.0)
    model = swe.ShallowWater(grid, bed=bed, g=g)
    h, u, v = exact(X, Y, 0.0, a=a, sigma=sigma, h0=h0, g=g)
    state0 = swe.State(h=h, hu=h * u, hv=h * v)
    omega = math.sqrt(2.0 * g * h0) / a
    period = 2.0 * math.pi / omega
    t_end = periods * period
    gauges = [("centre", 0.0, 0.0), ("east_shore", 0.9 * a, 0.0),
              ("north_shore", 0.0, 0.9 * a), ("west_shore", -0.9 * a, 0.0)]
    return swe.Scenario(
        model, state0, t_end=t_end, save_at=t_end / 16, gauges=gauges,
        metadata=dict(title="Thacker's sloshing bowl",
                      description="Planar surface rotating in a paraboloid bowl with moving "
                                  "shorelines (Thacker 1981); exact solution in exact()",
                      omega=omega, period=period),
        arrival_threshold=1e-3)

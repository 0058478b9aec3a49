"""Geostrophic adjustment of a Gaussian bump on an f-plane (Basilisk ``src/test/geo.c``).

A Gaussian bump of the surface ``eta = eta0 exp(-(x^2 + y^2) / R^2)`` (m) sits in a square
basin of side ``size`` (m, default 1000 km), ``n`` cells a side, flat bed at depth ``H`` (m)
and walls on all four sides (the reflective "symmetry" default of Basilisk). A reduced
gravity ``g`` (m/s^2, default 0.01) stands for a 10 m thick stratified surface layer; the
rotation is an f-plane with Coriolis parameter ``f0`` (1/s). The defaults follow Dupont
(2001), Le Roux et al. (1998, Mon. Wea. Rev. 126) and Popinet & Rickard (2007, Ocean
Modelling 16, sec. 6.1): ``f0 = 1.0285e-4``, ``R = 100 km``, ``eta0 = 599.5 m``, giving a
gravity-wave speed ``sqrt(g H) = 3.2 m/s``, a Rossby radius ``sqrt(g H) / f0 = 31 km``, an
inertial period ``2 pi / f0 = 17 h``, and a peak geostrophic velocity of 0.5 m/s.

With ``balanced=True`` (the default, as in geo.c) the water starts with the geostrophic
velocities of the linearised equations,

    u = 2 g eta0 y / (f0 R^2) exp(-(x^2 + y^2) / R^2),
    v = -2 g eta0 x / (f0 R^2) exp(-(x^2 + y^2) / R^2),

an anticyclone that an exact discrete balance would keep steady: what the scheme does with it
(gravity-wave noise, drift of the surface maximum) measures its balance errors and the
non-linear correction (``eta0 / H = 0.6``). With ``balanced=False`` the bump starts at rest
(the classical Rossby adjustment problem): inertia-gravity waves radiate away and a
geostrophic vortex of about the Rossby radius is left behind. The run lasts ``days`` days.
"""

import numpy as np

import swe


# What each build() parameter means and its units (shown by `swe info <scenario>`).
PARAMETERS = {
    "n": ("cells along each side", "1"),
    "size": ("side of the square basin", "m"),
    "H": ("depth of the flat bed below z = 0", "m"),
    "g": ("reduced gravity", "m/s^2"),
    "f0": ("Coriolis parameter of the f-plane", "1/s"),
    "R": ("e-folding radius of the Gaussian surface bump", "m"),
    "eta0": ("surface height at the centre of the bump", "m"),
    "balanced": ("start in geostrophic balance; False: at rest", "-"),
    "days": ("run length in days", "d"),
}


def build(n=100, size=1.0e6, H=1000.0, g=0.01, f0=1.0285e-4, R=1.0e5, eta0=599.5,
          balanced=True, days=5.0):
    half = size / 2
    grid = swe.Grid(nx=n, ny=n, x=(-half, half), y=(-half, half))
    X, Y = (np.asarray(a) for a in grid.cell_centers())
    model = swe.ShallowWater(grid, bed=-H, g=g, coriolis=swe.FPlane(f0))
    bump = np.exp(-(X**2 + Y**2) / R**2)
    eta = eta0 * bump
    if balanced:
        u = 2.0 * g * eta0 * Y / (f0 * R**2) * bump
        v = -2.0 * g * eta0 * X / (f0 * R**2) * bump
    else:
        u = v = 0.0
    state0 = swe.State.from_surface(model, eta=eta, u=u, v=v)
    t_end = days * 86400.0
    gauges = [("centre", 0.0, 0.0), ("jet", R / 2**0.5, 0.0),
              ("rossby_ring", 2.0 * R, 0.0), ("far_field", 0.4 * size, 0.4 * size)]
    return swe.Scenario(
        model, state0, t_end=t_end, save_at=t_end / 20, gauges=gauges,
        metadata=dict(title="Geostrophic adjustment",
                      description="Gaussian surface bump on an f-plane with reduced gravity, "
                                  "started in (linear) geostrophic balance or at rest "
                                  "(Basilisk geo.c; Popinet & Rickard 2007, sec. 6.1)",
                      rossby_radius=float(np.sqrt(g * H) / f0),
                      inertial_period=float(2.0 * np.pi / f0)),
        arrival_threshold=H + 1.0)

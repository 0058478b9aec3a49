"""Lake at rest over a bumpy bed with a dry island: the well-balancing test.

A square basin of side ``size`` (m), ``n`` cells a side, flat floor at z = 0 (m) with three
Gaussian bumps of e-folding radius about ``bump_width`` (m): two submerged ones, of crests
``bump_height`` and ``0.75 bump_height`` (m), and an island of crest ``island_height`` (m)
that rises above the still water level ``eta0`` (m), so part of it is dry and the lake has a
shoreline. The water starts at rest with a flat surface
``eta = eta0``; the exact solution is that nothing ever moves. A well-balanced scheme
(hydrostatic reconstruction, Audusse et al. 2004, SIAM J. Sci. Comput. 25, 2050) keeps the
velocities at round-off (below 1e-12 m/s in float64) and the surface flat, wet/dry shoreline
included; an unbalanced one generates spurious currents over every bump. The set-up follows
the classic tests of LeVeque (1998, J. Comput. Phys. 146, 346) and Xing & Shu (2005), with
an emerged bump added. Walls (``walls=True``) or transmissive outflow on all sides.
"""

import numpy as np

import swe


# What each build() parameter means and its units (shown by `swe info <scenario>`).
PARAMETERS = {
    "n": ("cells along each side", "1"),
    "size": ("side of the square basin", "m"),
    "eta0": ("still-water surface level", "m"),
    "bump_height": ("crest of the larger submerged bump", "m"),
    "island_height": ("crest of the island (dry where above eta0)", "m"),
    "bump_width": ("e-folding radius of the bumps", "m"),
    "t_end": ("run length", "s"),
    "walls": ("walls on all sides; False: transmissive outflow", "-"),
}


def build(n=100, size=10.0, eta0=0.5, bump_height=0.4, island_height=0.8,
          bump_width=1.0, t_end=10.0, walls=True):
    half = size / 2
    grid = swe.Grid(nx=n, ny=n, x=(-half, half), y=(-half, half))
    X, Y = (np.asarray(a) for a in grid.cell_centers())

    def bump(x0, y0, height, width):
        return height * np.exp(-((X - x0) ** 2 + (Y - y0) ** 2) / width**2)

    # Positions scale with the basin so that any size keeps the bumps inside it.
    bed = (bump(-0.25 * size, -0.2 * size, bump_height, bump_width)
           + bump(0.25 * size, 0.22 * size, 0.75 * bump_height, 1.5 * bump_width)
           + bump(0.05 * size, -0.05 * size, island_height, bump_width))
    side = swe.Wall() if walls else swe.Outflow()
    boundaries = swe.Boundaries(west=side, east=side, south=side, north=side)
    model = swe.ShallowWater(grid, bed=bed, g=9.81, boundaries=boundaries)
    state0 = swe.State.from_surface(model, eta=np.full(grid.shape, eta0))
    gauges = [("open_water", -0.4 * size, 0.4 * size),
              ("over_bump", -0.25 * size, -0.2 * size),
              ("shoreline", 0.05 * size + bump_width * 0.8, -0.05 * size),
              ("island_top", 0.05 * size, -0.05 * size)]
    return swe.Scenario(
        model, state0, t_end=t_end, save_at=t_end / 10, gauges=gauges,
        metadata=dict(title="Lake at rest",
                      description="Still water over Gaussian bumps and a dry island; the exact "
                                  "solution is rest (u = v = 0, eta = eta0): a well-balancing "
                                  "and wet/dry shoreline test"))

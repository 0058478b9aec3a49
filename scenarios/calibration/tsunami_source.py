"""A tsunami source's amplitude and position, from four offshore gauges.

A 200 km x 120 km basin (40 x 24 cells of 5 km): a 3000 m deep ocean in the east rises over
a continental slope to a 100 m shelf and a coast at x = 15 km (wetting and drying there);
the north, south and east sides are open. The source is a Gaussian hump of the surface,
``A exp(-((x - x0)^2 + (y - y0)^2) / w^2)`` with w = 15 km, at rest. Four gauges offshore
record the surface (m) every 60 s for 20 min. A run is cut at 1000 steps (ten times what
the truth takes), so that a wild proposal fails fast instead of crawling. The records are synthetic: the run at
``TRUTH`` plus independent Gaussian noise of 5 cm.
"""

import jax.numpy as jnp
import numpy as np

import swe
from swe import calibration as cal

TRUTH = {"amplitude": 2.0, "x0": 140e3, "y0": 55e3}
WIDTH = 15e3  # m
TIMES = np.arange(1, 21) * 60.0  # s

_grid = swe.Grid(nx=40, ny=24, x=(0.0, 200e3), y=(0.0, 120e3))
_X, _Y = (np.asarray(a) for a in _grid.cell_centers())
# Land (10 m) west of the coast at 15 km, a shelf at 100 m to 50 km, a slope to 3000 m at 90 km.
_bed = np.interp(_X, [0.0, 15e3, 20e3, 50e3, 90e3, 200e3], [10.0, 0.0, -100.0, -100.0,
                                                             -3000.0, -3000.0])
_model = swe.ShallowWater(_grid, bed=_bed, boundaries=swe.Boundaries(
    west=swe.Wall(), east=swe.Outflow(), south=swe.Outflow(), north=swe.Outflow()))
_gauges = [("offshore_north", 100e3, 95e3), ("offshore_south", 100e3, 25e3),
           ("shelf_edge", 60e3, 60e3), ("deep_northeast", 170e3, 100e3)]


def forward(params):
    hump = params["amplitude"] * jnp.exp(
        -((_X - params["x0"]) ** 2 + (_Y - params["y0"]) ** 2) / WIDTH**2)
    state0 = swe.State.from_surface(_model, eta=jnp.maximum(hump, _bed))
    return swe.simulate(_model, state0, float(TIMES[-1]), save_at=TIMES, gauges=_gauges,
                        envelopes=False, throw=False, max_steps=1000)


priors = {"amplitude": cal.LogNormal(np.log(1.0), 0.75),
          "x0": cal.Uniform(100e3, 190e3),
          "y0": cal.Uniform(10e3, 110e3)}
noise = 0.05  # m
observations = cal.synthetic_observations(forward, TRUTH, noise=noise, seed=11)

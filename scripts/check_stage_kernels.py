"""Runs built-in scenarios with both stage kernels on this device and compares them: the
check that the Pallas kernel of :mod:`swe.tpu_stage` gives XLA's results on a real chip for
friction, forcing and inflows, and how long each took. On a TPU v5e (float32, 1536 cells
across): the river flood (zoned Manning friction, an inflow hydrograph, an outflow)
and Thacker's bowl gave equal final depths, the geostrophic adjustment (Coriolis,
periodic sides) depths within 4e-8 in relative L1 (8.5e-4 m at most, of 1e3 m); the kernel
took 0.68x XLA's time on the river flood, 0.47x on the geostrophic adjustment and 0.58x on
Thacker's bowl.

    python scripts/check_stage_kernels.py                 # on a TPU, float32
    python scripts/check_stage_kernels.py --interpret --scale 0.25 --t-fraction 0.05
                                                          # anywhere, slowly (interpret mode)

One JSON line per scenario: steps, wall time of each kernel (after a compiling run), the
largest difference of the final depth and its relative L1 difference, and both masses.
Chaotic growth of round-off differences over many steps is expected; a kernel bug shows as
an O(1) difference from the first steps (the tests compare single stages to round-off).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time

import jax
import numpy as np

import swe
from swe.scenario import build

# (scenario, size parameters at scale 1, what it exercises)
CASES = (
    ("river_flood", dict(nx=1536, ny=512), "Manning zones, an inflow hydrograph profile, "
                                           "an outflow, wetting and drying"),
    ("geostrophic_adjustment", dict(n=1536), "Coriolis (beta plane), periodic sides"),
    ("thacker_bowl", dict(n=1536), "a paraboloid bowl, a moving shoreline"),
)


def run_case(name, params, kernel, t_fraction, precision):
    scenario = build(name, params)
    model = scenario.model
    model = dataclasses.replace(model, scheme=dataclasses.replace(model.scheme, kernel=kernel))
    t_end = scenario.t_end * t_fraction
    kwargs = dict(save_at=[t_end], dtype=precision, envelopes=False, **scenario.run_options)
    swe.simulate(model, scenario.state0, t_end, **kwargs)  # compiles
    start = time.perf_counter()
    result = swe.simulate(model, scenario.state0, t_end, **kwargs)
    h = np.asarray(result.final.h)
    return h, int(result.num_steps), time.perf_counter() - start, model.grid.cell_area


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scale", type=float, default=1.0, help="grid size factor")
    p.add_argument("--t-fraction", type=float, default=0.02,
                   help="fraction of each scenario's run length")
    p.add_argument("--precision", default="float32", choices=("float32", "float64"))
    p.add_argument("--interpret", action="store_true",
                   help="the kernel in interpret mode (any backend; slow)")
    p.add_argument("--cases", nargs="+", default=[c[0] for c in CASES])
    args = p.parse_args(argv)
    if args.precision == "float64":
        jax.config.update("jax_enable_x64", True)
    kernel = "pallas-interpret" if args.interpret else "pallas"
    for name, params, what in CASES:
        if name not in args.cases:
            continue
        params = {k: max(8, int(round(v * args.scale / 8)) * 8) for k, v in params.items()}
        h_x, steps_x, wall_x, area = run_case(name, params, "xla", args.t_fraction,
                                              args.precision)
        h_p, steps_p, wall_p, _ = run_case(name, params, kernel, args.t_fraction,
                                           args.precision)
        diff = np.abs(h_p.astype(np.float64) - h_x)
        print(json.dumps(dict(
            scenario=name, exercises=what, params=params, precision=args.precision,
            kernel=kernel, steps_xla=steps_x, steps_pallas=steps_p, wall_s_xla=wall_x,
            wall_s_pallas=wall_p, max_abs_diff_h=float(diff.max()),
            rel_l1_diff_h=float(diff.sum() / max(np.abs(h_x).sum(), 1e-300)),
            mass_xla=float(np.sum(h_x, dtype=np.float64) * area),
            mass_pallas=float(np.sum(h_p, dtype=np.float64) * area),
            backend=jax.default_backend())), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Strong and weak scaling of the sharded solver over the available devices.

    python scripts/bench_scaling.py [--n 256] [--repeat 3]
    XLA_FLAGS=--xla_force_host_platform_device_count=8 python scripts/bench_scaling.py

Strong scaling: the benchmark problem (``swe.bench.problem``) at ``n x n`` on 1, 2, 4, ...
devices. Weak scaling: ``n x n`` cells per device (the grid grows along y with the device
count). On fake CPU devices (the second line) this is a correctness smoke run, the devices
sharing the same cores; on a multi-GPU node it measures scaling. Prints one JSON line per
run: devices, mesh, cells, steps, median wall seconds, cell-updates/s per device, parallel
efficiency against one device, and the largest difference from the one-device depth.
"""

import argparse
import json
import statistics
import time

import jax
import numpy as np

import swe
from swe import bench
from swe.parallel import auto_mesh


def timed(model, state, t_end, mesh, repeat, precision):
    kw = dict(save_at=[t_end], envelopes=False, dtype=precision, mesh=mesh)
    r = swe.simulate(model, state, t_end, **kw)  # compiles
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        r = swe.simulate(model, state, t_end, **kw)
        np.asarray(r.final.h)
        times.append(time.perf_counter() - start)
    return statistics.median(times), int(r.num_steps), np.asarray(r.final.h)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=256)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--t-end", type=float, default=0.25)
    p.add_argument("--precision", default="float32", choices=("float32", "float64"))
    args = p.parse_args(argv)
    if args.precision == "float64":
        jax.config.update("jax_enable_x64", True)
    counts = [d for d in (1, 2, 4, 8, 16, 32, 64) if d <= len(jax.devices())]
    base = {}
    for kind in ("strong", "weak"):
        for d in counts:
            ny = args.n * (d if kind == "weak" else 1)
            model, state = bench.problem(args.n)
            if kind == "weak":  # taller domain, same cell size
                grid = swe.Grid(nx=args.n, ny=ny, x=bench.DOMAIN,
                                y=(bench.DOMAIN[0], bench.DOMAIN[0] + 5.0 * d))
                x, y = grid.cell_centers()
                model = swe.ShallowWater(grid, g=bench.G)
                h = np.where(np.asarray(x) ** 2 + (np.asarray(y) - 2.5 * d + 2.5) ** 2 <= 0.25,
                             2.0, 1.0)
                state = swe.State(h=h, hu=0.0, hv=0.0)
            mesh = auto_mesh(d, model.grid)
            wall, steps, h = timed(model, state, args.t_end, mesh, args.repeat,
                                   args.precision)
            rate = model.grid.nx * model.grid.ny * steps / wall
            if d == 1:
                base[kind] = (rate, h)
            eff = rate / (d * base[kind][0])  # per-device rate against one device's
            diff = float(np.abs(h - base[kind][1]).max()) if kind == "strong" else None
            print(json.dumps(dict(kind=kind, devices=d, mesh=f"{mesh[0]}x{mesh[1]}",
                                  cells=model.grid.nx * model.grid.ny, steps=steps,
                                  wall_s=wall, cell_updates_per_s_per_device=rate / d,
                                  efficiency=eff, max_diff_vs_1_device=diff,
                                  backend=jax.default_backend())), flush=True)


if __name__ == "__main__":
    main()

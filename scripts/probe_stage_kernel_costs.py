"""Where the Pallas stage kernel's time goes on a TPU: the kernel of :mod:`swe.pallas` with
parts of the scheme swapped for cheaper ones, timed side by side (a probe, not a
benchmark of a usable scheme).

Variants, each ms per forward-Euler stage on the benchmark problem (float32, a
``fori_loop`` of ``--steps`` stages per timed call, interleaved, medians of ``--repeat``):

* ``default``: Koren MUSCL, HLLC (the default scheme);
* ``first-order``: no reconstruction (the MUSCL share is the difference);
* ``rusanov``: Koren MUSCL with the Rusanov flux instead of HLLC;
* ``minmod``: the minmod limiter instead of Koren's;
* ``no-rolls``: every neighbour access returns the cell itself (wrong results; the cost of
  the rolls that fetch neighbours is the difference);
* ``recompute-faces``: :data:`swe.pallas.RECOMPUTE_NEIGHBOUR_FACES` (a cell's neighbour's
  faces recomputed from its stencil instead of rolled: the same results);
* ``glue``: the XLA around the kernel alone (ghost cells, padding, cropping), by the stage
  with the kernel replaced by a copy of its inputs' interior.

    python scripts/probe_stage_kernel_costs.py --n 2048 --block-rows 32 --halo 8
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import types

import jax
import jax.numpy as jnp

from swe import bench, pallas
from swe.model import FiniteVolume


def variants():
    return {
        "default": (dict(), False),
        "first-order": (dict(reconstruction="first_order"), False),
        "rusanov": (dict(riemann="rusanov"), False),
        "minmod": (dict(limiter="minmod"), False),
        "no-rolls": (dict(), True),
        "recompute-faces": (dict(), "recompute"),
    }


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, nargs="+", default=[2048])
    p.add_argument("--block-rows", type=int, default=None, help="default: as the package")
    p.add_argument("--halo", type=int, default=pallas.HALO)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--only", nargs="+", default=None)
    args = p.parse_args(argv)
    interpret = jax.default_backend() != "tpu"
    real_pltpu = pallas.pltpu
    for n in args.n:
        fns, states = {}, {}
        for name, (options, no_rolls) in variants().items():
            if args.only and name not in args.only:
                continue
            model, state = bench.problem(n, scheme=FiniteVolume(**options))
            state = jax.tree.map(lambda a: a.astype(jnp.float32), state)
            beds = jax.tree.map(lambda a: a.astype(jnp.float32), model.padded_beds())
            dt = jnp.asarray(0.1 * model.grid.dx, jnp.float32)

            def stage(s, model=model, beds=beds, dt=dt):
                return pallas.euler_step(model, 0.0, s, dt, beds, interpret=interpret,
                                         block_rows=args.block_rows, halo=args.halo)

            fn = jax.jit(lambda s, stage=stage: jax.lax.fori_loop(
                0, args.steps, lambda i, q: stage(q), s))
            if no_rolls == "recompute":
                pallas.RECOMPUTE_NEIGHBOUR_FACES = True
            elif no_rolls:
                pallas.pltpu = types.SimpleNamespace(
                    roll=lambda a, k, axis: a, CompilerParams=real_pltpu.CompilerParams,
                    SMEM=real_pltpu.SMEM)
            try:
                start = time.perf_counter()
                jax.block_until_ready(fn(state))
                compile_s = time.perf_counter() - start
            except Exception as e:  # noqa: BLE001 - report and go on
                print(json.dumps(dict(N=n, variant=name, error=f"{type(e).__name__}: {e}"[:500])),
                      flush=True)
                continue
            finally:
                pallas.pltpu = real_pltpu
                pallas.RECOMPUTE_NEIGHBOUR_FACES = False
            fns[name], states[name] = (fn, compile_s), state
        if not args.only or "glue" in args.only:
            model, state = bench.problem(n)
            state = jax.tree.map(lambda a: a.astype(jnp.float32), state)
            beds = jax.tree.map(lambda a: a.astype(jnp.float32), model.padded_beds())

            shape = pallas.block_shape(n, n, 4, args.block_rows, None, args.halo)
            left = pallas.layout(n, n, *shape, args.halo)[2]

            def glue(s, model=model, beds=beds, shape=shape, left=left):
                fields = pallas.padded_fields(model, 0.0, s, beds, *shape, args.halo)
                fields = jax.lax.optimization_barrier(fields)
                rows = slice(args.halo, args.halo + n)
                cols = slice(left, left + n)
                return type(s)(*(f[rows, cols] for f in fields[:3]))

            fn = jax.jit(lambda s: jax.lax.fori_loop(0, args.steps, lambda i, q: glue(q), s))
            start = time.perf_counter()
            jax.block_until_ready(fn(state))
            fns["glue"], states["glue"] = (fn, time.perf_counter() - start), state
        times = {k: [] for k in fns}
        for _ in range(args.repeat):
            for k, (fn, _) in fns.items():
                start = time.perf_counter()
                jax.block_until_ready(fn(states[k]))
                times[k].append(time.perf_counter() - start)
        for k, (fn, compile_s) in fns.items():
            ms = 1e3 * statistics.median(times[k]) / args.steps
            print(json.dumps(dict(probe="stage_kernel_costs", N=n, variant=k,
                                  block_rows=args.block_rows, halo=args.halo,
                                  ms_per_stage=ms, gcell_stage_per_s=n * n / ms / 1e6,
                                  compile_s=compile_s, backend=jax.default_backend())),
                  flush=True)


if __name__ == "__main__":
    main()

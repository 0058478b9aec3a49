"""Milliseconds per forward-Euler stage on the benchmark problem: XLA's stage against the
Pallas kernel of :mod:`swe.tpu_stage` at several block shapes (TPU only), and the device's two
ceilings for a stage.

    python scripts/bench_stage_kernels.py --n 1024 2048 4096 --block-rows 16 32 \
        --block-cols 0 1024          # on a TPU: ms per stage, Pallas against XLA
    python scripts/bench_stage_kernels.py --roofline ...
                                     # first: the measured elementwise float32 rate and
                                     # XLA's flops per cell and stage

Measured on a TPU v5e (float32; records in validation/perf/tpu_v5e.jsonl), ms per stage
XLA / Pallas (32 full-width rows, 8 halo rows): N = 1024 0.37 / 0.41 (128 rows); 2048
3.60 / 1.82; 4096 22.3 / 9.45 (column blocks of 1024: 9.48, of 512: 10.1; 8-row blocks are
slower everywhere). Each timed call runs ``steps`` stages in a ``fori_loop``; medians of
``repeat``, the runs interleaved.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

from swe import bench, tpu_stage, xla_stage


def stage_inputs(n, precision):
    """The benchmark problem's model, state, padded beds and a stage's dt (a tenth of a
    cell per unit speed) in ``precision``."""
    model, state = bench.problem(n)
    state = jax.tree.map(lambda a: a.astype(precision), state)
    beds = jax.tree.map(lambda a: a.astype(precision), model.padded_beds())
    return model, state, beds, jnp.asarray(0.1 * model.grid.dx, precision)


def bench_stages(ns, block_rows, block_cols=(0,), steps=20, repeat=3, precision="float32",
                 halos=(tpu_stage.HALO,)):
    """ms per stage of the default scheme on the benchmark problem, XLA against Pallas
    (every ``block_rows`` x ``block_cols``, 0 for full-width rows), ``steps`` stages per
    timed call (a ``fori_loop``), interleaved, medians of ``repeat``."""
    for n in ns:
        model, state, beds, dt = stage_inputs(n, precision)

        def looped(stage):
            return jax.jit(lambda s: jax.lax.fori_loop(0, steps, lambda i, q: stage(q), s))

        runs = {"xla": looped(lambda s: xla_stage.euler_step(model, 0.0, s, dt, beds))}
        for rows in block_rows:
            for cols in block_cols:
                for halo in halos:
                    name = f"pallas-{rows or 'auto'}x{cols or 'full'}-halo{halo}"
                    runs[name] = looped(functools.partial(
                        lambda s, rows, cols, halo: tpu_stage.euler_step(
                            model, 0.0, s, dt, beds, block_rows=rows or None,
                            block_cols=cols or None,
                            halo=halo),
                        rows=rows, cols=cols, halo=halo))
        times = {k: [] for k in runs}
        results = {}
        for k, fn in list(runs.items()):
            try:
                results[k] = jax.block_until_ready(fn(state))  # compiles
            except Exception as e:  # noqa: BLE001 - report and go on with the others
                print(json.dumps(dict(N=n, run=k, error=f"{type(e).__name__}: {e}"[:2000])))
                del runs[k], times[k]
        for _ in range(repeat):
            for k, fn in runs.items():
                start = time.perf_counter()
                jax.block_until_ready(fn(state))
                times[k].append(time.perf_counter() - start)
        for k in runs:
            ms = 1e3 * statistics.median(times[k]) / steps
            diff = float(jnp.max(jnp.abs(results[k].h - results["xla"].h))) \
                if "xla" in results else None
            print(json.dumps(dict(N=n, run=k, precision=precision, ms_per_stage=ms,
                                  gcell_per_s=n * n / ms / 1e6,
                                  max_abs_diff_h_vs_xla=diff,
                                  backend=jax.default_backend())), flush=True)


def vector_peak(n=4096, chain=256, repeat=5):
    """Measured elementwise float32 rate of the device (flop/s): one fused loop applies
    ``chain`` multiply-adds to each of n*n values, so it reads and writes 8 bytes per
    ``2 * chain`` flops and is bound by the vector units, not by memory."""
    consts = np.linspace(0.999, 1.001, chain).astype(np.float32)

    @jax.jit
    def f(x):
        for c in consts:
            x = x * c + np.float32(1e-3)
        return x

    x = jnp.ones((n, n), jnp.float32)
    jax.block_until_ready(f(x))
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        jax.block_until_ready(f(x))
        times.append(time.perf_counter() - start)
    return 2 * chain * n * n / statistics.median(times)


def stage_cost(n=1024, precision="float32"):
    """XLA's own count for one forward-Euler stage of the default scheme, per cell:
    flops, transcendentals and bytes accessed (``cost_analysis`` of the compiled stage)."""
    model, state, beds, dt = stage_inputs(n, precision)
    compiled = jax.jit(lambda s: xla_stage.euler_step(model, 0.0, s, dt, beds)).lower(state).compile()
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, (list, tuple)) else cost
    return {k: float(cost[k]) / (n * n) for k in ("flops", "transcendentals", "bytes accessed")
            if k in cost}


def roofline(n=1024):
    """The measured elementwise rate and XLA's count of flops per cell and stage, and
    their ratio. On a TPU v5e: 685 GFLOP/s and 597 flops per cell, a "ceiling" of
    1.15 Gcell-stages/s that XLA's own stage beat (2.8 at N = 1024): the chain of dependent
    multiply-adds understates the vector units, so this is a floor on their rate, not a
    roofline."""
    peak = vector_peak()
    cost = stage_cost(n)
    print(json.dumps(dict(vector_peak_gflops=peak / 1e9, stage_cost_per_cell=cost,
                          compute_ceiling_gcell_stage_per_s=peak / cost["flops"] / 1e9,
                          backend=jax.default_backend())), flush=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, nargs="+", default=[1024, 2048])
    p.add_argument("--block-rows", type=int, nargs="+", default=[0, 32],
                   help="rows per block, multiples of 8; 0: the package's choice")
    p.add_argument("--block-cols", type=int, nargs="+", default=[0, 1024],
                   help="column block widths, multiples of 128; 0: full-width rows")
    p.add_argument("--halo", type=int, nargs="+", default=[tpu_stage.HALO],
                   help="halo rows each side of a block (multiples of 4)")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--precision", default="float32", choices=("float32", "float64"))
    p.add_argument("--roofline", action="store_true",
                   help="print the measured vector rate and XLA's flops per cell and stage")
    args = p.parse_args(argv)
    if args.roofline:
        roofline()
    if args.precision == "float64":
        jax.config.update("jax_enable_x64", True)
    bench_stages(args.n, args.block_rows, args.block_cols, args.steps, args.repeat,
                 args.precision, args.halo)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

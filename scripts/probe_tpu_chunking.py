"""Is a Pallas TPU kernel on whole blocks bound by on-chip memory traffic? A probe.

The same chain of elementwise float32 operations (``--ops`` per cell: multiplies, adds,
maxima, selects, optionally divisions) runs in three ways over an ``N x N`` grid:

* ``xla``: jitted jnp;
* ``whole``: a Pallas kernel whose body applies the chain to its whole block (``--rows``
  full-width rows), as :mod:`swe.pallas`'s stage kernel does: Mosaic unrolls each operation
  over the block's vregs, so every intermediate goes through VMEM;
* ``tiles``: the same kernel, but the body loops (``fori_loop``) over (8, 128) tiles, one
  vreg per value, so that intermediates can stay in registers.

It prints one JSON line per way: ms per call and operations per second (operations per
cell x cells / time). If ``tiles`` is much faster than ``whole``, the stage kernel is bound
by VMEM traffic rather than arithmetic, and computing it tile by tile is the way to speed
it up.

    python scripts/probe_tpu_chunking.py --n 4096 --ops 300
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import time

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def chain(a, b, c, d, ops, divide):
    """``ops`` elementwise operations (about) on four values; three results."""
    for k in range(ops // 6):
        a = a * b + c
        b = jnp.maximum(b, a * 0.5) - d
        c = jnp.where(a > b, a, c)
        d = (d / (jnp.abs(a) + 1.0)) if divide else d * 0.999
    return a, b, c


def whole_kernel(a_ref, b_ref, c_ref, d_ref, x_ref, y_ref, z_ref, *, ops, divide):
    x, y, z = chain(a_ref[...], b_ref[...], c_ref[...], d_ref[...], ops, divide)
    x_ref[...], y_ref[...], z_ref[...] = x, y, z


def tiles_kernel(a_ref, b_ref, c_ref, d_ref, x_ref, y_ref, z_ref, *, ops, divide, lanes):
    rows, width = a_ref.shape
    n_cols = width // lanes

    def body(k, carry):
        r = pl.multiple_of(jax.lax.div(k, n_cols) * 8, 8)
        c = pl.multiple_of(jax.lax.rem(k, n_cols) * lanes, lanes)
        at = (pl.ds(r, 8), pl.ds(c, lanes))
        x, y, z = chain(a_ref[at], b_ref[at], c_ref[at], d_ref[at], ops, divide)
        x_ref[at], y_ref[at], z_ref[at] = x, y, z
        return carry

    jax.lax.fori_loop(0, (rows // 8) * n_cols, body, 0)


def run(kind, n, rows, ops, divide, lanes):
    if kind == "xla":
        return jax.jit(lambda *q: chain(*q, ops, divide))
    kernel = (functools.partial(whole_kernel, ops=ops, divide=divide) if kind == "whole"
              else functools.partial(tiles_kernel, ops=ops, divide=divide, lanes=lanes))
    spec = pl.BlockSpec((rows, n), lambda i: (i, 0))
    out = jax.ShapeDtypeStruct((n, n), jnp.float32)
    return jax.jit(pl.pallas_call(
        kernel, grid=(n // rows,), in_specs=[spec] * 4, out_specs=[spec] * 3,
        out_shape=[out] * 3,
        compiler_params=pltpu.CompilerParams(vmem_limit_bytes=100 * 2**20)))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, nargs="+", default=[2048, 4096])
    p.add_argument("--rows", type=int, default=32)
    p.add_argument("--ops", type=int, nargs="+", default=[60, 300])
    p.add_argument("--lanes", type=int, default=128)
    p.add_argument("--divide", action="store_true")
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args(argv)
    for n in args.n:
        key = jax.random.split(jax.random.PRNGKey(0), 4)
        inputs = [jax.random.uniform(k, (n, n), jnp.float32, 0.5, 1.5) for k in key]
        for ops in args.ops:
            fns = {kind: run(kind, n, args.rows, ops, args.divide, args.lanes)
                   for kind in ("xla", "whole", "tiles")}
            times = {kind: [] for kind in fns}
            compile_s = {}
            for kind, fn in fns.items():
                t0 = time.perf_counter()
                jax.block_until_ready(fn(*inputs))
                compile_s[kind] = time.perf_counter() - t0
            for _ in range(args.repeat):
                for kind, fn in fns.items():
                    t0 = time.perf_counter()
                    jax.block_until_ready(fn(*inputs))
                    times[kind].append(time.perf_counter() - t0)
            ref = fns["xla"](*inputs)
            for kind in fns:
                out = fns[kind](*inputs)
                err = max(float(jnp.max(jnp.abs(o - r))) for o, r in zip(out, ref))
                ms = 1e3 * statistics.median(times[kind])
                print(json.dumps({
                    "probe": "tpu_chunking", "way": kind, "N": n, "rows": args.rows,
                    "lanes": args.lanes, "ops_per_cell": ops // 6 * 6,
                    "divide": args.divide, "ms": ms,
                    "Gops_per_s": ops // 6 * 6 * n * n / ms / 1e6,
                    "compile_s": compile_s[kind], "max_abs_diff_vs_xla": err,
                    "device": jax.devices()[0].device_kind}), flush=True)


if __name__ == "__main__":
    main()

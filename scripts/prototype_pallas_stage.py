"""Prototype, not part of the package: one forward-Euler stage of the unsplit scheme as a
single Pallas kernel for TPUs, to measure what a fused stage would give before it is built
into swe.

Why: on a TPU v5e chip (12-06) XLA's program for the default scheme keeps some 20
grid-sized intermediates per stage and reached 16.6% of the measured HBM triad at
N = 1024 and 6.1% at N = 2048 (README, "Accelerators"); the issue's target is 30%. A
kernel that reads the state and bed once, keeps every intermediate in the chip's on-chip
memory and writes the new state once moves about 7 words per cell and stage.

What: ``pallas_euler_step(model, t, state, dt, beds)`` equals ``model.euler_step(t, state,
dt, beds)`` (MUSCL with any limiter, or first order; any Riemann solver; hydrostatic
reconstruction; the draining-time positivity limiter; walls, outflows or any boundary that
prescribes no face mass flux) for models without friction or forcing and without a device
mesh. The ghost cells come from the model's boundary conditions, written into one padded
copy of each field by XLA (``padded_layout``); the kernel takes blocks of ``block_rows``
full-width rows (or of ``block_cols`` columns with 128 halo columns each side) with 8
halo rows each side (``pl.Element`` windows), computes every
interface of both directions with the package's own per-interface functions on whole
blocks (shifts are rolls), and writes the block's new state.

    python scripts/prototype_pallas_stage.py --check         # CPU, interpret mode: agrees
                                                             # with model.euler_step
    python scripts/prototype_pallas_stage.py --n 1024 2048 --block-rows 8 16 32 \
        --block-cols 0 512                                   # on a TPU: ms per stage,
                                                             # Pallas against XLA

Not yet measured on a TPU (written after the chip had been given back, checked in
interpret mode only): Mosaic may reject a shape or an op that interpret mode accepts.
Gradients would keep the XLA stage (a custom VJP); not written.
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
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

from swe import bench
from swe.boundaries import ghost_cells
from swe.model import ShallowWater, _centred_bed_slope, _interface
from swe.reconstruction import BVD, muscl_cell
from swe.state import State, desingularised_velocity

HALO = 8   # rows above and below each block: one sublane tile (the stencil needs 4)
LEFT = 4   # columns before the first interior one (2 ghost cells, then filler)
LANE_HALO = 128  # the same with column blocks: their windows start on a lane tile


def _left(block_cols):
    return LEFT if block_cols is None else LANE_HALO


def padded_layout(model: ShallowWater, t, state: State, beds, block_rows: int,
                  block_cols=None):
    """``(h, hu, hv, bed)`` with the model's ghost cells, each ``(rows, width)``: interior
    cell ``(i, j)`` at ``(HALO + i, left + j)``, ``rows = HALO + ny (rounded up to
    block_rows) + HALO``. Full-width rows (``block_cols`` None): ``left = 4`` and ``width``
    a multiple of 128 with at least 4 columns after the last interior one; with column
    blocks, ``left = 128`` and ``width = 128 + nx (rounded up to block_cols) + 128``.
    Beyond the ghost cells the fields repeat their edge values (finite, unused)."""
    ny, nx = state.h.shape
    ng = model.scheme.ghost_cells
    kw = dict(ng=ng, t=t, g=model.g, h_dry=model.h_dry)
    lo, hi = ghost_cells(state.h, state.hu, state.hv, beds[1], model.boundaries, axis=1, **kw)
    along_x = [jnp.concatenate([a, f, b], axis=1)
               for a, f, b in zip(lo, (state.h, state.hu, state.hv), hi)]
    lo, hi = ghost_cells(state.h, state.hv, state.hu, beds[0], model.boundaries, axis=0, **kw)
    h_y, hv_y, hu_y = (jnp.concatenate([a, f, b], axis=0)
                       for a, f, b in zip(lo, (state.h, state.hv, state.hu), hi))
    bed = jnp.zeros((ny + 2 * ng, nx + 2 * ng), state.h.dtype)
    bed = bed.at[ng:ng + ny, :].set(beds[1]).at[:, ng:ng + nx].set(beds[0])
    left = _left(block_cols)
    if block_cols is None:
        width = -(-(nx + 2 * LEFT) // 128) * 128
    else:
        width = 2 * LANE_HALO + -(-nx // block_cols) * block_cols
    ny_pad = -(-ny // block_rows) * block_rows
    pad = ((HALO - ng, ny_pad - ny + HALO - ng), (left - ng, width - nx - left - ng))
    out = []
    for x_version, y_version in zip(along_x, (h_y, hu_y, hv_y)):
        full = jnp.zeros_like(bed).at[ng:ng + ny, :].set(x_version)
        out.append(jnp.pad(full.at[:, ng:ng + nx].set(y_version), pad, mode="edge"))
    return (*out, jnp.pad(bed, pad, mode="edge"))


def _stage_kernel(s_ref, h_ref, hu_ref, hv_ref, b_ref, oh_ref, ohu_ref, ohv_ref, *,
                  ny, nx, block_rows, block_cols, limiter, riemann, roll):
    dt, g, h_dry, inv_dx, inv_dy = (s_ref[k] for k in range(5))
    h, hu, hv, b = h_ref[...], hu_ref[...], hv_ref[...], b_ref[...]
    shape = h.shape

    def at(a, k, axis):
        """``a`` at the cell ``k`` further along ``axis`` (rolled; edges wrap)."""
        return roll(a, (-k) % shape[axis], axis)

    row = (jax.lax.broadcasted_iota(jnp.int32, shape, 0) + pl.program_id(0) * block_rows
           - HALO)
    col = jax.lax.broadcasted_iota(jnp.int32, shape, 1) - _left(block_cols)
    if block_cols is not None:
        col = col + pl.program_id(1) * block_cols
    interior = (row >= 0) & (row < ny) & (col >= 0) & (col < nx)
    u = desingularised_velocity(h, hu, h_dry)
    v = desingularised_velocity(h, hv, h_dry)
    fluxes = {}
    outflow = jnp.zeros_like(h)
    for axis, un, ut, inv in ((1, u, v, inv_dx), (0, v, u, inv_dy)):
        if limiter is None:
            right = left = (h, un, ut, b)
            slope = 0.0
        else:
            stencil = [x for q in (h, un, ut, b) for x in (at(q, -1, axis), q, at(q, 1, axis))]
            faces = muscl_cell(*stencil, g, h_dry, limiter=limiter)
            right, left = faces[:4], faces[4:]
            slope = _centred_bed_slope(faces, g)
        # Interface j + 1/2, stored at cell j: its right face against cell j + 1's left face.
        f_h, f_n, f_t, corr_l, corr_r = _interface(
            *right, *(at(x, 1, axis) for x in left), g, riemann)
        f_h, f_n, f_t = f_h * inv, f_n * inv, f_t * inv
        fluxes[axis] = (f_h, f_n, f_t, (at(corr_r, -1, axis) - corr_l - slope) * inv)
        outflow = outflow + jnp.maximum(f_h, 0.0) - jnp.minimum(at(f_h, -1, axis), 0.0)
    outflow = dt * outflow
    drains = interior & (outflow > h)
    theta = jnp.where(drains, h / jnp.where(drains, outflow, 1.0), 1.0)
    dh = jnp.zeros_like(h)
    dhu = jnp.zeros_like(h)
    dhv = jnp.zeros_like(h)
    for axis, (f_h, f_n, f_t, source) in fluxes.items():
        scale = jnp.where(f_h >= 0.0, theta, at(theta, 1, axis))

        def minus_div(f):
            f = f * scale
            return at(f, -1, axis) - f

        dh = dh + minus_div(f_h)
        d_n, d_t = minus_div(f_n) + source, minus_div(f_t)
        dhu, dhv = (dhu + d_n, dhv + d_t) if axis == 1 else (dhu + d_t, dhv + d_n)
    new = ShallowWater._update(h, hu, hv, dh, dhu, dhv, dt, None, g, h_dry)
    cols = slice(None) if block_cols is None else slice(LANE_HALO, LANE_HALO + block_cols)
    for ref, x in zip((oh_ref, ohu_ref, ohv_ref), new):
        ref[...] = x[HALO:HALO + block_rows, cols]


def pallas_euler_step(model: ShallowWater, t, state: State, dt, beds, *, block_rows=16,
                      block_cols=None, interpret=False, vmem_mb=100):
    """:meth:`ShallowWater.euler_step` as one Pallas kernel (see the module docstring):
    blocks of ``block_rows`` rows, full width or ``block_cols`` wide (a multiple of 128;
    then each window carries 128 halo columns each side)."""
    if model.friction is not None or model.coriolis is not None or model.wind is not None \
            or model.sources or model.decomposition is not None or set(beds) != {0, 1}:
        raise ValueError("the prototype covers 2-D models without friction, forcing or a mesh")
    for axis in (0, 1):
        for bc, side in zip(model.boundaries.pair(axis), (-1, 1)):
            if bc.face_mass_flux(t, side, axis) is not None:
                raise ValueError(f"the prototype does not impose face mass fluxes ({bc!r})")
    if isinstance(model.scheme.limiter_fn, BVD):
        raise ValueError("the prototype covers three-cell MUSCL stencils, not THINC-BVD")
    if block_rows % 8:
        raise ValueError(f"block_rows={block_rows} is invalid; expected a multiple of 8")
    if block_cols is not None and block_cols % 128:
        raise ValueError(f"block_cols={block_cols} is invalid; expected a multiple of 128")
    ny, nx = state.h.shape
    fields = padded_layout(model, t, state, beds, block_rows, block_cols)
    rows, width = fields[0].shape
    dtype = state.h.dtype
    scalars = jnp.stack([jnp.asarray(x, dtype) for x in
                         (dt, model.g, model.h_dry, 1.0 / model.grid.dx, 1.0 / model.grid.dy)])
    # np.int32: a Python int would become an int64 operand where x64 is on, which
    # Mosaic's rotate rejects.
    roll = ((lambda a, k, axis: jnp.roll(a, k, axis)) if interpret
            else (lambda a, k, axis: pltpu.roll(a, np.int32(k), axis)))
    kernel = functools.partial(
        _stage_kernel, ny=ny, nx=nx, block_rows=block_rows, block_cols=block_cols,
        limiter=model.scheme.limiter_fn, riemann=model.scheme.riemann_fn, roll=roll)
    if block_cols is None:
        n_cols, out_width, left = 1, width, LEFT
        window = pl.BlockSpec((pl.Element(block_rows + 2 * HALO), pl.Element(width)),
                              lambda i, j: (i * block_rows, 0))
        out_block = pl.BlockSpec((block_rows, width), lambda i, j: (i, 0))
    else:
        out_width, left = width - 2 * LANE_HALO, 0
        n_cols = out_width // block_cols
        window = pl.BlockSpec((pl.Element(block_rows + 2 * HALO),
                               pl.Element(block_cols + 2 * LANE_HALO)),
                              lambda i, j: (i * block_rows, j * block_cols))
        out_block = pl.BlockSpec((block_rows, block_cols), lambda i, j: (i, j))
    out_shape = jax.ShapeDtypeStruct((rows - 2 * HALO, out_width), dtype)
    extra = {} if interpret else dict(
        compiler_params=pltpu.CompilerParams(vmem_limit_bytes=vmem_mb * 2**20))
    h, hu, hv = pl.pallas_call(
        kernel, grid=((rows - 2 * HALO) // block_rows, n_cols),
        in_specs=[pl.BlockSpec(memory_space=pltpu.SMEM)] + [window] * 4,
        out_specs=[out_block] * 3, out_shape=[out_shape] * 3, interpret=interpret,
        **extra)(scalars, *fields)
    return State(h=h[:ny, left:left + nx], hu=hu[:ny, left:left + nx],
                 hv=hv[:ny, left:left + nx])


def check_cases():
    """``(name, model, state, dt)``: the benchmark dam break, and a wet/dry bump with
    flow against walls and an outflow, for :func:`check`."""
    import swe

    model, state = bench.problem(24)
    yield "benchmark dam break, N = 24", model, state, 0.02
    model, state = bench.problem(136)  # two column blocks of 128: data across the seam
    x, y = model.grid.cell_centers()
    h = state.h + 0.1 * jnp.sin(3.0 * x + 1.0) * jnp.cos(2.0 * y)
    yield "waves on the dam break, N = 136", model, swe.State(
        h=h, hu=0.1 * jnp.sin(2.0 * y) * h, hv=0.1 * jnp.cos(x) * h), 0.005
    grid = swe.Grid(nx=20, ny=16, x=(0.0, 2.0), y=(0.0, 1.6))
    x, y = grid.cell_centers()
    bed = 0.4 * jnp.exp(-((x - 1.0) ** 2 + (y - 0.8) ** 2) / 0.1)
    h = jnp.maximum(0.3 + 0.1 * (x < 0.5) - bed, 0.0)
    boundaries = swe.Boundaries(east=swe.Outflow())
    for limiter in ("koren", "mc", None):
        scheme = (swe.FiniteVolume(reconstruction="first_order") if limiter is None
                  else swe.FiniteVolume(limiter=limiter))
        model = swe.ShallowWater(grid, bed=bed, g=9.81, boundaries=boundaries, scheme=scheme)
        state = swe.State(h=h, hu=0.2 * h, hv=-0.1 * h * (y > 0.8))
        yield f"wet/dry bump, {limiter or 'first order'}", model, state, 0.01
    # A thin, fast film: the draining-time limiter scales the outgoing fluxes.
    film = 0.01 + 0.3 * (x < 0.3)
    model = swe.ShallowWater(grid, g=9.81, boundaries=boundaries)
    yield "draining film, koren", model, swe.State(
        h=film, hu=jnp.full_like(film, 0.2), hv=0.1 * jnp.sin(3.0 * y)), 0.02


def check(blocks=((8, None), (16, None), (8, 128))) -> int:
    """Interpret mode on the CPU, float64: every case and ``(block_rows, block_cols)``
    against ``model.euler_step``; prints the largest differences and returns 1 on a
    mismatch."""
    jax.config.update("jax_enable_x64", True)
    worst = 0.0
    for name, model, state, dt in check_cases():
        beds = model.padded_beds()
        want = jax.jit(lambda s: model.euler_step(0.0, s, dt, beds))(state)
        for rows, cols in blocks:
            got = jax.jit(lambda s: pallas_euler_step(
                model, 0.0, s, dt, beds, block_rows=rows, block_cols=cols,
                interpret=True))(state)
            diff = max(float(jnp.max(jnp.abs(a - b)))
                       for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want)))
            scale = max(float(jnp.max(jnp.abs(a))) for a in jax.tree.leaves(want))
            print(json.dumps(dict(case=name, block_rows=rows, block_cols=cols,
                                  max_abs_diff=diff, max_abs_value=scale)))
            worst = max(worst, diff / scale)
    ok = worst < 1e-13
    print(json.dumps(dict(check="pallas stage == model.euler_step", worst_relative=worst,
                          ok=ok)))
    return 0 if ok else 1


def bench_stages(ns, block_rows, block_cols=(0,), steps=20, repeat=3, precision="float32"):
    """ms per stage of the default scheme on the benchmark problem, XLA against Pallas
    (every ``block_rows`` x ``block_cols``, 0 for full-width rows), ``steps`` stages per
    timed call (a ``fori_loop``), interleaved, medians of ``repeat``."""
    for n in ns:
        model, state = bench.problem(n)
        state = jax.tree.map(lambda a: a.astype(precision), state)
        beds = jax.tree.map(lambda a: a.astype(precision), model.padded_beds())
        dt = jnp.asarray(0.1 * model.grid.dx, precision)

        def looped(stage):
            return jax.jit(lambda s: jax.lax.fori_loop(0, steps, lambda i, q: stage(q), s))

        runs = {"xla": looped(lambda s: model.euler_step(0.0, s, dt, beds))}
        for rows in block_rows:
            for cols in block_cols:
                runs[f"pallas-{rows}x{cols or 'full'}"] = looped(functools.partial(
                    lambda s, rows, cols: pallas_euler_step(
                        model, 0.0, s, dt, beds, block_rows=rows, block_cols=cols or None),
                    rows=rows, cols=cols))
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


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true",
                   help="interpret mode on the CPU against model.euler_step, then exit")
    p.add_argument("--n", type=int, nargs="+", default=[1024, 2048])
    p.add_argument("--block-rows", type=int, nargs="+", default=[8, 16, 32])
    p.add_argument("--block-cols", type=int, nargs="+", default=[0, 512],
                   help="column block widths, multiples of 128; 0: full-width rows")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--precision", default="float32", choices=("float32", "float64"))
    args = p.parse_args(argv)
    if args.check:
        return check()
    if args.precision == "float64":
        jax.config.update("jax_enable_x64", True)
    bench_stages(args.n, args.block_rows, args.block_cols, args.steps, args.repeat,
                 args.precision)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

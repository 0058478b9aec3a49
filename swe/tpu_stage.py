"""The forward-Euler stage as one Pallas kernel for TPUs.

XLA's program for a stage of the unsplit scheme keeps some twenty grid-sized intermediates
in device memory (interface states, fluxes, draining factors) and was measured at 16.6%
(N = 1024) and 6.1% (N = 2048) of a TPU v5e's memory bandwidth. :func:`euler_step` computes
the same stage in one kernel: each block of rows (with halo rows each side) is read once,
every interface of both directions is computed in the chip's on-chip memory with the
package's own per-cell and per-interface functions (:func:`swe.reconstruction.muscl_cell`
and those of :mod:`swe.pointwise`; neighbours are rolls), and the block's new state is
written once. On a TPU v5e (float32, benchmark dam break) a stage took 1.07 ms at
N = 2048 with the padding around the kernel against XLA's 3.60, and the kernel alone
9.08 ms at 4096 against 22.3; at 1024 XLA is quicker (0.37 against 0.41 ms), since its
intermediates then stay on the chip as well.
:func:`ssp_step` chains the stages of an SSP Runge-Kutta step in the kernel's layout, and
a run carries its state in that layout from step to step (:class:`BlockLayout`, padded
once a run by :func:`swe.stepping.initial_carry`): whole runs of the benchmark reach 2.44
Gcell-updates/s at N = 2048 on a TPU v5e (float32), 30.6% of its measured triad.

It gives :func:`swe.steps.euler_step` to round-off (the same functions in the same
order): MUSCL with any slope or face limiter, or first order; any Riemann solver;
hydrostatic reconstruction; the draining-time positivity limiter; friction (any law, scalar
or field coefficients); Coriolis, wind and mass sources (their pointwise rates are computed
by XLA and read by the kernel); every boundary condition (walls, outflows, periodic sides,
stages, and inflows, whose face mass fluxes the kernel reads as one more field per
direction that has them). Not covered, and left to XLA: THINC-BVD (five-cell stencils),
the split scheme's MUSCL-Hancock sweeps, 1-D models (one swept direction) and device
meshes. Reverse mode differentiates XLA's stage (a custom VJP): a stage's VJP is XLA's
exactly, and a whole run's gradient agrees with XLA's within the scheme's own round-off
sensitivity (its limiters and wave speeds have kinks; see tests/test_tpu_stage.py).

:class:`swe.FiniteVolume`'s ``kernel`` chooses between this kernel and XLA's stage
(:mod:`swe.stages`).
"""

from __future__ import annotations

import contextlib
import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

from .boundaries import ghost_cells
from . import xla_stage
from .operator import RolledFaces, divergence, donor_scale, draining_factors, momentum_source
from .pointwise import (centred_bed_slope, desingularised_velocity, euler_update, interface,
                        shu_osher)
from .reconstruction import muscl_cell
from .stages import stage_kernel_for_run, unsupported
from .state import State

# Rows above and below each block. The stencils reach 3 rows (a cell's draining factor
# needs the faces of its neighbours, whose fluxes need theirs); Mosaic takes windows whose
# height is a multiple of 8, so halos are multiples of 4. A block of 32 rows with 8 halo
# rows each side computes 48 rows, with 4 each side 40.
HALO = 4
MARGIN = 4        # columns each side of the interior with full-width rows (wrapped)
LANE_HALO = 128   # the same with column blocks: their windows start on a lane tile
# Rows per block: the most of BLOCK_ROWS_CHOICES whose window (block and halos, by the
# window's width) fits WINDOW_BYTES, and not more than the grid's rows. On a TPU v5e
# (float32, ms per stage at N = 2048): 32 rows with 8-row halos 1.81, with 4-row
# halos 1.73; 64 rows 1.71 / 1.67; 128 rows 1.67 / 1.66. At 4096 a 128-row window (2.4 MB
# a field) ran out of on-chip memory, while 1.25 MB windows compiled at 2048; the limit
# keeps to what has run. A run's chained SSP-RK2 step (8 halo rows) at 4096 (ms a step):
# 32 rows 7.51, 40 rows 7.18, 48 rows 7.02 (1.08 MB windows; 64 rows, 1.35 MB, were
# slower); at 2048 64 rows 1.75, 96 rows 1.74, 128 rows 1.69. At 8192 (whole runs to
# t = 0.04, 238 steps) full-width rows in blocks of 24 took 7.72 s, column
# blocks (one padding pass a stage) 8.33 s; 16-row blocks were slower a step (36.2 ms
# against 31.7 for 24 rows, 34.1 for 32).
# The budget counts HALO (4) rows each side, also for the chained stages' windows, whose
# 8 halo rows make them larger (2048: 1.25 MB, 4096: 1.08, 8192: 1.33): those heights are
# the ones measured quickest, and a budget counting 8 rows would take 96 rows at 2048 and
# 16 at 8192, both slower. (With 24 among the heights, small grids of 17-24, 33-40 or
# 65-72 rows take one 24-row block or a few, where 16 or 48 rows computed more.)
BLOCK_ROWS_CHOICES = (128, 96, 64, 48, 32, 24, 16, 8)
WINDOW_BYTES = 1_200_000
BLOCK_COLS = 1024  # column blocks where the full-width layout is wider than MAX_FULL_WIDTH
MAX_FULL_WIDTH = 8320  # full-width rows up to 8312 cells (measured at 8192: 24-row blocks)
VMEM_MB = 100
# Cell j + 1's left faces: computed again from its own stencil (True) or rolled from cell j's
# results (False, the default): the same arithmetic with one dependent roll fewer, twice
# the reconstruction work; measured slower on a TPU v5e (1.91 ms a stage at N = 2048
# against 1.64).
RECOMPUTE_NEIGHBOUR_FACES = False
# Halo rows of the chained stages of :func:`ssp_step`: a stage written in the layout has
# its first row there, and Mosaic takes an output window only on a tile of 8 rows. The
# kernel computes all of them (3 rows each side would do): on a TPU v5e a window
# starting 4 rows above its block was refused ("Couldn't prove that tiling (8) divides
# index"), and reading the middle of an 8-halo window at a row offset of 4 took 1.46x the
# time at N = 2048 (1.29x at 4096).
CHAINED_HALO = 8

def block_rows_for(ny, width, itemsize, halo=HALO):
    """Rows per block for windows ``width`` wide of ``itemsize``-byte values: of the
    :data:`BLOCK_ROWS_CHOICES` whose window fits :data:`WINDOW_BYTES` (and not taller than
    the grid), the one that computes the fewest rows in all (blocks times their windows'
    rows: the grid's rows rounded up to whole blocks, and each block's halos), the taller
    on a tie (56 rows take 32-row blocks, not 48 with 40 rows of padding)."""
    rows = -(-ny // 8) * 8
    fits = [c for c in BLOCK_ROWS_CHOICES
            if c <= rows and (c + 2 * halo) * width * itemsize <= WINDOW_BYTES]
    if not fits:
        return BLOCK_ROWS_CHOICES[-1]
    return min(fits, key=lambda c: (-(-ny // c) * (c + 2 * halo), -c))


def block_shape(ny, nx, itemsize, block_rows=None, block_cols=None, halo=HALO):
    """``(block_rows, block_cols)`` of :func:`euler_step` for an ``(ny, nx)`` grid of
    ``itemsize``-byte values, the defaults filled in: column blocks of :data:`BLOCK_COLS`
    where the full-width layout would be wider than :data:`MAX_FULL_WIDTH` (from 8313
    cells; None: full-width rows), rows by :func:`block_rows_for` the window's width."""
    full_width = layout(nx, ny, 8, None, halo)[1]
    if block_cols is None and full_width > MAX_FULL_WIDTH:
        block_cols = BLOCK_COLS
    if block_rows is None:
        width = full_width if block_cols is None else block_cols + 2 * LANE_HALO
        block_rows = block_rows_for(ny, width, itemsize, halo)
    return block_rows, block_cols


def layout(nx, ny, block_rows, block_cols, halo=HALO):
    """``(rows, width, left)`` of the padded fields: interior cell ``(i, j)`` at
    ``(halo + i, left + j)``; ``rows`` covers ``ny`` rounded up to ``block_rows`` and a halo
    each side. Full-width rows (``block_cols`` None) have ``left = 0`` and a width that is
    a multiple of 128 with at least :data:`MARGIN` columns after the last interior one and
    before the first, counted from the last column backwards: the kernel's neighbours are
    rolls, which wrap, so column ``width - 1`` is column -1 (so the interior starts on a
    lane tile and a block's new rows are written without a shift). Column blocks have 128
    halo columns each side."""
    rows = 2 * halo + -(-ny // block_rows) * block_rows
    if block_cols is None:
        return rows, -(-(nx + 2 * MARGIN) // 128) * 128, 0
    return rows, 2 * LANE_HALO + -(-nx // block_cols) * block_cols, LANE_HALO


def _columns_before(left, width, n):
    """The ``n`` columns before the interior's first in :func:`layout` (wrapped to the end
    of the row where the interior starts at column 0)."""
    return slice(left - n, left) if left else slice(width - n, width)


def padded_fields(model, t, state, beds, block_rows, block_cols, halo=HALO):
    """``(h, hu, hv, bed)`` in :func:`layout` with the model's ghost cells (two layers, or
    one first order): those along x in the rows of the interior, those along y in its
    columns. Elsewhere (corners, and beyond the ghost cells) zeros: finite, and unused by
    the interior's update.

    Each field is one zero-padding pass over the interior and four thin in-place updates
    (the ghost cells), so XLA writes it once. Concatenating ghost cells along each axis,
    overlaying the two versions and padding with edge values instead writes each field
    some four times over: on a TPU v5e (N = 2048, float32) 0.57 ms a stage against this
    form's 0.25 ms and the kernel's ~1.1 ms."""
    ny, nx = state.h.shape
    ng = model.scheme.ghost_cells
    rows, width, left = layout(nx, ny, block_rows, block_cols, halo)
    pad = ((halo, rows - ny - halo), (left, width - nx - left))
    inner_rows, inner_cols = slice(halo, halo + ny), slice(left, left + nx)
    out = _set_ghosts(model, t, [jnp.pad(f, pad) for f in (state.h, state.hu, state.hv)],
                      state, beds, left, halo)
    low = _columns_before(left, width, ng)
    bed = jnp.pad(beds[1][:, ng:ng + nx], pad)
    bed = bed.at[inner_rows, low].set(beds[1][:, :ng]).at[
        inner_rows, left + nx:left + nx + ng].set(beds[1][:, ng + nx:])
    bed = bed.at[halo - ng:halo, inner_cols].set(beds[0][:ng]).at[
        halo + ny:halo + ny + ng, inner_cols].set(beds[0][ny + ng:])
    return (*out, bed.astype(state.h.dtype))


def _ghosts(model, t, state, beds):
    """The ghost cells of ``state`` at time ``t``: ``(lo_x, hi_x, lo_y, hi_y)``, each a
    tuple ``(h, hu, hv)`` of strips (along y the boundary functions take hv as the
    normal momentum; reordered here)."""
    kw = dict(ng=model.scheme.ghost_cells, t=t, g=model.g, h_dry=model.h_dry)
    lo_x, hi_x = ghost_cells(state.h, state.hu, state.hv, beds[1], model.boundaries,
                             axis=1, **kw)
    lo_y, hi_y = ghost_cells(state.h, state.hv, state.hu, beds[0], model.boundaries,
                             axis=0, **kw)
    return lo_x, hi_x, *((g[0], g[2], g[1]) for g in (lo_y, hi_y))


def _interior(fields, shape, halo, left=0):
    """The :class:`swe.State` in the first three of ``fields`` (in :func:`layout`; any
    leading axes kept), not checked again (:meth:`swe.State.rates`): a run's carry or a
    tendency in the carry's structure (:meth:`BlockLayout.with_interior`)."""
    ny, nx = shape
    return State.rates(*(f[..., halo:halo + ny, left:left + nx] for f in fields[:3]))


def _set_ghosts(model, t, fields, state, beds, left, halo):
    """``fields`` (h, hu, hv in :func:`layout`) with the ghost cells of ``state`` (their
    interior) at time ``t`` written in place."""
    ny, nx = state.h.shape
    width = fields[0].shape[1]
    ng = model.scheme.ghost_cells
    inner_rows, inner_cols = slice(halo, halo + ny), slice(left, left + nx)
    low = _columns_before(left, width, ng)
    lo_x, hi_x, lo_y, hi_y = _ghosts(model, t, state, beds)
    return [f.at[inner_rows, low].set(a).at[inner_rows, left + nx:left + nx + ng].set(b)
            .at[halo - ng:halo, inner_cols].set(c).at[halo + ny:halo + ny + ng, inner_cols]
            .set(d) for f, a, b, c, d in zip(fields, lo_x, hi_x, lo_y, hi_y)]


def _refilled(model, t, fields, beds, shape, halo):
    """A stage's new state in :func:`layout` (full-width rows; rows outside the blocks'
    never written) made a next stage's input, each field by three in-place writes: the
    rows above the interior (zeros, with the ghost cells along y of time ``t`` at its
    end), the rows below it (the same, ghost cells first) and the columns after it
    (the ghost cells along x of its last columns, zeros, those of its first columns:
    the wrapped columns before it). The ghost cells are those of :func:`padded_fields`;
    elsewhere zeros, as there. (Six thin writes a field, one per ghost-cell strip and
    row band, made eighteen XLA operations a refill; each costs a few microseconds on a
    TPU whatever its size.)"""
    ny, nx = shape
    rows, width = fields[0].shape
    ng = model.scheme.ghost_cells
    out = []
    for f, *strips in zip(fields, *_ghosts(model, t, _interior(fields, shape, halo), beds)):
        lo_x, hi_x, lo_y, hi_y = strips
        # Pads (not concatenations or updates of zeros): XLA fuses them into the write.
        top = jnp.pad(lo_y, ((halo - ng, 0), (0, width - nx)))
        bottom = jnp.pad(hi_y, ((0, rows - halo - ny - ng), (0, width - nx)))
        side = (jnp.pad(hi_x, ((0, 0), (0, width - nx - ng)))
                + jnp.pad(lo_x, ((0, 0), (width - nx - ng, 0))))
        out.append(f.at[:halo].set(top).at[halo + ny:].set(bottom)
                   .at[halo:halo + ny, nx:].set(side))
    return out


def _prescribed_faces(model, t, shape, layout_, dtype, halo):
    """Per axis whose boundaries prescribe a face mass flux (inflows): ``{axis: (sides,
    values)}``, ``sides`` which of (low, high) do, ``values`` a field in :func:`layout`
    holding each prescribed flux at the cell that stores its face in the kernel (the
    interface ``j + 1/2`` lives at cell ``j``: column -1 and nx - 1 along x, row -1 and
    ny - 1 along y), zeros elsewhere."""
    ny, nx = shape
    rows, width, left = layout_
    out = {}
    for axis in (0, 1):
        sides, values = [], jnp.zeros((rows, width), dtype)
        for bc, side in zip(model.boundaries.pair(axis), (-1, 1)):
            value = bc.face_mass_flux(t, side, axis)
            sides.append(value is not None)
            if value is None:
                continue
            edge = jnp.broadcast_to(jnp.squeeze(jnp.asarray(value, dtype)),
                                    (nx,) if axis == 0 else (ny,))
            if axis == 1:
                col = (left - 1) % width if side < 0 else left + nx - 1
                values = values.at[halo:halo + ny, col].set(edge)
            else:
                row = halo - 1 if side < 0 else halo + ny - 1
                values = values.at[row, left:left + nx].set(edge)
        if any(sides):
            out[axis] = (tuple(sides), values)
    return out


def _pad_pointwise(field, rows, width, left, halo):
    """A pointwise field (no ghost cells needed) in :func:`layout`."""
    ny, nx = field.shape
    return jnp.pad(field, ((halo, rows - ny - halo), (left, width - nx - left)), mode="edge")


def _kernel(*refs, ny, nx, block_rows, block_cols, halo, limiter, riemann, roll, forcing,
            friction_def, friction_kinds, prescribed, alpha, cols):
    """One block. ``refs``: the SMEM scalars (dt, g, h_dry, 1/dx, 1/dy, then the friction
    law's scalar coefficients), the windows of h, hu, hv and bed, of the forcing rates
    present (``forcing``: which of dh, dhu, dhv), of the prescribed face fluxes
    (``prescribed``: per axis that has them, which of its sides; see
    :func:`_prescribed_faces`) and of the friction law's field coefficients
    (``friction_kinds``: "scalar" or "field" per leaf), with ``alpha`` (not None) the
    blocks of the state to blend with (see :func:`euler_step`), then the outputs."""
    n_rates = sum(forcing)
    s_ref, h_ref, hu_ref, hv_ref, b_ref = refs[:5]
    rate_refs = refs[5:5 + n_rates]
    face_refs = dict(zip(prescribed, refs[5 + n_rates:5 + n_rates + len(prescribed)]))
    n_blend = 0 if alpha is None else 3
    coefficient_refs = refs[5 + n_rates + len(prescribed):len(refs) - 3 - n_blend]
    blend_refs = refs[len(refs) - 3 - n_blend:-3]
    oh_ref, ohu_ref, ohv_ref = refs[-3:]
    dt, g, h_dry, inv_dx, inv_dy = (s_ref[0, k] for k in range(5))
    h, hu, hv, b = h_ref[...], hu_ref[...], hv_ref[...], b_ref[...]
    shape = h.shape

    def at(a, k, axis):
        """``a`` at the cell ``k`` further along ``axis`` (rolled; edges wrap)."""
        return roll(a, (-k) % shape[axis], axis)

    row = (jax.lax.broadcasted_iota(jnp.int32, shape, 0) + pl.program_id(0) * block_rows
           - halo)
    col = jax.lax.broadcasted_iota(jnp.int32, shape, 1)
    if block_cols is None:  # the last MARGIN columns are those before the first (wrapped)
        col = jnp.where(col >= shape[1] - MARGIN, col - shape[1], col)
    else:
        col = col - LANE_HALO + pl.program_id(1) * block_cols
    interior = (row >= 0) & (row < ny) & (col >= 0) & (col < nx)
    u = desingularised_velocity(h, hu, h_dry)
    v = desingularised_velocity(h, hv, h_dry)
    faces_at = RolledFaces(at)  # interface j + 1/2 stored at cell j
    fluxes = {}
    for axis, un, ut, inv in ((1, u, v, inv_dx), (0, v, u, inv_dy)):
        if limiter is None:
            right = (h, un, ut, b)
            left = [at(x, 1, axis) for x in right]
            slope = None
        else:
            near = {k: [at(q, k, axis) for q in (h, un, ut, b)]
                    for k in ((-1, 1, 2) if RECOMPUTE_NEIGHBOUR_FACES else (-1, 1))}
            near[0] = [h, un, ut, b]
            faces = muscl_cell(*(x for q in zip(near[-1], near[0], near[1]) for x in q), g,
                               h_dry, limiter=limiter)
            right, left = faces[:4], faces[4:]
            slope = centred_bed_slope(faces, g)
            if RECOMPUTE_NEIGHBOUR_FACES:  # cell j + 1's faces from its own stencil
                left = muscl_cell(*(x for q in zip(near[0], near[1], near[2]) for x in q),
                                  g, h_dry, limiter=limiter)[4:]
            else:
                left = [at(x, 1, axis) for x in left]
        # Interface j + 1/2, stored at cell j: its right face against cell j + 1's left face.
        f_h, f_n, f_t, corr_l, corr_r = interface(*right, *left, g, riemann)
        if axis in prescribed:  # inflows: the boundary faces' mass fluxes are given
            along, across, n_along, n_across = (col, row, nx, ny) if axis == 1 else (
                row, col, ny, nx)
            low, high = prescribed[axis]
            faces = ((along == -1) & low) | ((along == n_along - 1) & high)
            faces = faces & (across >= 0) & (across < n_across)
            f_h = jnp.where(faces, face_refs[axis][...], f_h)
        f_h, f_n, f_t = f_h * inv, f_n * inv, f_t * inv
        source = momentum_source(corr_l, corr_r, slope, faces_at, axis)
        fluxes[axis] = (f_h, f_n, f_t, source * inv)
    # Ghost cells are reservoirs of the boundary condition: never limited.
    theta = draining_factors(h, {axis: f[0] for axis, f in fluxes.items()}, dt, faces_at,
                             active=interior)
    scale = {axis: donor_scale(f[0], faces_at.donors(theta, axis))
             for axis, f in fluxes.items()}
    dh, dhu, dhv = divergence(fluxes, jnp.zeros_like(h), faces_at, scale)
    rates = iter(r[...] for r in rate_refs)
    dh, dhu, dhv = (d + next(rates) if present else d
                    for d, present in zip((dh, dhu, dhv), forcing))
    friction = None
    if friction_def is not None:
        scalars = iter(range(5, 5 + friction_kinds.count("scalar")))
        fields = iter(coefficient_refs)
        friction = jax.tree.unflatten(friction_def, [
            s_ref[0, next(scalars)] if kind == "scalar" else next(fields)[...]
            for kind in friction_kinds])
    new = euler_update(h, hu, hv, dh, dhu, dhv, dt, friction, g, h_dry)
    for k, (ref, x) in enumerate(zip((oh_ref, ohu_ref, ohv_ref), new)):
        x = x[halo:halo + block_rows, cols]
        ref[...] = x if alpha is None else alpha * blend_refs[k][...] + (1.0 - alpha) * x


def _forward(model, t, state, dt, beds, sources, interpret, block_rows, block_cols, halo,
             alpha=None, base=None, padded=None, out_padded=False):
    """The kernel's stage (no gradient rule; see :func:`euler_step`). ``padded``: the
    input's :func:`padded_fields`, if already made; ``out_padded``: the new ``(h, hu, hv)``
    in :func:`layout` (full-width rows only; see :func:`_refilled`), and ``base`` then in
    it too, instead of a :class:`swe.State`."""
    ny, nx = state.h.shape
    dtype = state.h.dtype
    rows, width, left = layout(nx, ny, block_rows, block_cols, halo)
    fields = list(padded_fields(model, t, state, beds, block_rows, block_cols, halo)
                  if padded is None else padded)
    rates = model.explicit_rates(t, state) if sources else (None, None, None)
    forcing = tuple(r is not None for r in rates)
    fields += [_pad_pointwise(jnp.broadcast_to(r, (ny, nx)).astype(dtype), rows, width, left,
                             halo)
               for r in rates if r is not None]
    faces = _prescribed_faces(model, t, (ny, nx), (rows, width, left), dtype, halo)
    fields += [values for _, values in faces.values()]
    scalars = [dt, model.g, model.h_dry, 1.0 / model.grid.dx, 1.0 / model.grid.dy]
    friction_def, friction_kinds = None, ()
    if sources and model.friction is not None:
        leaves, friction_def = jax.tree.flatten(model.friction)
        friction_kinds = tuple("scalar" if jnp.ndim(x) == 0 else "field" for x in leaves)
        scalars += [x for x in leaves if jnp.ndim(x) == 0]
        fields += [_pad_pointwise(jnp.asarray(x, dtype), rows, width, left, halo)
                   for x in leaves if jnp.ndim(x) != 0]
    # One row: vmapped, the scalars gain a leading axis and the block (one row, all of
    # them) still spans the last two dimensions, as Mosaic requires.
    scalars = jnp.stack([jnp.asarray(x, dtype) for x in scalars])[None, :]
    # np.int32: a Python int would become an int64 operand where x64 is on, which Mosaic's
    # rotate rejects.
    roll = ((lambda a, k, axis: jnp.roll(a, k, axis)) if interpret
            else (lambda a, k, axis: pltpu.roll(a, np.int32(k), axis)))
    kernel = functools.partial(
        _kernel, ny=ny, nx=nx, block_rows=block_rows, block_cols=block_cols, halo=halo,
        limiter=model.scheme.limiter_fn, riemann=model.scheme.riemann_fn, roll=roll,
        forcing=forcing, friction_def=friction_def, friction_kinds=friction_kinds,
        prescribed={axis: sides for axis, (sides, _) in faces.items()}, alpha=alpha,
        cols=slice(None) if out_padded else slice(0, -(-nx // 128) * 128)
        if block_cols is None else slice(LANE_HALO, LANE_HALO + block_cols))
    if block_cols is None:
        n_cols, out_width = 1, -(-nx // 128) * 128  # the interior's columns, whole tiles
        window = pl.BlockSpec((pl.Element(block_rows + 2 * halo), pl.Element(width)),
                              lambda i, j: (i * block_rows, 0))
        out_block = pl.BlockSpec((block_rows, out_width), lambda i, j: (i, 0))
        if out_padded:  # the blocks' rows at theirs in the layout, below the halo
            out_width = width
            out_block = pl.BlockSpec((pl.Element(block_rows), pl.Element(width)),
                                     lambda i, j: (pl.multiple_of(halo + i * block_rows, 8),
                                                   0))
    else:
        out_width = width - 2 * LANE_HALO
        n_cols = out_width // block_cols
        window = pl.BlockSpec((pl.Element(block_rows + 2 * halo),
                               pl.Element(block_cols + 2 * LANE_HALO)),
                              lambda i, j: (i * block_rows, j * block_cols))
        out_block = pl.BlockSpec((block_rows, block_cols), lambda i, j: (i, j))
    out_shape = jax.ShapeDtypeStruct((rows if out_padded else rows - 2 * halo, out_width),
                                     dtype)
    specs = [pl.BlockSpec(memory_space=pltpu.SMEM)] + [window] * len(fields)
    if alpha is not None:  # the state to blend with, in the outputs' shape and blocks
        fields += list(base) if out_padded else [
            jnp.pad(x, ((0, out_shape.shape[0] - ny), (0, out_width - nx)))
            for x in (base.h, base.hu, base.hv)]
        specs += [out_block] * 3
    extra = {} if interpret else dict(
        compiler_params=pltpu.CompilerParams(vmem_limit_bytes=VMEM_MB * 2**20))
    # 32-bit data are traced (kernel and index maps) with 64-bit types off: with
    # jax_enable_x64 on, Python numbers in the scheme's functions (jnp.where(c, x, 0.0))
    # and index maps become 64-bit values, and the TPU's kernel compiler aborts the process
    # on them ("Check failed: ... bitwidth_ <= 32").
    with jax.enable_x64(False) if jnp.dtype(dtype).itemsize <= 4 else contextlib.nullcontext():
        h, hu, hv = pl.pallas_call(
            kernel, grid=((rows - 2 * halo) // block_rows, n_cols),
            in_specs=specs,
            out_specs=[out_block] * 3, out_shape=[out_shape] * 3, interpret=interpret,
            **extra)(scalars, *fields)
    if out_padded:
        return h, hu, hv
    return State(h=h[:ny, :nx], hu=hu[:ny, :nx], hv=hv[:ny, :nx])  # no copy if aligned


def euler_step(model, t, state, dt, beds, *, sources=True, blend=None, interpret=False,
               block_rows=None, block_cols=None, halo=HALO):
    """:func:`swe.steps.euler_step` (without its ``predictor``) as one Pallas kernel;
    for a model :func:`swe.stages.unsupported` accepts. Blocks of ``block_rows`` rows (a
    multiple of 8; by default :func:`block_rows_for` the window's width) with ``halo`` rows
    each side (a multiple of 4), full width or, for ``block_cols`` (a multiple of 128; by
    default for grids wider than 8312 cells, :data:`MAX_FULL_WIDTH`), that many columns
    with 128 halo columns each side.
    ``blend=(alpha, base)``: ``alpha * base + (1 - alpha) * stage`` instead (a Shu-Osher
    stage of an SSP scheme, :func:`swe.pointwise.blended`), in the kernel: on a TPU v5e
    (N = 2048, float32) a separate XLA pass costs ~0.2 ms a step of ~2.2. Reverse-mode
    derivatives are those of XLA's stage (:func:`swe.xla_stage.euler_step`)."""
    _check(model, beds, block_rows, block_cols, halo)
    block_rows, block_cols = block_shape(*state.h.shape, jnp.dtype(state.h.dtype).itemsize,
                                         block_rows, block_cols, halo)
    t, dt = jnp.asarray(t), jnp.asarray(dt)
    alpha, base = (None, None) if blend is None else blend
    dynamic, static = eqx.partition((model, t, state, dt, beds, base), eqx.is_array)

    def stage(dynamic):
        m, t_, s, dt_, b, base_ = eqx.combine(dynamic, static)
        return _forward(m, t_, s, dt_, b, sources, interpret, block_rows, block_cols, halo,
                        alpha, base_)

    def reference(dynamic):
        m, t_, s, dt_, b, base_ = eqx.combine(dynamic, static)
        return xla_stage.euler_step(m, t_, s, dt_, b, sources=sources,
                                    blend=None if alpha is None else (alpha, base_))

    return _differentiated_as(stage, reference, dynamic)


def _check(model, beds, block_rows, block_cols, halo, halo_multiple=4):
    """ValueError for a model the kernel does not cover or a block shape it cannot take."""
    why = unsupported(model, beds)
    if why is not None:
        raise ValueError(f"the Pallas stage cannot run {why}")
    if block_rows is not None and (block_rows % 8 or block_rows < 8):
        raise ValueError(f"block_rows={block_rows} is invalid; expected a multiple of 8")
    if not isinstance(halo, int) or halo < 4 or halo % halo_multiple:
        why = ("windows of block_rows + 2 halo rows must be whole tiles of 8 rows"
               if halo_multiple == 4 else "chained stages write rows from the halo's end, "
               "which must start a tile of 8 rows")
        raise ValueError(f"halo={halo!r} is invalid; expected a multiple of {halo_multiple} "
                         f"({why})")
    if block_cols is not None and (block_cols % 128 or block_cols < 128):
        raise ValueError(f"block_cols={block_cols} is invalid; expected a multiple of 128")


def _differentiated_as(fn, reference, dynamic):
    """``fn(dynamic)``, its reverse-mode derivatives those of ``reference`` (a custom VJP:
    Pallas kernels have no autodiff rules)."""
    wrapped = jax.custom_vjp(fn)
    wrapped.defvjp(lambda d: (fn(d), d), lambda d, c: jax.vjp(reference, d)[1](c))
    return wrapped(dynamic)


class BlockLayout(eqx.Module):
    """A state carried between steps in the kernel's :func:`layout` (full-width rows, the
    chained stages' :data:`CHAINED_HALO`), its ghost cells those of the state's time, with
    the bed in the same layout: what :func:`ssp_step` takes and returns in a run that
    takes the kernel (:func:`to_block_layout`). A step then starts from the layout the
    kernel reads and ends in it, so no pass over the state pads it. :attr:`interior` is the
    state (slices, which XLA fuses into their consumers: the step size's reduction, the
    envelopes, the saved frames)."""

    h: jax.Array
    hu: jax.Array
    hv: jax.Array
    bed: jax.Array
    shape: tuple = eqx.field(static=True)
    block_rows: int = eqx.field(static=True)
    halo: int = eqx.field(static=True)

    @property
    def interior(self):
        """The :class:`swe.State` (any leading axes kept)."""
        return _interior((self.h, self.hu, self.hv), self.shape, self.halo)

    def with_interior(self, state, fill=0.0):
        """A :class:`BlockLayout` of this layout holding ``state`` in its interior and
        ``fill`` everywhere else (bed included): e.g. a tendency in the carry's structure."""
        (ny, nx), halo = self.shape, self.halo
        fields = [jnp.full_like(f, fill).at[halo:halo + ny, :nx].set(x)
                  for f, x in zip((self.h, self.hu, self.hv), (state.h, state.hu, state.hv))]
        return BlockLayout(*fields, jnp.full_like(self.bed, fill), self.shape,
                           self.block_rows, halo)


def uses_block_layout(model, integrator, shape, itemsize) -> bool:
    """Whether a run of ``model`` with ``integrator`` carries its state as
    :class:`BlockLayout`: where its steps take this kernel
    (:func:`swe.stages.stage_kernel_for_run`) with full-width rows."""
    return (stage_kernel_for_run(model, integrator) != "xla"
            and block_shape(*shape, itemsize)[1] is None)


def to_block_layout(model, t, state, beds, block_rows=None, halo=CHAINED_HALO):
    """``state`` at time ``t`` as :class:`BlockLayout` (one padding pass; see
    :func:`padded_fields`), in blocks of ``block_rows`` (by default :func:`block_shape`'s)
    with ``halo`` rows each side."""
    shape = state.h.shape
    block_rows = block_shape(*shape, jnp.dtype(state.h.dtype).itemsize, block_rows)[0]
    fields = padded_fields(model, t, state, beds, block_rows, None, halo)
    return BlockLayout(*fields, shape=shape, block_rows=block_rows, halo=halo)


def ssp_step(model, t, state, dt, beds, stages, *, interpret=False, block_rows=None,
             halo=CHAINED_HALO):
    """A step of an SSP Runge-Kutta scheme in Shu-Osher form
    (:func:`swe.steps.ssp_step`) by the kernel, its stages chained in the kernel's
    layout, from and to a :class:`BlockLayout` state (a run's carry, see
    :func:`to_block_layout`): each stage reads the layout and writes the next in it
    (blended with the step's start in the kernel), refilled in place with the ghost cells of its time (:func:`_refilled`),
    so no pass over the state pads it. A :class:`swe.State` is laid out first (blocks of
    ``block_rows`` with ``halo`` rows, a multiple of 8: the rows a block writes in the
    layout must start on a tile of 8) and the result's interior returned; grids wide
    enough for column blocks (wider than 8312 cells) take one :func:`euler_step` per stage
    instead, with its own :data:`HALO` rows (nothing is chained there, so ``halo`` does not
    apply).

    Reverse-mode derivatives are those of XLA's step (:func:`swe.xla_stage.ssp_step`)
    on the interior, the result laid out by :func:`padded_fields`."""
    if not isinstance(state, BlockLayout):
        _check(model, beds, block_rows, None, halo, halo_multiple=8)
        rows, cols = block_shape(*state.h.shape, jnp.dtype(state.h.dtype).itemsize,
                                 block_rows)
        if cols is not None:
            return shu_osher(lambda t_, y, blend: euler_step(
                model, t_, y, dt, beds, blend=blend, interpret=interpret, block_rows=rows),
                t, state, dt, stages)
        carry = to_block_layout(model, t, state, beds, rows, halo)
        return ssp_step(model, t, carry, dt, beds, stages, interpret=interpret).interior
    shape, block_rows, halo = state.shape, state.block_rows, state.halo
    _check(model, beds, block_rows, None, halo, halo_multiple=8)
    t, dt = jnp.asarray(t), jnp.asarray(dt)
    dynamic, static = eqx.partition((model, t, state, dt, beds), eqx.is_array)

    def step(dynamic):
        m, t0, s0, dt_, b = eqx.combine(dynamic, static)
        start = (s0.h, s0.hu, s0.hv)
        y, view = start, s0.interior
        times = [t0] + [t0 + c * dt_ for _, c in stages] + [t0 + dt_]
        alphas = [None] + [alpha for alpha, _ in stages]
        for k, alpha in enumerate(alphas):
            y = _forward(m, times[k], view, dt_, b, True, interpret, block_rows, None, halo,
                         alpha=alpha, base=None if alpha is None else start,
                         padded=(*y, s0.bed), out_padded=True)
            y = _refilled(m, times[k + 1], y, b, shape, halo)
            view = _interior(y, shape, halo)
        return BlockLayout(*y, s0.bed, shape, block_rows, halo)

    def xla_step(dynamic):
        m, t0, s0, dt_, b = eqx.combine(dynamic, static)
        new = xla_stage.ssp_step(m, t0, s0.interior, dt_, b, stages)
        fields = padded_fields(m, t0 + dt_, new, b, block_rows, None, halo)[:3]
        return BlockLayout(*fields, s0.bed, shape, block_rows, halo)

    return _differentiated_as(step, xla_step, dynamic)

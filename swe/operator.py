"""The finite-volume operator: interface fluxes, the positivity limiter and the divergence.

A stage computes, per swept direction, the hydrostatically reconstructed interface fluxes
and each cell's non-conservative momentum term; then the draining-time factors that keep
every depth non-negative; then the divergence of the limited fluxes. The algorithm of the
last three (:func:`momentum_source`, :func:`draining_factors` with :func:`donor_scale`,
:func:`divergence`) is written once here, over a *face layout* that says where a cell's
low and high faces are: :data:`SLICED` for XLA's stage (``n + 1`` faces along an axis of
``n`` cells), :class:`RolledFaces` for the TPU kernel (:mod:`swe.tpu_stage`: the face
``k + 1/2`` stored at cell ``k``, neighbours by rolls). The per-interface and per-cell
numerics both stages share are in :mod:`swe.pointwise` and :mod:`swe.reconstruction`.
:func:`directional_fluxes` assembles XLA's fluxes; the kernel assembles its own from the
same functions, inside its blocks.
"""

from __future__ import annotations

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array

from .fusion import materialised, over_grid, register_stable, stencil, written_once, in_one_loop
from .pointwise import (centred_bed_slope, desingularised_velocity, first_order_interface,
                        interface)
from .reconstruction import (BVD, LIMITERS, bvd_candidates, bvd_cell, cell_differences,
                             muscl_cell, thinc_exponential)
from .riemann import RIEMANN_SOLVERS
from .state import State

# The limiters (some are closures) and the Riemann solvers are built once, at import: each
# stands for itself in the keys of the kernels that fusion.reused builds from them.
register_stable(*LIMITERS.values(), *RIEMANN_SOLVERS.values())


class Fluxes(eqx.Module):
    """Interface fluxes of one direction and the non-conservative momentum term per cell."""

    mass: Array
    normal: Array
    tangential: Array
    momentum_source: Array  # pressure corrections + centred bed slope, already per cell


# --- face layouts ----------------------------------------------------------------------------

class SlicedFaces:
    """Faces as ``n + 1`` values along an axis of ``n`` cells: cell ``k``'s low face is
    face ``k``, its high face face ``k + 1`` (XLA's stage)."""

    def low(self, faces, axis):
        return jax.lax.slice_in_dim(faces, 0, faces.shape[axis] - 1, axis=axis)

    def high(self, faces, axis):
        return jax.lax.slice_in_dim(faces, 1, faces.shape[axis], axis=axis)

    def donors(self, padded, axis):
        """The cells on the low and high side of each face, from per-cell values padded
        with one ghost each side."""
        return self.low(padded, axis), self.high(padded, axis)


SLICED = SlicedFaces()


class RolledFaces:
    """Face ``k + 1/2`` stored at cell ``k``, the same shape as the cells; ``at(a, k,
    axis)`` is ``a`` at the cell ``k`` further along ``axis`` (a roll: the TPU kernel's
    blocks, whose edges are halo rows)."""

    def __init__(self, at):
        self.at = at

    def low(self, faces, axis):
        return self.at(faces, -1, axis)

    def high(self, faces, axis):
        return faces

    def donors(self, theta, axis):
        return theta, self.at(theta, 1, axis)


# --- the algorithm, over a face layout --------------------------------------------------------

def momentum_source(corr_l, corr_r, slope, faces, axis):
    """Each cell's non-conservative momentum term: the hydrostatic pressure corrections of
    its faces (``corr_r`` on its low face, ``corr_l`` on its high face) less its centred
    bed slope (None: first order, none)."""
    source = faces.low(corr_r, axis) - faces.high(corr_l, axis)
    return source if slope is None else source - slope


def draining_factors(h, mass_fluxes, dt, faces, active=None):
    """Per-cell factors in (0, 1] so that no cell loses more water than it holds.

    The "draining time" limiter (Bollermann, Chen, Kurganov & Noelle 2013): a cell whose
    outgoing mass flux (``mass_fluxes``: per axis, per unit length) over ``dt`` exceeds its
    depth has all its outgoing fluxes scaled by ``h / outflow``. ``active``: where a factor
    may be below 1 (None: everywhere). Inactive (1) whenever the CFL condition alone keeps
    the depth positive, as in smooth flow.
    """
    outflow = jnp.zeros_like(h)
    for axis, f in mass_fluxes.items():
        outflow = (outflow + jnp.maximum(faces.high(f, axis), 0.0)
                   - jnp.minimum(faces.low(f, axis), 0.0))
    outflow = dt * outflow
    drains = outflow > h if active is None else active & (outflow > h)
    return jnp.where(drains, h / jnp.where(drains, outflow, 1.0), 1.0)


def donor_scale(mass_flux, donors):
    """Each interface scaled by its donor cell's draining factor (``donors``: the factors
    of the cells on its low and high side), so that the update stays conservative and
    ``h >= 0`` holds for any time step."""
    low, high = donors
    return jnp.where(mass_flux >= 0.0, low, high)


def divergence(fluxes, zeros, faces, scale=None):
    """``(dh, dhu, dhv)``: ``-div F`` of the interface fluxes (``fluxes[axis]``:
    ``(mass, normal, tangential, momentum_source)``, per unit length), each scaled by
    ``scale[axis]`` (None: unscaled), plus the momentum sources. ``zeros``: a cell field
    of zeros."""
    dh = dhu = dhv = zeros
    for axis, (mass, normal, tangential, source) in fluxes.items():
        s = 1.0 if scale is None else scale[axis]

        def minus_div(f):
            f = f * s
            return faces.low(f, axis) - faces.high(f, axis)

        dh = dh + minus_div(mass)
        d_n, d_t = minus_div(normal) + source, minus_div(tangential)
        dhu, dhv = (dhu + d_n, dhv + d_t) if axis == 1 else (dhu + d_t, dhv + d_n)
    return dh, dhu, dhv


# --- XLA's stage ------------------------------------------------------------------------------

def positivity_scale(model, fluxes: dict[int, Fluxes], h, dt):
    """Per-interface factors (:func:`draining_factors`, :func:`donor_scale`) of XLA's
    fluxes. The ghost cells, reservoirs of the boundary condition, are never limited;
    across a block edge of a device mesh the neighbour's factors count."""
    theta = draining_factors(h, {axis: fl.mass for axis, fl in fluxes.items()}, dt, SLICED)
    return {axis: donor_scale(fl.mass, SLICED.donors(
                model.decomposition.pad_factor(theta, model.boundaries, axis), axis))
            for axis, fl in fluxes.items()}


def flux_divergence(fluxes: dict[int, Fluxes], state: State, scale=None):
    """:func:`divergence` of XLA's fluxes."""
    return divergence({axis: (fl.mass, fl.normal, fl.tangential, fl.momentum_source)
                       for axis, fl in fluxes.items()}, jnp.zeros_like(state.h), SLICED, scale)


def velocities(model, state: State):
    """``(u, v)``, desingularised, once per stage for both sweeps (a square root and a
    division per cell each: worth computing once)."""
    uv = (desingularised_velocity(state.h, state.hu, model.h_dry),
          desingularised_velocity(state.h, state.hv, model.h_dry))
    # Materialised, in one loop: otherwise XLA fuses (recomputes) them into every consumer.
    return in_one_loop(*uv)


def all_fluxes(model, t, state: State, beds, dt=None) -> dict[int, Fluxes]:
    """:func:`directional_fluxes` along each axis of ``beds`` (the padded beds)."""
    uv = velocities(model, state)
    return {axis: directional_fluxes(model, t, state, beds[axis], axis, uv, dt)
            for axis in beds}


def directional_fluxes(model, t, state: State, bed_padded, axis: int, uv=None,
                       dt=None) -> Fluxes:
    """Hydrostatically reconstructed fluxes across the faces normal to ``axis``.

    ``uv``: :func:`velocities` of ``state``, if already computed. ``dt`` (MUSCL
    only): the face values are first advanced by ``dt / 2`` along ``axis`` with the
    MUSCL-Hancock predictor (:func:`swe.reconstruction.hancock_predictor`), the sweep
    of a dimensionally split step.
    """
    n = state.h.shape[axis]
    spacing = model.grid.dx if axis == 1 else model.grid.dy
    qn, qt = (state.hu, state.hv) if axis == 1 else (state.hv, state.hu)
    u, v = velocities(model, state) if uv is None else uv
    un, ut = (u, v) if axis == 1 else (v, u)
    ng = model.scheme.ghost_cells
    # Ghost cells come as (h, q) from the boundary conditions; only their (thin)
    # strips need velocities computed here.
    lo, hi = model.decomposition.ghost_cells(state.h, qn, qt, bed_padded, model.boundaries,
                                             axis=axis, ng=ng, t=t, g=model.g,
                                             h_dry=model.h_dry)

    def pad(low, interior, high):
        return jnp.concatenate([low, interior, high], axis=axis)

    def ghost_velocity(ghost, k):
        return desingularised_velocity(ghost[0], ghost[k], model.h_dry)

    h = pad(lo[0], state.h, hi[0])
    un = pad(ghost_velocity(lo, 1), un, ghost_velocity(hi, 1))
    ut = pad(ghost_velocity(lo, 2), ut, ghost_velocity(hi, 2))
    limiter = model.scheme.limiter_fn
    h, un, ut = written_once(h, un, ut)
    riemann = model.scheme.riemann_fn
    # One fused loop computes every output of the interface kernel (in_one_loop):
    # re-fusing (and so recomputing) the whole Riemann kernel into each consumer made a
    # stage 5x slower, and one loop per output (stacked into a buffer) 1.4x (first
    # order) to 1.65x (MUSCL) slower (Euler stage, N = 512, constant bed).
    if limiter is None:
        kernel = functools.partial(first_order_interface, riemann=riemann)
        f_h, f_n, f_t, corr_l, corr_r = stencil(
            kernel, axis=axis, size=n + 1, width=2, n_scalars=1)(h, un, ut, bed_padded,
                                                                 model.g)
    else:
        scalars = (model.g, model.h_dry) + (() if dt is None else (dt / spacing,))
        f_h, f_n, f_t, corr_l, corr_r, bed_slope = _muscl_interfaces(
            h, un, ut, bed_padded, *scalars, axis=axis, n=n, limiter=limiter,
            riemann=riemann)
    f_h = model.decomposition.impose_face_fluxes(f_h, model.boundaries, axis=axis, t=t)

    slope = None if limiter is None else jax.lax.slice_in_dim(bed_slope, 1, n + 1, axis=axis)
    source = momentum_source(corr_l, corr_r, slope, SLICED, axis)
    return Fluxes(f_h / spacing, f_n / spacing, f_t / spacing, source / spacing)



def _muscl_interfaces(h, un, ut, bed, g, h_dry, *courant, axis, n, limiter, riemann):
    """The MUSCL interfaces along ``axis`` of padded fields (2 ghost cells each side, 3
    for THINC-BVD), in two kernels: each cell's face values
    (:func:`swe.reconstruction.muscl_cell`, a 3-cell stencil; for THINC-BVD the
    candidates, then :func:`swe.reconstruction.bvd_cell`), then
    :func:`swe.pointwise.interface` of the ``n + 1`` interfaces; and the centred bed-slope
    term ``g/2 (h_- + h_+)(b_+ - b_-)`` of the cells from their own face values.

    Each kernel computes all its outputs in one loop, and so does its VJP. One kernel of
    both, written for one interface over a 4-cell stencil, computes every cell's face
    values twice: forward at N = 512, float64, it took the same time with van Leer but
    2.9x with MC and with the split MUSCL-Hancock Roe scheme. Its own VJP was 1.8x
    slower, as XLA writes each intermediate of the linearised kernel by a loop of its own
    (a gradient step at 128^2: 18.9 against 10.7 ms).
    """
    if isinstance(limiter, BVD):
        # THINC-BVD: both candidates of cells -2 .. n + 1 (one ghost cell more), then the
        # choice for cells -1 .. n from theirs and their neighbours'. Two kernels: one
        # five-cell kernel, recomputing each cell's candidates for its neighbours, was
        # slower (Euler stage at N = 256: 8.3 against 5.0 ms; Koren 1.5 ms).
        # THINC's exponentials first, in plain elementwise loops: XLA:CPU vectorises them
        # there (about 2 ns each), not inside a one-loop kernel (about 17 ns each): the
        # same stage took 8.8 ms so against 14.3 ms (Koren: 3.0 ms; a busier machine).
        fields = (h, un, ut, bed)

        def shifted(f, k):  # slot k of the stencils of cells -2 .. n + 1
            return jax.lax.slice_in_dim(f, k, k + n + 4, axis=axis)

        # Their unused end slots are ones concatenated on: a constant jnp.pad fused into
        # the same loop makes it 2.5x slower (1.39 against 0.56 ms a direction at N = 256,
        # float64, one process); the whole stage takes 0.90x (N = 256) and 0.89x (512)
        # the time it takes with the pad (paired, interleaved, one process). The
        # draining factors' pad (_positivity_scale) is quicker than a concatenation.
        def ones_around(x):  # unused end slots of the stencils' exponential inputs
            one = jnp.ones_like(jax.lax.slice_in_dim(x, 0, 1, axis=axis))
            return jnp.concatenate([one, x, one], axis=axis)

        exponentials = written_once(*(
            ones_around(thinc_exponential(a, b, limiter.beta))
            for a, b in cell_differences(*(shifted(f, k) for f in fields for k in range(3)))))
        candidates = stencil(
            functools.partial(bvd_candidates, limiter=limiter.muscl, beta=limiter.beta),
            axis=axis, size=n + 4, width=3, n_scalars=0, n_fields=8)(*fields, *exponentials)
        cells = [jax.lax.slice_in_dim(x, 1, n + 5, axis=axis) for x in (h, un, ut, bed)]
        edges = stencil(bvd_cell, axis=axis, size=n + 2, width=3, n_scalars=2 + len(courant),
                         n_fields=4 + len(candidates))(*cells, *candidates, g, h_dry, *courant)
    else:
        edges = stencil(functools.partial(muscl_cell, limiter=limiter), axis=axis,
                         size=n + 2, width=3, n_scalars=2 + len(courant))(
            h, un, ut, bed, g, h_dry, *courant)
    left = [jax.lax.slice_in_dim(x, 0, n + 1, axis=axis) for x in edges]
    right = [jax.lax.slice_in_dim(x, 1, n + 2, axis=axis) for x in edges[4:]]
    flux = materialised(over_grid(functools.partial(interface, riemann=riemann), 8))(
        *left[:4], *right, g)
    return (*flux, centred_bed_slope(left, g))

"""The shallow-water model: grid, bed, physics and scheme, and its discrete operators.

The tendency is a sum of named terms (flux divergence, bed slope, Coriolis, wind, mass
sources, friction); a term that is absent is not traced, so it costs nothing.
"""

from __future__ import annotations

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from .boundaries import (Boundaries, Outflow, Periodic, Wall, ghost_cells,
                         impose_face_fluxes, pad_bed)
from .errors import check_choice, check_field, check_finite_scalar
from .fusion import in_one_loop, materialised, over_grid, register_stable, stencil, written_once
from .grid import Grid
from .pointwise import (blended, centred_bed_slope, desingularised_velocity, euler_update,
                        first_order_interface, friction_decay_rate, interface, safe_sqrt,
                        shu_osher, source_update)
from .reconstruction import (BVD, BVD_LIMITERS, LIMITERS, RECONSTRUCTIONS, bvd_candidates,
                             bvd_cell, cell_differences, muscl_cell, thinc_exponential)
from .riemann import RIEMANN_SOLVERS
from .sources import AbstractFriction, AbstractMassSource, BetaPlane, WindStress
from .stages import KERNELS, stage_kernel
from .state import State
from .tpu_stage import BlockLayout
from .tpu_stage import euler_step as tpu_euler_step
from .tpu_stage import ssp_step as tpu_ssp_step

# The limiters (some are closures) and the Riemann solvers are built once, at import: each
# stands for itself in the keys of the kernels that fusion.reused builds from them.
register_stable(*LIMITERS.values(), *RIEMANN_SOLVERS.values())


class FiniteVolume(eqx.Module):
    """Godunov finite volumes with hydrostatic reconstruction (Audusse et al. 2004).

    * ``riemann``: ``"rusanov"``, ``"hll"``, ``"hllc"`` or ``"roe"``.
    * ``reconstruction``: ``"first_order"`` or ``"muscl"`` (piecewise linear in surface
      elevation, depth and velocity).
    * ``limiter`` (MUSCL only): ``"koren"`` (the default), ``"vanleer"``, ``"mc"`` or
      ``"minmod"``. Koren's limiter (:func:`swe.reconstruction.koren`) gives each face its
      own deviation, those of the third-order ``kappa = 1/3`` faces where the data are
      smooth and monotone: with SSP-RK2 it is 2.5x to 4x more accurate than van Leer on a
      smooth wave and 13-14% more accurate on the benchmark dam break, at 2-4% more time.
      The others are slope limiters (one slope per cell). Van Leer's is smooth and does
      not clip smooth extrema to first order as minmod does: second order in 2-D, and 1.4x
      to 6x more accurate than minmod on the validation cases; minmod is the most
      dissipative. With the split MUSCL-Hancock integrators MC is the more accurate
      choice (Koren's faces are designed for the method of lines). ``"thinc-bvd"``
      (:func:`swe.reconstruction.bvd_cell`) chooses per cell and variable between Koren's
      faces and a THINC tanh jump, whichever jumps less against its neighbours' faces:
      sharper shocks and bores (benchmark dam break: L1(h) 25% smaller than Koren's at
      N = 512, 19% at 1024, PyClaw's error within 1.003x and 1.07x) at about 3x the time
      (N = 512); five-cell stencils, three ghost cells. Dry and nearly dry cells are first
      order whatever the limiter (:func:`swe.reconstruction.first_order_at_dry`).
    * ``kernel``: how a stage is computed, not what: ``"auto"`` (the default) runs each
      forward-Euler stage as one Pallas kernel on a TPU for grids of 1536^2 cells or more
      when the kernel covers the model (:func:`swe.stages.unsupported`; whole runs 1.6x to
      2.6x quicker at N = 1536 to 4096 on a TPU v5e; a vmapped ensemble takes it when its
      members' cells together reach 1024^2, :func:`swe.stages.batch_kernel`), and through
      XLA otherwise; ``"xla"``
      always through XLA; ``"pallas"`` always the kernel (ValueError off a TPU or for a
      model it does not cover); ``"pallas-interpret"`` the kernel in interpret mode (slow;
      for tests).
    """

    riemann: str = eqx.field(static=True, default="hllc")
    reconstruction: str = eqx.field(static=True, default="muscl")
    limiter: str = eqx.field(static=True, default="koren")
    kernel: str = eqx.field(static=True, default="auto")

    def __check_init__(self):
        check_choice("kernel", self.kernel, KERNELS)
        check_choice("riemann", self.riemann, RIEMANN_SOLVERS)
        check_choice("reconstruction", self.reconstruction, RECONSTRUCTIONS)
        check_choice("limiter", self.limiter, {**LIMITERS, **BVD_LIMITERS})

    @property
    def ghost_cells(self) -> int:
        # THINC-BVD's five-cell stencils need one more than MUSCL's three.
        ng = RECONSTRUCTIONS[self.reconstruction.lower()]
        return ng + 1 if isinstance(self.limiter_fn, BVD) else ng

    @property
    def limiter_fn(self):
        """The face limiter of :data:`~swe.reconstruction.LIMITERS`, a
        :class:`~swe.reconstruction.BVD` reconstruction, or None (first order)."""
        if self.reconstruction.lower() == "first_order":
            return None
        name = self.limiter.lower()
        return BVD_LIMITERS[name] if name in BVD_LIMITERS else LIMITERS[name]

    @property
    def riemann_fn(self):
        return RIEMANN_SOLVERS[self.riemann.lower()]


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


class Fluxes(eqx.Module):
    """Interface fluxes of one direction and the non-conservative momentum term per cell."""

    mass: Array
    normal: Array
    tangential: Array
    momentum_source: Array  # pressure corrections + centred bed slope, already per cell


class ShallowWater(eqx.Module):
    """The 2-D shallow-water equations in conservative form over a bed ``b(x, y)``.

    ``h_t + (hu)_x + (hv)_y = S_mass``,
    ``(hu)_t + (hu^2 + g h^2/2)_x + (huv)_y = -g h b_x + f hv + tau_x/rho - k hu``, and
    likewise for ``hv``.

    Arguments: ``grid``; ``bed`` elevation (m, scalar or ``(ny, nx)``); gravity ``g``
    (m/s^2); ``friction`` (:class:`~swe.Manning`, :class:`~swe.Chezy`,
    :class:`~swe.LinearDrag` or None); ``coriolis`` (:class:`~swe.BetaPlane` or None);
    ``wind`` (:class:`~swe.WindStress` or None); ``sources`` (a sequence of mass sources such
    as :class:`~swe.Rain` and :class:`~swe.PointSource`); ``boundaries``; ``scheme``;
    ``h_dry`` (m), the thin-layer depth below which velocities are desingularised and a cell
    does not constrain the time step.
    """

    grid: Grid
    bed: Float[Array, "ny nx"]
    g: Array
    friction: AbstractFriction | None
    coriolis: BetaPlane | None
    wind: WindStress | None
    sources: tuple[AbstractMassSource, ...]
    boundaries: Boundaries
    scheme: FiniteVolume
    h_dry: Array
    decomposition: object = None  # set by swe.parallel on a device mesh

    def __init__(self, grid: Grid, bed=0.0, g=9.81, friction=None, coriolis=None, wind=None,
                 sources=(), boundaries=None, scheme=None, h_dry=1e-6, decomposition=None):
        if not isinstance(grid, Grid):
            raise ValueError(f"grid={grid!r} is invalid; expected a swe.Grid")
        self.grid = grid
        self.bed = jnp.broadcast_to(check_field("bed", bed, grid.shape), grid.shape)
        self.g = jnp.asarray(check_finite_scalar("g", g, lower=0.0, lower_open=True))
        if friction is not None and not isinstance(friction, AbstractFriction):
            raise ValueError(f"friction={friction!r} is invalid; expected None, swe.Manning(n), "
                             "swe.Chezy(C) or swe.LinearDrag(r)")
        self.friction = None if friction is None else friction.with_shape(grid.shape)
        if coriolis is not None and not isinstance(coriolis, BetaPlane):
            raise ValueError(f"coriolis={coriolis!r} is invalid; expected None or "
                             "swe.BetaPlane(f0, beta)")
        self.coriolis = coriolis
        if wind is not None and not isinstance(wind, WindStress):
            raise ValueError(f"wind={wind!r} is invalid; expected None or swe.WindStress(tau_x, tau_y)")
        self.wind = None if wind is None else wind.with_shape(grid.shape)
        if isinstance(sources, AbstractMassSource):
            sources = (sources,)
        try:
            sources = tuple(() if sources is None else sources)
        except TypeError:
            raise ValueError(f"sources={sources!r} is invalid; expected a sequence of "
                             "swe.Rain(...) and swe.PointSource(...) entries") from None
        for s in sources:
            if not isinstance(s, AbstractMassSource):
                raise ValueError(f"sources contains {s!r}; expected swe.Rain(...) or "
                                 "swe.PointSource(...) entries")
        self.sources = tuple(s.with_shape(grid) for s in sources)
        boundaries = Boundaries() if boundaries is None else boundaries
        if not isinstance(boundaries, Boundaries):
            raise ValueError(f"boundaries={boundaries!r} is invalid; expected swe.Boundaries(...)")
        boundaries.check_edge_lengths(grid.shape)
        self.boundaries = boundaries
        scheme = FiniteVolume() if scheme is None else scheme
        if not isinstance(scheme, FiniteVolume):
            raise ValueError(f"scheme={scheme!r} is invalid; expected swe.FiniteVolume(...)")
        self.scheme = scheme
        self._check_swept_widths()
        self.h_dry = jnp.asarray(check_finite_scalar("h_dry", h_dry, lower=0.0, lower_open=True))
        self.decomposition = decomposition

    # --- helpers -------------------------------------------------------------------------

    def _check_swept_widths(self):
        """A direction that carries fluxes needs as many cells as the scheme has ghost
        cells (the boundary fills mirror that many): ValueError naming it otherwise."""
        ng = self.scheme.ghost_cells
        for axis in self.swept_axes():
            name, n, sides = (("nx", self.grid.nx, "west and east") if axis == 1
                              else ("ny", self.grid.ny, "south and north"))
            if n < ng:
                raise ValueError(
                    f"{name}={n} is too small for the scheme (reconstruction="
                    f"{self.scheme.reconstruction!r}, limiter={self.scheme.limiter!r}): a "
                    f"direction that carries fluxes needs at least {ng} cells; use more "
                    "cells, reconstruction='first_order' (1 cell), or walls, outflows or "
                    f"periodic {sides} sides on a one-cell direction")

    def swept_axes(self) -> tuple[int, ...]:
        """Axes that carry fluxes. A direction one cell wide whose two sides are walls,
        outflows or periodic has identical states across both faces, so its fluxes cancel
        exactly and the sweep is skipped (a 1-D channel costs a 1-D run)."""
        passive = (Wall, Outflow, Periodic)
        axes = []
        for axis, n in ((1, self.grid.nx), (0, self.grid.ny)):
            lo, hi = self.boundaries.pair(axis)
            if n > 1 or not (isinstance(lo, passive) and isinstance(hi, passive)):
                axes.append(axis)
        return tuple(axes)

    def padded_beds(self) -> dict[int, Array]:
        """The bed with ghost cells, per swept axis; computed once per run, not per stage."""
        ng = self.scheme.ghost_cells
        pad = pad_bed if self.decomposition is None else self.decomposition.pad_bed
        return {axis: pad(self.bed, self.boundaries, axis, ng) for axis in self.swept_axes()}

    def _ghost_cells(self, *args, **kwargs):
        """Ghost cells from the boundary conditions, or from the neighbouring devices'
        blocks on a device mesh."""
        fill = ghost_cells if self.decomposition is None else self.decomposition.ghost_cells
        return fill(*args, **kwargs)

    # --- operators ---------------------------------------------------------------------------

    def velocities(self, state: State):
        """``(u, v)``, desingularised, once per stage for both sweeps (a square root and a
        division per cell each: worth computing once)."""
        uv = (desingularised_velocity(state.h, state.hu, self.h_dry),
              desingularised_velocity(state.h, state.hv, self.h_dry))
        # Materialised, in one loop: otherwise XLA fuses (recomputes) them into every consumer.
        return in_one_loop(*uv)

    def directional_fluxes(self, t, state: State, bed_padded, axis: int,
                           velocities=None, dt=None) -> Fluxes:
        """Hydrostatically reconstructed fluxes across the faces normal to ``axis``.

        ``velocities``: :meth:`velocities` of ``state``, if already computed. ``dt`` (MUSCL
        only): the face values are first advanced by ``dt / 2`` along ``axis`` with the
        MUSCL-Hancock predictor (:func:`swe.reconstruction.hancock_predictor`), the sweep
        of a dimensionally split step.
        """
        n = state.h.shape[axis]
        spacing = self.grid.dx if axis == 1 else self.grid.dy
        qn, qt = (state.hu, state.hv) if axis == 1 else (state.hv, state.hu)
        u, v = self.velocities(state) if velocities is None else velocities
        un, ut = (u, v) if axis == 1 else (v, u)
        ng = self.scheme.ghost_cells
        # Ghost cells come as (h, q) from the boundary conditions; only their (thin)
        # strips need velocities computed here.
        lo, hi = self._ghost_cells(state.h, qn, qt, bed_padded, self.boundaries, axis=axis,
                                   ng=ng, t=t, g=self.g, h_dry=self.h_dry)

        def pad(low, interior, high):
            return jnp.concatenate([low, interior, high], axis=axis)

        def ghost_velocity(ghost, k):
            return desingularised_velocity(ghost[0], ghost[k], self.h_dry)

        h = pad(lo[0], state.h, hi[0])
        un = pad(ghost_velocity(lo, 1), un, ghost_velocity(hi, 1))
        ut = pad(ghost_velocity(lo, 2), ut, ghost_velocity(hi, 2))
        limiter = self.scheme.limiter_fn
        h, un, ut = written_once(h, un, ut)
        riemann = self.scheme.riemann_fn
        # One fused loop computes every output of the interface kernel (in_one_loop):
        # re-fusing (and so recomputing) the whole Riemann kernel into each consumer made a
        # stage 5x slower, and one loop per output (stacked into a buffer) 1.4x (first
        # order) to 1.65x (MUSCL) slower (Euler stage, N = 512, constant bed).
        if limiter is None:
            kernel = functools.partial(first_order_interface, riemann=riemann)
            f_h, f_n, f_t, corr_l, corr_r = stencil(
                kernel, axis=axis, size=n + 1, width=2, n_scalars=1)(h, un, ut, bed_padded,
                                                                     self.g)
        else:
            scalars = (self.g, self.h_dry) + (() if dt is None else (dt / spacing,))
            f_h, f_n, f_t, corr_l, corr_r, bed_slope = _muscl_interfaces(
                h, un, ut, bed_padded, *scalars, axis=axis, n=n, limiter=limiter,
                riemann=riemann)
        impose = (impose_face_fluxes if self.decomposition is None
                  else self.decomposition.impose_face_fluxes)
        f_h = impose(f_h, self.boundaries, axis=axis, t=t)

        def cells(x, lo):
            return jax.lax.slice_in_dim(x, lo, lo + n, axis=axis)

        # Left face of cell k is interface k (its right side); right face is interface k+1.
        source = cells(corr_r, 0) - cells(corr_l, 1)
        if limiter is not None:
            source = source - cells(bed_slope, 1)
        return Fluxes(f_h / spacing, f_n / spacing, f_t / spacing, source / spacing)

    def all_fluxes(self, t, state: State, beds, dt=None) -> dict[int, Fluxes]:
        velocities = self.velocities(state)
        return {axis: self.directional_fluxes(t, state, beds[axis], axis, velocities, dt)
                for axis in beds}

    def forcing(self, t, state: State, coriolis=True):
        """Pointwise explicit sources ``(dh, dhu, dhv)`` (Coriolis unless ``coriolis=False``,
        wind, mass); None if absent."""
        dh = dhu = dhv = None

        def add(a, b):
            return b if a is None else a + b

        if coriolis and self.coriolis is not None:
            f = self.coriolis.parameter(self.grid).astype(state.h.dtype)
            dhu, dhv = add(dhu, f * state.hv), add(dhv, -f * state.hu)
        if self.wind is not None:
            ax, ay = self.wind.acceleration(t, state.h.shape)
            wet = state.h > self.h_dry
            dhu, dhv = add(dhu, jnp.where(wet, ax, 0.0)), add(dhv, jnp.where(wet, ay, 0.0))
        for source in self.sources:
            dh = add(dh, source.rate(t, self.grid, state.h.shape))
        return dh, dhu, dhv

    @staticmethod
    def _divergence(fluxes: dict[int, Fluxes], state: State, scale=None):
        """``-div F`` plus the momentum sources; ``scale[axis]`` limits each interface flux."""
        dh = jnp.zeros_like(state.h)
        dhu = jnp.zeros_like(state.hu)
        dhv = jnp.zeros_like(state.hv)
        for axis, fl in fluxes.items():
            n = state.h.shape[axis]
            s = 1.0 if scale is None else scale[axis]

            def diff(x):
                x = x * s
                return (jax.lax.slice_in_dim(x, 1, n + 1, axis=axis)
                        - jax.lax.slice_in_dim(x, 0, n, axis=axis))

            d_n = -diff(fl.normal) + fl.momentum_source
            d_t = -diff(fl.tangential)
            dh = dh - diff(fl.mass)
            if axis == 1:
                dhu, dhv = dhu + d_n, dhv + d_t
            else:
                dhu, dhv = dhu + d_t, dhv + d_n
        return dh, dhu, dhv

    def tendency(self, t, state: State, beds) -> State:
        """The full explicit right-hand side ``dq/dt`` (friction included explicitly), as a
        :meth:`State.rates` (its ``h`` is ``dh/dt``, negative where cells drain)."""
        dh, dhu, dhv = self._divergence(self.all_fluxes(t, state, beds), state)
        sh, shu, shv = self.forcing(t, state)
        dh = dh if sh is None else dh + sh
        dhu = dhu if shu is None else dhu + shu
        dhv = dhv if shv is None else dhv + shv
        if self.friction is not None:
            k = friction_decay_rate(self.friction, state.h, state.h, state.hu, state.hv,
                                    self.g, self.h_dry)
            dhu, dhv = dhu - k * state.hu, dhv - k * state.hv
        return State.rates(dh, dhu, dhv)

    def _positivity_scale(self, fluxes: dict[int, Fluxes], h, dt):
        """Per-interface factors in (0, 1] so that no cell loses more water than it holds.

        The "draining time" limiter (Bollermann, Chen, Kurganov & Noelle 2013): a cell whose
        outgoing mass flux over ``dt`` exceeds its depth has all its outgoing fluxes scaled by
        ``h / outflow``. Each interface is scaled by its donor cell, so the update stays
        conservative and ``h >= 0`` holds for any time step. Inactive (1) whenever the CFL
        condition alone already keeps the depth positive, as in smooth flow.
        """
        outflow = jnp.zeros_like(h)
        for axis, fl in fluxes.items():
            n = h.shape[axis]
            lo = jax.lax.slice_in_dim(fl.mass, 0, n, axis=axis)
            hi = jax.lax.slice_in_dim(fl.mass, 1, n + 1, axis=axis)
            outflow = outflow + jnp.maximum(hi, 0.0) - jnp.minimum(lo, 0.0)
        outflow = dt * outflow
        theta = jnp.where(outflow > h, h / jnp.where(outflow > h, outflow, 1.0), 1.0)
        scale = {}
        for axis, fl in fluxes.items():
            pad = [(0, 0), (0, 0)]
            pad[axis] = (1, 1)
            # Ghost cells are reservoirs of the boundary condition: never limited.
            if self.decomposition is None:
                th = jnp.pad(theta, pad, constant_values=1.0)
            else:
                th = self.decomposition.pad_factor(theta, self.boundaries, axis)
            n = h.shape[axis]
            donor_lo = jax.lax.slice_in_dim(th, 0, n + 1, axis=axis)
            donor_hi = jax.lax.slice_in_dim(th, 1, n + 2, axis=axis)
            scale[axis] = jnp.where(fl.mass >= 0.0, donor_lo, donor_hi)
        return scale

    def euler_step(self, t, state: State, dt, beds, *, predictor=False,
                   sources=True, blend=None) -> State:
        """One positivity-preserving forward Euler step, the stage of every SSP-RK scheme.

        Explicit fluxes (draining-time limited) and sources, then semi-implicit friction.
        Only the directions in ``beds`` are swept. ``predictor``: MUSCL-Hancock face values
        (a sweep of :meth:`split_step`); ``sources=False`` leaves out the forcing and the
        friction. ``blend=(alpha, base)`` returns :func:`swe.pointwise.blended`
        ``(alpha, base, step)``, a stage of an SSP Runge-Kutta scheme in Shu-Osher form.
        Computed by :meth:`xla_euler_step` or by the Pallas kernel of
        :mod:`swe.tpu_stage` (the blend included), as ``scheme.kernel`` chooses
        (:func:`swe.stages.stage_kernel`).
        """
        kernel = stage_kernel(self, beds, predictor=predictor)
        if kernel != "xla":
            return tpu_euler_step(self, t, state, dt, beds, sources=sources, blend=blend,
                                  interpret=kernel == "pallas-interpret")
        return self.xla_euler_step(t, state, dt, beds, predictor=predictor, sources=sources,
                                   blend=blend)

    def ssp_step(self, t, state: State, dt, beds, stages=()) -> State:
        """A step of an SSP Runge-Kutta scheme in Shu-Osher form
        (:func:`swe.pointwise.shu_osher`) over :meth:`euler_step` stages, ``stages`` its
        ``(alpha, c)`` after the first. Through the Pallas kernel
        (:func:`swe.tpu_stage.ssp_step`, its stages chained in the kernel's layout) where
        ``scheme.kernel`` takes it, else :meth:`xla_ssp_step`. A
        :class:`swe.tpu_stage.BlockLayout` state (a run's carry in the kernel's layout)
        gives one."""
        kernel = stage_kernel(self, beds)
        if kernel != "xla" or isinstance(state, BlockLayout):
            return tpu_ssp_step(self, t, state, dt, beds, stages,
                                interpret=kernel == "pallas-interpret")
        return self.xla_ssp_step(t, state, dt, beds, stages)

    def xla_ssp_step(self, t, state: State, dt, beds, stages=()) -> State:
        """:meth:`ssp_step` through XLA, whatever ``scheme.kernel`` says."""
        return shu_osher(lambda t_, y, blend: self.xla_euler_step(t_, y, dt, beds,
                                                                 blend=blend),
                         t, state, dt, stages)

    def xla_euler_step(self, t, state: State, dt, beds, *, predictor=False,
                       sources=True, blend=None) -> State:
        """:meth:`euler_step` through XLA, whatever ``scheme.kernel`` says."""
        fluxes = self.all_fluxes(t, state, beds, dt if predictor else None)
        scale = self._positivity_scale(fluxes, state.h, dt)
        dh, dhu, dhv = self._divergence(fluxes, state, scale)
        sh, shu, shv = self.forcing(t, state) if sources else (None, None, None)
        dh = dh if sh is None else dh + sh
        dhu = dhu if shu is None else dhu + shu
        dhv = dhv if shv is None else dhv + shv
        friction = self.friction if sources else None
        # Pointwise, so one loop forward and one loop for its VJP (materialised); XLA
        # fuses the divergence of the limited fluxes into that one loop (the draining
        # factors keep a loop of their own). Against a loop of their own for the depth and
        # each momentum, each recomputing the scaled fluxes (and the friction factor, if
        # any), with autodiff writing each intermediate cotangent in a loop of its own,
        # in-process A/Bs: the benchmark problem
        # (no friction) at N = 512 in 2.83 s against 3.73 s (first order: 1.98 against
        # 2.71 s), at N = 1024 in 24.5 s against 33.6 s; the 300-step gradient benchmark
        # at 128^2 (Manning) forward 0.211 s against 0.275 s, gradient 1.49 s against
        # 1.80 s. The divergence and the draining factors made pointwise kernels of their
        # own (their faces sliced out of the interface arrays) are slower: gradient 1.60 s.
        h, hu, hv = materialised(euler_update)(state.h, state.hu, state.hv, dh, dhu, dhv, dt,
                                               friction, self.g, self.h_dry)
        new = State(h=h, hu=hu, hv=hv)
        return new if blend is None else blended(*blend, new)

    def split_step(self, t, state: State, dt, beds, strang: bool = False) -> State:
        """One step of dimensional splitting: a sweep along x over the whole step, then one
        along y from its result (Godunov splitting, first order), or with ``strang`` x over
        half the step, y over the whole step, x over the other half (Strang splitting,
        second order; three sweeps). Each sweep is a positivity-limited Euler update whose
        MUSCL face values are advanced by half its step first (MUSCL-Hancock; first order
        without MUSCL). The pointwise sources take half a step before the sweeps and half
        after (:meth:`source_step`; on the geostrophic validation case at 128^2, L1(h)
        0.084 against 0.140 with one full source step after the sweeps). Each sweep is
        stable up to a Courant number of 1 in its own direction, so ``cfl = 0.9`` (as
        PyClaw's split scheme) is twice the unsplit schemes' step.
        """
        state = self.source_step(t, state, 0.5 * dt)

        def sweep(axis, state, span):
            return self.euler_step(t, state, span, {axis: beds[axis]}, predictor=True,
                                   sources=False)

        # x before y (beds, a dict, comes back from a jit boundary with its keys sorted).
        axes = tuple(axis for axis in self.swept_axes() if axis in beds)
        if strang and len(axes) == 2:
            state = sweep(axes[0], state, 0.5 * dt)
            state = sweep(axes[1], state, dt)
            state = sweep(axes[0], state, 0.5 * dt)
        else:
            for axis in axes:
                state = sweep(axis, state, dt)
        return self.source_step(t + 0.5 * dt, state, 0.5 * dt)

    def source_step(self, t, state: State, dt) -> State:
        """The pointwise sources over ``dt`` (half a split step's, before its sweeps and
        again after them): the mass sources and the wind explicitly, the Coriolis force as
        the exact rotation of ``(hu, hv)`` by ``f dt`` (a forward Euler step of it grows
        the kinetic energy by ``1 + (f dt)^2`` per step: the geostrophic validation case
        blew up after 2374 steps that way), then the friction semi-implicitly. The
        identity when the model has none of them."""
        if (self.coriolis is None and self.friction is None and self.wind is None
                and not self.sources):
            return state
        forcing = self.forcing(t, state, coriolis=False)
        f = (None if self.coriolis is None
             else self.coriolis.parameter(self.grid).astype(state.h.dtype))
        # One pointwise kernel, as the Euler update (materialised).
        h, hu, hv = materialised(source_update)(state.h, state.hu, state.hv, forcing, f, dt,
                                                self.friction, self.g, self.h_dry)
        return State(h=h, hu=hu, hv=hv)

    def _wave_speed(self, h, qn, qt):
        un = desingularised_velocity(h, qn, self.h_dry)
        ut = desingularised_velocity(h, qt, self.h_dry)
        speed = jnp.maximum(jnp.abs(un), jnp.abs(ut)) + safe_sqrt(self.g * h)
        # NaN depth fails the comparison and keeps its NaN speed: the max then shows it.
        a = jnp.max(jnp.where(h <= self.h_dry, 0.0, speed))
        return a if self.decomposition is None else self.decomposition.max(a)

    def max_wave_speed(self, state: State) -> Array:
        """``max(|u|, |v|) + sqrt(g h)`` over cells deeper than ``h_dry`` (NaN if any is)."""
        return self._wave_speed(state.h, state.hu, state.hv)

    def boundary_wave_speed(self, t, state: State, beds) -> Array:
        """The same over the ghost cells: water an inflow or a stage is about to bring in."""
        speeds = [jnp.zeros((), state.h.dtype)]
        for axis, bed_padded in beds.items():
            qn, qt = (state.hu, state.hv) if axis == 1 else (state.hv, state.hu)
            if all(isinstance(bc, (Wall, Outflow, Periodic)) for bc in self.boundaries.pair(axis)):
                continue  # their ghosts copy interior cells, already counted
            bed = _trim(bed_padded, axis, self.scheme.ghost_cells)
            lo, hi = self._ghost_cells(state.h, qn, qt, bed, self.boundaries, axis=axis, ng=1,
                                       t=t, g=self.g, h_dry=self.h_dry)
            speeds += [self._wave_speed(*lo), self._wave_speed(*hi)]
        return functools.reduce(jnp.maximum, speeds)

    def stable_time_step(self, state: State, cfl, t=None, beds=None) -> Array:
        """``cfl * min(dx, dy) / max(|u| + sqrt(g h))``; infinite on a dry domain, NaN if the
        state holds a NaN (the controllers' blow-up check).

        With ``t`` and ``beds`` the ghost cells count too, so that water entering through an
        inflow or a stage boundary limits the step before it reaches the first cell.
        """
        a = self.max_wave_speed(state)
        if beds is not None:
            a = jnp.maximum(a, self.boundary_wave_speed(t, state, beds))
        # Only swept directions constrain the step (a 1-D channel ignores its width).
        spacing = min([self.grid.dx if axis == 1 else self.grid.dy for axis in self.swept_axes()]
                      or [self.grid.dx, self.grid.dy])
        # A NaN speed fails "a > 0" too: it must not read as a dry domain (an infinite step).
        return jnp.where(a > 0.0, cfl * spacing / jnp.where(a > 0.0, a, 1.0),
                         jnp.where(jnp.isnan(a), jnp.nan, jnp.inf))


def _trim(bed_padded, axis, ng):
    """A bed padded with ``ng`` ghosts, cut to one ghost on each side."""
    n = bed_padded.shape[axis]
    return jax.lax.slice_in_dim(bed_padded, ng - 1, n - ng + 1, axis=axis)

"""The shallow-water model: grid, bed, physics and scheme, and its discrete operators.

The tendency is a sum of named terms (flux divergence, bed slope, Coriolis, wind, mass
sources, friction); a term that is absent is not traced, so it costs nothing.
"""

from __future__ import annotations

from collections.abc import Callable

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from .boundaries import Boundaries, Outflow, Periodic, Wall
from .decomposition import MeshBlock, SingleDevice
from .errors import check_choice, check_field, check_finite_scalar
from .grid import Grid
from .operator import all_fluxes, flux_divergence
from .pointwise import desingularised_velocity, safe_sqrt
from .reconstruction import BVD, BVD_LIMITERS, LIMITERS, RECONSTRUCTIONS
from .riemann import RIEMANN_SOLVERS
from .sources import AbstractForcing, AbstractFriction, AbstractMassSource, BetaPlane, WindStress
from .stages import KERNELS
from .state import State


class FiniteVolume(eqx.Module):
    """Godunov finite volumes with hydrostatic reconstruction (Audusse et al. 2004).

    * ``riemann``: ``"rusanov"``, ``"hll"``, ``"hllc"`` or ``"roe"``, or a function of
      one interface, ``riemann(hL, unL, utL, hR, unR, utR, g) -> (F_h, F_hun, F_hut)``
      (scalars in, the numerical flux along the normal out; see :mod:`swe.riemann` and
      the "Extending swe" page).
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

    riemann: str | Callable = eqx.field(static=True, default="hllc")
    reconstruction: str = eqx.field(static=True, default="muscl")
    limiter: str = eqx.field(static=True, default="koren")
    kernel: str = eqx.field(static=True, default="auto")

    def __check_init__(self):
        check_choice("kernel", self.kernel, KERNELS)
        if not callable(self.riemann):
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
        """The flux function of one interface."""
        return self.riemann if callable(self.riemann) else RIEMANN_SOLVERS[self.riemann.lower()]

    @property
    def riemann_name(self) -> str:
        """``riemann`` as text: its name, or a function's module and qualified name."""
        if not callable(self.riemann):
            return self.riemann
        return f"{getattr(self.riemann, '__module__', '?')}.{getattr(self.riemann, '__qualname__', repr(self.riemann))}"


class ShallowWater(eqx.Module):
    """The 2-D shallow-water equations in conservative form over a bed ``b(x, y)``.

    ``h_t + (hu)_x + (hv)_y = S_mass``,
    ``(hu)_t + (hu^2 + g h^2/2)_x + (huv)_y = -g h b_x + f hv + tau_x/rho - k hu``, and
    likewise for ``hv``.

    Arguments: ``grid``; ``bed`` elevation (m, scalar or ``(ny, nx)``); gravity ``g``
    (m/s^2); ``forcings``, a sequence of :class:`~swe.AbstractForcing` (friction, Coriolis,
    wind, rain, point sources, or a user's own); ``boundaries``; ``scheme``; ``h_dry`` (m),
    the thin-layer depth below which velocities are desingularised and a cell does not
    constrain the time step. The keywords ``friction`` (:class:`~swe.Manning`,
    :class:`~swe.Chezy`, :class:`~swe.LinearDrag` or None), ``coriolis``
    (:class:`~swe.BetaPlane` or None), ``wind`` (:class:`~swe.WindStress` or None) and
    ``sources`` (a sequence of mass sources such as :class:`~swe.Rain` and
    :class:`~swe.PointSource`) add to ``forcings``, in that order and before it. A model
    takes at most one friction law and one Coriolis parameter.

    The model holds the configuration and answers :meth:`tendency` and
    :meth:`stable_time_step`; the steps are :mod:`swe.steps`, the finite-volume operator
    :mod:`swe.operator`. ``decomposition`` is where its cells are
    (:class:`~swe.decomposition.SingleDevice`, or one block of a device mesh, set by
    :mod:`swe.parallel`).
    """

    grid: Grid
    bed: Float[Array, "ny nx"]
    g: Array
    forcings: tuple[AbstractForcing, ...]
    boundaries: Boundaries
    scheme: FiniteVolume
    h_dry: Array
    decomposition: SingleDevice | MeshBlock

    def __init__(self, grid: Grid, bed=0.0, g=9.81, friction=None, coriolis=None, wind=None,
                 sources=(), boundaries=None, scheme=None, h_dry=1e-6, forcings=(),
                 decomposition=None):
        if not isinstance(grid, Grid):
            raise ValueError(f"grid={grid!r} is invalid; expected a swe.Grid")
        self.grid = grid
        self.bed = jnp.broadcast_to(check_field("bed", bed, grid.shape), grid.shape)
        self.g = jnp.asarray(check_finite_scalar("g", g, lower=0.0, lower_open=True))
        if friction is not None and not isinstance(friction, AbstractFriction):
            raise ValueError(f"friction={friction!r} is invalid; expected None, swe.Manning(n), "
                             "swe.Chezy(C) or swe.LinearDrag(r)")
        if coriolis is not None and not isinstance(coriolis, BetaPlane):
            raise ValueError(f"coriolis={coriolis!r} is invalid; expected None or "
                             "swe.BetaPlane(f0, beta)")
        if wind is not None and not isinstance(wind, WindStress):
            raise ValueError(f"wind={wind!r} is invalid; expected None or swe.WindStress(tau_x, tau_y)")
        sources = _sequence("sources", sources, AbstractMassSource,
                            "swe.Rain(...) and swe.PointSource(...) entries")
        forcings = _sequence("forcings", forcings, AbstractForcing,
                             "swe.AbstractForcing entries (swe.Manning, swe.BetaPlane, "
                             "swe.WindStress, swe.Rain, swe.PointSource or a user's own)")
        forcings = tuple(f for f in (friction, coriolis, wind) if f is not None) + sources + forcings
        for role, kind in ((AbstractFriction, "friction law"), (BetaPlane, "Coriolis parameter")):
            same = [type(f).__name__ for f in forcings if isinstance(f, role)]
            if len(same) > 1:
                raise ValueError(f"the forcings hold {len(same)} of a {kind} "
                                 f"({', '.join(same)}); a model takes at most one")
        self.forcings = tuple(f.checked(grid) for f in forcings)
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
        self.decomposition = SingleDevice() if decomposition is None else decomposition

    @property
    def friction(self) -> AbstractFriction | None:
        """The friction law among the forcings (applied semi-implicitly), or None."""
        return next((f for f in self.forcings if isinstance(f, AbstractFriction)), None)

    @property
    def coriolis(self) -> BetaPlane | None:
        """The Coriolis parameter among the forcings, or None."""
        return next((f for f in self.forcings if isinstance(f, BetaPlane)), None)

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
        ny, nx = self.grid.domain.shape
        for axis, n in ((1, nx), (0, ny)):
            lo, hi = self.boundaries.pair(axis)
            if n > 1 or not (isinstance(lo, passive) and isinstance(hi, passive)):
                axes.append(axis)
        return tuple(axes)

    def padded_beds(self) -> dict[int, Array]:
        """The bed with ghost cells, per swept axis; computed once per run, not per stage."""
        ng = self.scheme.ghost_cells
        return {axis: self.decomposition.pad_bed(self.bed, self.boundaries, axis, ng)
                for axis in self.swept_axes()}

    def explicit_rates(self, t, state: State, rotation=True):
        """The forcings' rates ``(dh, dhu, dhv)`` summed in their order, each None where
        no forcing has one; the friction law left out (the steps apply it
        semi-implicitly), and the Coriolis force with ``rotation=False`` (the split
        scheme's exact rotation)."""
        total = [None, None, None]
        for forcing in self.forcings:
            if isinstance(forcing, AbstractFriction) or (
                    not rotation and isinstance(forcing, BetaPlane)):
                continue
            for k, rate in enumerate(forcing.rates(t, state, self)):
                if rate is not None:
                    total[k] = rate if total[k] is None else total[k] + rate
        return tuple(total)

    def tendency(self, t, state: State, beds) -> State:
        """The full explicit right-hand side ``dq/dt`` (friction included explicitly), as a
        :meth:`State.rates` (its ``h`` is ``dh/dt``, negative where cells drain)."""
        rates = flux_divergence(all_fluxes(self, t, state, beds), state)
        terms = [self.explicit_rates(t, state)]
        if self.friction is not None:  # last, as the steps apply it
            terms.append(self.friction.rates(t, state, self))
        for term in terms:
            rates = tuple(d if r is None else d + r for d, r in zip(rates, term))
        return State.rates(*rates)

    def _wave_speed(self, h, qn, qt):
        un = desingularised_velocity(h, qn, self.h_dry)
        ut = desingularised_velocity(h, qt, self.h_dry)
        speed = jnp.maximum(jnp.abs(un), jnp.abs(ut)) + safe_sqrt(self.g * h)
        # NaN depth fails the comparison and keeps its NaN speed: the max then shows it.
        a = jnp.max(jnp.where(h <= self.h_dry, 0.0, speed))
        return self.decomposition.max(a)

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
            lo, hi = self.decomposition.ghost_cells(state.h, qn, qt, bed, self.boundaries,
                                                    axis=axis, ng=1, t=t, g=self.g,
                                                    h_dry=self.h_dry)
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


def _sequence(name, value, kind, expected):
    """``value`` (one ``kind`` or a sequence of them, None for none) as a tuple;
    ValueError naming ``name`` otherwise."""
    if isinstance(value, kind):
        return (value,)
    try:
        value = tuple(() if value is None else value)
    except TypeError:
        raise ValueError(f"{name}={value!r} is invalid; expected a sequence of {expected}") from None
    for v in value:
        if not isinstance(v, kind):
            raise ValueError(f"{name} contains {v!r}; expected {expected}")
    return value

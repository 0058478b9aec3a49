"""Boundary conditions. They only fill ghost (halo) cells, so interior stencils never see
an edge; this module is the only one that knows where the domain ends.

Each side (``west``, ``east``, ``south``, ``north``) gets one condition:

* :class:`Wall` (default): reflective, no normal flow.
* :class:`Outflow`: transmissive, zero-gradient extrapolation.
* :class:`Periodic`: wraps to the opposite side; must be set on both sides of a pair.
* :class:`Inflow`: a prescribed discharge per unit width into the domain (m^2/s).
* :class:`Stage`: a prescribed surface elevation (m).

Time-dependent values are given as a function of ``t`` (seconds). Values along an edge may
also be 1-D arrays of the edge length (``ny`` for west/east, ``nx`` for south/north), e.g.
an inflow that only covers a river's channel. A condition names the fields that hold such
values in ``edge_fields``: they are checked against the edge's length, and on a device mesh
each device cuts them to its part of the edge.
"""

from __future__ import annotations

import abc
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from .errors import check_forcing_output, is_concrete
from .pointwise import desingularised_velocity, safe_sqrt

SIDES = ("west", "east", "south", "north")


def _check_edge_value(name: str, value):
    if callable(value):
        return value
    if value is None or isinstance(value, (str, bool)):
        raise ValueError(f"{name}={value!r} is invalid; expected a number, a 1-D array along "
                         "the edge, or a function of t")
    arr = jnp.asarray(value)
    if arr.ndim > 1 or not jnp.issubdtype(arr.dtype, jnp.number):
        raise ValueError(f"{name} has shape {arr.shape}; expected a number, a 1-D array along "
                         "the edge, or a function of t")
    if not jnp.issubdtype(arr.dtype, jnp.floating):
        arr = arr.astype(jnp.result_type(float))
    if is_concrete(arr) and not np.all(np.isfinite(np.asarray(arr))):
        raise ValueError(f"{name}={value!r} contains NaN or inf; every value must be finite")
    return arr


def edge_value(value, t, axis, name="value", shape=None):
    """``value`` (a number, a 1-D profile along the edge or a function of ``t`` returning
    either) at ``t``, shaped to broadcast over ghost cells of ``shape`` across ``axis``
    (a 1-D profile runs along the edge, i.e. across the normal axis). A function's result
    is checked while tracing: a number or a 1-D array (of the edge's cells, when ``shape``,
    theirs, is given); ``name`` names it in the error."""
    if callable(value):
        out = value(t)
        expected = "a number or a 1-D array along the edge" + (
            f" ({shape[1 - axis]} cells)" if shape is not None else "")
        along = () if np.ndim(out) == 0 else (
            (shape[1 - axis],) if shape is not None else np.shape(out)[-1:])
        v = check_forcing_output(name, out, along, expected)
    else:
        v = jnp.asarray(value)
    return jnp.expand_dims(v, axis) if v.ndim == 1 else v


class AbstractBoundary(eqx.Module):
    """One side's condition: given the interior cells nearest the edge (outward order), it
    returns the ghost cells ``(h, q_normal, q_tangential)`` in the same order.

    ``side`` is -1 on the low side (west, south) and +1 on the high side, so that
    ``side * q_normal`` is the outward discharge.

    ``bed_mode`` is how the bed continues into the ghost cells: ``"mirror"``, ``"edge"``
    (the edge cell's bed repeated) or ``"wrap"``. ``edge_fields`` names the fields that
    hold values along the edge (a number, a 1-D array of the edge's length, or a function
    of ``t`` returning either; read them with :func:`edge_value`): they are checked when
    the model is built, and cut to each device's part of the edge on a mesh.
    """

    bed_mode: eqx.AbstractClassVar[str]
    edge_fields: ClassVar[tuple[str, ...]] = ()

    def __check_init__(self):
        for name in self.edge_fields:
            _check_edge_value(name, getattr(self, name))

    @abc.abstractmethod
    def ghosts(self, mirror, edge, bed_ghost, t, side, axis, g, h_dry):
        """Ghost ``(h, q_normal, q_tangential)`` from the mirrored or edge interior cells."""

    def face_mass_flux(self, t, side, axis):
        """A prescribed mass flux through the boundary face (along +axis), or None."""
        return None


class Wall(AbstractBoundary):
    """Reflective wall: mirrored depth and tangential flow, negated normal flow."""

    bed_mode: ClassVar[str] = "mirror"

    def ghosts(self, mirror, edge, bed_ghost, t, side, axis, g, h_dry):
        h, qn, qt = mirror
        return h, -qn, qt


class Outflow(AbstractBoundary):
    """Transmissive (zero-gradient) boundary: ghost cells copy the edge cell."""

    bed_mode: ClassVar[str] = "edge"

    def ghosts(self, mirror, edge, bed_ghost, t, side, axis, g, h_dry):
        return edge


class Periodic(AbstractBoundary):
    """Periodic: the ghost cells are the interior cells of the opposite side."""

    bed_mode: ClassVar[str] = "wrap"

    def ghosts(self, mirror, edge, bed_ghost, t, side, axis, g, h_dry):
        raise AssertionError("periodic ghosts are filled by wrapping, not per side")


def _outgoing_invariant(edge, side, g, h_dry):
    """``w + 2c`` of the edge cell, with ``w`` the outward normal velocity.

    It rides the characteristic that leaves the domain, so in subcritical flow the ghost
    state must share it: the boundary then only imposes what the incoming wave carries.
    """
    h_e, qn_e, _ = edge
    w = side * desingularised_velocity(h_e, qn_e, h_dry)
    return w + 2.0 * safe_sqrt(g * h_e)


class Inflow(AbstractBoundary):
    """Prescribed inflow discharge per unit width ``discharge`` (m^2/s, >= 0 into the domain).

    Characteristic (subcritical) condition: the ghost depth ``h_b`` solves
    ``2 sqrt(g h_b) - q / h_b = w + 2c`` (the outgoing Riemann invariant of the edge cell),
    and the ghost discharge is ``q``; so the Riemann problem at the boundary face returns
    the ghost state itself and the flux into the domain is ``q``. A dry edge gets
    ``h_b = (q^2 / 4g)^(1/3)``. ``discharge`` is a number, a 1-D array along the edge, or a
    function of ``t``.
    """

    discharge: object
    bed_mode: ClassVar[str] = "edge"
    edge_fields: ClassVar[tuple[str, ...]] = ("discharge",)

    def __init__(self, discharge):
        self.discharge = _check_edge_value("discharge", discharge)
        if not callable(discharge) and is_concrete(self.discharge) and np.any(
                np.asarray(self.discharge) < 0.0):
            raise ValueError(f"discharge={discharge!r} has a negative value "
                             f"{float(np.min(np.asarray(self.discharge)))!r}; an inflow's "
                             "discharge is >= 0 (m^2/s into the domain; use swe.Outflow() "
                             "for water leaving)")

    def ghosts(self, mirror, edge, bed_ghost, t, side, axis, g, h_dry):
        q = jnp.maximum(edge_value(self.discharge, t, axis, "discharge", edge[0].shape), 0.0)
        invariant = _outgoing_invariant(edge, side, g, h_dry)
        qq = q * q / g
        h = jnp.maximum(edge[0], jnp.where(qq > 0.0, jnp.cbrt(jnp.where(qq > 0.0, qq, 1.0)), 0.0))
        h = jnp.maximum(h, h_dry)
        # Newton on f(h) = 2 sqrt(g h) - q/h - R, increasing and concave: from the left it
        # converges monotonically; the 0.1 h floor keeps a first overshoot positive.
        def newton(_, h):
            c = jnp.sqrt(g * h)
            f = 2.0 * c - q / h - invariant
            df = c / h + q / (h * h)
            return jnp.maximum(h - f / df, 0.1 * h)

        h = lax.fori_loop(0, 12, newton, h)
        qn = jnp.broadcast_to(-side * q, h.shape)
        return h, qn, jnp.zeros_like(h)

    def face_mass_flux(self, t, side, axis):
        # The Riemann flux between the ghost and the edge cell is q only approximately (to
        # ~1% in a rising hydrograph); imposing it makes the inflow volume exact.
        return -side * jnp.maximum(edge_value(self.discharge, t, axis), 0.0)


class Stage(AbstractBoundary):
    """Prescribed surface elevation ``eta`` (m): a tide, a lake, a downstream level.

    Characteristic (subcritical) condition: ghost depth ``max(eta - bed, 0)``, and the
    outward velocity ``w_b = w + 2c - 2 sqrt(g h_b)`` keeps the edge cell's outgoing Riemann
    invariant; the tangential velocity is extrapolated. ``eta`` is a number, a 1-D array along
    the edge, or a function of ``t``.
    """

    eta: object
    bed_mode: ClassVar[str] = "edge"
    edge_fields: ClassVar[tuple[str, ...]] = ("eta",)

    def __init__(self, eta):
        self.eta = _check_edge_value("eta", eta)

    def ghosts(self, mirror, edge, bed_ghost, t, side, axis, g, h_dry):
        eta = edge_value(self.eta, t, axis, "eta", edge[0].shape)
        h_e, _, qt_e = edge
        h = jnp.maximum(eta - bed_ghost, 0.0)
        w = _outgoing_invariant(edge, side, g, h_dry) - 2.0 * safe_sqrt(g * h)
        ut = desingularised_velocity(h_e, qt_e, h_dry)
        return h, h * side * w, h * ut


class Boundaries(eqx.Module):
    """One condition per side; every side defaults to :class:`Wall`.

    ``Periodic`` must be given on both sides of a pair (west/east or south/north).
    """

    west: AbstractBoundary = Wall()
    east: AbstractBoundary = Wall()
    south: AbstractBoundary = Wall()
    north: AbstractBoundary = Wall()

    def __check_init__(self):
        for side in SIDES:
            bc = getattr(self, side)
            if not isinstance(bc, AbstractBoundary):
                raise ValueError(
                    f"{side}={bc!r} is not a boundary condition; use swe.Wall(), swe.Outflow(), "
                    "swe.Periodic(), swe.Inflow(discharge) or swe.Stage(eta)"
                )
        for lo, hi in (("west", "east"), ("south", "north")):
            p_lo = isinstance(getattr(self, lo), Periodic)
            p_hi = isinstance(getattr(self, hi), Periodic)
            if p_lo != p_hi:
                one, other = (lo, hi) if p_lo else (hi, lo)
                raise ValueError(
                    f"{one}=Periodic() needs {other}=Periodic() as well; periodic boundaries "
                    f"come in pairs (west/east, south/north), got {other}="
                    f"{type(getattr(self, other)).__name__}()"
                )

    def on_block(self, block) -> Boundaries:
        """The conditions as one device of a mesh sees them: every function of ``t`` among
        their ``edge_fields`` returns whole-edge values, cut to the device's part
        (``block.cut``; 1-D arrays are split with the grid by themselves)."""
        sides = {}
        for side in SIDES:
            bc = getattr(self, side)
            edge = 0 if side in ("west", "east") else 1
            for name in bc.edge_fields:
                bc = eqx.tree_at(lambda b: getattr(b, name), bc,
                                 block.cut(getattr(bc, name), edge))
            sides[side] = bc
        return Boundaries(**sides)

    def pair(self, axis: int) -> tuple[AbstractBoundary, AbstractBoundary]:
        """The (low, high) conditions across ``axis``: 1 is x (west, east), 0 is y."""
        return (self.west, self.east) if axis == 1 else (self.south, self.north)

    def check_edge_lengths(self, shape: tuple[int, int]):
        """Edge profiles (each condition's ``edge_fields``) must match the edge they sit
        on."""
        ny, nx = shape
        for side, length in (("west", ny), ("east", ny), ("south", nx), ("north", nx)):
            bc = getattr(self, side)
            for name in bc.edge_fields:
                value = getattr(bc, name)
                if not callable(value) and jnp.ndim(value) == 1:
                    if jnp.shape(value)[0] != length:
                        raise ValueError(
                            f"{side} boundary {name} has length {jnp.shape(value)[0]}; "
                            f"expected a number or {length} values along the {side} edge"
                        )


def _take(q, start, stop, axis):
    return lax.slice_in_dim(q, start, stop, axis=axis)


def pad_bed(bed, boundaries: Boundaries, axis: int, ng: int):
    """Bed elevation with ``ng`` ghost cells on each end of ``axis``."""
    n = bed.shape[axis]
    parts = []
    for bc, side in zip(boundaries.pair(axis), (-1, 1)):
        if bc.bed_mode == "wrap":
            g = _take(bed, n - ng, n, axis) if side < 0 else _take(bed, 0, ng, axis)
        elif bc.bed_mode == "mirror":
            g = jnp.flip(_take(bed, 0, ng, axis), axis) if side < 0 else jnp.flip(
                _take(bed, n - ng, n, axis), axis)
        else:
            edge = _take(bed, 0, 1, axis) if side < 0 else _take(bed, n - 1, n, axis)
            g = jnp.repeat(edge, ng, axis=axis)
        parts.append(g)
    return jnp.concatenate([parts[0], bed, parts[1]], axis=axis)


def ghost_cells(h, qn, qt, bed_padded, boundaries: Boundaries, *, axis: int, ng: int, t, g,
                h_dry):
    """The ``ng`` ghost cells on the low and high ends of ``axis``, in placement order.

    Each is a tuple ``(h, q_normal, q_tangential)``. Ghosts are produced in outward order
    (nearest the face first) and flipped into place on the low side.
    """
    n = h.shape[axis]
    lo_bc, hi_bc = boundaries.pair(axis)
    fields = (h, qn, qt)
    if isinstance(lo_bc, Periodic):
        lo = tuple(_take(f, n - ng, n, axis) for f in fields)
        hi = tuple(_take(f, 0, ng, axis) for f in fields)
        return lo, hi
    out = []
    for bc, side in ((lo_bc, -1), (hi_bc, 1)):
        if side < 0:
            mirror = tuple(_take(f, 0, ng, axis) for f in fields)
            edge = tuple(jnp.repeat(_take(f, 0, 1, axis), ng, axis=axis) for f in fields)
            bed_ghost = jnp.flip(_take(bed_padded, 0, ng, axis), axis)
        else:
            mirror = tuple(jnp.flip(_take(f, n - ng, n, axis), axis) for f in fields)
            edge = tuple(jnp.repeat(_take(f, n - 1, n, axis), ng, axis=axis) for f in fields)
            bed_ghost = _take(bed_padded, n + ng, n + 2 * ng, axis)
        ghost = bc.ghosts(mirror, edge, bed_ghost, t, side, axis, g, h_dry)
        ghost = tuple(jnp.broadcast_to(x, mirror[0].shape).astype(h.dtype) for x in ghost)
        out.append(tuple(jnp.flip(x, axis) for x in ghost) if side < 0 else ghost)
    return tuple(out)


def impose_face_fluxes(mass_flux, boundaries: Boundaries, *, axis: int, t):
    """``mass_flux`` (``n + 1`` faces along ``axis``) with prescribed boundary fluxes set."""
    n_faces = mass_flux.shape[axis]
    for bc, side, face in zip(boundaries.pair(axis), (-1, 1), (0, n_faces - 1)):
        value = bc.face_mass_flux(t, side, axis)
        if value is not None:
            index = [slice(None), slice(None)]
            index[axis] = face
            edge_shape = jax.lax.index_in_dim(mass_flux, face, axis, keepdims=False).shape
            mass_flux = mass_flux.at[tuple(index)].set(
                jnp.broadcast_to(jnp.squeeze(value), edge_shape).astype(mass_flux.dtype))
    return mass_flux


def fill_halo(h, qn, qt, bed_padded, boundaries: Boundaries, *, axis: int, ng: int, t, g,
              h_dry):
    """``(h, q_normal, q_tangential)`` padded with ``ng`` ghost cells along ``axis``.

    ``bed_padded`` is :func:`pad_bed`'s output for the same axis.
    """
    lo, hi = ghost_cells(h, qn, qt, bed_padded, boundaries, axis=axis, ng=ng, t=t, g=g,
                         h_dry=h_dry)
    return tuple(jnp.concatenate([a, f, b], axis=axis) for a, f, b in zip(lo, (h, qn, qt), hi))

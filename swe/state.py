"""The prognostic state ``(h, hu, hv)``: depth (m) and discharges per unit width (m^2/s)."""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from .errors import check_field, finite_and_min, is_concrete
from .pointwise import desingularised_velocity


class State(eqx.Module):
    """Depth ``h`` (m) and discharges ``hu``, ``hv`` (m^2/s), each ``(ny, nx)``.

    Construct with ``State(h=..., hu=..., hv=...)`` or, more often, from a surface elevation
    with :meth:`State.from_surface`. Scalars are accepted and broadcast by ``simulate``.
    """

    h: Float[Array, "ny nx"]
    hu: Float[Array, "ny nx"]
    hv: Float[Array, "ny nx"]

    def __check_init__(self):
        # Only concrete, user-built states are checked; traced ones come from checked ones.
        if is_concrete(self.h):
            finite, low = finite_and_min(self.h)
            if finite and low < 0:
                raise ValueError(
                    f"h has a negative value {low!r}; depth must be >= 0 "
                    "(use State.from_surface to clip a surface to the bed)"
                )

    @classmethod
    def rates(cls, h, hu, hv) -> State:
        """A ``State`` holding rates of change (or increments) of ``h``, ``hu``, ``hv``, as
        :meth:`swe.ShallowWater.tendency` returns: built without the depth check (a
        draining cell's ``dh/dt`` is negative), the values stored as given.
        ``dataclasses.replace`` on it builds a checked ``State``; use
        ``eqx.tree_at`` to change a field."""
        return cls._unchecked(h, hu, hv)

    @classmethod
    def _unchecked(cls, h, hu, hv) -> State:
        """A ``State`` built without ``__check_init__``: rates, or fields already checked
        (no second pass over them)."""
        self = object.__new__(cls)  # as a pytree's unflattening does: no __init__ checks
        for name, value in (("h", h), ("hu", hu), ("hv", hv)):
            object.__setattr__(self, name, value)
        return self

    @classmethod
    def from_surface(cls, model, eta, u=0.0, v=0.0) -> State:
        """Depth from a surface elevation: ``h = max(eta - bed, 0)``; velocities ``u, v`` (m/s).

        ``model`` is a :class:`swe.ShallowWater` (its grid and its bed, m). Dry cells
        (``eta <= bed``) get zero depth and zero discharge.
        """
        if not hasattr(model, "bed") or not hasattr(model, "grid"):
            raise ValueError(f"model={model!r} is invalid; expected a swe.ShallowWater (its "
                             "bed gives the depth below the surface)")
        shape = model.grid.shape
        eta = check_field("eta", eta, shape)
        u = check_field("u", u, shape)
        v = check_field("v", v, shape)
        bed = jnp.broadcast_to(model.bed, shape)
        h = jnp.maximum(jnp.broadcast_to(eta, shape) - bed, 0.0)
        return cls(h=h, hu=h * u, hv=h * v)

    def mass(self, grid) -> Array:
        """Total water volume (m^3)."""
        return jnp.sum(self.h) * grid.cell_area

    def energy(self, model) -> Array:
        """Total energy per unit density (m^5/s^2): kinetic plus potential above z=0, with
        the bed (m), gravity and ``h_dry`` of ``model`` (a :class:`swe.ShallowWater`)."""
        u = desingularised_velocity(self.h, self.hu, model.h_dry)
        v = desingularised_velocity(self.h, self.hv, model.h_dry)
        e = 0.5 * self.h * (u * u + v * v) + model.g * self.h * (0.5 * self.h + model.bed)
        return jnp.sum(e) * model.grid.cell_area

"""Forcings: the pointwise terms of the right-hand side, and the one interface they share.

Friction, Coriolis, wind, rain, point sources and a user's own forcing are each an
:class:`AbstractForcing`: the rates of depth and discharges it adds at time ``t`` for a
state (:meth:`AbstractForcing.rates`), its check against the grid, and how one device of a
mesh sees it (:meth:`AbstractForcing.on_block`). ``swe.ShallowWater(..., forcings=(...))``
takes any of them; an absent one is not traced at all. Two have a role in the steps
besides their rates: the friction law is applied semi-implicitly
(:class:`AbstractFriction`), and the split scheme turns the Coriolis force into an exact
rotation (:class:`BetaPlane`).

Coefficients are stored as JAX arrays, so changing a value never recompiles and every
coefficient can be differentiated. A coefficient is a scalar or an ``(ny, nx)`` field (e.g.
Manning zones from land use); time-dependent forcings are functions of ``t`` (seconds).
"""

from __future__ import annotations

import abc

import equinox as eqx
import jax.numpy as jnp

from .decomposition import cut_functions
from .errors import check_field, check_finite_scalar, check_forcing_output
from .pointwise import friction_decay_rate


def _coefficient(name, value, shape=None):
    """A non-negative scalar or field; validated against ``shape`` once the grid is known."""
    if shape is None:
        arr = jnp.asarray(value) if not isinstance(value, (str, bool, type(None))) else None
        if arr is None or arr.ndim not in (0, 2):
            raise ValueError(f"{name}={value!r} is invalid; expected a number >= 0 or an "
                             "(ny, nx) array of them")
        return check_field(name, arr, arr.shape, nonnegative=True)
    return check_field(name, value, shape, nonnegative=True)


def _forcing(value, t, name=None, shape=None):
    """``value(t)`` for a function of t (checked: a number, or an array of ``shape``),
    else ``value``."""
    if not callable(value):
        return value
    expected = ("a number" if shape is None
                else f"a number or an array of the grid's shape {tuple(shape)}")
    return check_forcing_output(name, value(t), () if shape is None else shape, expected)


class AbstractForcing(eqx.Module):
    """A pointwise term of the right-hand side: rates of depth and discharges.

    A subclass implements :meth:`rates`. It may override :meth:`checked` (validation
    against the grid when the model is built) and :meth:`on_block` (how one device of a
    mesh sees it) where the defaults do not fit. Arrays it holds are leaves: they can be
    differentiated, and changing them does not recompile.
    """

    @abc.abstractmethod
    def rates(self, t, state, model):
        """``(dh/dt, d(hu)/dt, d(hv)/dt)`` at time ``t`` (s) for ``state``, each None
        (absent), a number or an array of the state's shape, in m/s and m^2/s^2.

        ``model`` is the :class:`~swe.ShallowWater` as the device that runs it sees it:
        ``model.grid`` covers the cells of ``state`` (on a device mesh a
        :class:`~swe.decomposition.GridBlock`, whose ``xc``, ``yc``, ``rows`` and ``columns``
        are the block's), and ``model.bed``, ``model.g`` and ``model.h_dry`` are at hand.
        """

    def checked(self, grid):
        """This forcing checked against ``grid`` when the model is built (ValueError
        naming the argument, its value and what is accepted). Default: itself."""
        return self

    def on_block(self, block):
        """This forcing as one device of a mesh sees it (``block``: a
        :class:`~swe.decomposition.MeshBlock`). Arrays of the grid's shape are split with
        the grid by themselves. By default every function the forcing holds is taken as a
        function of ``t`` returning a number or whole-grid values (an ``(ny, nx)`` field,
        a row or a column) and is cut to the block; override this for anything else."""
        return cut_functions(self, block)


# --- bottom friction -------------------------------------------------------------------

class AbstractFriction(AbstractForcing):
    """Bottom friction written as ``d(hu)/dt = -k(h, |u|) hu``.

    The time stepper applies it semi-implicitly, ``hu <- hu / (1 + dt k)``, which damps the
    flow towards zero and can never reverse it, however thin the layer or large ``dt``; its
    :meth:`rates` are the explicit form, for :meth:`swe.ShallowWater.tendency`. A model
    takes one friction law.
    """

    @abc.abstractmethod
    def decay_rate(self, h, speed, g, h_dry):
        """``k`` (1/s) for depth ``h`` (m) and speed ``|u|`` (m/s)."""

    def rates(self, t, state, model):
        k = friction_decay_rate(self, state.h, state.h, state.hu, state.hv, model.g,
                                model.h_dry)
        return None, -k * state.hu, -k * state.hv


class Manning(AbstractFriction):
    """Manning's law, ``k = g n^2 |u| / h^(4/3)``; ``n`` in s m^(-1/3) (0.01-0.1 typical)."""

    n: jnp.ndarray

    def __init__(self, n):
        self.n = _coefficient("n", n)

    def decay_rate(self, h, speed, g, h_dry):
        # h^(-4/3) as exp(-4/3 log h): float64 pow is a scalar libm call on XLA:CPU, and its
        # derivative another. Gradient of the 300-step benchmark at 128^2: 0.85x the time.
        return g * self.n**2 * speed * jnp.exp((-4.0 / 3.0) * jnp.log(jnp.maximum(h, h_dry)))

    def checked(self, grid):
        return Manning(_coefficient("n", self.n, grid.shape))


class Chezy(AbstractFriction):
    """Chezy's law, ``k = g |u| / (C^2 h)``; ``C`` in m^(1/2)/s (30-90 typical), > 0."""

    C: jnp.ndarray

    def __init__(self, C):
        self.C = _coefficient("C", C)
        self._check_positive(self.C)

    @staticmethod
    def _check_positive(C):
        from .errors import is_concrete

        if is_concrete(C) and bool(jnp.any(C <= 0)):
            raise ValueError(f"C has value {float(jnp.min(C))!r}; Chezy coefficients must be > 0")

    def decay_rate(self, h, speed, g, h_dry):
        return g * speed / (self.C**2 * jnp.maximum(h, h_dry))

    def checked(self, grid):
        return Chezy(_coefficient("C", self.C, grid.shape))


class LinearDrag(AbstractFriction):
    """Linear drag, bottom stress ``tau/rho = r u``: ``k = r / h``; ``r`` in m/s."""

    r: jnp.ndarray

    def __init__(self, r):
        self.r = _coefficient("r", r)

    def decay_rate(self, h, speed, g, h_dry):
        return self.r / jnp.maximum(h, h_dry)

    def checked(self, grid):
        return LinearDrag(_coefficient("r", self.r, grid.shape))


# --- Coriolis ----------------------------------------------------------------------------

class BetaPlane(AbstractForcing):
    """Coriolis parameter ``f = f0 + beta (y - y0)`` (f0 in 1/s, beta in 1/(m s)).

    ``y0`` (m) defaults to the centre of the grid's y extent. ``beta=0`` is an f-plane.
    Adds ``f hv`` to ``d(hu)/dt`` and ``-f hu`` to ``d(hv)/dt`` (the split scheme applies
    it as the exact rotation of ``(hu, hv)`` by ``f dt``). A model takes one.
    """

    f0: jnp.ndarray
    beta: jnp.ndarray
    y0: float | None = eqx.field(static=True)

    def __init__(self, f0, beta=0.0, y0=None):
        self.f0 = jnp.asarray(check_finite_scalar("f0", f0))
        self.beta = jnp.asarray(check_finite_scalar("beta", beta))
        self.y0 = None if y0 is None else float(check_finite_scalar("y0", y0))

    def parameter(self, grid):
        """``f`` at cell centres, shape ``(ny, 1)``."""
        y0 = 0.5 * (grid.y[0] + grid.y[1]) if self.y0 is None else self.y0
        return (self.f0 + self.beta * (grid.yc - y0))[:, None]

    def rates(self, t, state, model):
        f = self.parameter(model.grid).astype(state.h.dtype)
        return None, f * state.hv, -f * state.hu


def FPlane(f0) -> BetaPlane:
    """An f-plane: constant Coriolis parameter ``f0`` (1/s)."""
    return BetaPlane(f0=f0, beta=0.0)


# --- surface wind stress -------------------------------------------------------------------

class WindStress(AbstractForcing):
    """Surface wind stress ``(tau_x, tau_y)`` in Pa, acting on wet cells (deeper than the
    model's ``h_dry``).

    Each component is a number, an ``(ny, nx)`` field, or a function of ``t`` returning one.
    The momentum forcing is ``tau / rho_water``.
    """

    tau_x: object
    tau_y: object
    rho_water: jnp.ndarray

    def __init__(self, tau_x=0.0, tau_y=0.0, rho_water=1000.0):
        self.tau_x = tau_x if callable(tau_x) else _field_or_scalar("tau_x", tau_x)
        self.tau_y = tau_y if callable(tau_y) else _field_or_scalar("tau_y", tau_y)
        self.rho_water = jnp.asarray(
            check_finite_scalar("rho_water", rho_water, lower=0.0, lower_open=True))

    def checked(self, grid):
        shape = grid.shape
        return WindStress(
            self.tau_x if callable(self.tau_x) else check_field("tau_x", self.tau_x, shape),
            self.tau_y if callable(self.tau_y) else check_field("tau_y", self.tau_y, shape),
            self.rho_water,
        )

    def rates(self, t, state, model):
        ax, ay = self.acceleration(t, state.h.shape)
        wet = state.h > model.h_dry
        return None, jnp.where(wet, ax, 0.0), jnp.where(wet, ay, 0.0)

    def acceleration(self, t, shape=None):
        return (_forcing(self.tau_x, t, "tau_x", shape) / self.rho_water,
                _forcing(self.tau_y, t, "tau_y", shape) / self.rho_water)


def _field_or_scalar(name, value):
    arr = jnp.asarray(value) if not isinstance(value, (str, bool, type(None))) else None
    if arr is None or arr.ndim not in (0, 2):
        raise ValueError(f"{name}={value!r} is invalid; expected a number, an (ny, nx) array "
                         "or a function of t")
    return check_field(name, arr, arr.shape)


# --- mass sources --------------------------------------------------------------------------

class AbstractMassSource(AbstractForcing):
    """A source of water depth, ``dh/dt`` in m/s."""

    @abc.abstractmethod
    def rate(self, t, grid, shape=None):
        """``dh/dt`` (m/s): a scalar or an ``(ny, nx)`` field at time ``t``."""

    def rates(self, t, state, model):
        return self.rate(t, model.grid, state.h.shape), None, None


class Rain(AbstractMassSource):
    """Rain (or, negative, evaporation) at ``intensity`` m/s over the whole grid or a field.

    ``intensity`` is a number, an ``(ny, nx)`` field, or a function of ``t`` returning one.
    Evaporation never takes more water than a cell holds.
    """

    intensity: object

    def __init__(self, intensity):
        self.intensity = intensity if callable(intensity) else _field_or_scalar("intensity", intensity)

    def rate(self, t, grid, shape=None):
        return _forcing(self.intensity, t, "intensity", shape or grid.shape)

    def checked(self, grid):
        if callable(self.intensity):
            return self
        return Rain(check_field("intensity", self.intensity, grid.shape))


class PointSource(AbstractMassSource):
    """A point inflow of ``discharge`` m^3/s into the cell containing ``(x, y)`` (m).

    ``discharge`` is a number or a function of ``t`` (a hydrograph).
    """

    x: float = eqx.field(static=True)
    y: float = eqx.field(static=True)
    discharge: object

    def __init__(self, x, y, discharge):
        self.x = float(check_finite_scalar("x", x))
        self.y = float(check_finite_scalar("y", y))
        self.discharge = discharge if callable(discharge) else jnp.asarray(
            check_finite_scalar("discharge", discharge))

    def rate(self, t, grid, shape=None):
        j, i = grid.cell_index(self.x, self.y)
        q = jnp.asarray(_forcing(self.discharge, t, "discharge"))
        # By global indices, so that a device's block of the grid finds the cell too.
        cell = (grid.rows[:, None] == j) & (grid.columns[None, :] == i)
        return jnp.where(cell, q / grid.cell_area, jnp.zeros((), q.dtype))

    def checked(self, grid):
        grid.cell_index(self.x, self.y)  # raises if the point is off the grid
        return self

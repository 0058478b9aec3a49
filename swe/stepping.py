"""Time stepping through diffrax: SSP Runge-Kutta solvers and step-size controllers.

The strong-stability-preserving schemes of Shu & Osher (1988) are convex combinations of
forward Euler steps. Each Euler stage here is the model's positivity-preserving step
(draining-time limited fluxes, semi-implicit friction), which needs the step size, so the
solvers are written against :class:`ShallowWaterTerm` rather than a plain vector field.

The controllers choose ``dt`` (by the CFL condition or a fixed value) and shorten steps so
that they land exactly on every output time; the interpolation then returns the computed
state itself at those times, not an interpolant.
"""

from __future__ import annotations

import abc
from typing import ClassVar

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
from diffrax import RESULTS
from jaxtyping import Array

from .errors import check_finite_scalar
from .model import ShallowWater
from .pointwise import desingularised_velocity, safe_sqrt
from .state import State
from .steps import split_step, ssp_step
from .tpu_stage import BlockLayout, to_block_layout, uses_block_layout


class Envelopes(eqx.Module):
    """Running maxima a flood mapper needs, updated after every step (not just at outputs).

    ``max_depth`` (m) and ``max_speed`` (m/s) over the run, and ``arrival`` (s): the first
    step-end time at which the depth exceeded ``threshold`` (m), ``inf`` if it never did.
    """

    max_depth: Array
    max_speed: Array
    arrival: Array
    threshold: Array

    @classmethod
    def start(cls, t0, state: State, threshold, h_dry) -> Envelopes:
        empty = cls(jnp.zeros_like(state.h), jnp.zeros_like(state.h),
                    jnp.full_like(state.h, jnp.inf), jnp.asarray(threshold, state.h.dtype))
        return empty.update(t0, state, h_dry)

    def update(self, t, state: State, h_dry) -> Envelopes:
        u = desingularised_velocity(state.h, state.hu, h_dry)
        v = desingularised_velocity(state.h, state.hv, h_dry)
        speed = safe_sqrt(u * u + v * v)
        arrived = jnp.isinf(self.arrival) & (state.h > self.threshold)
        return Envelopes(jnp.maximum(self.max_depth, state.h),
                         jnp.maximum(self.max_speed, speed),
                         jnp.where(arrived, jnp.asarray(t, state.h.dtype), self.arrival),
                         self.threshold)


# Envelopes.start as one compiled call: a dozen eager operations otherwise, each a dispatch
# of its own (on an accelerator, more than a small run's steps cost).
_start_envelopes = jax.jit(Envelopes.start)


def start_envelopes(t0, state: State, threshold, h_dry) -> Envelopes:
    """The envelopes at ``t0``; ``threshold`` (``arrival_threshold``, m) must be a finite
    depth >= 0 (ValueError naming it): a negative one marks dry land as reached."""
    threshold = check_finite_scalar("arrival_threshold", threshold, lower=0.0)
    return _start_envelopes(t0, state, threshold, h_dry)


class Tracked(eqx.Module):
    """The solver's carry when envelopes are tracked: the state and its envelopes."""

    state: State
    envelopes: Envelopes


def carried_state(y):
    """The solver's state in its carry ``y``: a :class:`State`, or a
    :class:`swe.tpu_stage.BlockLayout` where the run takes the Pallas kernel."""
    return y.state if isinstance(y, Tracked) else y


def state_of(y) -> State:
    """The :class:`State` of the carry ``y``."""
    y = carried_state(y)
    return y.interior if isinstance(y, BlockLayout) else y


def initial_carry(model, t0, y0, beds, integrator):
    """The carry a run starts from: ``y0`` at ``t0`` with its state as
    :class:`swe.tpu_stage.BlockLayout` where the run's SSP steps take the Pallas kernel with
    full-width blocks (:func:`swe.tpu_stage.uses_block_layout`), else ``y0``;
    :func:`plain_carry` undoes it."""
    state = carried_state(y0)
    if not uses_block_layout(model, integrator, state.h.shape,
                             jnp.dtype(state.h.dtype).itemsize):
        return y0
    blocked = to_block_layout(model, t0, state, beds)
    return Tracked(blocked, y0.envelopes) if isinstance(y0, Tracked) else blocked


def plain_carry(ys):
    """The carry (or saved carries) ``ys`` with its state as :class:`State`."""
    return Tracked(state_of(ys), ys.envelopes) if isinstance(ys, Tracked) else state_of(ys)


class ShallowWaterTerm(diffrax.AbstractTerm):
    """The model as a diffrax term. ``args`` carries the ghost-padded beds."""

    model: ShallowWater

    def vf(self, t, y, args):
        d = self.model.tendency(t, state_of(y), args)
        carry = carried_state(y)
        if isinstance(carry, BlockLayout):  # in the carry's structure: zero outside the interior
            d = carry.with_interior(d, fill=0.0)
        if isinstance(y, Tracked):
            return Tracked(d, jax.tree.map(jnp.zeros_like, y.envelopes))
        return d

    def contr(self, t0, t1, **kwargs):
        return t1 - t0

    def prod(self, vf, control):
        return jax.tree.map(lambda v: control * v, vf)

    def split(self, t, y, args, dt, strang=False):
        return split_step(self.model, t, y, dt, args, strang=strang)


class EndpointLinearInterpolation(diffrax.AbstractLocalInterpolation):
    """Linear in time inside a step, and exactly the computed states at its two ends.

    Output times coincide with step ends (the controllers see to it), so saved frames are the
    scheme's own states: positive, conservative and well balanced to the last bit.
    """

    t0: Array
    t1: Array
    y0: object
    y1: object

    def evaluate(self, t0, t1=None, left=True):
        del left
        if t1 is not None:
            return jax.tree.map(lambda a, b: a - b, self.evaluate(t1), self.evaluate(t0))
        span = jnp.where(self.t1 > self.t0, self.t1 - self.t0, 1.0)
        w = (t0 - self.t0) / span

        def blend(a, b):
            mid = a + (w * (b - a)).astype(a.dtype)
            return jnp.where(t0 >= self.t1, b, jnp.where(t0 <= self.t0, a, mid))

        return jax.tree.map(blend, self.y0, self.y1)


def _unwrap(terms) -> ShallowWaterTerm:
    # diffeqsolve wraps terms (for the time direction); we only integrate forwards.
    while not isinstance(terms, ShallowWaterTerm):
        terms = terms.term
    return terms


class AbstractSSPRK(diffrax.AbstractSolver):
    """An explicit SSP Runge-Kutta scheme in Shu-Osher form over Euler stages.

    ``stages`` lists ``(alpha, c)`` per stage after the first: the stage value is
    ``alpha * y0 + (1 - alpha) * Euler(t0 + c dt, y_prev, dt)``.
    """

    term_structure: ClassVar = ShallowWaterTerm
    interpolation_cls: ClassVar = EndpointLinearInterpolation
    stages: eqx.AbstractClassVar[tuple[tuple[float, float], ...]]
    scheme_order: eqx.AbstractClassVar[int]
    # The CFL number when none is given (``swe.run.default_cfl``): 0.45 keeps the
    # unsplit 2-D update within its stability bound of 1/2.
    default_cfl: ClassVar[float] = 0.45

    def order(self, terms):
        return self.scheme_order

    def init(self, terms, t0, t1, y0, args):
        return None

    def step(self, terms, t0, t1, y0, args, solver_state, made_jump):
        del solver_state, made_jump
        dt = t1 - t0
        terms = _unwrap(terms)
        y = ssp_step(terms.model, t0, carried_state(y0), dt, args, self.stages)
        if isinstance(y0, Tracked):
            y = Tracked(y, y0.envelopes.update(t1, state_of(y), terms.model.h_dry))
        dense_info = dict(y0=y0, y1=y)
        return y, None, dense_info, None, RESULTS.successful

    def func(self, terms, t0, y0, args):
        return terms.vf(t0, y0, args)


class ForwardEuler(AbstractSSPRK):
    """First-order forward Euler (SSP with coefficient 1)."""

    stages: ClassVar[tuple] = ()
    scheme_order: ClassVar[int] = 1


class SSPRK2(AbstractSSPRK):
    """Second-order, two-stage SSP-RK (Heun's method in Shu-Osher form)."""

    stages: ClassVar[tuple] = ((0.5, 1.0),)
    scheme_order: ClassVar[int] = 2


class SSPRK3(AbstractSSPRK):
    """Third-order, three-stage SSP-RK of Shu & Osher (1988)."""

    stages: ClassVar[tuple] = ((0.75, 1.0), (1.0 / 3.0, 0.5))
    scheme_order: ClassVar[int] = 3


class SplitHancock(AbstractSSPRK):
    """Godunov dimensional splitting with MUSCL-Hancock sweeps
    (:func:`swe.steps.split_step`): one stage per direction, each stable to
    a Courant number of 1, so it runs with ``cfl=0.9`` unless told otherwise. Second order
    in space and time within a sweep; the splitting itself is first order and sweeps x
    before y, so it is not symmetric under swapping x and y (PyClaw's default split
    scheme does the same). Benchmark at N = 512 (README): 1.18 s and L1(h) 7.35e-4,
    against SSP-RK2 MUSCL's 5.41 s and 1.64e-3; with ``riemann="roe"`` 1.61 s and 6.76e-4,
    below PyClaw's 6.94e-4. See :class:`StrangSplitHancock` for flows near a balance."""

    stages: ClassVar[tuple] = ()
    scheme_order: ClassVar[int] = 2
    strang: ClassVar[bool] = False
    default_cfl: ClassVar[float] = 0.9  # each sweep is stable to a Courant number of 1

    def step(self, terms, t0, t1, y0, args, solver_state, made_jump):
        del solver_state, made_jump
        terms = _unwrap(terms)
        y = terms.split(t0, state_of(y0), args, t1 - t0, strang=self.strang)
        if isinstance(y0, Tracked):
            y = Tracked(y, y0.envelopes.update(t1, y, terms.model.h_dry))
        return y, None, dict(y0=y0, y1=y), None, RESULTS.successful


class StrangSplitHancock(SplitHancock):
    """Strang splitting with MUSCL-Hancock sweeps: x over half the step, y over the
    whole step, x over the other half (Strang 1968; LeVeque 2002, sec. 19.5; Clawpack's
    ``dimensional_split="strang"``), so the splitting is second order too. Three sweeps
    instead of two: 1.5x the cost of :class:`SplitHancock` per step, at the same ``cfl``.

    The splitting error of Godunov's order is what breaks a balance between directions:
    on the geostrophic eddy (``validation/geostrophic.py``, one inertial period, Roe-MC)
    L1(h) at 64^2 / 128^2 / 256^2 is 0.014 / 0.0032 / 0.00078, against Godunov's 0.143 /
    0.084 / 0.042 and the default SSP-RK2 MUSCL's 0.083 / 0.022 / 0.0065 (in twice the
    steps). On the benchmark dam break at N = 512, L1(h) 7.11e-4 against Godunov's
    6.76e-4 (the x/y asymmetry, max |h - h^T|, 0.024 against 0.033).

    Alternating the order of two sweeps every step (x-y, then y-x), not offered, costs as
    much as Godunov's but is half as accurate on the eddy (0.026 / 0.0061 / 0.0014), and
    its state (the next order) would make a run in pieces (``swe.iterate``, one solve per
    output interval) differ from one piece, and cost both orders under ``jax.vmap``."""

    strang: ClassVar[bool] = True


INTEGRATORS = {"euler": ForwardEuler, "ssprk2": SSPRK2, "ssprk3": SSPRK3,
               "split": SplitHancock, "strang": StrangSplitHancock}


SLIVER = 0.01  # the shortest step the landing rule leaves, as a fraction of the proposed one


class AbstractLandingController(diffrax.AbstractStepSizeController):
    """Proposes ``dt`` and shortens steps to land exactly on the sorted ``stops``.

    A step that would overshoot the next stop ends on it (as in Clawpack and PyClaw). When a
    full step would leave less than 1% of a step before the stop, the remaining interval
    is halved instead, so no step is a sliver of round-off size. (Halving whenever the
    stop is less than two steps away runs the last two steps at 1/2 to 1 of the CFL
    number, which costs the split schemes 3.5% of their L1 error on the benchmark at
    N = 128; a quarter-step threshold still costs it there.) No step
    exceeds ``dt_max``; while the domain is dry (no wave speed bounds the step, yet rain
    may be falling) the step is ``dt_dry``.

    The controller is also the blow-up detector: it already reduces the state to a step
    size after every step, so a NaN there (NaN or inf in a wet cell) or a step below
    ``dt_min`` ends the solve with ``RESULTS.dt_min_reached``, without a second pass over
    the state.
    """

    stops: eqx.AbstractVar[Array]
    dt_max: eqx.AbstractVar[Array]
    dt_dry: eqx.AbstractVar[Array]
    dt_min: eqx.AbstractVar[Array]

    @abc.abstractmethod
    def proposed_dt(self, t, y, args) -> Array:
        """The step the physics allows from state ``y`` at time ``t`` (NaN if ``y`` is)."""

    def _next_t1(self, t, y, args):
        dt = self.proposed_dt(t, y, args)
        failed = jnp.isnan(dt) | (dt < self.dt_min)
        dt = jnp.where(jnp.isfinite(dt), dt, self.dt_dry)
        dt = jnp.minimum(dt, self.dt_max).astype(jnp.result_type(t))
        idx = jnp.clip(jnp.searchsorted(self.stops, t, side="right"), 0, self.stops.size - 1)
        stop = self.stops[idx]
        remaining = stop - t
        half = t + 0.5 * remaining
        t_next = jnp.where(remaining <= dt, stop,
                           jnp.where(remaining < (1.0 + SLIVER) * dt, half, t + dt))
        return t_next, failed

    def wrap(self, direction):
        return self

    def init(self, terms, t0, t1, y0, dt0, args, func, error_order):
        # A bad initial state fails at the first step's end, with the first step's result.
        return self._next_t1(t0, y0, args)[0], None

    def adapt_step_size(self, t0, t1, y0, y1_candidate, args, y_error, error_order,
                        controller_state):
        t_next, failed = self._next_t1(t1, y1_candidate, args)
        result = RESULTS.where(failed, RESULTS.dt_min_reached, RESULTS.successful)
        return True, t1, t_next, False, None, result


class CFLController(AbstractLandingController):
    """``dt = cfl * min(dx, dy) / max(|u| + sqrt(g h))`` over wet cells."""

    model: ShallowWater
    cfl: Array
    stops: Array
    dt_max: Array
    dt_dry: Array
    dt_min: Array

    def proposed_dt(self, t, y, args):
        return self.model.stable_time_step(state_of(y), self.cfl, t, args)


class FixedController(AbstractLandingController):
    """A fixed ``dt`` (still shortened to land on output times)."""

    model: ShallowWater
    dt: Array
    stops: Array
    dt_max: Array
    dt_dry: Array
    dt_min: Array

    def proposed_dt(self, t, y, args):
        # The wave speed is looked at for the blow-up check: NaN in the state, or the fixed
        # step past the CFL limit (Courant number above 1, where no scheme here is stable;
        # the positivity limiter keeps such a run finite, so it returned garbage silently).
        limit = self.model.stable_time_step(state_of(y), 1.0)
        return jnp.where(jnp.isnan(limit) | (self.dt > limit), jnp.nan, self.dt)

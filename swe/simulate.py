"""``simulate``: run a model from an initial state, and the ``Result`` it returns."""

from __future__ import annotations

import math
import time as _time

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array

from .errors import (SimulationError, check_choice, check_field, check_finite_scalar,
                     is_concrete)
from .model import ShallowWater
from .state import State
from .stepping import INTEGRATORS, CFLController, FixedController, ShallowWaterTerm


class Result(eqx.Module):
    """Saved frames of a run: ``times`` (s) and ``states`` with a leading time axis.

    ``num_steps`` is the number of time steps taken and ``wall_time`` the seconds the run
    took (compile included; NaN when traced).
    """

    model: ShallowWater
    times: Array
    states: State
    num_steps: Array
    wall_time: float = eqx.field(static=True, default=float("nan"))
    settings: dict = eqx.field(static=True, default_factory=dict)

    def frame(self, index: int) -> State:
        """The state at output ``index``."""
        return jax.tree.map(lambda x: x[index], self.states)

    @property
    def final(self) -> State:
        return self.frame(-1)

    def mass(self) -> Array:
        """Water volume (m^3) at every output time."""
        return jnp.sum(self.states.h, axis=(-2, -1)) * self.model.grid.cell_area

    def to_xarray(self):
        """An ``xarray.Dataset`` with dims ``(time, y, x)`` and CF-1.10 attributes."""
        from .output import to_dataset

        return to_dataset(self)


def output_times(save_at, t0: float, t_end: float) -> np.ndarray:
    """Output times from an interval (float) or a sequence; always within ``[t0, t_end]``."""
    if save_at is None:
        return np.array([t0, t_end])
    if np.ndim(save_at) == 0:
        interval = float(save_at)
        if not (math.isfinite(interval) and interval > 0):
            raise ValueError(f"save_at={save_at!r} is invalid; expected a positive interval (s) "
                             "or a list of times in [t0, t_end]")
        n = math.floor((t_end - t0) / interval * (1 + 1e-12))
        times = t0 + interval * np.arange(n + 1)
        if t_end - times[-1] > 1e-9 * max(abs(t_end), 1.0):
            times = np.append(times, t_end)
        return np.minimum(times, t_end)
    times = np.asarray(save_at, dtype=float).ravel()
    if times.size == 0:
        raise ValueError("save_at=[] is invalid; give at least one output time in [t0, t_end]")
    bad = times[~np.isfinite(times) | (times < t0) | (times > t_end)]
    if bad.size:
        raise ValueError(f"save_at contains {float(bad[0])!r}, outside [t0, t_end] = "
                         f"[{t0!r}, {t_end!r}]; every output time must lie in that interval")
    return np.unique(times)


def _check_state(state0, model: ShallowWater, dtype) -> State:
    if not isinstance(state0, State):
        raise ValueError(f"state0={state0!r} is invalid; expected a swe.State")
    shape = model.grid.shape
    h = check_field("h", state0.h, shape, nonnegative=True, dtype=dtype)
    hu = check_field("hu", state0.hu, shape, dtype=dtype)
    hv = check_field("hv", state0.hv, shape, dtype=dtype)
    return State(*(jnp.broadcast_to(x, shape) for x in (h, hu, hv)))


def _cast(tree, dtype):
    return jax.tree.map(
        lambda x: x.astype(dtype) if eqx.is_array(x) and jnp.issubdtype(x.dtype, jnp.floating)
        else x, tree)


@eqx.filter_jit
def _solve(model, state0, stops, save_ts, t0, t_end, cfl, dt, dt_min, dt_max, integrator,
           max_steps, checkpoints):
    dt_dry = jnp.minimum((t_end - t0) / 100, dt_max)
    term = ShallowWaterTerm(model)
    solver = INTEGRATORS[integrator]()
    if dt is None:
        controller = CFLController(model=model, cfl=cfl, stops=stops, dt_max=dt_max,
                                   dt_dry=dt_dry)
    else:
        controller = FixedController(dt=dt, stops=stops, dt_max=dt_max, dt_dry=dt_dry)

    def blew_up(t, y, args, **kwargs):
        # NaN anywhere in h, or in the velocity of a wet cell, makes the max NaN.
        speed = model.max_wave_speed(y)
        bad = ~jnp.isfinite(speed)
        if dt is None:
            bad = bad | (model.stable_time_step(y, cfl) < dt_min)
        return bad

    sol = diffrax.diffeqsolve(
        term, solver, t0=t0, t1=t_end, dt0=None, y0=state0, args=model.padded_beds(),
        saveat=diffrax.SaveAt(ts=save_ts, t1=True),
        stepsize_controller=controller,
        event=diffrax.Event(blew_up),
        adjoint=diffrax.RecursiveCheckpointAdjoint(checkpoints=checkpoints),
        max_steps=max_steps,
        throw=False,
    )
    return sol.ts, sol.ys, sol.result, sol.stats["num_steps"]


def simulate(model: ShallowWater, state0: State, t_end, save_at=None, *, t0=0.0, cfl=0.45,
             dt=None, integrator: str = "ssprk2", dtype=None, max_steps: int | None = None,
             checkpoints: int = 64, dt_min=None, dt_max=None) -> Result:
    """Integrate ``model`` from ``state0`` at ``t0`` to ``t_end`` (seconds).

    * ``save_at``: an output interval (s) or a sequence of output times in ``[t0, t_end]``;
      default ``[t0, t_end]``. Steps are shortened to land exactly on each output time.
    * ``cfl`` in ``(0, 1]``: ``dt = cfl * min(dx, dy) / max(|u| + sqrt(g h))``. Positivity of
      the depth holds for any ``cfl`` in that range (draining-time limiter); accuracy and
      stability call for ``cfl <= 0.5`` in 2-D.
    * ``dt``: a fixed step (s) instead of the CFL controller.
    * ``integrator``: ``"ssprk2"`` (default), ``"ssprk3"`` or ``"euler"``.
    * ``dtype``: ``"float32"`` or ``"float64"``; default: the initial depth's dtype.
      float64 needs ``jax.config.update("jax_enable_x64", True)`` first.
    * ``max_steps``: bound on the number of steps (None: unbounded).
    * ``checkpoints``: states kept for reverse-mode gradients (memory does not grow with
      the number of steps: recursive checkpointing recomputes instead).
    * ``dt_min``: a CFL step below this (default ``1e-9 (t_end - t0)``) means the run blew up.
    * ``dt_max``: the longest step (default: no limit). While the whole domain is dry the
      step is ``min(dt_max, (t_end - t0) / 100)``.

    Raises ``ValueError`` for bad arguments and :class:`SimulationError` (with the simulated
    time and step) if the state becomes NaN/inf or the step collapses. Under ``jax.jit`` or
    ``jax.grad`` the failure is raised by ``equinox.error_if`` at run time instead.
    """
    if not isinstance(model, ShallowWater):
        raise ValueError(f"model={model!r} is invalid; expected a swe.ShallowWater")
    integrator = check_choice("integrator", integrator, INTEGRATORS)
    t0 = float(check_finite_scalar("t0", t0))
    t_end = float(check_finite_scalar("t_end", t_end, lower=t0, lower_open=True))
    cfl = check_finite_scalar("cfl", cfl, lower=0.0, upper=1.0, lower_open=True)
    if dt is not None:
        dt = check_finite_scalar("dt", dt, lower=0.0, lower_open=True)
    if max_steps is not None:
        from .errors import check_positive_int

        max_steps = check_positive_int("max_steps", max_steps)
    checkpoints = int(checkpoints) if checkpoints is not None else None
    if checkpoints is not None and checkpoints < 1:
        raise ValueError(f"checkpoints={checkpoints!r} is invalid; expected an integer >= 1")
    if dtype is None:
        dtype = jnp.result_type(state0.h) if isinstance(state0, State) else jnp.result_type(float)
        if not jnp.issubdtype(dtype, jnp.floating):
            dtype = jnp.result_type(float)
    else:
        name = check_choice("dtype", str(np.dtype(dtype)) if not isinstance(dtype, str) else dtype,
                            ("float32", "float64"))
        if name == "float64" and not jax.config.jax_enable_x64:
            raise ValueError('dtype="float64" needs 64-bit JAX: call '
                             'jax.config.update("jax_enable_x64", True) before building arrays')
        dtype = jnp.dtype(name)
    dtype = jnp.dtype(dtype)
    state0 = _check_state(state0, model, dtype)
    times = output_times(save_at, t0, t_end)
    stops = np.unique(np.append(times, t_end))
    dt_min = 1e-9 * (t_end - t0) if dt_min is None else float(
        check_finite_scalar("dt_min", dt_min, lower=0.0))

    dt_max = math.inf if dt_max is None else float(
        check_finite_scalar("dt_max", dt_max, lower=0.0, lower_open=True))

    model = _cast(model, dtype)
    state0 = _cast(state0, dtype)
    start = _time.perf_counter()
    ts, ys, result, num_steps = _solve(
        model, state0, jnp.asarray(stops, dtype), jnp.asarray(times, dtype),
        jnp.asarray(t0, dtype), jnp.asarray(t_end, dtype), jnp.asarray(cfl, dtype),
        None if dt is None else jnp.asarray(dt, dtype), jnp.asarray(dt_min, dtype),
        jnp.asarray(dt_max, dtype), integrator,
        max_steps, checkpoints)
    failed = result != diffrax.RESULTS.successful
    if is_concrete(failed):
        jax.block_until_ready(ys)
        wall = _time.perf_counter() - start
        if bool(failed):
            _raise_failure(result, ts, ys, num_steps, max_steps)
    else:
        wall = float("nan")
        ys = eqx.error_if(ys, failed, "swe.simulate: the run blew up (NaN/inf in the state or "
                          "the time step collapsed) or hit max_steps; rerun outside jit/grad "
                          "to see the simulated time and step")
    n = times.size
    settings = dict(integrator=integrator, cfl=_number(cfl) if dt is None else None,
                    dt=None if dt is None else _number(dt), dtype=str(dtype), t0=t0,
                    t_end=t_end)
    return Result(model=model, times=ts[:n], states=jax.tree.map(lambda x: x[:n], ys),
                  num_steps=num_steps, wall_time=wall, settings=settings)


def _number(x):
    return float(x) if is_concrete(x) else None


def _raise_failure(result, ts, ys, num_steps, max_steps):
    step = int(num_steps)
    ts = np.asarray(ts)
    # Saved frames come first, then the time the solve stopped, then unused (inf) slots.
    t_fail = float(ts[np.isfinite(ts)][-1])
    if result == diffrax.RESULTS.max_steps_reached:
        raise SimulationError(
            f"the run stopped at max_steps={max_steps} at t={t_fail:.6g} s before reaching "
            "t_end; raise max_steps (or pass max_steps=None)", time=t_fail, step=step)
    if result == diffrax.RESULTS.event_occurred:
        last = jax.tree.map(lambda x: x[np.isfinite(ts).sum() - 1], ys)
        finite = all(bool(jnp.all(jnp.isfinite(x))) for x in jax.tree.leaves(last))
        why = ("the time step collapsed below dt_min (velocities exploded)" if finite
               else "NaN or inf appeared in the state")
        raise SimulationError(
            f"the run blew up at t={t_fail:.6g} s, step {step}: {why}; reduce cfl or dt, or "
            "check the initial state, bed and forcing", time=t_fail, step=step)
    raise SimulationError(f"the solver failed at t={t_fail:.6g} s, step {step}: {result}",
                          time=t_fail, step=step)

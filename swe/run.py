"""The machinery of a run, shared by :func:`swe.simulate`, :func:`swe.iterate`, the
ensembles (:mod:`swe.ensemble`) and the device meshes (:mod:`swe.parallel`): arguments
validated and cast (:func:`prepare`), output times, the compiled solve (:func:`solve`) and
the error a failed run raises (:func:`raise_failure`).
"""

from __future__ import annotations

import dataclasses
import math

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .errors import (SimulationError, check_choice, check_field, check_finite_scalar,
                     check_positive_int, is_concrete)
from .model import ShallowWater
from .scenario import Gauge, as_gauge
from .state import State
from .stepping import (INTEGRATORS, AbstractSSPRK, CFLController, FixedController,
                       ShallowWaterTerm, initial_carry, plain_carry)

# More output times than this is a units slip (an interval in ms or ns), and
# simulate would allocate a frame for each before it starts.
MAX_OUTPUTS = 1_000_000


def output_times(save_at, t0: float, t_end: float) -> np.ndarray:
    """Output times from an interval (float) or a sequence; always within ``[t0, t_end]``."""
    if save_at is None:
        return np.array([t0, t_end])
    if isinstance(save_at, (str, bytes, bool)):
        raise ValueError(f"save_at={save_at!r} is invalid; expected a positive interval (s) "
                         "or a list of times in [t0, t_end]")
    if np.ndim(save_at) == 0:
        interval = float(save_at)
        if not (math.isfinite(interval) and interval > 0):
            raise ValueError(f"save_at={save_at!r} is invalid; expected a positive interval (s) "
                             "or a list of times in [t0, t_end]")
        n = math.floor((t_end - t0) / interval * (1 + 1e-12))
        if n > MAX_OUTPUTS:
            raise ValueError(f"save_at={save_at!r} gives {n + 1:.3g} output times over "
                             f"[{t0!r}, {t_end!r}]; at most {MAX_OUTPUTS:,} (the interval is "
                             "in seconds)")
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
    # Checked above: State's own check of h would be a second pass over it.
    return State._unchecked(*(jnp.broadcast_to(x, shape) for x in (h, hu, hv)))


def _cast(tree, dtype):
    # Weakly typed leaves (Python floats made arrays) are cast even when already in
    # ``dtype``: the cast makes them strong, so that a parameter given one way or the other
    # does not change the compiled signature (tests/test_bench.py checks for recompilation).
    # Strong leaves already in ``dtype`` are left alone (a cast is a dispatch of its own).
    def cast(x):
        floating = eqx.is_array(x) and jnp.issubdtype(x.dtype, jnp.floating)
        if floating and (x.dtype != dtype or getattr(x, "weak_type", True)):
            return x.astype(dtype)
        return x
    return jax.tree.map(cast, tree)


@dataclasses.dataclass(frozen=True)
class PreparedRun:
    """Validated, cast arguments of a run (:func:`prepare`), shared by
    :func:`swe.simulate`, :func:`swe.iterate` and each ensemble member."""

    model: ShallowWater
    state0: State
    times: np.ndarray
    t0: float
    t_end: float
    dtype: object
    controls: dict  # cfl, dt, dt_min, dt_max, dt_dry as arrays (dt may be None)
    integrator: str
    max_steps: int | None
    settings: dict


# The run's clock is kept in its dtype: it must tell at least this many instants apart
# over [t0, t_end] (2^17). float32 does from t0 = 0 for any length (about 2^23 / 2); far
# from zero it does not: from t0 = 1e6 s two float32 times are 0.0625 s apart, and a
# 3 s dam break took 2 steps instead of 26.
MIN_TIME_RESOLUTION = 2**17


def _check_time_resolution(t0: float, t_end: float, dtype) -> None:
    spacing = float(np.spacing(np.asarray(max(abs(t0), abs(t_end)), dtype)))
    if spacing * MIN_TIME_RESOLUTION > t_end - t0:
        raise ValueError(
            f"t0={t0!r}, t_end={t_end!r} in {np.dtype(dtype).name}: times there are "
            f"{spacing:.3g} s apart, too coarse for a run {t_end - t0:.3g} s long (steps and "
            "output times would be rounded); count t0 from 0 (the calendar date goes in "
            "to_xarray's start_time) or use float64")


def default_cfl(integrator: str) -> float:
    """The CFL number used when none is given: the solver's own ``default_cfl`` (0.9 for
    the split schemes, whose sweeps are each stable to 1; 0.45 for the unsplit SSP
    schemes). An unknown name gets 0.45 here and its error from :func:`prepare`."""
    solver = INTEGRATORS.get(str(integrator).lower())
    return AbstractSSPRK.default_cfl if solver is None else solver.default_cfl


def prepare(model, state0, t_end, save_at, t0, cfl, dt, integrator, dtype, max_steps,
            dt_min, dt_max, state_checked=False) -> PreparedRun:
    """Validated, cast arguments of a run. ``state_checked``: ``state0`` is the ``state0``
    of a :class:`PreparedRun` already prepared for the same grid and dtype (ensemble members
    that share a state are checked once: each check is a pass over its fields)."""
    if not isinstance(model, ShallowWater):
        raise ValueError(f"model={model!r} is invalid; expected a swe.ShallowWater")
    integrator = check_choice("integrator", integrator, INTEGRATORS)
    cfl = default_cfl(integrator) if cfl is None else cfl
    for name, value in (("t0", t0), ("t_end", t_end)):
        if not is_concrete(value):
            raise ValueError(f"{name} is traced (an argument of jit or grad); it must be a "
                             "concrete number: it fixes the output times and the landing "
                             "stops. Close over it, or mark it static")
    t0 = float(check_finite_scalar("t0", t0))
    t_end = float(check_finite_scalar("t_end", t_end, lower=t0, lower_open=True))
    cfl = check_finite_scalar("cfl", cfl, lower=0.0, upper=1.0, lower_open=True)
    if dt is not None:
        dt = check_finite_scalar("dt", dt, lower=0.0, lower_open=True)
    if max_steps is not None:
        max_steps = check_positive_int("max_steps", max_steps)
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
    _check_time_resolution(t0, t_end, dtype)
    if not state_checked:
        state0 = _check_state(state0, model, dtype)
    times = output_times(save_at, t0, t_end)
    dt_min = 1e-9 * (t_end - t0) if dt_min is None else float(
        check_finite_scalar("dt_min", dt_min, lower=0.0))
    dt_max = math.inf if dt_max is None else float(
        check_finite_scalar("dt_max", dt_max, lower=0.0, lower_open=True))
    controls = dict(cfl=jnp.asarray(cfl, dtype),
                    dt=None if dt is None else jnp.asarray(dt, dtype),
                    dt_min=jnp.asarray(dt_min, dtype), dt_max=jnp.asarray(dt_max, dtype),
                    dt_dry=jnp.asarray(min((t_end - t0) / 100, dt_max), dtype))
    settings = dict(integrator=integrator, cfl=_number(cfl) if dt is None else None,
                    dt=None if dt is None else _number(dt), dtype=str(dtype), t0=t0,
                    t_end=t_end)
    return PreparedRun(_cast(model, dtype), _cast(state0, dtype), times, t0, t_end, dtype,
                       controls, integrator, max_steps, settings)


@eqx.filter_jit
def solve(model, y0, t0, t1, stops, save_ts, controls, integrator, max_steps, checkpoints):
    """The compiled run. ``save_ts=None`` saves ``t1`` only: diffrax then adds no run-time
    checks of the save times, which are host callbacks that would keep the executable out
    of JAX's persistent compilation cache (the caller has validated the times already).
    Those checks are equinox.error_if calls on arrays, so they are callbacks even for
    constant times (and under ``jax.ensure_compile_time_eval`` equinox raised them for
    increasing times, equinox 0.13.8)."""
    dt = controls["dt"]
    common = dict(stops=stops, dt_max=controls["dt_max"], dt_dry=controls["dt_dry"],
                  dt_min=controls["dt_min"])
    if dt is None:
        controller = CFLController(model=model, cfl=controls["cfl"], **common)
    else:
        # A fixed step never collapses; only NaN stops it.
        controller = FixedController(model=model, dt=dt, **{**common, "dt_min": 0.0})

    beds = model.padded_beds()
    # The saved frames are the carries' states (a carry in the Pallas kernel's layout is
    # larger, and holds the bed).
    save = dict(t1=True, fn=lambda t, y, args: plain_carry(y))
    sol = diffrax.diffeqsolve(
        ShallowWaterTerm(model), INTEGRATORS[integrator](), t0=t0, t1=t1, dt0=None,
        y0=initial_carry(model, t0, y0, beds, integrator), args=beds,
        saveat=diffrax.SaveAt(**save) if save_ts is None else diffrax.SaveAt(ts=save_ts,
                                                                             **save),
        stepsize_controller=controller,
        adjoint=diffrax.RecursiveCheckpointAdjoint(checkpoints=checkpoints),
        max_steps=max_steps,
        throw=False,
    )
    return sol.ts, sol.ys, sol.result, sol.stats["num_steps"]


def check_gauges(gauges, model):
    """``gauges`` (a :class:`swe.Gauge`, or a sequence of gauges and ``(name, x, y)``
    tuples) as a tuple of gauges, each checked to lie on ``model``'s grid (ValueError if
    not)."""
    out = []
    for g in (gauges,) if isinstance(gauges, Gauge) else gauges:
        g = as_gauge(g)
        model.grid.cell_index(g.x, g.y)
        out.append(g)
    return tuple(out)


def _number(x):
    return float(x) if is_concrete(x) else None


def raise_failure(result, ts, ys, num_steps, max_steps):
    """Raises the :class:`swe.SimulationError` of a failed solve (``result`` not
    successful), naming the simulated time and step it stopped at and what to change."""
    # Under an eager jax.grad the outputs are autodiff tracers with concrete values:
    # stop_gradient gives those values.
    ts, ys, num_steps = jax.lax.stop_gradient((ts, ys, num_steps))
    step = int(num_steps)
    ts = np.asarray(ts)
    # Saved frames come first, then the time the solve stopped, then unused (inf) slots.
    t_fail = float(ts[np.isfinite(ts)][-1])
    if result == diffrax.RESULTS.max_steps_reached:
        raise SimulationError(
            f"the run stopped at max_steps={max_steps} at t={t_fail:.6g} s before reaching "
            "t_end; raise max_steps (or pass max_steps=None)", time=t_fail, step=step)
    if result == diffrax.RESULTS.dt_min_reached:
        last = jax.tree.map(lambda x: x[np.isfinite(ts).sum() - 1], ys)
        finite = all(bool(jnp.all(jnp.isfinite(x))) for x in jax.tree.leaves(last))
        why = ("the time step collapsed below dt_min (velocities exploded), or a fixed dt "
               "passed the CFL limit (a Courant number above 1)" if finite
               else "NaN or inf appeared in the state")
        raise SimulationError(
            f"the run blew up at t={t_fail:.6g} s, step {step}: {why}; reduce cfl or dt, or "
            "check the initial state, bed and forcing", time=t_fail, step=step)
    raise SimulationError(f"the solver failed at t={t_fail:.6g} s, step {step}: {result}",
                          time=t_fail, step=step)

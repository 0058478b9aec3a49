"""``simulate``: run a model from an initial state, and the ``Result`` it returns."""

from __future__ import annotations

import dataclasses
import functools
import math
import time as _time

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array

from .errors import (SimulationError, check_choice, check_field, check_finite_scalar,
                     check_positive_int, is_concrete)
from .model import ShallowWater
from .state import State
from .stepping import (INTEGRATORS, AbstractSSPRK, CFLController, Envelopes, FixedController,
                       ShallowWaterTerm, Tracked, laid_out, start_envelopes, state_of,
                       unlaid)


class Result(eqx.Module):
    """Saved frames of a run: ``times`` (s) and ``states`` with a leading time axis.

    ``envelopes`` holds the per-step maxima (depth, speed) and first-arrival times over the
    whole run (None if not tracked); ``gauges`` the named points sampled at every output
    time. ``num_steps`` is the number of time steps taken and ``wall_time`` the seconds the
    run took (compile included; NaN when traced). ``failed``: whether the run failed (only
    ever true with ``simulate(..., throw=False)``; a bool, or a boolean array).
    """

    model: ShallowWater
    times: Array
    states: State
    num_steps: Array
    envelopes: Envelopes | None = None
    gauges: tuple = eqx.field(static=True, default=())
    wall_time: float = eqx.field(static=True, default=float("nan"))
    settings: dict = eqx.field(static=True, default_factory=dict)
    failed: Array | bool = False

    def frame(self, index: int) -> State:
        """The state at output ``index`` (IndexError outside ``-n .. n - 1``; JAX's own
        indexing would clamp it to the nearest frame)."""
        n = self.states.h.shape[-3]
        if isinstance(index, (int, np.integer)) and not -n <= index < n:
            raise IndexError(f"index={index} is out of range for {n} output frames; "
                             f"expected -{n} .. {n - 1}")
        return jax.tree.map(lambda x: x[index], self.states)

    @property
    def final(self) -> State:
        return self.frame(-1)

    def mass(self) -> Array:
        """Water volume (m^3) at every output time."""
        return jnp.sum(self.states.h, axis=(-2, -1)) * self.model.grid.cell_area

    def to_xarray(self, start_time: str = "2000-01-01T00:00:00", attrs=None):
        """An ``xarray.Dataset`` with dims ``(time, y, x)`` and CF-1.10 attributes.

        ``time`` holds datetimes from ``start_time`` (the file stores seconds since it).
        """
        from .output import to_dataset

        return to_dataset(self, start_time=start_time, attrs=attrs)


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
class _Run:
    """Validated, cast arguments shared by :func:`simulate` and :func:`iterate`."""

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
    schemes). An unknown name gets 0.45 here and its error from :func:`simulate`."""
    solver = INTEGRATORS.get(str(integrator).lower())
    return AbstractSSPRK.default_cfl if solver is None else solver.default_cfl


def _prepare(model, state0, t_end, save_at, t0, cfl, dt, integrator, dtype, max_steps,
             dt_min, dt_max, state_checked=False) -> _Run:
    """Validated, cast arguments of a run. ``state_checked``: ``state0`` is the ``state0``
    of a :class:`_Run` already prepared for the same grid and dtype (ensemble members that
    share a state are checked once: each check is a pass over its fields)."""
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
    return _Run(_cast(model, dtype), _cast(state0, dtype), times, t0, t_end, dtype, controls,
                integrator, max_steps, settings)


@eqx.filter_jit
def _solve(model, y0, t0, t1, stops, save_ts, controls, integrator, max_steps, checkpoints):
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
    save = dict(t1=True, fn=lambda t, y, args: unlaid(y))
    sol = diffrax.diffeqsolve(
        ShallowWaterTerm(model), INTEGRATORS[integrator](), t0=t0, t1=t1, dt0=None,
        y0=laid_out(model, t0, y0, beds, integrator), args=beds,
        saveat=diffrax.SaveAt(**save) if save_ts is None else diffrax.SaveAt(ts=save_ts,
                                                                             **save),
        stepsize_controller=controller,
        adjoint=diffrax.RecursiveCheckpointAdjoint(checkpoints=checkpoints),
        max_steps=max_steps,
        throw=False,
    )
    return sol.ts, sol.ys, sol.result, sol.stats["num_steps"]


def simulate(model: ShallowWater, state0: State, t_end, save_at=None, *, t0=0.0, cfl=None,
             dt=None, integrator: str = "ssprk2", dtype=None, max_steps: int | None = None,
             checkpoints: int = 64, dt_min=None, dt_max=None, envelopes: bool = True,
             arrival_threshold=0.01, gauges=(), mesh=None, throw: bool = True) -> Result:
    """Integrate ``model`` from ``state0`` at ``t0`` to ``t_end`` (seconds).

    * ``save_at``: an output interval (s) or a sequence of output times in ``[t0, t_end]``;
      default ``[t0, t_end]``. Steps are shortened to land exactly on each output time.
    * ``cfl`` in ``(0, 1]`` (default 0.45; 0.9 with ``"split"`` and ``"strang"``):
      ``dt = cfl * min(dx, dy) / max(|u| + sqrt(g h))``. Positivity of
      the depth holds for any ``cfl`` in that range (draining-time limiter); accuracy and
      stability call for ``cfl <= 0.5`` in 2-D.
    * ``dt``: a fixed step (s) instead of the CFL controller.
    * ``integrator``: ``"ssprk2"`` (default), ``"ssprk3"``, ``"euler"``, ``"split"``
      (Godunov dimensional splitting with MUSCL-Hancock sweeps, each stable to a Courant
      number of 1; see :class:`swe.stepping.SplitHancock`) or ``"strang"`` (Strang
      splitting, x over half the step, y, x over the other half: second order, 1.5x the
      cost, for flows near a balance such as geostrophic;
      :class:`swe.stepping.StrangSplitHancock`).
    * ``dtype``: ``"float32"`` or ``"float64"``; default: the initial depth's dtype.
      float64 needs ``jax.config.update("jax_enable_x64", True)`` first.
    * ``max_steps``: bound on the number of steps (None: unbounded).
    * ``checkpoints``: states kept for reverse-mode gradients (memory does not grow with
      the number of steps: recursive checkpointing recomputes instead).
    * ``dt_min``: a CFL step below this (default ``1e-9 (t_end - t0)``) means the run blew up.
    * ``dt_max``: the longest step (default: no limit). While the whole domain is dry the
      step is ``min(dt_max, (t_end - t0) / 100)``.
    * ``envelopes``: track maximum depth, maximum speed and first arrival (depth above
      ``arrival_threshold`` m) after every step. Turn off to save memory in gradients.
    * ``gauges``: :class:`~swe.Gauge` points sampled at every output time.
    * ``mesh``: split the grid over devices, ``"YxX"`` (e.g. ``"2x4"``: 2 along y, 4 along
      x), a shape ``(2, 4)`` or a :class:`jax.sharding.Mesh` with axes ``("y", "x")``; see
      :mod:`swe.parallel`. The result equals the single-device run.

    * ``throw``: whether a failed run raises (below). With ``throw=False`` it does not:
      ``Result.failed`` says whether it failed, the frames it did not reach are NaN (at
      their requested times), and so are its envelopes, so a loss of them is not finite
      (a NUTS sampler takes that as a divergence instead of stopping). Under ``jax.jit`` or ``jax.grad`` this also
      leaves the run-time check (a host callback) out of the compiled program, which can
      then be stored in JAX's persistent compilation cache
      (:func:`swe.enable_compilation_cache`) and read back by the next process, where
      only ``t_end`` is saved (several save times bring diffrax's own run-time checks of
      them, callbacks too).

    Raises ``ValueError`` for bad arguments and :class:`SimulationError` (with the simulated
    time and step) if the state becomes NaN/inf or the step collapses. Under ``jax.jit`` or
    ``jax.grad`` the failure is raised by ``equinox.error_if`` at run time instead.
    """
    if not isinstance(throw, (bool, np.bool_)):
        raise ValueError(f"throw={throw!r} is invalid; expected True or False")
    throw = bool(throw)
    run = _prepare(model, state0, t_end, save_at, t0, cfl, dt, integrator, dtype, max_steps,
                   dt_min, dt_max)
    checkpoints = check_positive_int("checkpoints", checkpoints)
    gauges = _check_gauges(gauges, run.model)
    y0 = run.state0
    if envelopes:
        y0 = Tracked(y0, start_envelopes(run.t0, y0, arrival_threshold, run.model.h_dry))
    stops = np.unique(np.append(run.times, run.t_end))
    # One output at t_end (the common case in gradients and benchmarks): saved as t1 alone.
    only_end = run.times.size == 1 and run.times[0] == run.t_end
    solve = _solve if mesh is None else _mesh_solver(mesh, run.model.grid)
    start = _time.perf_counter()
    ts, ys, result, num_steps = solve(
        run.model, y0, jnp.asarray(run.t0, run.dtype), jnp.asarray(run.t_end, run.dtype),
        jnp.asarray(stops, run.dtype), None if only_end else jnp.asarray(run.times, run.dtype),
        run.controls, run.integrator, run.max_steps, checkpoints)
    failed = result != diffrax.RESULTS.successful
    if is_concrete(failed):
        jax.block_until_ready(ys)
        wall = _time.perf_counter() - start
        if throw and bool(failed):
            _raise_failure(result, ts, state_of(ys), num_steps, run.max_steps)
    else:
        wall = float("nan")
        if throw:
            ys = eqx.error_if(ys, failed, "swe.simulate: the run blew up (NaN/inf in the state "
                              "or the time step collapsed) or hit max_steps; rerun outside "
                              "jit/grad to see the simulated time and step")
    n = run.times.size
    states = jax.tree.map(lambda x: x[:n], state_of(ys))
    last = 0 if only_end else n  # the extra t1 entry
    env = jax.tree.map(lambda x: x[last], ys.envelopes) if envelopes else None
    times = ts[:n]
    if not throw:
        # diffrax saves the state it stopped at (finite after max_steps or a collapsed
        # step) in the first output slot not reached, and inf times after it: every frame
        # not reached becomes NaN, at its requested time, and so do the envelopes of a
        # failed run, so that no loss of a failed run is finite.
        requested = jnp.asarray(run.times, ts.dtype)
        reached = jnp.logical_not(failed) | (times == requested)
        states = jax.tree.map(
            lambda x: jnp.where(reached.reshape((-1,) + (1,) * (x.ndim - 1)), x, jnp.nan),
            states)
        env = None if env is None else jax.tree.map(
            lambda x: jnp.where(failed, jnp.nan, x), env)
        times = requested
    return Result(model=run.model, times=times, states=states, num_steps=num_steps,
                  envelopes=env, gauges=gauges, wall_time=wall, settings=run.settings,
                  failed=failed)


def _mesh_solver(mesh, grid):
    from . import parallel

    return functools.partial(parallel.solve, parallel.make_mesh(mesh, grid))


class Frame(eqx.Module):
    """One output of :func:`iterate`: time (s), state, envelopes so far, steps so far."""

    time: float = eqx.field(static=True)
    state: State
    envelopes: Envelopes
    num_steps: int = eqx.field(static=True)


def iterate(model: ShallowWater, state0: State, t_end, save_at=None, *, t0=0.0, cfl=None,
            dt=None, integrator: str = "ssprk2", dtype=None, max_steps: int | None = None,
            dt_min=None, dt_max=None, arrival_threshold=0.01, progress=None, mesh=None):
    """Like :func:`simulate`, but yields each output :class:`Frame` as soon as it exists.

    The run advances one output interval per compiled call, so memory holds one frame and a
    caller can write each frame out before the next is computed. The steps taken are the
    same as :func:`simulate`'s (each interval ends exactly on its output time either way).
    ``progress`` is an optional :class:`ProgressBar`; ``mesh`` splits the grid over devices
    as in :func:`simulate` (each frame is then gathered from the devices as it is yielded).
    """
    run = _prepare(model, state0, t_end, save_at, t0, cfl, dt, integrator, dtype, max_steps,
                   dt_min, dt_max)
    solve = _solve if mesh is None else _mesh_solver(mesh, run.model.grid)
    y = Tracked(run.state0, start_envelopes(run.t0, run.state0, arrival_threshold,
                                            run.model.h_dry))
    steps = 0
    if progress is not None:
        progress.begin(run.t0, run.t_end)
    yield Frame(run.t0, run.state0, y.envelopes, 0)
    t_prev = run.t0
    for t_next in run.times[run.times > run.t0]:
        if progress is not None:
            progress.segment(t_prev, float(t_next), steps)
        tb = jnp.asarray(t_next, run.dtype)
        ts, ys, result, n = solve(
            run.model, y, jnp.asarray(t_prev, run.dtype), tb, tb[None], None, run.controls,
            run.integrator, None if run.max_steps is None else run.max_steps - steps, 1)
        steps += int(n)
        if progress is not None:
            progress.update(1.0, int(n))
        if result != diffrax.RESULTS.successful:
            if progress is not None:
                progress.end()
            _raise_failure(result, ts, state_of(ys), steps, run.max_steps)
        y = jax.tree.map(lambda x: x[0], ys)
        t_prev = float(t_next)
        yield Frame(t_prev, y.state, y.envelopes, steps)
    if progress is not None:
        progress.end()


class ProgressBar:
    """A one-line terminal bar: simulated time out of ``t_end`` and steps per second.

    Drawn on ``stream`` (stderr) only when it is a terminal, and only once the run has lasted
    ``delay`` seconds, so short runs and logs stay clean.
    """

    def __init__(self, stream=None, delay: float = 2.0, width: int = 30):
        import sys

        self.stream = sys.stderr if stream is None else stream
        self.enabled = bool(getattr(self.stream, "isatty", lambda: False)())
        self.delay, self.width = delay, width
        self.shown = False

    def begin(self, t0, t_end):
        self.t0, self.t_end = t0, t_end
        self.start = _time.perf_counter()
        self.steps_before = 0

    def segment(self, ta, tb, steps_before):
        """A new output interval ``[ta, tb]`` starts after ``steps_before`` steps."""
        self.ta, self.tb, self.steps_before = ta, tb, steps_before
        self.update(0.0, 0)

    def update(self, fraction, steps):
        """``fraction`` of the current interval is done, in ``steps`` steps (host side, per
        output interval: a callback inside the compiled loop would keep it out of JAX's
        persistent compilation cache)."""
        if not self.enabled:
            return
        elapsed = _time.perf_counter() - self.start
        if elapsed < self.delay:
            return
        t = self.ta + float(fraction) * (self.tb - self.ta)
        done = (t - self.t0) / (self.t_end - self.t0)
        filled = int(round(done * self.width))
        rate = (self.steps_before + int(steps)) / elapsed
        self.stream.write(f"\r[{'#' * filled}{'.' * (self.width - filled)}] "
                          f"t={t:.4g}/{self.t_end:.4g} s  {rate:.0f} steps/s ")
        self.stream.flush()
        self.shown = True

    def end(self):
        if self.enabled and self.shown:
            self.update(1.0, 0)
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()


def _check_gauges(gauges, model):
    from .scenario import Gauge, as_gauge

    out = []
    for g in (gauges,) if isinstance(gauges, Gauge) else gauges:
        g = as_gauge(g)
        model.grid.cell_index(g.x, g.y)
        out.append(g)
    return tuple(out)


def _number(x):
    return float(x) if is_concrete(x) else None


def _raise_failure(result, ts, ys, num_steps, max_steps):
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

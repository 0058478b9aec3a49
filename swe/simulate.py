"""``simulate``: run a model from an initial state, and the ``Result`` it returns."""

from __future__ import annotations

import functools
import time as _time

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array

from .errors import check_positive_int, is_concrete
from .model import ShallowWater
from .parallel import make_mesh
from .parallel import solve as solve_on_mesh
from .memory import check_fits
from .run import check_gauges, prepare, raise_failure, solve
from .state import State
from .stepping import Envelopes, Tracked, start_envelopes, state_of


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

    def to_xarray(self, start_time: str = "2000-01-01T00:00:00", attrs=None,
                  grid_mapping=None):
        """An ``xarray.Dataset`` with dims ``(time, y, x)`` and CF-1.10 attributes.

        ``time`` holds datetimes from ``start_time`` (the file stores seconds since it).
        ``attrs``: more global attributes. ``grid_mapping``: the coordinate reference
        system as CF grid-mapping attributes (``{"grid_mapping_name": ..., "crs_wkt":
        ...}``), written as a variable ``crs`` that every field names.
        """
        from .output import to_dataset

        return to_dataset(self, start_time=start_time, attrs=attrs, grid_mapping=grid_mapping)


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

    Raises ``ValueError`` for bad arguments, and for a run that would need more memory
    than the device has free (:func:`swe.memory.check_fits`; the frames of ``save_at`` all
    stay on the device: :func:`iterate` holds one at a time), and
    :class:`SimulationError` (with the simulated time and step) if the state becomes
    NaN/inf or the step collapses. Under ``jax.jit`` or ``jax.grad`` the failure is raised
    by ``equinox.error_if`` at run time instead.
    """
    if not isinstance(throw, (bool, np.bool_)):
        raise ValueError(f"throw={throw!r} is invalid; expected True or False")
    throw = bool(throw)
    run = prepare(model, state0, t_end, save_at, t0, cfl, dt, integrator, dtype, max_steps,
                  dt_min, dt_max)
    # Every output frame stays on the device until the run returns.
    check_fits(run.model, run.dtype, run.integrator, frames_on_device=run.times.size,
               devices=_device_count(mesh, run.model.grid))
    checkpoints = check_positive_int("checkpoints", checkpoints)
    gauges = check_gauges(gauges, run.model)
    y0 = run.state0
    if envelopes:
        y0 = Tracked(y0, start_envelopes(run.t0, y0, arrival_threshold, run.model.h_dry))
    stops = np.unique(np.append(run.times, run.t_end))
    # One output at t_end (the common case in gradients and benchmarks): saved as t1 alone.
    only_end = run.times.size == 1 and run.times[0] == run.t_end
    solver = solve if mesh is None else _mesh_solver(mesh, run.model.grid)
    start = _time.perf_counter()
    ts, ys, result, num_steps = solver(
        run.model, y0, jnp.asarray(run.t0, run.dtype), jnp.asarray(run.t_end, run.dtype),
        jnp.asarray(stops, run.dtype), None if only_end else jnp.asarray(run.times, run.dtype),
        run.controls, run.integrator, run.max_steps, checkpoints)
    failed = result != diffrax.RESULTS.successful
    if is_concrete(failed):
        jax.block_until_ready(ys)
        wall = _time.perf_counter() - start
        if throw and bool(failed):
            raise_failure(result, ts, state_of(ys), num_steps, run.max_steps)
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


def _device_count(mesh, grid) -> int:
    return 1 if mesh is None else make_mesh(mesh, grid).devices.size


def _mesh_solver(mesh, grid):
    return functools.partial(solve_on_mesh, make_mesh(mesh, grid))


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
    run = prepare(model, state0, t_end, save_at, t0, cfl, dt, integrator, dtype, max_steps,
                  dt_min, dt_max)
    check_fits(run.model, run.dtype, run.integrator, devices=_device_count(mesh, run.model.grid))
    solver = solve if mesh is None else _mesh_solver(mesh, run.model.grid)
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
        ts, ys, result, n = solver(
            run.model, y, jnp.asarray(t_prev, run.dtype), tb, tb[None], None, run.controls,
            run.integrator, None if run.max_steps is None else run.max_steps - steps, 1)
        steps += int(n)
        if progress is not None:
            progress.update(1.0, int(n))
        if result != diffrax.RESULTS.successful:
            if progress is not None:
                progress.end()
            raise_failure(result, ts, state_of(ys), steps, run.max_steps)
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

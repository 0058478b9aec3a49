"""Ensembles: many parameter sets or initial states in one compiled, vmapped run.

``simulate_ensemble(models, states, t_end, ...)`` takes a list of models (say, 64 Manning
coefficients) and/or a list of initial states, stacks what differs between the members,
and runs them all through ``jax.vmap`` of the same compiled solve. Leaves that all members
share (the grid, and the bed when only friction varies) are not copied. Each member keeps
its own CFL time step: members that finish early idle, masked, while the others go on.

Members may hold different function objects, as a scenario's ``build()`` makes a new
closure (a hydrograph, a wind field) for every member: functions with the same code whose
captured values (closure cells and defaults) differ only in numbers and arrays are
compared by those values, and stacked where they differ (:class:`CapturedFunction`).
"""

from __future__ import annotations

import dataclasses
import functools
import time as _time
import types

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P

from .errors import SimulationError, check_choice, is_concrete, on_host
from .model import ShallowWater
from .run import check_gauges, prepare, raise_failure, solve
from .simulate import Result
from .stages import batch_kernel, stage_kernel_for_run
from .state import State
from .stepping import Envelopes, Tracked, start_envelopes, state_of


class EnsembleResult(eqx.Module):
    """Frames of every member: ``times`` ``(members, time)``, ``states`` with leading
    ``(members, time)`` axes, ``num_steps`` per member. ``members`` labels them (for
    example the parameter values) and becomes the ``ensemble`` coordinate in xarray."""

    results: tuple[Result, ...]
    members: tuple = eqx.field(static=True)
    member_name: str = eqx.field(static=True, default="member")
    wall_time: float = eqx.field(static=True, default=float("nan"))

    def __len__(self):
        return len(self.results)

    def member(self, index: int) -> Result:
        return self.results[index]

    @property
    def num_steps(self):
        return np.array([int(r.num_steps) for r in self.results])

    def to_xarray(self, start_time: str = "2000-01-01T00:00:00", attrs=None,
                  grid_mapping=None):
        """One Dataset with an ``ensemble`` dimension first: ``(ensemble, time, y, x)``;
        arguments as :meth:`swe.Result.to_xarray`."""
        import xarray as xr

        datasets = [r.to_xarray(start_time=start_time, attrs=attrs, grid_mapping=grid_mapping)
                    for r in self.results]
        static = [name for name in datasets[0].data_vars if "time" not in datasets[0][name].dims
                  and name not in ("max_depth", "max_speed", "arrival_time")
                  and all(d[name].equals(datasets[0][name]) for d in datasets[1:])]
        ds = xr.concat(datasets, dim="ensemble", data_vars="all", coords="minimal",
                       compat="override", join="override")
        for name in static:  # the same in every member: stored once
            ds[name] = datasets[0][name]
        ds = ds.assign_coords(ensemble=("ensemble", np.asarray(self.members)))
        ds["ensemble"].attrs.update(long_name=f"ensemble member ({self.member_name})")
        ds.attrs["ensemble_members"] = len(self.results)
        return ds


def _members(models, states):
    single_model = isinstance(models, ShallowWater)
    single_state = isinstance(states, State)
    models = [models] if single_model else list(models)
    states = [states] if single_state else list(states)
    if not models or not states:
        raise ValueError("simulate_ensemble needs at least one model and one state")
    count = max(len(models), len(states))
    for name, seq in (("models", models), ("states", states)):
        if len(seq) not in (1, count):
            raise ValueError(f"{name} has {len(seq)} members; expected 1 or {count} "
                             "(the size of the ensemble)")
    return models * (count // len(models)), states * (count // len(states))


@jax.jit
def _device_equal(a, b):
    return jnp.array_equal(a, b)


def _equal(a, b) -> bool:
    """Whether two members' leaves hold the same values: by NumPy where both are on the
    host (:func:`swe.errors.on_host`), else where they live if they live in the same place
    (a few bytes to the host, not the fields), else on the host if this process holds them."""
    if jnp.shape(a) != jnp.shape(b) or jnp.result_type(a) != jnp.result_type(b):
        return False
    if not (is_concrete(a) and is_concrete(b)):
        return False  # traced (under jit or grad): stacked, not compared
    if not (on_host(a) and on_host(b)) and (
            isinstance(a, jax.Array) and isinstance(b, jax.Array) and a.sharding == b.sharding):
        with jax.ensure_compile_time_eval():
            return bool(_device_equal(a, b))
    if any(isinstance(x, jax.Array) and not x.is_fully_addressable for x in (a, b)):
        return False  # held by other processes too: stacked, not compared
    return bool(np.array_equal(np.asarray(a), np.asarray(b)))


class CapturedFunction(eqx.Module):
    """A Python function as a pytree: the code of ``template`` (static) with the values in
    ``cells`` and ``defaults`` in place of its own closure cells and defaults. Members'
    functions of the same code become these, so that the values they captured can be
    compared and, where they differ, stacked like any other leaf."""

    template: types.FunctionType = eqx.field(static=True)
    cells: tuple
    defaults: tuple

    def __call__(self, *args, **kwargs):
        t = self.template
        fn = types.FunctionType(t.__code__, t.__globals__, t.__name__, self.defaults or None,
                                tuple(types.CellType(c) for c in self.cells) or None)
        fn.__kwdefaults__ = t.__kwdefaults__
        return fn(*args, **kwargs)


def _captured(fn, template) -> CapturedFunction | None:
    """``fn`` as a :class:`CapturedFunction` of ``template``'s code, or None where it is
    not a plain function of the same code, globals and closure layout."""
    if not (isinstance(fn, types.FunctionType) and isinstance(template, types.FunctionType)):
        return None
    if fn.__code__ != template.__code__ or fn.__globals__ is not template.__globals__:
        return None
    cells = fn.__closure__ or ()
    if len(cells) != len(template.__closure__ or ()):
        return None
    try:
        contents = tuple(c.cell_contents for c in cells)
    except ValueError:  # an empty cell
        return None
    return CapturedFunction(template, contents, tuple(fn.__defaults__ or ()))


def _stack(trees):
    """Stack the array leaves that differ between ``trees``; share the others.

    Returns the stacked tree and its ``vmap`` axes (0 for stacked leaves, None otherwise).
    """
    first = trees[0]
    leaves = [jax.tree.leaves(t) for t in trees]
    structure = jax.tree.structure(first)
    for t in trees[1:]:
        if jax.tree.structure(t) != structure:
            raise ValueError("every ensemble member must have the same structure (the same "
                             "grid, scheme, boundary kinds and physics terms); only values "
                             "may differ")
    out, axes = [], []
    for column in zip(*leaves):
        if all(x is column[0] for x in column[1:]):  # shared: nothing to compare
            out.append(column[0])
            axes.append(None)
            continue
        if any(callable(x) for x in column):
            captured = [_captured(x, column[0]) for x in column]
            if any(c is None for c in captured):
                raise ValueError(
                    "ensemble members differ in a function (a forcing given as a function "
                    f"of t, such as {column[1]!r}) by more than the numbers it captured; "
                    "members may only differ in numbers and arrays: build each member's "
                    "function from the same code, or run the members with swe.simulate one "
                    "by one")
            try:
                stacked, axis = _stack(captured)
            except ValueError as e:
                raise ValueError(f"ensemble members differ in a function (such as "
                                 f"{column[1]!r}): {e}") from None
            out.append(stacked)
            axes.append(axis)
            continue
        if all(_equal(x, column[0]) for x in column[1:]):
            out.append(column[0])
            axes.append(None)
        else:
            out.append(jnp.stack([jnp.asarray(x) for x in column]))
            axes.append(0)
    return jax.tree.unflatten(structure, out), jax.tree.unflatten(structure, axes)


@eqx.filter_jit
def _solve_batch(model, y0, model_axes, y_axes, t0, t1, stops, save_ts, controls, integrator,
                 max_steps, checkpoints, mesh=None, batching="vmap"):
    """The members vmapped (or, ``batching="map"``, one after another in one compiled
    loop); with a 1-D ``("member",)`` mesh, each device runs that over its share of the
    members (``jax.shard_map``; no communication at all)."""
    def one(m, y):
        return solve(m, y, t0, t1, stops, save_ts, controls, integrator, max_steps,
                     checkpoints)

    def batch(m, y):
        if batching == "vmap":
            return jax.vmap(one, in_axes=(model_axes, y_axes))(m, y)
        leaves, treedef = jax.tree.flatten((m, y))
        axes = treedef.flatten_up_to((model_axes, y_axes))
        stacked = [i for i, a in enumerate(axes) if a == 0]

        def member(xs):
            full = list(leaves)
            for i, x in zip(stacked, xs):
                full[i] = x
            return one(*jax.tree.unflatten(treedef, full))

        return jax.lax.map(member, [leaves[i] for i in stacked])

    if mesh is None:
        return batch(model, y0)
    # Array leaves cross into shard_map (stacked ones split by member, shared ones
    # replicated); the rest is closed over.
    leaves, treedef = jax.tree.flatten((model, y0))
    axes = treedef.flatten_up_to((model_axes, y_axes))
    where = [i for i, x in enumerate(leaves) if eqx.is_array(x)]
    specs = [P(MEMBER_AXIS) if axes[i] == 0 else P() for i in where]

    def block(arrays):
        full = list(leaves)
        for i, x in zip(where, arrays):
            full[i] = x
        return batch(*jax.tree.unflatten(treedef, full))

    return jax.shard_map(block, mesh=mesh, in_specs=(specs,), out_specs=P(MEMBER_AXIS),
                         check_vma=False)([leaves[i] for i in where])


MEMBER_AXIS = "member"


def member_mesh(devices: int):
    """A 1-D mesh of the first ``devices`` devices along the ensemble-member axis."""
    available = jax.devices()
    if isinstance(devices, bool) or not isinstance(devices, (int, np.integer)) or not (
            1 <= devices <= len(available)):
        raise ValueError(f"devices={devices!r} is invalid; expected an integer in "
                         f"1..{len(available)} (the {available[0].platform} devices available)")
    return jax.sharding.Mesh(np.array(available[:devices]), (MEMBER_AXIS,),
                             axis_types=(jax.sharding.AxisType.Auto,))


@dataclasses.dataclass(frozen=True)
class _Ensemble:
    """Validated members, stacked for one compiled call (shared by simulate_ensemble and
    iterate_ensemble)."""

    runs: list
    count: int  # members before padding
    labels: tuple
    model: object
    model_axes: object
    y0: object
    y_axes: object
    mesh: object
    stage_kernel: str  # the kernel the members' steps take (recorded in their settings)


def _ensemble(models, states, t_end, save_at, members, t0, cfl, dt, integrator, dtype,
              max_steps, dt_min, dt_max, envelopes, arrival_threshold, devices, batching,
              stack_states=False) -> _Ensemble:
    models, states = _members(models, states)
    count = len(models)
    mesh = None if devices is None else member_mesh(devices)
    if mesh is not None and devices > 1 and count % devices:
        pad = devices - count % devices
        models, states = models + models[:1] * pad, states + states[:1] * pad
    runs, checked = [], {}  # a state shared by members is checked once
    for m, s in zip(models, states):
        key = (id(s), m.grid.shape)
        runs.append(prepare(m, checked.get(key, s), t_end, save_at, t0, cfl, dt, integrator,
                            dtype, max_steps, dt_min, dt_max, state_checked=key in checked))
        checked.setdefault(key, runs[-1].state0)
    labels = tuple(range(count)) if members is None else tuple(members)
    if len(labels) != count:
        raise ValueError(f"members has {len(labels)} labels for {count} ensemble members")
    y0s = [r.state0 for r in runs]
    if envelopes:
        y0s = [Tracked(y, start_envelopes(r.t0, y, arrival_threshold, r.model.h_dry))
               for y, r in zip(y0s, runs)]
    kernel = _batch_kernel(runs[0].model, count, devices, batching)
    batched = [_with_kernel(r.model, kernel) for r in runs]
    model, model_axes = _stack(batched)
    if stack_states:  # every state leaf stacked: the carry of iterate_ensemble's intervals
        y0 = jax.tree.map(lambda *x: jnp.stack(x), *y0s)
        y_axes = jax.tree.map(lambda _: 0, y0)
    else:
        y0, y_axes = _stack(y0s)
    return _Ensemble(runs, count, labels, model, model_axes, y0, y_axes,
                     None if devices in (None, 1) else mesh,
                     stage_kernel_for_run(batched[0], integrator))


def _batch_kernel(model, count, devices, batching) -> str:
    """The ``kernel`` setting of a batch of ``count`` members of ``model``: for a vmapped
    batch, chosen by each device's members' cells (:func:`swe.stages.batch_kernel`)."""
    if batching != "vmap":
        return model.scheme.kernel
    return batch_kernel(model, -(-count // (devices or 1)))


def _with_kernel(model, kernel):
    """``model`` with its own scheme's ``kernel`` setting replaced."""
    if kernel == model.scheme.kernel:
        return model
    return eqx.tree_at(lambda m: m.scheme, model,
                       dataclasses.replace(model.scheme, kernel=kernel))


def stage_kernel(model, count: int, *, devices=None, batching: str = "vmap",
                 integrator: str = "ssprk2") -> str:
    """The stage kernel (``"xla"``, ``"pallas"``, ...) each member's steps take in an
    ensemble of ``count`` members of ``model`` on this backend: what its outputs record as
    ``stage_kernel`` (a vmapped batch may take the Pallas stage where one member alone
    would not; see :func:`swe.stages.batch_kernel`)."""
    kernel = _batch_kernel(model, count, devices, batching)
    return stage_kernel_for_run(_with_kernel(model, kernel), integrator)


@functools.partial(jax.jit, static_argnames=("count", "n", "last", "envelopes"))
def _split_members(ts, ys, num_steps, *, count, n, last, envelopes):
    """Each of the first ``count`` members' output times, ``n`` states, steps and (with
    ``envelopes``) envelopes at output ``last``, in one compiled call: sliced one by one,
    every slice would be a dispatch of its own (3 ms a member on a CPU)."""
    out = []
    for k in range(count):
        ys_k = jax.tree.map(lambda x: x[k], ys)
        env = jax.tree.map(lambda x: x[last], ys_k.envelopes) if envelopes else None
        out.append((ts[k][:n], jax.tree.map(lambda x: x[:n], state_of(ys_k)), num_steps[k],
                    env))
    return out


def _check_member(result, k, labels, ts, ys, num_steps, max_steps):
    """Raise the :class:`~swe.SimulationError` of member ``k`` with its label."""
    try:
        raise_failure(jax.tree.map(lambda v: v[k], result), ts[k],
                      state_of(jax.tree.map(lambda x: x[k], ys)), num_steps[k], max_steps)
    except Exception as exc:
        raise type(exc)(f"ensemble member {labels[k]!r}: {exc}", time=exc.time,
                        step=exc.step) from None


def simulate_ensemble(models, states, t_end, save_at=None, *, members=None,
                      member_name: str = "member", t0=0.0, cfl=None, dt=None,
                      integrator: str = "ssprk2", dtype=None, max_steps: int | None = None,
                      checkpoints: int = 64, dt_min=None, dt_max=None, envelopes: bool = True,
                      arrival_threshold=0.01, gauges=(), devices=None,
                      batching: str = "vmap") -> EnsembleResult:
    """Run every member in one vmapped, compiled call; arguments as :func:`swe.simulate`.

    ``models`` is a :class:`ShallowWater` or a list of them; ``states`` a :class:`State` or
    a list; a single one is shared by all members. ``members`` labels the members (default
    0, 1, ...). ``devices``: split the members over that many devices (each runs the
    vmapped solve over its share; a member count that does not divide is padded with
    copies of the first member, whose results are dropped). ``batching="map"`` runs each
    device's members one after another inside the same compiled call instead of
    vmapping them (on a CPU, where a batch of grids falls out of cache, this is the faster
    one). A vmapped batch's stage kernel is chosen by the batch's cells
    (:func:`swe.stages.batch_kernel`: on a TPU, ``kernel="auto"`` takes the Pallas stage
    for members whose cells together reach 1024^2). Every member's result equals its
    single run whatever the device count. Raises
    :class:`~swe.SimulationError` naming the first member that failed.
    """
    batching = check_choice("batching", batching, ("vmap", "map"))
    ens = _ensemble(models, states, t_end, save_at, members, t0, cfl, dt, integrator, dtype,
                    max_steps, dt_min, dt_max, envelopes, arrival_threshold, devices, batching)
    run = ens.runs[0]
    gauges = check_gauges(gauges, run.model)
    stops = np.unique(np.append(run.times, run.t_end))
    only_end = run.times.size == 1 and run.times[0] == run.t_end
    start = _time.perf_counter()
    ts, ys, result, num_steps = _solve_batch(
        ens.model, ens.y0, ens.model_axes, ens.y_axes, jnp.asarray(run.t0, run.dtype),
        jnp.asarray(run.t_end, run.dtype), jnp.asarray(stops, run.dtype),
        None if only_end else jnp.asarray(run.times, run.dtype), run.controls,
        run.integrator, run.max_steps, checkpoints, ens.mesh, batching)
    jax.block_until_ready(ys)
    wall = _time.perf_counter() - start
    n = run.times.size
    last = 0 if only_end else n
    failed = result != diffrax.RESULTS.successful
    if is_concrete(failed):
        ok = ~np.asarray(jax.lax.stop_gradient(failed))
        for k in range(ens.count):
            if not ok[k]:
                _check_member(result, k, ens.labels, ts, ys, num_steps, run.max_steps)
    else:  # under jit: checked at run time, as swe.simulate does
        ys = eqx.error_if(ys, jnp.any(failed),
                          "swe.simulate_ensemble: a member blew up (NaN/inf in the state or "
                          "the time step collapsed) or hit max_steps; rerun outside jit to "
                          "see which, with its simulated time and step")
    members = _split_members(ts, ys, num_steps, count=ens.count, n=n, last=last,
                             envelopes=envelopes)
    results = [Result(model=r.model, times=ts_k, states=states_k, num_steps=steps_k,
                      envelopes=env, gauges=gauges, wall_time=wall,
                      settings={**r.settings, "stage_kernel": ens.stage_kernel})
               for r, (ts_k, states_k, steps_k, env) in zip(ens.runs, members)]
    return EnsembleResult(tuple(results), ens.labels, member_name, wall)


class EnsembleFrame(eqx.Module):
    """One output of :func:`iterate_ensemble`: the time (s) and, with a leading member
    axis, the states, the envelopes so far and the steps so far; the stage kernel the
    members' steps take (:func:`stage_kernel`)."""

    time: float = eqx.field(static=True)
    state: State
    envelopes: Envelopes
    num_steps: np.ndarray
    stage_kernel: str = eqx.field(static=True)


def iterate_ensemble(models, states, t_end, save_at=None, *, members=None, t0=0.0, cfl=None,
                     dt=None, integrator: str = "ssprk2", dtype=None,
                     max_steps: int | None = None, dt_min=None, dt_max=None,
                     arrival_threshold=0.01, devices=None, batching: str = "vmap"):
    """Like :func:`simulate_ensemble`, but yields each output as an :class:`EnsembleFrame`
    as soon as it exists (all members advance one output interval per compiled call), so
    a writer can store it before the next is computed. The steps are those of
    :func:`simulate_ensemble`. ``max_steps`` bounds each member's total steps."""
    batching = check_choice("batching", batching, ("vmap", "map"))
    ens = _ensemble(models, states, t_end, save_at, members, t0, cfl, dt, integrator, dtype,
                    max_steps, dt_min, dt_max, True, arrival_threshold, devices, batching,
                    stack_states=True)
    run = ens.runs[0]
    count = ens.count

    def first(tree):
        return jax.tree.map(lambda x: x[:count], tree)

    y = ens.y0
    steps = np.zeros(len(ens.runs), dtype=np.int64)
    yield EnsembleFrame(run.t0, first(y.state), first(y.envelopes), steps[:count].copy(),
                        ens.stage_kernel)
    t_prev = run.t0
    for t_next in run.times[run.times > run.t0]:
        tb = jnp.asarray(t_next, run.dtype)
        ts, ys, result, n = _solve_batch(
            ens.model, y, ens.model_axes, ens.y_axes, jnp.asarray(t_prev, run.dtype), tb,
            tb[None], None, run.controls, run.integrator, run.max_steps, 1, ens.mesh,
            batching)
        steps += np.asarray(n)
        ok = np.asarray(result == diffrax.RESULTS.successful)
        for k in range(count):
            if not ok[k]:
                _check_member(result, k, ens.labels, ts, ys, steps, run.max_steps)
        if run.max_steps is not None and steps[:count].max() > run.max_steps:
            k = int(np.argmax(steps[:count]))
            raise SimulationError(
                f"ensemble member {ens.labels[k]!r}: the run stopped at max_steps="
                f"{run.max_steps} at t={float(t_next):.6g} s before reaching t_end; raise "
                "max_steps (or pass max_steps=None)", time=float(t_next), step=int(steps[k]))
        y = jax.tree.map(lambda x: x[:, 0], ys)
        t_prev = float(t_next)
        yield EnsembleFrame(t_prev, first(y.state), first(y.envelopes), steps[:count].copy(),
                            ens.stage_kernel)


__all__ = ["EnsembleFrame", "EnsembleResult", "iterate_ensemble", "simulate_ensemble"]

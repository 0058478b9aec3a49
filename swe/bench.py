"""The performance benchmark: a circular dam break on a flat, walled square.

Every solver we compare runs the same problem: the domain ``[-2.5, 2.5]^2`` with ``N x N``
cells, ``g = 1``, ``h = 2`` where ``r <= 0.5`` (cell centres) and ``h = 1`` elsewhere, at
rest, walls on all sides, no friction, to ``t = 1``. :func:`run` yields one record per
timed repeat with the keys in :data:`KEYS`; ``swe bench`` and ``scripts/bench.py`` print
them as JSON lines.

Timing: ``wall_s`` is the stepping alone, after compilation, with the result on the host
(``block_until_ready``); ``compile_s`` is the first call's tracing, lowering and XLA
compilation (or persistent-cache retrieval), summed from ``jax.monitoring`` events, so it
excludes the run itself.
``cell_updates_per_s`` is ``cells * steps / wall_s``.

Roofline: :func:`bytes_per_cell_update` is the memory traffic of an ideal, fully fused
implementation (each stage reads its input state, the bed and, for the SSP combinations,
the step's first state, and writes one state; the CFL reduction reads one state), so
``achieved_GBs = bytes_per_cell_update * cell_updates_per_s`` is the effective bandwidth
that the stencil literature reports; with ``stream_GBs`` (the machine's STREAM triad,
``scripts/stream_triad.py``) the record gives the fraction of it.
"""

from __future__ import annotations

import json
import os
import time

import numpy as np

KEYS = ("solver", "N", "cells", "steps", "wall_s", "cell_updates_per_s", "mass_initial",
        "mass_final", "mass_rel_err", "h_max_final", "t_final", "method", "compile_s")

DOMAIN = (-2.5, 2.5)
G = 1.0
T_END = 1.0
# Words of state read and written per cell and step by an ideal fused implementation:
# stage k reads its input (3 fields) and the bed (1) and writes 3; SSP stages after the
# first also read the step's first state (3); the CFL reduction reads one state (3). A
# split step is one such stage per sweep (Godunov: 2; Strang: 3, x twice over half the
# step), with no combination with the first state.
# Per integrator: (stages, stages that also read the first state).
_STAGES = {"euler": (1, 0), "ssprk2": (2, 1), "ssprk3": (3, 2), "split": (2, 0),
           "strang": (3, 0)}
_COMPILE_EVENTS = ("/jax/core/compile/jaxpr_trace_duration",
                   "/jax/core/compile/jaxpr_to_mlir_module_duration",
                   "/jax/core/compile/backend_compile_duration",
                   "/jax/compilation_cache/cache_retrieval_time_sec")


def record(solver: str, n: int, steps: int, wall_s: float, mass_initial: float,
           mass_final: float, h_max_final: float, t_final: float, method: str,
           compile_s: float = 0.0, **extra) -> dict:
    """One benchmark record with the keys of :data:`KEYS` (then ``extra``), as every
    solver in the comparison reports it."""
    return dict(solver=solver, N=n, cells=n * n, steps=steps, wall_s=wall_s,
                cell_updates_per_s=n * n * steps / wall_s, mass_initial=mass_initial,
                mass_final=mass_final,
                mass_rel_err=abs(mass_final - mass_initial) / mass_initial,
                h_max_final=h_max_final, t_final=t_final, method=method,
                compile_s=compile_s, **extra)


def bytes_per_cell_update(integrator: str, itemsize: int) -> int:
    """Minimum memory traffic (bytes) per cell and step of a fully fused implementation."""
    stages, combined = _STAGES[integrator]
    words = stages * (3 + 1 + 3) + combined * 3 + 3
    return words * itemsize


def problem(n: int, scheme=None):
    """The benchmark's model and initial state on an ``n x n`` grid."""
    import jax.numpy as jnp

    from .grid import Grid
    from .model import ShallowWater
    from .state import State

    grid = Grid(nx=n, ny=n, x=DOMAIN, y=DOMAIN)
    x, y = grid.cell_centers()
    h = jnp.where(x * x + y * y <= 0.25, 2.0, 1.0)
    model = ShallowWater(grid, g=G, scheme=scheme)
    return model, State(h=h, hu=jnp.zeros_like(h), hv=jnp.zeros_like(h))


class CompileClock:
    """Sums JAX's compile-phase durations (tracing, lowering, XLA compilation and
    persistent-cache retrieval) reported inside ``with clock:``.

    A fresh listener is registered per clock: other code may clear JAX's listeners.
    """

    def __init__(self):
        import jax

        self.seconds = 0.0
        self.cache_hits = 0  # programs taken from JAX's persistent compilation cache
        self.active = False
        jax.monitoring.register_event_duration_secs_listener(self._listen)
        jax.monitoring.register_event_listener(self._count)

    def _listen(self, event, duration, **kwargs):
        if self.active and event in _COMPILE_EVENTS:
            self.seconds += duration

    def _count(self, event, **kwargs):
        if self.active and event == "/jax/compilation_cache/cache_hits":
            self.cache_hits += 1

    def __enter__(self):
        self.active = True
        return self

    def __exit__(self, *exc):
        self.active = False


def method_name(riemann, reconstruction, limiter, integrator, precision, cfl) -> str:
    rec = "first-order" if reconstruction == "first_order" else f"MUSCL-{limiter}"
    return f"{rec} {riemann.upper()} {integrator.upper()} cfl {cfl:g} {precision}"


def run(n: int = 256, precision: str = "float64", riemann: str = "hllc",
        reconstruction: str = "muscl", limiter: str = "koren", integrator: str = "ssprk2",
        repeat: int = 3, cfl=None, t_end: float = T_END, stream_gbs=None,
        keep_state: bool = False, kernel: str = "auto"):
    """Run the benchmark ``repeat`` times after one compiling call; yield one record per run.

    ``kernel``: :class:`~swe.FiniteVolume`'s stage kernel; the record's ``kernel`` is the
    one that ran (``"xla"`` or ``"pallas"``).

    With ``keep_state`` each record also carries ``h`` (the final depth, not JSON).
    """
    import jax

    from .errors import check_choice, check_positive_int
    from .fusion import fusion_hints
    from .model import FiniteVolume
    from .run import default_cfl
    from .simulate import simulate
    from .stages import stage_kernel_for_run

    cfl = default_cfl(integrator) if cfl is None else cfl
    n = check_positive_int("n", n)
    repeat = check_positive_int("repeat", repeat)
    precision = check_choice("precision", precision, ("float32", "float64"))
    if precision == "float64" and not jax.config.jax_enable_x64:
        jax.config.update("jax_enable_x64", True)
    scheme = FiniteVolume(riemann=riemann, reconstruction=reconstruction, limiter=limiter,
                          kernel=kernel)
    model, state0 = problem(n, scheme)
    ran = stage_kernel_for_run(model, integrator)
    dx = model.grid.dx
    kwargs = dict(save_at=[t_end], cfl=cfl, integrator=integrator, dtype=precision,
                  envelopes=False)
    with CompileClock() as clock:
        simulate(model, state0, t_end, **kwargs)  # compiles
    compile_s = clock.seconds
    itemsize = np.dtype(precision).itemsize
    for _ in range(repeat):
        start = time.perf_counter()
        res = simulate(model, state0, t_end, **kwargs)
        h = np.asarray(res.states.h[-1])  # on the host: the run is complete
        wall = time.perf_counter() - start
        steps = int(res.num_steps)
        m0 = float(np.sum(np.asarray(state0.h, dtype=np.float64))) * dx * dx
        m1 = float(np.sum(h, dtype=np.float64)) * dx * dx
        out = record(
            "swe", n, steps, wall, m0, m1, float(h.max()), float(res.times[-1]),
            method_name(riemann, reconstruction, limiter, integrator, precision, cfl),
            compile_s, precision=precision, threads=cpu_threads(),
            device=str(jax.devices()[0].device_kind), backend=jax.default_backend(),
            bytes_per_cell_update=bytes_per_cell_update(integrator, itemsize),
            fusion_hints=fusion_hints(), kernel=ran)
        out["achieved_GBs"] = out["bytes_per_cell_update"] * out["cell_updates_per_s"] / 1e9
        if stream_gbs:
            out["stream_GBs"] = float(stream_gbs)
            out["roofline_fraction"] = out["achieved_GBs"] / float(stream_gbs)
        if keep_state:
            out["h"] = h
        yield out


def cpu_threads() -> int:
    """CPU cores this process may run on (XLA's thread pool is sized from them)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def set_threads(threads: int) -> None:
    """Pin the process to ``threads`` cores; call before JAX starts its thread pool."""
    cores = sorted(os.sched_getaffinity(0))
    if threads > len(cores):
        raise ValueError(f"threads={threads} is invalid; this process may use at most "
                         f"{len(cores)} cores")
    os.sched_setaffinity(0, cores[:threads])


def _positive(kind):
    """An argparse type: a number of ``kind`` above 0 (else one line, exit 2)."""
    def parse(text):
        import argparse

        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"{text!r} is invalid; expected a number > 0")
        return value
    parse.__name__ = kind.__name__
    return parse


def add_scheme_arguments(p) -> None:
    """``--riemann``, ``--reconstruction`` and ``--limiter``, defaulting to the default
    :class:`~swe.FiniteVolume` (values are checked when the scheme is built)."""
    from .model import FiniteVolume

    default = FiniteVolume()
    p.add_argument("--riemann", default=default.riemann, help="rusanov, hll, hllc or roe")
    p.add_argument("--reconstruction", default=default.reconstruction,
                   help="first_order or muscl")
    p.add_argument("--limiter", default=default.limiter, help="koren, vanleer, mc, minmod or thinc-bvd")
    p.add_argument("--kernel", default=default.kernel,
                   help="auto (default: the Pallas stage on a TPU from 1536^2 cells), xla, "
                        "pallas or pallas-interpret")


def add_arguments(p) -> None:
    p.add_argument("--n", type=int, nargs="+", default=[256], help="grid sizes N (N x N)")
    p.add_argument("--precision", choices=("float32", "float64", "both"), default="float64")
    add_scheme_arguments(p)
    p.add_argument("--integrator", default="ssprk2",
                   help="euler, ssprk2, ssprk3, split or strang")
    p.add_argument("--cfl", type=float, default=None,
                   help="CFL number (default 0.45; 0.9 with --integrator split or strang)")
    p.add_argument("--repeat", type=int, default=3, help="timed runs after the compiling one")
    p.add_argument("--t-end", type=float, default=T_END)
    p.add_argument("--threads", type=_positive(int), default=None,
                   help="pin to this many CPU cores (default: all available)")
    p.add_argument("--stream", type=_positive(float), default=None, metavar="GB/s",
                   help="STREAM triad bandwidth for the roofline fraction "
                        "(scripts/stream_triad.py measures it)")


def main_from_args(args) -> int:
    if args.threads is not None:
        set_threads(args.threads)
    precisions = ("float32", "float64") if args.precision == "both" else (args.precision,)
    for n in args.n:
        for precision in precisions:
            for record in run(n, precision, args.riemann, args.reconstruction, args.limiter,
                              args.integrator, args.repeat, args.cfl, args.t_end, args.stream,
                              kernel=args.kernel):
                print(json.dumps(record), flush=True)
    return 0

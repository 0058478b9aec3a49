"""Fortran PyClaw (Clawpack) peer for the shallow-water benchmark.

Runs the same benchmark problem as ``scripts/numpy_reference.py`` with PyClaw's classic
wave-propagation solver, whose per-step work runs in Clawpack's compiled Fortran kernels
(``step2ds``/``step2`` plus the ``shallow_roe_with_efix_2D`` Riemann solver). It is an
optional, externally maintained reference: Clawpack is not a dependency of ``swe``. When it
is not installed, :func:`available` is False and the CLI prints one line to stderr and
exits 0.

Benchmark problem (fixed):

* domain ``[-2.5, 2.5]^2``, ``N x N`` cells; ``g = 1``, flat bed, no friction;
* reflective walls on all four sides (``pyclaw.BC.wall``);
* ``h = 2`` where ``sqrt(x^2 + y^2) <= 0.5`` at cell centres, ``h = 1`` elsewhere, at rest;
* run to ``t = 1`` (PyClaw shortens the last step to land on it).

Solver: ``pyclaw.ClawSolver2D(riemann.shallow_roe_with_efix_2D)``, ``kernel_language =
'Fortran'``, ``order = 2``, MC limiter, ``cfl_desired = 0.9``, ``cfl_max = 1.0``, variable
time step (a step whose CFL exceeds ``cfl_max`` is rejected and retaken; ``steps`` counts
accepted steps only). ``dimensional_split`` is left at PyClaw 5.14's default, which is
``True`` (Godunov splitting: an x sweep then a y sweep each step; ``transverse_waves`` is
then unused). ``--unsplit`` selects the unsplit algorithm with the default transverse
increment waves instead. Because the x sweep runs before the y sweep, the split scheme is
not exactly symmetric under an x <-> y transpose of the state. ``dt_initial`` is set so the
first step runs at exactly ``cfl_desired`` (``0.9 * dx / sqrt(g * 2)``, the fluid is at rest).

The Fortran kernels are serial (no OpenMP in PyClaw's classic solver), so ``threads`` is 1.

No files are written: ``output_format = None``, ``keep_copy = True`` (the final solution is
taken from memory), console logging is sent to stderr at WARNING level, and the
``pyclaw.log`` file handler that ``import clawpack.pyclaw`` opens in the current directory
is created in a throw-away temporary directory and replaced by a ``NullHandler``. Only
``claw.run()`` is timed; building the grid, state and solver (``solver.setup``) is not.

Usage::

    python scripts/pyclaw_reference.py --n 256 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from swe.bench import record

G = 1.0
L_HALF = 2.5  # domain is [-L_HALF, L_HALF]^2
H_IN, H_OUT, R_DAM = 2.0, 1.0, 0.5
CFL_DESIRED, CFL_MAX = 0.9, 1.0


def available() -> bool:
    """True when Clawpack (PyClaw and the Riemann solvers) can be imported."""
    import importlib.util

    try:
        return (importlib.util.find_spec("clawpack") is not None
                and importlib.util.find_spec("clawpack.pyclaw") is not None
                and importlib.util.find_spec("clawpack.riemann") is not None)
    except (ImportError, ValueError):
        return False


def _quiet_logging() -> None:
    """Stop PyClaw's logging config from writing files or printing to stdout.

    ``import clawpack.pyclaw`` runs ``logging.config.fileConfig`` with a shared FileHandler
    (``pyclaw.log``, mode 'w') and a shared stdout StreamHandler at INFO on the root logger
    and on the ``pyclaw*``/``f2py``/``data`` loggers. Each is swapped in place (same
    position, since ``Controller.verbosity`` indexes ``handlers[1]``) for a NullHandler or a
    stderr handler at WARNING, so the CLI's stdout carries only the JSON lines.
    """
    import logging

    loggers = [logging.getLogger()]
    for name, lg in list(logging.root.manager.loggerDict.items()):
        if isinstance(lg, logging.Logger) and (
                name.startswith("pyclaw") or name in ("f2py", "data", "plot")):
            loggers.append(lg)
    swapped: dict[int, logging.Handler] = {}
    for lg in loggers:
        for i, hd in enumerate(list(lg.handlers)):
            new = swapped.get(id(hd))
            if new is None:
                if isinstance(hd, logging.FileHandler):
                    hd.close()
                    new = logging.NullHandler()
                elif isinstance(hd, logging.StreamHandler) and hd.stream is sys.stdout:
                    new = logging.StreamHandler(sys.stderr)
                    new.setFormatter(hd.formatter)
                    new.setLevel(logging.WARNING)
                else:
                    continue
                swapped[id(hd)] = new
            lg.handlers[i] = new


def _import_clawpack():
    """Import ``clawpack.pyclaw`` and ``clawpack.riemann`` without leaving a pyclaw.log."""
    import os
    import tempfile

    if "clawpack.pyclaw" not in sys.modules:
        cwd = os.getcwd()
        with tempfile.TemporaryDirectory(prefix="pyclaw_log_") as tmp:
            os.chdir(tmp)  # pyclaw opens ./pyclaw.log at import time
            try:
                from clawpack import pyclaw  # noqa: F401
            finally:
                os.chdir(cwd)
                _quiet_logging()  # closes the log file before tmp is removed
    import clawpack
    from clawpack import pyclaw, riemann

    _quiet_logging()
    return clawpack, pyclaw, riemann


def run(n: int, t_end: float = 1.0, *, dimensional_split: bool | None = None) -> dict:
    """Run the benchmark problem with PyClaw on an ``n x n`` grid.

    ``dimensional_split=None`` keeps PyClaw's default (True in 5.14: Godunov-split sweeps);
    False selects the unsplit algorithm with transverse increment waves.
    Returns timings, diagnostics and the final depth ``h`` shaped ``(ny, nx)``.
    """
    clawpack, pyclaw, riemann = _import_clawpack()
    from clawpack.riemann.shallow_roe_with_efix_2D_constants import (
        depth, num_eqn, x_momentum, y_momentum)

    solver = pyclaw.ClawSolver2D(riemann.shallow_roe_with_efix_2D)
    solver.kernel_language = "Fortran"
    solver.order = 2
    solver.limiters = pyclaw.limiters.tvd.MC
    solver.cfl_desired = CFL_DESIRED
    solver.cfl_max = CFL_MAX
    if dimensional_split is not None:
        solver.dimensional_split = bool(dimensional_split)
    solver.all_bcs = pyclaw.BC.wall
    solver.max_steps = 10**7

    x = pyclaw.Dimension(-L_HALF, L_HALF, n, name="x")
    y = pyclaw.Dimension(-L_HALF, L_HALF, n, name="y")
    domain = pyclaw.Domain([x, y])
    state = pyclaw.State(domain, num_eqn)
    state.problem_data["grav"] = G  # the Riemann solver's only cparam entry

    X, Y = state.grid.p_centers  # shaped (nx, ny)
    r = np.sqrt(X ** 2 + Y ** 2)
    state.q[depth, :, :] = np.where(r <= R_DAM, H_IN, H_OUT)
    state.q[x_momentum, :, :] = 0.0
    state.q[y_momentum, :, :] = 0.0

    dx, dy = state.grid.delta
    solver.dt_initial = CFL_DESIRED * min(dx, dy) / np.sqrt(G * H_IN)  # at rest: CFL 0.9

    claw = pyclaw.Controller()
    claw.solution = pyclaw.Solution(state, domain)
    claw.solver = solver
    claw.tfinal = t_end
    claw.num_output_times = 1
    claw.output_format = None
    claw.keep_copy = True
    claw.verbosity = 0

    # set the solver up outside the timed region (Controller.run would do this itself)
    solver.setup(claw.solution)
    solver.dt = solver.dt_initial

    mass_initial = float(state.q[depth].sum()) * dx * dy

    t0 = time.perf_counter()
    claw.run()
    wall = time.perf_counter() - t0

    final = claw.frames[-1]
    h = np.ascontiguousarray(final.state.q[depth].T)  # (nx, ny) -> (ny, nx)
    steps = int(solver.status["numsteps"])
    mass_final = float(h.sum()) * dx * dy
    split = solver.dimensional_split
    scheme = ("dimensional split (Godunov)" if split
              else f"unsplit, transverse_waves={solver.transverse_waves}")
    version = getattr(clawpack, "__version__", "?")
    # PyClaw's classic Fortran kernels are serial: one thread.
    return record("pyclaw", n, steps, wall, mass_initial, mass_final, float(h.max()),
                  float(final.t),
                  f"PyClaw {version} Fortran, shallow_roe_with_efix_2D, order 2, MC, "
                  f"cfl {CFL_DESIRED}, {scheme}", precision="float64", threads=1, h=h)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=256, help="cells per side (default 256)")
    ap.add_argument("--repeat", type=int, default=1, help="number of timed runs")
    ap.add_argument("--t-end", type=float, default=1.0)
    ap.add_argument("--unsplit", action="store_true",
                    help="unsplit algorithm with transverse waves instead of PyClaw's "
                         "default dimensional splitting")
    args = ap.parse_args(argv)
    if not available():
        print("pyclaw_reference: clawpack is not installed; skipping", file=sys.stderr)
        return 0
    for _ in range(args.repeat):
        res = run(args.n, t_end=args.t_end,
                  dimensional_split=False if args.unsplit else None)
        res.pop("h")
        print(json.dumps(res), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

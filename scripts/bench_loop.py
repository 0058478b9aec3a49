"""What the diffrax loop costs per step, against a bare ``lax.while_loop`` of the same step.

    python scripts/bench_loop.py --n 512 --repeat 5

Both loops run the benchmark problem (``swe.bench.problem``) to t = 1 with the same solver
step (:class:`swe.stepping.AbstractSSPRK`) and the same CFL controller logic, so they take
the same steps; the bare loop drops diffrax's bookkeeping (saving, interpolation info,
result codes, step acceptance). Timed interleaved (diffrax, bare, diffrax, ...) so that a
noisy machine slows both alike; prints one JSON line per scheme with the median
milliseconds per step and their ratio. The bare loop has no adjoint and no blow-up
reporting: it is a yardstick, not a replacement.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

SCHEMES = {"first-order HLL euler": ("hll", "first_order", "euler"),
           "default (MUSCL HLLC ssprk2)": ("hllc", "muscl", "ssprk2")}


def loops(n: int, riemann: str, reconstruction: str, integrator: str):
    """``(diffrax_run, bare_run)``: zero-argument callables returning ``(state, steps)``."""
    import jax
    import jax.numpy as jnp

    from swe import bench
    from swe.model import FiniteVolume
    from swe.run import prepare, solve
    from swe.stepping import INTEGRATORS, CFLController, ShallowWaterTerm

    model, state0 = bench.problem(n, FiniteVolume(riemann=riemann, reconstruction=reconstruction))
    run = prepare(model, state0, bench.T_END, [bench.T_END], 0.0, 0.45, None, integrator,
                  "float64", None, None, None)
    controls = run.controls
    t_end = jnp.asarray(bench.T_END)

    def with_diffrax():
        _, ys, _, steps = solve(run.model, run.state0, jnp.asarray(0.0), t_end, t_end[None],
                                None, controls, integrator, None, 1)
        return ys, steps

    @jax.jit
    def bare(y0):
        m = run.model
        controller = CFLController(model=m, cfl=controls["cfl"], stops=t_end[None],
                                   dt_max=controls["dt_max"], dt_dry=controls["dt_dry"],
                                   dt_min=controls["dt_min"])
        term, solver, beds = ShallowWaterTerm(m), INTEGRATORS[integrator](), m.padded_beds()

        def body(carry):
            t0, t1, steps, y = carry
            y1 = solver.step(term, t0, t1, y, beds, None, False)[0]
            return t1, controller._next_t1(t1, y1, beds)[0], steps + 1, y1

        t1 = controller._next_t1(jnp.asarray(0.0), y0, beds)[0]
        carry = (jnp.asarray(0.0), t1, jnp.asarray(0), y0)
        _, _, steps, y = jax.lax.while_loop(lambda c: c[0] < t_end, body, carry)
        return y, steps

    return with_diffrax, lambda: bare(run.state0)


def timed(fn):
    import jax

    start = time.perf_counter()
    state, steps = jax.block_until_ready(fn())
    return time.perf_counter() - start, int(steps)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=512)
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args(argv)
    import jax

    jax.config.update("jax_enable_x64", True)
    from swe.bench import cpu_threads

    for label, (riemann, reconstruction, integrator) in SCHEMES.items():
        fns = loops(args.n, riemann, reconstruction, integrator)
        for fn in fns:
            timed(fn)  # compiles
        per_step = ([], [])
        for _ in range(args.repeat):
            for fn, out in zip(fns, per_step):
                wall, steps = timed(fn)
                out.append(wall / steps)
        d, b = (statistics.median(x) for x in per_step)
        ratios = statistics.median(x / y for x, y in zip(*per_step))
        print(json.dumps(dict(scheme=label, N=args.n, threads=cpu_threads(), steps=steps,
                              repeats=args.repeat, diffrax_ms_per_step=1e3 * d,
                              bare_ms_per_step=1e3 * b, diffrax_over_bare=d / b,
                              median_paired_ratio=ratios)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

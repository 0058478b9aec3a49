"""Cost and memory of a reverse-mode gradient through a whole run (the performance targets:
gradient at most 3x a forward run; peak memory bounded as the step count doubles).

    python scripts/bench_gradient.py [--n 128] [--steps 1000] [--repeat 3]
        [--riemann hllc] [--reconstruction muscl] [--limiter koren] [--integrator ssprk2]
        [--precision float64] [--final-only] [--cache-dir DIR]

Problem: the benchmark dam break (``swe.bench.problem``) on ``n x n`` cells over a bed with
a Gaussian bump, Manning friction, ``steps`` fixed steps (dt = 0.004 s, CFL about 0.2).
Loss: the squared misfit of the depth at 4 gauges, at 10 output times (``--final-only``: at
``t_end``), against synthetic observations made with another Manning n; the runs do not
raise on failure (``throw=False``, a calibration's loss: no host callback; the script
exits 1 if the loss is not finite). Gradient with respect to Manning n and the
whole bed field, by ``jax.grad`` through ``swe.simulate`` (diffrax's recursive
checkpointing, ``checkpoints`` states kept). Prints one JSON line: forward and gradient
medians (s), their ratio, and XLA's temporary-buffer size of the compiled gradient at
``steps`` and ``2 * steps`` (the peak memory beyond inputs and outputs), the forward's and
the gradient's compile times (tracing included), the gradient's split into JAX's phases
(``gradient_trace_s``, ``gradient_lower_s``, ``gradient_xla_s``: with ``--cache-dir`` a
second process still traces and lowers) and how many of those two programs came from the
persistent cache (``--cache-dir``).
"""

import argparse
import contextlib
import json
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

import swe
from swe import bench

DT = 0.004
GAUGES = ((-1.0, 0.0), (0.0, 1.2), (1.5, 1.5), (0.8, -0.3))


def make_loss(n: int, steps: int, checkpoints: int, scheme=None, integrator="ssprk2",
              final_only=False):
    model0, s0 = bench.problem(n)
    grid = model0.grid
    x, y = (np.asarray(a) for a in grid.cell_centers())
    bump = 0.2 * np.exp(-((x - 1.0) ** 2 + y**2) / 0.3**2)
    idx = [grid.cell_index(gx, gy) for gx, gy in GAUGES]
    rows, cols = (np.array(a) for a in zip(*idx))
    t_end = steps * DT
    # With final_only, t_end alone is saved: no save times for diffrax to check by host
    # callbacks, so (with throw=False) the program can enter the persistent cache.
    save_at = [t_end] if final_only else np.linspace(t_end / 10, t_end, 10)

    def gauges(n_manning, bed):
        model = swe.ShallowWater(grid, bed=bed, g=1.0, friction=swe.Manning(n_manning),
                                 scheme=scheme)
        state = swe.State(h=jnp.maximum(s0.h - bed, 0.0), hu=s0.hu, hv=s0.hv)
        r = swe.simulate(model, state, t_end, save_at=save_at, dt=DT, envelopes=False,
                         checkpoints=checkpoints, max_steps=steps + 16,
                         integrator=integrator, throw=False)
        return r.states.h[:, rows, cols]

    observed = jax.jit(gauges)(0.03, jnp.asarray(bump))

    def loss(n_manning, bed):
        return jnp.sum((gauges(n_manning, bed) - observed) ** 2)

    return loss, jnp.asarray(bump)


def median_time(f, *args, repeat):
    """Median wall time of ``f(*args)`` over ``repeat`` calls after a first, untimed one."""
    jax.block_until_ready(f(*args))
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        jax.block_until_ready(f(*args))
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def compiled(f, *args, clock=None, phases=None):
    """``f`` jitted, lowered and compiled for ``args``, and its compile time (s, tracing
    included): one compilation serves both the timings and the memory analysis (on a TPU
    v5e the script took 146 s, nearly all of it compiling, where its runs took
    under 0.3 s). ``clock``: a :class:`swe.bench.CompileClock` that counts the programs
    read from the persistent cache. ``phases``: a dict that receives the seconds of JAX's
    three phases, ``trace_s`` (Python, which no cache holds), ``lower_s`` and ``xla_s``
    (XLA's compile, or the persistent cache's read)."""
    start = time.perf_counter()
    with clock or contextlib.nullcontext():
        traced = jax.jit(f).trace(*args)
        t_traced = time.perf_counter()
        lowered = traced.lower()
        t_lowered = time.perf_counter()
        exe = lowered.compile()
    end = time.perf_counter()
    if phases is not None:
        phases.update(trace_s=t_traced - start, lower_s=t_lowered - t_traced,
                      xla_s=end - t_lowered)
    return exe, end - start


def temp_bytes(exe):
    mem = exe.memory_analysis()
    return None if mem is None else int(mem.temp_size_in_bytes)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=128)
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--checkpoints", type=int, default=64)
    p.add_argument("--repeat", type=int, default=3)
    bench.add_scheme_arguments(p)
    p.add_argument("--integrator", default="ssprk2",
                   help="ssprk2, ssprk3, euler, split or strang (the same fixed steps)")
    p.add_argument("--precision", default="float64", choices=("float32", "float64"),
                   help="float64 (default) or float32 (accelerators without float64 units)")
    p.add_argument("--final-only", action="store_true",
                   help="the loss takes the gauges at t_end only (no save times, so with "
                        "--cache-dir the programs can be stored)")
    p.add_argument("--cache-dir", default=None,
                   help="JAX's persistent compilation cache in this directory "
                        "(swe.enable_compilation_cache): run twice, the second run reads "
                        "its programs back (the record's cache_hits)")
    args = p.parse_args(argv)
    jax.config.update("jax_enable_x64", args.precision == "float64")
    if args.cache_dir is not None:
        try:
            swe.enable_compilation_cache(args.cache_dir)
        except ValueError as e:
            p.error(f"--cache-dir: {e}")
    clock = bench.CompileClock()
    try:
        scheme = swe.FiniteVolume(riemann=args.riemann, reconstruction=args.reconstruction,
                                  limiter=args.limiter, kernel=args.kernel)
    except ValueError as e:
        p.error(str(e))
    loss, bed = make_loss(args.n, args.steps, args.checkpoints, scheme, args.integrator,
                          args.final_only)
    n0 = 0.025
    forward, compile_fwd = compiled(loss, n0, bed, clock=clock)
    grad_phases = {}
    gradient, compile_grad = compiled(jax.grad(loss, argnums=(0, 1)), n0, bed, clock=clock,
                                      phases=grad_phases)
    value = float(forward(n0, bed))
    if not np.isfinite(value):
        p.exit(1, f"bench_gradient: the run failed (loss {value}); nothing timed\n")
    t_fwd = median_time(forward, n0, bed, repeat=args.repeat)
    t_grad = median_time(gradient, n0, bed, repeat=args.repeat)
    g_n, g_bed = gradient(n0, bed)
    loss2, _ = make_loss(args.n, 2 * args.steps, args.checkpoints, scheme, args.integrator,
                         args.final_only)
    record = dict(
        N=args.n, precision=args.precision, steps=args.steps, checkpoints=args.checkpoints,
        riemann=args.riemann, reconstruction=args.reconstruction, limiter=args.limiter,
        kernel=args.kernel, integrator=args.integrator, final_only=args.final_only,
        loss=value, forward_s=t_fwd,
        gradient_s=t_grad, gradient_over_forward=t_grad / t_fwd,
        dloss_dn=float(g_n), dloss_dbed_norm=float(jnp.linalg.norm(g_bed)),
        grad_temp_bytes=temp_bytes(gradient),
        grad_temp_bytes_2x_steps=temp_bytes(compiled(jax.grad(loss2, argnums=(0, 1)),
                                                     n0, bed)[0]),
        forward_temp_bytes=temp_bytes(forward), forward_compile_s=compile_fwd,
        gradient_compile_s=compile_grad,
        **{f"gradient_{k}": v for k, v in grad_phases.items()}, cache_dir=args.cache_dir,
        cache_hits=clock.cache_hits, threads=bench.cpu_threads(),
        backend=jax.default_backend())
    print(json.dumps(record), flush=True)


if __name__ == "__main__":
    main()

"""Ensemble throughput: ``members`` runs through one vmapped call against the same runs
one after another (the performance target: at least 1.5x at 16 members of 128 x 128).

    python scripts/bench_ensemble.py [--n 128] [--members 16] [--repeat 3] [--devices D]
                                     [--ensemble-kernel auto|xla|pallas]

``--ensemble-kernel`` is the members' stage kernel in the vmapped call
(:class:`swe.FiniteVolume`'s ``kernel``); the sequential runs keep ``"auto"``, the best
for one member (on a TPU a vmapped batch of small grids is as large as one big grid).

``--devices D`` splits the members over D devices (``simulate_ensemble(devices=D)``); on a
CPU the script first makes D host devices (``--xla_force_host_platform_device_count``),
one per core, so the members of a 2-core machine run on both cores at once. Split that
way, a CPU device gets one core's threads, which slows a lone run down; so the ratio is
also given against the sequential runs timed in a child process with one device that has
every core (``throughput_ratio_vs_best``), the honest baseline.

Problem: the benchmark dam break (``swe.bench.problem``) with Manning friction, one member
per Manning n in [0.01, 0.05], to t = 1 s. Both paths are compiled before timing; the
sequential path reuses one compiled run for every member. Prints one JSON line with the
medians and the throughput ratio, and checks that the two give the same depths.
"""

import argparse
import json
import os
import statistics
import time


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=128)
    p.add_argument("--members", type=int, default=16)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--precision", default="float64", choices=("float32", "float64"))
    p.add_argument("--devices", type=int, default=None,
                   help="split the members over this many devices")
    p.add_argument("--batching", default="vmap", choices=("vmap", "map"),
                   help="members vmapped, or one after another in one compiled loop")
    p.add_argument("--ensemble-kernel", default="auto",
                   choices=("auto", "xla", "pallas", "pallas-interpret"),
                   help="the members' stage kernel in the vmapped call (default: auto)")
    p.add_argument("--sequential-only", action="store_true",
                   help="time only the sequential runs (the one-device baseline)")
    args = p.parse_args(argv)
    if args.devices and args.devices > 1:  # before JAX starts; ignored by GPU backends
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                                   f" --xla_force_host_platform_device_count={args.devices}")
    import jax
    import numpy as np

    jax.config.update("jax_enable_x64", True)
    import swe
    from swe import bench

    model, s0 = bench.problem(args.n)
    values = np.linspace(0.01, 0.05, args.members)
    models = [swe.ShallowWater(model.grid, g=1.0, friction=swe.Manning(float(v)))
              for v in values]
    kw = dict(save_at=[1.0], dtype=args.precision, envelopes=False)
    members = [swe.ShallowWater(model.grid, g=1.0, friction=swe.Manning(float(v)),
                                scheme=swe.FiniteVolume(kernel=args.ensemble_kernel))
               for v in values]

    def ensemble():
        return swe.simulate_ensemble(members, s0, 1.0, devices=args.devices,
                                     batching=args.batching, **kw)

    def sequential():
        return [swe.simulate(m, s0, 1.0, **kw) for m in models]

    if args.sequential_only:
        sequential()  # compile
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            sequential()
            times.append(time.perf_counter() - start)
        print(json.dumps(dict(sequential_s=statistics.median(times))), flush=True)
        return
    ens, seq = ensemble(), sequential()  # compile both
    diff = max(float(np.abs(np.asarray(e.final.h) - np.asarray(s.final.h)).max())
               for e, s in zip(ens.results, seq))
    t_ens, t_seq = [], []
    for _ in range(args.repeat):  # interleaved
        start = time.perf_counter()
        ensemble()
        t_ens.append(time.perf_counter() - start)
        start = time.perf_counter()
        sequential()
        t_seq.append(time.perf_counter() - start)
    steps = int(sum(int(s.num_steps) for s in seq))
    record = dict(N=args.n, members=args.members, precision=args.precision,
                  devices=args.devices or 1, batching=args.batching,
                  ensemble_kernel=args.ensemble_kernel,
                  ensemble_s=statistics.median(t_ens), sequential_s=statistics.median(t_seq),
                  throughput_ratio=statistics.median(t_seq) / statistics.median(t_ens),
                  sequential_one_device_s=None, throughput_ratio_vs_best=None,
                  cell_updates=args.n * args.n * steps, max_abs_diff_h=diff,
                  threads=bench.cpu_threads(), backend=jax.default_backend())
    best = record["sequential_s"]
    if args.devices and args.devices > 1 and jax.default_backend() == "cpu":
        import subprocess
        import sys

        env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
        child = subprocess.run(
            [sys.executable, __file__, "--sequential-only", "--n", str(args.n), "--members",
             str(args.members), "--repeat", str(args.repeat), "--precision", args.precision],
            capture_output=True, text=True, env=env, check=True)
        one = json.loads(child.stdout.strip().splitlines()[-1])["sequential_s"]
        record["sequential_one_device_s"] = one
        best = min(best, one)
    record["throughput_ratio_vs_best"] = best / record["ensemble_s"]
    print(json.dumps(record), flush=True)


if __name__ == "__main__":
    main()

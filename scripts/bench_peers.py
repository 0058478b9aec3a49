"""swe beside its peers on the benchmark problem: speed at known accuracy, in one run.

    python scripts/bench_peers.py --n 512 1024 --repeat 3

Runs, in this one process, interleaved round by round (so that a noisy machine slows all
of them alike) and repeated ``--repeat`` times (medians reported):

* swe, default scheme (MUSCL-Koren + HLLC, hydrostatic reconstruction, positivity limiter,
  SSP-RK2, CFL 0.45) and first-order HLL with forward Euler, each in float64 and float32,
  and the default scheme with the MC limiter (PyClaw's), with minmod and with THINC-BVD in
  float64;
* ``numpy_reference.py``: the same first-order HLL scheme in plain vectorised NumPy;
* PyClaw (``pyclaw_reference.py``: Fortran, ``shallow_roe_with_efix_2D``, order 2, MC,
  CFL 0.9), if clawpack is installed, with its default dimensional splitting and unsplit.

Timing excludes compilation (swe compiles in the first round, and reports it apart) and
setup. Each solver's final depth is compared with a fine reference: the problem is
radially symmetric, so ``radial_reference.py`` solves it in 1-D at high resolution and
averages onto the cells. The STREAM triad (``stream_triad.py``) is measured first, unless
``--stream`` gives it, for the roofline fraction. Prints a table, then one JSON line per
solver and size (``--json FILE`` also writes them).
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def _swe_configs(quick_schemes):
    default = dict(riemann="hllc", reconstruction="muscl", limiter="koren", integrator="ssprk2")
    first = dict(riemann="hll", reconstruction="first_order", limiter="vanleer",
                 integrator="euler")
    split = dict(default, limiter="mc", integrator="split")  # cfl 0.9, its default
    configs = [("swe default f64", dict(default, precision="float64")),
               ("swe MUSCL-van Leer f64", dict(default, limiter="vanleer",
                                               precision="float64")),
               ("swe MUSCL-MC f64", dict(default, limiter="mc", precision="float64")),
               ("swe MUSCL-minmod f64", dict(default, limiter="minmod", precision="float64")),
               ("swe split-Hancock MC f64", dict(split, precision="float64")),
               ("swe split-Hancock Roe-MC f64", dict(split, riemann="roe",
                                                     precision="float64")),
               ("swe Strang-Hancock Roe-MC f64", dict(split, riemann="roe",
                                                      integrator="strang",
                                                      precision="float64")),
               ("swe MUSCL-THINC-BVD f64", dict(default, limiter="thinc-bvd",
                                                precision="float64")),
               ("swe 1st-order f64", dict(first, precision="float64"))]
    if not quick_schemes:
        configs += [("swe default f32", dict(default, precision="float32")),
                    ("swe split-Hancock Roe-MC f32", dict(split, riemann="roe",
                                                         precision="float32")),
                    ("swe 1st-order f32", dict(first, precision="float32"))]
    return configs


def run_size(n: int, repeat: int, with_pyclaw: bool, quick_schemes: bool, stream_gbs):
    """All solvers at one size; returns {label: [records]} with ``h`` from the last run."""
    import numpy_reference
    import pyclaw_reference

    from swe import bench

    runners = {}
    for label, kw in _swe_configs(quick_schemes):
        gen = bench.run(n, repeat=repeat, stream_gbs=stream_gbs, keep_state=True, **kw)
        runners[label] = gen.__next__  # the first call compiles, then times one run
    runners["numpy 1st-order f64"] = lambda: numpy_reference.run(n)
    if with_pyclaw and pyclaw_reference.available():
        runners["pyclaw split"] = lambda: pyclaw_reference.run(n)
        runners["pyclaw unsplit"] = lambda: pyclaw_reference.run(n, dimensional_split=False)
    records = {label: [] for label in runners}
    for round_ in range(repeat):
        for label, runner in runners.items():
            rec = runner()
            records[label].append(rec)
            print(f"  N={n} round {round_ + 1}/{repeat} {label}: {rec['wall_s']:.3g} s, "
                  f"{rec['steps']} steps", file=sys.stderr, flush=True)
    return records


def summarise(n: int, records: dict) -> list[dict]:
    import radial_reference

    h_ref = radial_reference.reference(n)
    rows = []
    for label, recs in records.items():
        row = {k: v for k, v in recs[-1].items() if k != "h"}
        row["label"] = label
        row["wall_s"] = statistics.median(r["wall_s"] for r in recs)
        row["cell_updates_per_s"] = statistics.median(r["cell_updates_per_s"] for r in recs)
        row["repeats"] = len(recs)
        row["l1_h"] = radial_reference.rel_l1(recs[-1]["h"], h_ref)
        if "bytes_per_cell_update" in row:
            row["achieved_GBs"] = row["bytes_per_cell_update"] * row["cell_updates_per_s"] / 1e9
            if "stream_GBs" in row:
                row["roofline_fraction"] = row["achieved_GBs"] / row["stream_GBs"]
        rows.append(row)
    by = {r["label"]: r for r in rows}
    numpy_rate = by["numpy 1st-order f64"]["cell_updates_per_s"]
    pyclaw = [r for r in rows if r["solver"] == "pyclaw"]
    best_pyclaw = min(pyclaw, key=lambda r: r["wall_s"]) if pyclaw else None
    f64 = {r["label"].replace(" f64", ""): r for r in rows if r["label"].endswith("f64")}
    for r in rows:
        r["speedup_vs_numpy"] = r["cell_updates_per_s"] / numpy_rate
        if best_pyclaw is not None:
            r["time_vs_fastest_pyclaw"] = r["wall_s"] / best_pyclaw["wall_s"]
        twin = f64.get(r["label"].replace(" f32", ""))
        if r["label"].endswith("f32") and twin is not None:
            r["f32_speedup"] = r["cell_updates_per_s"] / twin["cell_updates_per_s"]
    return rows


def table(rows: list[dict]) -> str:
    head = ("| solver | N | threads | steps | time to solution (s) | cell-updates/s | "
            "vs NumPy | time vs PyClaw | L1(h) vs fine ref | compile (s) | of STREAM |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        vs_claw = r.get("time_vs_fastest_pyclaw")
        roof = r.get("roofline_fraction")
        lines.append(
            f"| {r['label']} | {r['N']} | {r.get('threads', '')} | {r['steps']} | "
            f"{r['wall_s']:.3g} | {r['cell_updates_per_s']:.3g} | "
            f"{r['speedup_vs_numpy']:.2f}x | "
            f"{'' if vs_claw is None else f'{vs_claw:.2f}x'} | {r['l1_h']:.2e} | "
            f"{r['compile_s']:.1f} | {'' if roof is None else f'{100 * roof:.1f}%'} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, nargs="+", default=[512, 1024])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--threads", type=int, default=None,
                   help="pin the process to this many cores (default: all)")
    p.add_argument("--no-pyclaw", action="store_true")
    p.add_argument("--quick-schemes", action="store_true",
                   help="swe in float64 only (skip the float32 runs)")
    p.add_argument("--stream", type=float, default=None, metavar="GB/s",
                   help="STREAM triad bandwidth (default: measured now)")
    p.add_argument("--json", default=None, help="also write the JSON lines here")
    args = p.parse_args(argv)

    from swe import bench

    if args.threads is not None:
        bench.set_threads(args.threads)
    import jax

    jax.config.update("jax_enable_x64", True)
    stream = args.stream
    if stream is None:
        import stream_triad

        triad = stream_triad.measure(n=2**24, repeat=5)
        stream = triad.get("triad_GBs_jax_median") or triad["triad_GBs_numpy_median"]
    print(f"# {datetime.date.today()} {platform.processor() or platform.machine()}, "
          f"{bench.cpu_threads()} cores for swe (NumPy and PyClaw: 1 thread), "
          f"jax {jax.__version__} on {jax.default_backend()}, STREAM triad {stream:.1f} GB/s, "
          f"median of {args.repeat}", flush=True)
    out = []
    for n in args.n:
        rows = summarise(n, run_size(n, args.repeat, not args.no_pyclaw, args.quick_schemes,
                                     stream))
        print(table(rows), flush=True)
        out += rows
    lines = [json.dumps(r) for r in out]
    print("\n".join(lines))
    if args.json:
        Path(args.json).write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

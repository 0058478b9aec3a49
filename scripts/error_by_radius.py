"""Where a solver's benchmark error lies: the relative L1 error of h against the fine radial
reference, and the share of it in radial bands (the outgoing shock is at r = 1.737).

    python scripts/error_by_radius.py [--n 256] [--pyclaw]

Runs swe's default scheme, MUSCL-MC and split Roe-MC (and PyClaw's split scheme with
``--pyclaw`` where clawpack is installed) on the benchmark problem, then prints one line
per solver: its L1(h) and the fraction of its error in each band of ``EDGES``.
"""

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

EDGES = (0, 0.3, 0.6, 0.9, 1.2, 1.5, 1.7, 1.76, 1.85, 4)


def bands(h, h_ref, grid):
    r = np.hypot(*(np.asarray(c) for c in grid.cell_centers()))
    e = np.abs(h - h_ref)
    return [float(e[(r >= a) & (r < b)].sum() / e.sum()) for a, b in zip(EDGES[:-1], EDGES[1:])]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=256)
    p.add_argument("--pyclaw", action="store_true")
    args = p.parse_args(argv)
    import jax

    jax.config.update("jax_enable_x64", True)
    import radial_reference

    from swe import bench

    n = args.n
    h_ref = radial_reference.reference(n)
    runs = {"swe default": {}, "swe MUSCL-MC": dict(limiter="mc"),
            "swe split Roe-MC": dict(limiter="mc", riemann="roe", integrator="split")}
    results = {name: next(bench.run(n, repeat=1, keep_state=True, **kw))["h"]
               for name, kw in runs.items()}
    if args.pyclaw:
        import pyclaw_reference

        results["pyclaw split"] = pyclaw_reference.run(n)["h"]
    print("bands of r:", " ".join(f"[{a}, {b})" for a, b in zip(EDGES[:-1], EDGES[1:])))
    for name, h in results.items():
        shares = " ".join(f"{f:.2f}" for f in bands(h, h_ref, bench.problem(n)[0].grid))
        print(f"{name:18s} L1(h) {radial_reference.rel_l1(h, h_ref):.3e}  shares {shares}")


if __name__ == "__main__":
    main()

"""Prototype, not part of the package: does THINC-BVD reconstruction close the default
scheme's accuracy gap to PyClaw on the benchmark problem?

Why: the default scheme (unsplit MUSCL with Koren's limiter, HLLC, SSP-RK2, CFL 0.45)
has 1.3x PyClaw's L1 error of h on the benchmark, and most of the difference lies within
three cells of the outgoing shock, which MUSCL spreads over about four cells (README,
performance targets). THINC-BVD (Sun, Inaba & Xiao 2016, J. Comput. Phys. 322; Deng et
al. 2018, J. Comput. Phys. 371) keeps a MUSCL candidate and a THINC candidate (a
hyperbolic-tangent jump fitted to the cell average, steepness ``beta``) for every cell
and takes, per cell, the one whose faces jump least against its neighbours' (the
boundary variation): MUSCL where the data are smooth, THINC across jumps.

What: the benchmark problem (flat bed, walls, ``swe.bench.problem``) with a compact
unsplit scheme written here: primitive ``(h, u, v)`` faces, HLLC (``swe.riemann``),
SSP-RK2 at CFL 0.45, as the package's default on a flat wet bed. ``--recon koren`` is the
baseline (it should give the package's error); ``--recon bvd`` adds the THINC candidate for
the variables in ``--thinc`` (default ``h``). L1 of h against ``radial_reference.py``.

    python scripts/prototype_thinc_bvd.py --n 256 512 --recon koren bvd [--beta 1.6]
        [--thinc h|hu|huv]

Measured 2026-12-06 (Intel Xeon, 2 threads, float64; PyClaw's split scheme, the peer of
``bench_peers.py``: 1.32e-3 at N = 256, 6.94e-4 at 512, 3.97e-4 at 1024):

    N = 256   koren (baseline)              L1 1.887e-3
              bvd, THINC on h only          beta 1.3 / 1.6 / 2.0 / 2.5:
                                            1.82e-3 / 1.75e-3 / 1.69e-3 / 1.76e-3
              bvd, THINC on h, u and v      beta 1.3 / 1.6 / 2.0 / 2.2 / 2.5 / 2.7 / 3.0:
                                            1.82e-3 / 1.61e-3 / 1.48e-3 / 1.44e-3 /
                                            1.41e-3 / 1.67e-3 / 2.10e-3
    N = 512   koren (baseline)              L1 9.31e-4 (the package's default: 9.31e-4)
              bvd, h, u and v, beta 2.0     7.31e-4 (1.05x PyClaw's)
              bvd, h, u and v, beta 2.5     6.96e-4 (1.003x PyClaw's), 2.7x the
                                            baseline's time in this unfused prototype

(Measured with THINC written here and its position clipped to [1e-8, 1 - 1e-8]; it now
calls ``swe.reconstruction.thinc``, unclipped, and gives the same figures at N = 256:
1.887e-3 and 1.4066e-3 at beta 2.5.)

So THINC-BVD on all three variables with beta about 2.5 brings the unsplit SSP-RK2
scheme to PyClaw's error at N = 512; the error is sensitive to beta beyond 2.5 (at
N = 256: 2.10e-3 at beta 3.0, worse than the baseline).
"""

from __future__ import annotations

import argparse
import json
import time

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)

from swe import bench  # noqa: E402
from swe.reconstruction import koren, thinc  # noqa: E402
from swe.riemann import hllc  # noqa: E402

G = 3  # ghost cells: BVD compares the faces of a cell's neighbours too


def faces(q, recon, beta, use_thinc):
    """Right and left face values of every cell of ``q`` (padded along axis 1), with the
    last axis the sweep; BVD picks per cell between Koren's MUSCL and THINC."""
    qm, q0, qp = q[:, :-2], q[:, 1:-1], q[:, 2:]
    dr, dl = koren(q0 - qm, qp - q0)
    mr, ml = q0 + dr, q0 - dl
    if recon == "koren" or not use_thinc:
        return mr, ml
    dr, dl = thinc(q0 - qm, qp - q0, beta)  # the package's (deviations from the cell)
    tr, tl = q0 + dr, q0 - dl

    def tbv(r, l):  # boundary variation of each cell's two faces (cells 1 .. n - 2 here)
        return jnp.abs(r[:, :-2] - l[:, 1:-1]) + jnp.abs(r[:, 1:-1] - l[:, 2:])

    pick = tbv(tr, tl) < tbv(mr, ml)
    pick = jnp.pad(pick, ((0, 0), (1, 1)))
    return jnp.where(pick, tr, mr), jnp.where(pick, tl, ml)


def walls(q, sign):
    return jnp.concatenate([sign * q[:, G - 1::-1], q, sign * q[:, -1:-G - 1:-1]], axis=1)


def make_solver(n, recon="koren", beta=1.6, thinc_vars=("h",), cfl=0.45):
    model, s0 = bench.problem(n)
    g, dx = float(model.g), model.grid.dx

    def sweep(h, qn, qt):
        """``-d/dx`` of the fluxes along axis 1."""
        H, U, V = walls(h, 1.0), walls(qn / h, -1.0), walls(qt / h, 1.0)
        (hr, hl), (ur, ul), (vr, vl) = (faces(w, recon, beta, name in thinc_vars)
                                        for w, name in ((H, "h"), (U, "u"), (V, "v")))
        # Faces between padded cells k and k + 1, for the n + 1 faces of the grid.
        s = slice(G - 2, G - 2 + n + 1)
        t = slice(G - 1, G - 1 + n + 1)
        fh, fn, ft = hllc(hr[:, s], ur[:, s], vr[:, s], hl[:, t], ul[:, t], vl[:, t], g)
        return tuple(-(f[:, 1:] - f[:, :-1]) / dx for f in (fh, fn, ft))

    def rhs(state):
        h, hu, hv = state
        ax = sweep(h, hu, hv)
        ay = sweep(h.T, hv.T, hu.T)
        return ax[0] + ay[0].T, ax[1] + ay[2].T, ax[2] + ay[1].T

    def body(carry):
        t, k, state = carry
        h, hu, hv = state
        a = jnp.max(jnp.maximum(jnp.abs(hu), jnp.abs(hv)) / h + jnp.sqrt(g * h))
        dt = jnp.minimum(cfl * dx / a, bench.T_END - t)
        s1 = tuple(q + dt * r for q, r in zip(state, rhs(state)))
        s2 = tuple(q + dt * r for q, r in zip(s1, rhs(s1)))
        return t + dt, k + 1, tuple(0.5 * (q + r) for q, r in zip(state, s2))

    @jax.jit
    def solve(h, hu, hv):
        return jax.lax.while_loop(lambda c: c[0] < bench.T_END, body, (0.0, 0, (h, hu, hv)))

    return solve, s0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, nargs="+", default=[256])
    p.add_argument("--recon", nargs="+", default=["koren", "bvd"], choices=("koren", "bvd"))
    p.add_argument("--beta", type=float, nargs="+", default=[1.6])
    p.add_argument("--thinc", default="h", help="variables with a THINC candidate: h, hu, huv")
    args = p.parse_args(argv)
    import radial_reference

    thinc_vars = {"h": ("h",), "hu": ("h", "u"), "huv": ("h", "u", "v")}[args.thinc]
    for n in args.n:
        ref = radial_reference.reference(n)
        for recon in args.recon:
            for beta in (args.beta if recon == "bvd" else [None]):
                solve, s0 = make_solver(n, recon, beta or 1.6, thinc_vars)
                out = jax.block_until_ready(solve(s0.h, s0.hu, s0.hv))
                start = time.perf_counter()
                out = jax.block_until_ready(solve(s0.h, s0.hu, s0.hv))
                wall = time.perf_counter() - start
                h = np.asarray(out[2][0])
                print(json.dumps(dict(
                    N=n, recon=recon, beta=beta, thinc=args.thinc if recon == "bvd" else None,
                    steps=int(out[1]), wall_s=wall,
                    l1_h=radial_reference.rel_l1(h, ref),
                    mass_rel_err=abs(h.sum() - np.asarray(s0.h).sum()) / np.asarray(s0.h).sum(),
                    h_min=float(h.min()))), flush=True)


if __name__ == "__main__":
    main()

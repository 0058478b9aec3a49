"""Hand-written NumPy baseline for the shallow-water benchmark.

This is the solver a competent user would write without JAX: a first-order, unsplit
finite-volume scheme for the 2-D shallow-water equations with HLL fluxes, written as
whole-array NumPy operations (no Python loops over cells, no numba). It exists so that
benchmarks of the ``swe`` JAX solver have an honest, reasonably efficient reference to be
compared against.

Benchmark problem (fixed):

* domain ``[-2.5, 2.5]^2``, ``N x N`` cells, arrays shaped ``(ny, nx)`` (axis 0 = y);
* ``g = 1``, flat bed, no friction, reflective walls on all four sides;
* ``h = 2`` where ``sqrt(x^2 + y^2) <= 0.5`` at cell centres, ``h = 1`` elsewhere, at rest;
* run to ``t = 1`` exactly (the last step is shortened).

Scheme: both directions' HLL fluxes are computed from the same old state and applied in a
single forward-Euler update per step. Wave speeds are the two-rarefaction estimates of
Toro (2001, eqs. 10.22-10.24); the tangential momentum flux is the HLL average as well.
The step is ``dt = cfl * dx / max(max(|u|, |v|) + c)`` (stable for ``cfl <= 0.5``).

Efficiency choices: the state lives in preallocated padded buffers whose one-cell ghost
frame is refreshed in place each step; velocities, celerity and physical fluxes are
computed once per cell (not once per face side); face states are slices (views) of the
padded arrays. The x- and y-flux divergences are summed before scaling, so the update is
bitwise symmetric under an x <-> y transpose of the state. NumPy's element-wise ufuncs are
single-threaded, so ``threads`` is reported as 1.

Usage::

    python scripts/numpy_reference.py --n 256 --repeat 3 --precision float64
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


def problem(n: int, dtype=np.float64) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Initial state ``(h, hu, hv, dx)`` of the benchmark: a still circular hump of water."""
    dx = 2.0 * L_HALF / n
    x = -L_HALF + (np.arange(n) + 0.5) * dx
    r = np.sqrt(x[None, :] ** 2 + x[:, None] ** 2)
    h = np.where(r <= 0.5, 2.0, 1.0).astype(dtype)
    return h, np.zeros_like(h), np.zeros_like(h), dx


def _fill_ghosts(h: np.ndarray, hu: np.ndarray, hv: np.ndarray) -> None:
    """Reflective walls: copy depth and tangential momentum, negate the normal one."""
    for q, sx, sy in ((h, 1.0, 1.0), (hu, -1.0, 1.0), (hv, 1.0, -1.0)):
        # x walls (columns): hu is normal
        np.multiply(q[1:-1, 1], sx, out=q[1:-1, 0])
        np.multiply(q[1:-1, -2], sx, out=q[1:-1, -1])
        # y walls (rows): hv is normal
        np.multiply(q[1, 1:-1], sy, out=q[0, 1:-1])
        np.multiply(q[-2, 1:-1], sy, out=q[-1, 1:-1])


def _hll(hL, hR, qnL, qnR, qtL, qtR, unL, unR, cL, cR, fhL, fhR, fnL, fnR, ftL, ftR):
    """HLL fluxes ``(F_h, F_qn, F_qt)`` across a set of faces, all arguments array views.

    ``qn``/``qt`` are the normal/tangential momenta, ``un`` the normal velocity, ``c`` the
    celerity and ``f*`` the exact physical fluxes of the two cells adjoining each face.
    """
    u_star = 0.5 * (unL + unR) + cL - cR
    c_star = 0.5 * (cL + cR) + 0.25 * (unL - unR)
    sLm = np.minimum(np.minimum(unL - cL, u_star - c_star), 0.0)
    sRp = np.maximum(np.maximum(unR + cR, u_star + c_star), 0.0)
    span = sRp - sLm
    inv = np.divide(1.0, span, out=np.zeros_like(span), where=span > 0.0)  # 0 if both dry
    a = sRp * inv
    b = sLm * inv
    d = sLm * a
    f_h = a * fhL - b * fhR + d * (hR - hL)
    f_n = a * fnL - b * fnR + d * (qnR - qnL)
    f_t = a * ftL - b * ftR + d * (qtR - qtL)
    return f_h, f_n, f_t


def run(n: int, t_end: float = 1.0, cfl: float = 0.45, dtype: str = "float64") -> dict:
    """Run the benchmark problem on an ``n x n`` grid; return timings, diagnostics and ``h``."""
    dt_ = np.dtype(dtype)
    h0, hu0, hv0, dx = problem(n, dt_)
    area = dx * dx
    mass_initial = float(h0.sum(dtype=np.float64)) * area

    # padded state buffers (one ghost cell each side); interior views are updated in place
    H = np.zeros((n + 2, n + 2), dt_)
    HU = np.zeros_like(H)
    HV = np.zeros_like(H)
    h, hu, hv = H[1:-1, 1:-1], HU[1:-1, 1:-1], HV[1:-1, 1:-1]
    h[...], hu[...], hv[...] = h0, hu0, hv0
    # per-cell work arrays on the padded grid
    U, V, C, P = (np.zeros_like(H) for _ in range(4))
    FHU, FHV, GHU, GHV = (np.zeros_like(H) for _ in range(4))
    div = np.empty((n, n), dt_)
    wet = np.empty(H.shape, bool)
    smax_buf = np.empty((n, n), dt_)
    g = dt_.type(G)

    t = 0.0
    steps = 0
    t0 = time.perf_counter()
    while t < t_end:
        _fill_ghosts(H, HU, HV)
        # cell-wise primitive variables and physical fluxes (computed once per cell)
        np.greater(H, 0.0, out=wet)
        np.divide(HU, H, out=U, where=wet)
        np.divide(HV, H, out=V, where=wet)
        np.multiply(H, g, out=C)
        np.sqrt(C, out=C)
        np.multiply(H, H, out=P)
        P *= 0.5 * g
        np.multiply(HU, U, out=FHU)
        FHU += P  # x flux of hu
        np.multiply(HU, V, out=FHV)  # x flux of hv
        np.multiply(HV, U, out=GHU)  # y flux of hu
        np.multiply(HV, V, out=GHV)
        GHV += P  # y flux of hv

        # time step from the interior cells
        np.maximum(np.abs(U[1:-1, 1:-1]), np.abs(V[1:-1, 1:-1]), out=smax_buf)
        smax_buf += C[1:-1, 1:-1]
        smax = float(smax_buf.max())
        dt = cfl * dx / smax if smax > 0.0 else t_end - t
        if t + dt >= t_end:
            dt, t = t_end - t, t_end
        else:
            t += dt

        # x faces: (n, n+1), left = column j, right = column j+1; hu normal, hv tangential
        xl, xr = np.s_[1:-1, :-1], np.s_[1:-1, 1:]
        fx = _hll(H[xl], H[xr], HU[xl], HU[xr], HV[xl], HV[xr], U[xl], U[xr],
                  C[xl], C[xr], HU[xl], HU[xr], FHU[xl], FHU[xr], FHV[xl], FHV[xr])
        # y faces: (n+1, n), left = row i, right = row i+1; hv normal, hu tangential
        yl, yr = np.s_[:-1, 1:-1], np.s_[1:, 1:-1]
        fy = _hll(H[yl], H[yr], HV[yl], HV[yr], HU[yl], HU[yr], V[yl], V[yr],
                  C[yl], C[yr], HV[yl], HV[yr], GHV[yl], GHV[yr], GHU[yl], GHU[yr])

        lam = dt_.type(dt / dx)
        # x-flux and y-flux divergences summed first: bitwise x<->y symmetric update
        for q, f, ff in ((h, fx[0], fy[0]), (hu, fx[1], fy[2]), (hv, fx[2], fy[1])):
            np.subtract(f[:, 1:], f[:, :-1], out=div)
            div += ff[1:, :] - ff[:-1, :]
            div *= lam
            q -= div
        steps += 1
    wall = time.perf_counter() - t0

    mass_final = float(h.sum(dtype=np.float64)) * area
    # NumPy's element-wise ufuncs run on one thread (no BLAS here).
    return record("numpy", n, steps, wall, mass_initial, mass_final, float(h.max()), t,
                  f"first-order HLL, forward Euler, cfl {cfl}, {dt_.name}",
                  precision=dt_.name, threads=1, h=h.copy())


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=256, help="cells per side (default 256)")
    ap.add_argument("--repeat", type=int, default=1, help="number of timed runs")
    ap.add_argument("--precision", choices=("float64", "float32"), default="float64")
    ap.add_argument("--t-end", type=float, default=1.0)
    ap.add_argument("--cfl", type=float, default=0.45)
    args = ap.parse_args(argv)
    for _ in range(args.repeat):
        res = run(args.n, t_end=args.t_end, cfl=args.cfl, dtype=args.precision)
        res.pop("h")
        print(json.dumps(res), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])

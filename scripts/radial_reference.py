"""Fine-grid reference solution of the benchmark problem, from a 1-D radial solve.

What: the depth ``h`` at ``t = 1`` of the benchmark problem (``swe.bench``), as ``(N, N)``
cell averages on the benchmark grid, computed from a high-resolution solve of the
cylindrically symmetric shallow-water equations. Why: so benchmark scripts can report each
solver's L1 error of ``h`` against a reference far more accurate than any of them, at a
cost of seconds.

Problem: domain ``[-2.5, 2.5]^2``, ``N x N`` cells (centres ``-2.5 + (i + 1/2) 5 / N``,
arrays ``(ny, nx)``, axis 0 = y), ``g = 1``, flat bed, walls on the sides, at rest, ``h = 2``
for ``r <= 0.5`` and ``h = 1`` elsewhere, to ``t = 1``. The reference starts from the exact
disc; the 2-D solvers start from its staircase at cell centres, whose own L1 distance from
the disc (1.3e-3 at N = 128, 6.5e-4 at N = 256, 2.7e-4 at N = 512) is part of their error.
By ``t = 1`` the outgoing shock is at ``r = 1.737`` (h jumps from 1.243 to 1); beyond
``r = 1.7373`` the solution is exactly ``h = 1``, ``hu = 0`` (bitwise), so the walls at
``r >= 2.5`` are never reached and the radial solution is the exact 2-D solution. (A
reflected secondary shock sits at ``r = 0.048``; the centre has drained to ``h = 0.62``
around ``r = 0.15``.)

Equations, with ``q = (h, hu)`` and ``u`` the radial velocity::

    h_t    + (h u)_r                 = -h u   / r
    (hu)_t + (h u^2 + g h^2 / 2)_r   = -h u^2 / r

on ``[0, R_MAX]``, ``R_MAX = 3.6 > 2.5 sqrt(2)`` (every 2-D cell corner is covered), with
``nr`` cells ``[i dr, (i + 1) dr]`` (centres ``r_i > 0``), reflective ghost cells (``h``
mirrored, ``u -> -u``) at ``r = 0`` and at ``r = R_MAX``. Initial cell values are the
area-weighted averages of the exact disc.

Scheme: finite volumes; MUSCL reconstruction of ``h`` and ``u`` with the MC limiter
(minmod selectable); HLL fluxes with Toro's two-rarefaction wave-speed bounds (Toro 2001,
eqs. 10.22-10.24); the geometric sources at the cell centres, from each stage's state;
SSP-RK2 (Heun); ``dt = 0.45 dr / max(|u| + sqrt(g h))`` from the state at the start of the
step, the last step shortened to land exactly on ``t_end``. Whole-array NumPy, no loops
over cells. Only the cells up to 8 past the last disturbed one are stepped: the rest hold
the undisturbed state exactly and their update is exactly zero, so this is bitwise equal to
stepping all cells (checked), just faster.

Default resolution: ``nr = 14400``, ``dr = 2.5e-4``, 10x finer than ``dx`` at N = 2048
(``dx = 2.44e-3``); 13392 steps, about 5 s on one core.

Verified accuracy (MC, ``t = 1``; "rel L1" is :func:`rel_l1` of the cell averages on an
``N x N`` benchmark grid, "radial" its exact-geometry analogue ``2 pi int |dh| r dr`` over
the volume in the square):

* self-convergence, about first order (shocks): nr 7200 vs 14400: radial 3.0e-5, rel L1
  2.6e-5 (N = 256), 1.9e-5 (N = 1024); nr 14400 vs 28800: radial 1.8e-5, rel L1 1.4e-5 ..
  1.0e-5 (N = 128 .. 2048), shock position unchanged. The error of the default reference
  is thus about 2-4e-5 relative. MC vs minmod at nr = 14400: 1.8e-5 (N = 1024).
* the volume ``2 pi int h r dr`` (not conserved exactly by the source form) drifts by
  1.4e-6 relative (7e-7 at nr = 28800).
* cell-average quadrature: :func:`reference` samples ``sub x sub`` points per cell with
  ``N sub >= 4096`` (:func:`reference_sub`), error <= 5e-6 against twice the samples.
* independent 2-D solvers against ``reference(N)`` (rel L1 of h, N = 128 / 256 / 512):
  ``swe`` (MUSCL-minmod HLLC SSP-RK2, float64) 5.85e-3 / 3.19e-3 / 1.64e-3 (order 0.88,
  0.95); ``scripts/numpy_reference.py`` (first-order HLL) 1.33e-2 / 8.34e-3 / 4.90e-3
  (order 0.68, 0.77). The reference error is 1-2 % of the smallest of these.

Usage::

    python scripts/radial_reference.py [--nr NR] [--limiter mc|minmod] [--check]
                                       [--validate N [N ...]]

prints one JSON line: ``nr``, ``dr``, ``wall_s``, ``h`` at a few radii, the shock radius
and the radius beyond which the state is exactly undisturbed; ``--check`` adds the
differences from an ``nr / 2`` solve, ``--validate`` the errors of the ``swe`` and NumPy
solvers. No files are written.

API: :func:`radial_profile`, :func:`cell_averages`, :func:`reference`, :func:`rel_l1`.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import sys
import time

import numpy as np

G = 1.0
L_HALF = 2.5  # the 2-D domain is [-L_HALF, L_HALF]^2
H_IN, H_OUT, R_DAM = 2.0, 1.0, 0.5
T_END = 1.0
CFL = 0.45
R_MAX = 3.6  # > L_HALF * sqrt(2) = 3.536: every 2-D cell corner lies inside [0, R_MAX]
DEFAULT_NR = 14400  # dr = R_MAX / DEFAULT_NR = 2.5e-4
LIMITERS = ("minmod", "mc")
ACTIVE_PAD = 8  # undisturbed cells stepped beyond the last disturbed one (>= 4 needed)


def _slopes(q: np.ndarray, limiter: str) -> np.ndarray:
    """Limited slopes (per cell, undivided) of the padded array ``q`` for its cells 1..-2."""
    d = np.diff(q)
    a, b = d[:-1], d[1:]
    same = a * b > 0.0
    if limiter == "minmod":
        s = np.where(same, np.where(np.abs(a) < np.abs(b), a, b), 0.0)
    else:  # monotonised central
        mag = np.minimum(np.minimum(2.0 * np.abs(a), 2.0 * np.abs(b)), 0.5 * np.abs(a + b))
        s = np.where(same, np.copysign(mag, a), 0.0)
    return s


def _pad(q: np.ndarray, sign: float) -> np.ndarray:
    """``q`` with two mirror ghost cells at each end (``sign = -1`` for velocity)."""
    p = np.empty(q.size + 4)
    p[2:-2] = q
    p[1], p[0] = sign * q[0], sign * q[1]
    p[-2], p[-1] = sign * q[-1], sign * q[-2]
    return p


def _rhs(h: np.ndarray, m: np.ndarray, inv_r: np.ndarray, dr: float, g: float,
         limiter: str) -> tuple[np.ndarray, np.ndarray]:
    """Semi-discrete right-hand side ``(dh/dt, dm/dt)`` with ``m = h u``.

    MUSCL reconstruction of ``h`` and ``u`` (reflective ghosts at both ends), HLL fluxes with
    Toro's two-rarefaction wave-speed bounds, and the cylindrical sources ``-h u / r`` and
    ``-h u^2 / r`` at the cell centres.
    """
    u = m / h
    hp = _pad(h, 1.0)
    up = _pad(u, -1.0)
    sh = _slopes(hp, limiter)  # cells 1 .. n+2 of the padded arrays
    su = _slopes(up, limiter)
    # face k (k = 0..n) separates padded cells k+1 and k+2
    hL = hp[1:-2] + 0.5 * sh[:-1]
    hR = hp[2:-1] - 0.5 * sh[1:]
    uL = up[1:-2] + 0.5 * su[:-1]
    uR = up[2:-1] - 0.5 * su[1:]
    cL = np.sqrt(g * hL)
    cR = np.sqrt(g * hR)
    u_star = 0.5 * (uL + uR) + cL - cR
    c_star = 0.5 * (cL + cR) + 0.25 * (uL - uR)
    sL = np.minimum(np.minimum(uL - cL, u_star - c_star), 0.0)
    sR = np.maximum(np.maximum(uR + cR, u_star + c_star), 0.0)
    inv = 1.0 / (sR - sL)  # > 0: the water is never dry here
    mL = hL * uL
    mR = hR * uR
    fL = mL * uL + 0.5 * g * hL * hL
    fR = mR * uR + 0.5 * g * hR * hR
    Fh = (sR * mL - sL * mR + sL * sR * (hR - hL)) * inv
    Fm = (sR * fL - sL * fR + sL * sR * (mR - mL)) * inv
    src = m * inv_r  # h u / r
    dh = -(Fh[1:] - Fh[:-1]) / dr - src
    dm = -(Fm[1:] - Fm[:-1]) / dr - src * u
    return dh, dm


def _disturbed(h: np.ndarray, m: np.ndarray) -> int:
    """One past the last cell that differs from the undisturbed state ``(H_OUT, 0)``."""
    idx = np.flatnonzero((h != H_OUT) | (m != 0.0))
    return int(idx[-1]) + 1 if idx.size else 0


def initial_depth(edges: np.ndarray) -> np.ndarray:
    """Area-weighted cell averages of the exact disc ``h = H_IN`` for ``r <= R_DAM``."""
    a, b = edges[:-1], edges[1:]
    inside = (np.clip(b, None, R_DAM) ** 2 - np.clip(a, None, R_DAM) ** 2) / (b * b - a * a)
    inside = np.clip(inside, 0.0, 1.0)
    return H_OUT + (H_IN - H_OUT) * inside


def solve(t_end: float = T_END, nr: int = DEFAULT_NR, g: float = G, *,
          limiter: str = "mc", cfl: float = CFL, r_max: float = R_MAX,
          active: bool = True) -> dict:
    """Solve the radial problem; return ``r`` (cell centres), ``h``, ``hu``, ``steps``, ``dr``."""
    if limiter not in LIMITERS:
        raise ValueError(f"limiter must be one of {LIMITERS}, got {limiter!r}")
    if nr < 4:
        raise ValueError(f"nr must be >= 4, got {nr}")
    if not t_end >= 0.0:
        raise ValueError(f"t_end must be >= 0, got {t_end}")
    dr = r_max / nr
    edges = np.arange(nr + 1) * dr
    r = (np.arange(nr) + 0.5) * dr
    inv_r = 1.0 / r
    h = initial_depth(edges)
    m = np.zeros(nr)
    # Cells from index `k` on hold the undisturbed state (H_OUT, 0) exactly. Their
    # right-hand side is then exactly zero (identical face states give bitwise identical
    # fluxes), and the first ACTIVE_PAD of them also serve as the mirror ghosts of the cut,
    # so stepping only cells [0, k + ACTIVE_PAD) gives bitwise the same result as stepping
    # all of them (a cell sees two neighbours per side per stage, four per step).
    k = _disturbed(h, m)
    t = 0.0
    steps = 0
    while t < t_end:
        K = min(nr, k + ACTIVE_PAD) if active else nr
        hk, mk, ir = h[:K], m[:K], inv_r[:K]
        smax = float(np.max(np.abs(mk / hk) + np.sqrt(g * hk)))
        dt = cfl * dr / smax
        if t + dt >= t_end:
            dt, t = t_end - t, t_end
        else:
            t += dt
        dh, dm = _rhs(hk, mk, ir, dr, g, limiter)  # SSP-RK2 (Heun)
        h1 = hk + dt * dh
        m1 = mk + dt * dm
        dh, dm = _rhs(h1, m1, ir, dr, g, limiter)
        h[:K] = 0.5 * (hk + h1 + dt * dh)
        m[:K] = 0.5 * (mk + m1 + dt * dm)
        k = _disturbed(h[:K], m[:K])
        steps += 1
    return dict(r=r, h=h, hu=m, steps=steps, dr=dr, t=t)


def radial_profile(t_end: float = T_END, nr: int = DEFAULT_NR,
                   g: float = G) -> tuple[np.ndarray, np.ndarray]:
    """Cell centres ``r`` and depth ``h`` of the radial solution at ``t_end``."""
    res = solve(t_end, nr, g)
    return res["r"], res["h"]


@functools.lru_cache(maxsize=8)
def _cached_profile(t_end: float, nr: int, g: float) -> tuple[np.ndarray, np.ndarray]:
    r, h = radial_profile(t_end, nr, g)
    r.flags.writeable = False
    h.flags.writeable = False
    return r, h


def cell_averages(n: int, r: np.ndarray, h: np.ndarray, sub: int = 4) -> np.ndarray:
    """``(n, n)`` cell averages of the radial profile on the benchmark grid.

    Each cell is sampled at ``sub x sub`` evenly spaced interior points (the midpoint rule on
    ``sub x sub`` sub-cells), ``h`` is interpolated linearly in ``r`` (constant beyond the
    first and last centre), and the samples are averaged.
    """
    dx = 2.0 * L_HALF / n
    x = -L_HALF + np.arange(n) * dx
    out = np.zeros((n, n))
    offsets = (np.arange(sub) + 0.5) / sub * dx
    x2 = [(x + o) ** 2 for o in offsets]
    for oy in x2:
        for ox in x2:
            out += np.interp(np.sqrt(oy[:, None] + ox[None, :]), r, h)
    return out / (sub * sub)


def reference_sub(n: int) -> int:
    """Sample points per cell side that :func:`reference` uses on an ``n x n`` grid: at least
    4, and enough for ``n * sub >= 4096``. The quadrature error of the cell averages (it
    comes from the cells the shocks cross) is then below about 5e-6 relative (measured
    against twice the samples for N = 128 .. 2048); plain ``sub = 4`` leaves 9e-5 at
    N = 128 and 5e-5 at N = 256."""
    return max(4, -(-4096 // n))


def reference(n: int, t_end: float = T_END, nr: int = DEFAULT_NR,
              sub: int | None = None) -> np.ndarray:
    """Reference ``(n, n)`` cell averages of ``h`` at ``t_end`` on the benchmark grid.

    The radial profile is cached in-process (``functools.lru_cache``), so further grids or
    calls cost only the averaging. ``sub`` defaults to :func:`reference_sub`.
    """
    r, h = _cached_profile(float(t_end), int(nr), G)
    return cell_averages(n, r, h, reference_sub(n) if sub is None else sub)


def rel_l1(h: np.ndarray, h_ref: np.ndarray) -> float:
    """Relative L1 error ``sum|h - h_ref| / sum|h_ref|``."""
    h = np.asarray(h, dtype=np.float64)
    h_ref = np.asarray(h_ref, dtype=np.float64)
    if h.shape != h_ref.shape:
        raise ValueError(f"shapes differ: {h.shape} vs {h_ref.shape}")
    return float(np.sum(np.abs(h - h_ref)) / np.sum(np.abs(h_ref)))


def summary(res: dict) -> dict:
    """Diagnostics of a :func:`solve` result: depth at a few radii, front, mass balance."""
    r, h, m, dr = res["r"], res["h"], res["hu"], res["dr"]
    k = _disturbed(h, m)
    edges = np.arange(r.size + 1) * dr
    mass0 = float(np.sum(initial_depth(edges) * r))
    mass1 = float(np.sum(h * r))
    # the outgoing shock: the steepest drop of h in the outer half of the disturbed region
    lo = k // 2
    j = lo + int(np.argmin(np.diff(h[lo:k + 1])))
    return dict(
        h_at={f"{x:g}": float(np.interp(x, r, h)) for x in (0.0, 0.25, 0.5, 1.0, 1.5, 1.7, 2.0,
                                                             L_HALF)},
        h_max=float(h.max()),
        h_max_r=float(r[np.argmax(h)]),
        shock_r=float(edges[j + 1]),
        undisturbed_beyond_r=float(edges[k]),
        walls_untouched=bool(edges[k] < L_HALF),
        mass_rel_err=(mass1 - mass0) / mass0,
    )


def validate(ns) -> list[dict]:
    """:func:`rel_l1` of the ``swe`` solver (``swe.bench``, float64) and of
    ``scripts/numpy_reference.py`` against :func:`reference`, on ``n x n`` grids."""
    import os

    import jax

    jax.config.update("jax_enable_x64", True)
    here = os.path.dirname(os.path.abspath(__file__))
    for path in (os.path.dirname(here), here):
        if path not in sys.path:
            sys.path.insert(0, path)
    import numpy_reference
    from swe import bench

    rows = []
    for n in ns:
        ref = reference(n)
        rec = next(bench.run(n, repeat=1, keep_state=True))
        rows.append(dict(N=n, swe_rel_l1=rel_l1(rec["h"], ref), swe_method=rec["method"],
                         numpy_rel_l1=rel_l1(numpy_reference.run(n)["h"], ref)))
    return rows


def self_convergence(coarse: dict, fine: dict, grids=(256, 1024)) -> dict:
    """Differences between two radial solutions of the same problem.

    ``radial_rel_l1`` is the exact-geometry analogue of :func:`rel_l1` in the limit of a
    fine benchmark grid: ``2 pi int |h_c - h_f| r dr`` (on the coarse cells, the fine
    solution interpolated) over the fine solution's volume inside the square (its volume
    on the disc ``r < R_MAX``, less the undisturbed ``h = H_OUT`` outside the square).
    ``rel_l1_N<n>`` is :func:`rel_l1` of the two solutions' cell averages on the ``n x n``
    benchmark grid.
    """
    rc, hc = coarse["r"], coarse["h"]
    hf = np.interp(rc, fine["r"], fine["h"])
    diff = 2.0 * math.pi * float(np.sum(np.abs(hc - hf) * rc)) * coarse["dr"]
    r_max = fine["r"][-1] + 0.5 * fine["dr"]
    vol = (2.0 * math.pi * float(np.sum(fine["h"] * fine["r"])) * fine["dr"]
           - H_OUT * (math.pi * r_max ** 2 - (2.0 * L_HALF) ** 2))
    out = dict(radial_rel_l1=float(diff / vol))
    for n in grids:
        out[f"rel_l1_N{n}"] = rel_l1(cell_averages(n, rc, hc),
                                     cell_averages(n, fine["r"], fine["h"]))
    out["shock_r_shift"] = summary(fine)["shock_r"] - summary(coarse)["shock_r"]
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nr", type=int, default=DEFAULT_NR,
                    help=f"radial cells on [0, {R_MAX}] (default {DEFAULT_NR})")
    ap.add_argument("--limiter", choices=LIMITERS, default="mc")
    ap.add_argument("--check", action="store_true",
                    help="also solve with nr/2 cells and report the differences")
    ap.add_argument("--validate", type=int, nargs="+", metavar="N",
                    help="also report the L1 errors of the swe and NumPy solvers on N x N "
                         "grids against the default reference (imports JAX)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    res = solve(nr=args.nr, limiter=args.limiter)
    wall = time.perf_counter() - t0
    out = dict(nr=args.nr, dr=res["dr"], r_max=R_MAX, t_end=res["t"], limiter=args.limiter,
               steps=res["steps"], wall_s=wall, **summary(res))
    if args.check:
        half = solve(nr=args.nr // 2, limiter=args.limiter)
        out["check"] = dict(nr_coarse=args.nr // 2, **self_convergence(half, res))
    if args.validate:
        out["validate"] = validate(args.validate)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])

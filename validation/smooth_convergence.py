"""Observed order of accuracy on a smooth solution: an exact simple wave before it breaks.

A small-amplitude right-going simple wave (Riemann invariant ``u - 2c`` constant) on a
periodic domain, in 1-D and along the diagonal of a periodic square in 2-D; the relative L1
error of h after 0.2 s at several resolutions gives the fitted order for each limiter,
integrator and reconstruction.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from validation.common import (CaseResult, FIGURES, check, convergence_figure, fitted_order,
                               main, pyplot, rel_l1, save)

TITLE = "Order of accuracy on a smooth simple wave (1-D and 2-D diagonal, periodic)"
NAME = "smooth_convergence"

G, H0, EPS = 9.81, 1.0, 0.02
T_END = 0.2
CFL = 0.45
GAUSS = (np.array([-np.sqrt(3 / 5), 0.0, np.sqrt(3 / 5)]), np.array([5, 8, 5]) / 18)

# (label, dims, scheme keywords, integrator, CFL, full grids, quick grids or None)
MUSCL2 = (32, 64, 128, 256)
MUSCL1 = (50, 100, 200, 400)
CONFIGS = [
    ("2-D MUSCL-Koren, SSP-RK2", 2, dict(limiter="koren"), "ssprk2", CFL, MUSCL2,
     (32, 64, 128)),
    ("2-D MUSCL-van Leer, SSP-RK2", 2, dict(limiter="vanleer"), "ssprk2", CFL, MUSCL2, None),
    ("2-D MUSCL-van Leer, SSP-RK3", 2, dict(limiter="vanleer"), "ssprk3", CFL, MUSCL2, None),
    ("2-D MUSCL-minmod, SSP-RK2", 2, dict(limiter="minmod"), "ssprk2", CFL, MUSCL2, None),
    ("2-D MUSCL-minmod, SSP-RK2, CFL 0.4", 2, dict(limiter="minmod"), "ssprk2", 0.4, MUSCL2,
     None),
    ("2-D MUSCL-minmod, SSP-RK3", 2, dict(limiter="minmod"), "ssprk3", CFL, MUSCL2, None),
    ("1-D MUSCL-minmod, SSP-RK2", 1, dict(limiter="minmod"), "ssprk2", CFL, MUSCL1, None),
    ("1-D MUSCL-Koren, SSP-RK2", 1, dict(limiter="koren"), "ssprk2", CFL, MUSCL1,
     (100, 200)),
    ("1-D MUSCL-van Leer, SSP-RK2", 1, dict(limiter="vanleer"), "ssprk2", CFL, MUSCL1, None),
    ("1-D MUSCL-van Leer, SSP-RK3", 1, dict(limiter="vanleer"), "ssprk3", CFL, MUSCL1, None),
    ("1-D first order, SSP-RK2", 1, dict(reconstruction="first_order"), "ssprk2", CFL,
     (100, 200, 400, 800), None),
]
CHECKED_2D = CONFIGS[0][0]
CHECKED_1D = CONFIGS[7][0]


def simple_wave(s, t, *, wavelength, g=G, h0=H0, eps=EPS):
    """Exact right-going simple wave (Riemann invariant u - 2c constant) before it breaks:
    ``c(xi) = c0 + eps sin(2 pi xi / wavelength)``, ``u = 2 (c - c0)``, carried along
    ``s = xi + (3 c(xi) - 2 c0) t`` (Newton on xi). Returns ``(h, u)`` at points ``s``."""
    c0 = np.sqrt(g * h0)
    k = 2 * np.pi / wavelength
    xi = np.array(s, dtype=float)
    for _ in range(60):
        c = c0 + eps * np.sin(k * xi)
        f = xi + (3 * c - 2 * c0) * t - s
        xi = xi - f / (1 + 3 * eps * k * np.cos(k * xi) * t)
        if np.abs(f).max() < 1e-15:
            break
    c = c0 + eps * np.sin(k * xi)
    return c * c / g, 2 * (c - c0)


def breaking_time(wavelength):
    return wavelength / (2 * np.pi * 3 * EPS)


def cell_average(fn, X, Y, dx, dy):
    """Tensor 3x3 Gauss-Legendre cell averages of ``fn(x, y)`` (exact to O(dx^6))."""
    pts, w = GAUSS
    total = 0.0
    for px, wx in zip(pts, w):
        for py, wy in zip(pts, w):
            total = total + wx * wy * fn(X + px * dx / 2, Y + py * dy / 2)
    return total


def run_one(n: int, dims: int, scheme_kw: dict, integrator: str, cfl: float = CFL) -> dict:
    import swe

    periodic = swe.Boundaries(west=swe.Periodic(), east=swe.Periodic(), south=swe.Periodic(),
                              north=swe.Periodic())
    if dims == 1:
        grid = swe.Grid(nx=n, ny=1, x=(0.0, 1.0))
        wavelength = 1.0
    else:
        grid = swe.Grid(nx=n, ny=n, x=(0.0, 1.0), y=(0.0, 1.0))
        wavelength = 1.0 / np.sqrt(2.0)   # one wavelength along the diagonal: periodic
    X, Y = (np.asarray(a) for a in grid.cell_centers())
    model = swe.ShallowWater(grid, g=G, boundaries=periodic,
                             scheme=swe.FiniteVolume(**scheme_kw))

    def fields(t):
        """Cell averages of h and hu (= hv in 2-D) at time t, in one Newton solve."""
        def fn(x, y):
            s = x if dims == 1 else (x + y) / np.sqrt(2.0)
            h, u = simple_wave(s, t, wavelength=wavelength)
            return np.stack([h, h * u / (1.0 if dims == 1 else np.sqrt(2.0))])
        return tuple(cell_average(fn, X, Y, grid.dx, grid.dy))

    h0, hu0 = fields(0.0)
    state0 = swe.State(h=h0, hu=hu0, hv=0.0 if dims == 1 else hu0)
    start = time.perf_counter()
    res = swe.simulate(model, state0, t_end=T_END, cfl=cfl, integrator=integrator,
                       dtype="float64", envelopes=False)
    seconds = time.perf_counter() - start
    h_ex, hu_ex = fields(T_END)
    h = np.asarray(res.final.h)
    hu = np.asarray(res.final.hu)
    return dict(n=n, dx=grid.dx, l1_h=rel_l1(h, h_ex), l1_hu=rel_l1(hu, hu_ex),
                steps=int(res.num_steps), seconds=seconds, X=X, Y=Y, h=h, h_ex=h_ex,
                h0=h0)


def map_figure(path: Path, r: dict, label: str) -> Path:
    plt = pyplot()

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.9))
    X, Y = r["X"], r["Y"]
    lim = float(np.abs(r["h"] - H0).max())
    levels = np.linspace(-lim, lim, 17)
    cs = axes[0].contourf(X, Y, r["h"] - H0, levels=levels, cmap="RdBu_r")
    axes[0].contour(X, Y, r["h_ex"] - H0, levels=levels[::4], colors="k", linewidths=0.5)
    fig.colorbar(cs, ax=axes[0], label="m")
    axes[0].set_title(f"h - h0 at t = {T_END:g} s\n(colour: swe; lines: exact)", fontsize=9)
    err = r["h"] - r["h_ex"]
    e = float(np.abs(err).max())
    cs = axes[1].contourf(X, Y, err, levels=np.linspace(-e, e, 17), cmap="PuOr")
    fig.colorbar(cs, ax=axes[1], label="m")
    axes[1].set_title(f"h - h_exact at t = {T_END:g} s", fontsize=9)
    for ax in axes[:2]:
        ax.set_aspect("equal")
        ax.set_xlabel("x (m)")
    axes[0].set_ylabel("y (m)")
    # Along the diagonal: cell centres (i, i) against the exact solution.
    d = np.sqrt(2.0) * np.diag(X)
    sf = np.linspace(0.0, np.sqrt(2.0), 801)
    h_f, _ = simple_wave(sf, T_END, wavelength=1 / np.sqrt(2.0))
    h_0, _ = simple_wave(sf, 0.0, wavelength=1 / np.sqrt(2.0))
    axes[2].plot(sf, h_0 - H0, color="0.6", lw=0.8, label="t = 0")
    axes[2].plot(sf, h_f - H0, "k-", lw=0.8, label=f"exact t = {T_END:g} s")
    axes[2].plot(d, np.diag(r["h"]) - H0, "o", ms=2.5, color="tab:blue", label="swe")
    axes[2].set_xlabel("distance along the diagonal (m)")
    axes[2].set_ylabel("h - h0 (m)")
    axes[2].legend(fontsize=7)
    axes[2].grid(True, lw=0.3)
    fig.suptitle(f"{label}, {r['n']}x{r['n']}", fontsize=10)
    fig.tight_layout()
    return save(fig, path)


def all_orders_figure(path: Path, runs: dict) -> Path:
    plt = pyplot()
    import matplotlib.ticker  # noqa: F401

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for label, rs in runs.items():
        dx = [r["dx"] for r in rs]
        e = [r["l1_h"] for r in rs]
        style = "o-" if label.startswith("2-D") else "s--"
        ax.loglog(dx, e, style, ms=4, label=f"{label} ({fitted_order(dx, e):.2f})")
    d = np.array([1 / 400, 1 / 32])
    ax.loglog(d, 4e-6 * (d / d[0]) ** 2, "k:", lw=0.8, label="slope 2")
    ax.loglog(d, 1e-4 * (d / d[0]), "k-.", lw=0.6, label="slope 1")
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xlabel("dx (m)")
    ax.set_ylabel("relative L1 error of h")
    ax.legend(fontsize=6.5)
    ax.grid(True, which="both", lw=0.3)
    return save(fig, path)


def run(quick: bool = False, outdir: Path = FIGURES) -> CaseResult:
    outdir = Path(outdir)
    runs = {}
    for label, dims, kw, integ, cfl, full, qk in CONFIGS:
        sizes = qk if quick else full
        if sizes:
            runs[label] = [run_one(n, dims, kw, integ, cfl) for n in sizes]
    rows, orders = [], {}
    for label, rs in runs.items():
        dx = [r["dx"] for r in rs]
        orders[label] = (fitted_order(dx, [r["l1_h"] for r in rs]),
                         fitted_order(dx, [r["l1_hu"] for r in rs]))
        for r in rs:
            grid = f"{r['n']}x{r['n']}" if label.startswith("2-D") else f"{r['n']}"
            rows.append([label, grid, r["dx"], r["l1_h"], r["l1_hu"], r["steps"],
                         round(r["seconds"], 1)])
        rows.append([label, "fitted order", "", orders[label][0], orders[label][1], "", ""])

    def grids(label):
        return ", ".join(str(r["n"]) for r in runs[label])

    checks = [
        check(f"fitted L1(h) order, {CHECKED_2D}, n = {grids(CHECKED_2D)}",
              orders[CHECKED_2D][0], above=1.8),
        check(f"fitted L1(h) order, {CHECKED_1D} (the default scheme), n = "
              f"{grids(CHECKED_1D)}", orders[CHECKED_1D][0], above=1.8),
    ]
    checked = runs[CHECKED_2D]
    figures = [
        map_figure(outdir / f"{NAME}_map.png", checked[-1], CHECKED_2D),
        convergence_figure(outdir / f"{NAME}_convergence.png", [r["dx"] for r in checked],
                           [r["l1_h"] for r in checked], f"{CHECKED_2D}, L1(h)",
                           order=orders[CHECKED_2D][0]),
    ]
    if len(runs) > 2:
        figures.append(all_orders_figure(outdir / f"{NAME}_all.png", runs))
    c0 = np.sqrt(G * H0)
    setup = (
        f"Flat bed, g = {G:g} m/s^2, still depth h0 = {H0:g} m, periodic on all sides. Exact "
        "right-going simple wave: `c(xi) = c0 + eps sin(2 pi xi / L)`, `u = 2 (c - c0)`, "
        f"c0 = sqrt(g h0) = {c0:.4f} m/s, eps = {EPS:g} m/s (depth amplitude "
        f"{2 * EPS * c0 / G * 100:.2f} cm). 1-D: [0, 1] m, L = 1 m, n cells. 2-D: the wave "
        "travels along the diagonal of the unit square, `s = (x + y)/sqrt(2)`, L = 1/sqrt(2) "
        "m so that it is periodic in x and y, hu = hv = h u / sqrt(2), n x n cells. Initial "
        "state and reference are 3x3 Gauss-Legendre cell averages of the exact solution; "
        f"run to t = {T_END:g} s (the wave breaks at t = {breaking_time(1 / np.sqrt(2)):.2f} s "
        f"in 2-D, {breaking_time(1.0):.2f} s in 1-D), CFL {CFL:g} (swe's default"
        + ("" if quick else "; one configuration also at 0.4")
        + "), HLLC, float64. Error: "
        "relative L1 of h (and of hu) over the domain; order: least-squares slope of log L1 "
        f"against log dx. **The 2-D threshold is checked on {CHECKED_2D}**, the default "
        "scheme (Koren's limiter, whose faces are third order where the data are smooth "
        "and monotone, with the second-order SSP-RK2), whose design order is 2 throughout; "
        "van Leer's limiter does not clip smooth extrema to "
        "first order either (minmod does, over a region that shrinks with dx, which lowers "
        "the L1 order on moderate grids). It is also checked in 1-D"
        + ("; all limiter and integrator combinations are in the table." if not quick else
           "; quick mode runs only these two configurations.")
    )
    reference = (
        "Simple-wave (Riemann invariant) solution of the shallow-water equations: for a wave "
        "moving into still water of depth h0, `u - 2c` is constant (= -2 c0) and c is carried "
        "at speed `u + c = 3c - 2 c0` (Stoker 1957, *Water Waves*, ch. 10.2; Whitham 1974, "
        "*Linear and Nonlinear Waves*, sec. 13.2). Evaluated by Newton's method on the "
        "characteristic foot xi, valid before the characteristics cross, "
        "t < L / (6 pi eps)."
    )
    notes = "Fitted L1 orders of h (hu): " + "; ".join(
        f"{k}: {o[0]:.2f} ({o[1]:.2f})" for k, o in orders.items()) + "."
    if not quick:
        def successive(label):
            e = [r["l1_h"] for r in runs[label]]
            return ", ".join(f"{np.log2(a / b):.2f}" for a, b in zip(e, e[1:]))

        mm, m4 = "2-D MUSCL-minmod, SSP-RK2", "2-D MUSCL-minmod, SSP-RK2, CFL 0.4"
        notes += (
            f" **Minmod misses 1.8 in 2-D.** MUSCL-minmod "
            f"with SSP-RK2 reaches "
            f"{orders[mm][0]:.2f} over n = {grids(mm)} at CFL {CFL:g} (successive orders "
            f"{successive(mm)}) and {orders[m4][0]:.2f} at CFL 0.4 ({successive(m4)}); with "
            f"SSP-RK3 {orders['2-D MUSCL-minmod, SSP-RK3'][0]:.2f}. Minmod clips the slope to "
            "zero at the smooth extrema of the wave, a first-order error over a region that "
            "shrinks with dx; along the diagonal both sweeps see it, and the result is "
            "sensitive to the Courant number (with CFL-limited steps each direction runs at "
            "the full CFL, so the 2-D Courant sum is twice it). In 1-D the same scheme gives "
            f"{orders['1-D MUSCL-minmod, SSP-RK2'][0]:.2f}. Van Leer's limiter is close to 2 "
            "in both; Koren's is above 2 in both, with the smallest errors.")
    columns = ["configuration", "grid", "dx (m)", "L1(h)", "L1(hu)", "steps",
               "wall s (incl. compile)"]
    return CaseResult(NAME, TITLE, setup, reference, columns, rows, checks, figures,
                      notes=notes)


if __name__ == "__main__":
    sys.exit(main(run))

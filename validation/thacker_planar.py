"""Thacker's planar surface sloshing in a paraboloid (GeoClaw bowl-slosh): moving shorelines.

Runs ``scenarios/thacker_bowl.py`` for five periods at several resolutions, compares the
depth after one period with Thacker's exact solution, fits the order and tracks the
drift of the total (available) energy, which the exact solution conserves.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np

from validation.common import (CaseResult, default_scheme, check, convergence_figure, FIGURES,
                               fitted_order, main, pyplot, rel_l1, save)

TITLE = "Thacker's planar surface in a paraboloid (moving shorelines)"
NAME = "thacker_planar"

A, SIGMA, H0, G = 1.0, 0.5, 0.1, 9.81
PERIODS = 5
FRAMES_PER_PERIOD = 8
FULL = (50, 100, 200)
QUICK = (40, 80)


def rest_energy(model, volume: float) -> float:
    """Energy (m^5/s^2, as ``State.energy``) of ``volume`` of water at rest in the bowl.

    The rest level is found by bisection on the discrete grid, so ``E - E_rest`` is the
    available (mechanical) energy of the sloshing water.
    """
    bed = np.asarray(model.bed)
    area = model.grid.cell_area
    lo, hi = float(bed.min()), float(bed.max())
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if np.maximum(mid - bed, 0.0).sum() * area < volume:
            lo = mid
        else:
            hi = mid
    h = np.maximum(0.5 * (lo + hi) - bed, 0.0)
    return float(np.sum(model.g * h * (0.5 * h + bed)) * area)


def run_one(n: int) -> dict:
    import swe
    from swe.scenarios import thacker_bowl

    sc = thacker_bowl.build(n=n, a=A, sigma=SIGMA, h0=H0, periods=PERIODS, g=G)
    period = sc.metadata["period"]
    start = time.perf_counter()
    res = swe.simulate(sc.model, sc.state0, t_end=PERIODS * period,
                       save_at=period / FRAMES_PER_PERIOD)
    seconds = time.perf_counter() - start
    X, Y = (np.asarray(c) for c in sc.model.grid.cell_centers())
    times = np.asarray(res.times)
    h = np.asarray(res.states.h)
    k1 = FRAMES_PER_PERIOD  # the frame at t = one period
    h_ex1, _, _ = thacker_bowl.exact(X, Y, times[k1], a=A, sigma=SIGMA, h0=H0, g=G)
    h_ex5, _, _ = thacker_bowl.exact(X, Y, times[-1], a=A, sigma=SIGMA, h0=H0, g=G)
    energy = np.array([float(res.frame(k).energy(sc.model)) for k in range(times.size)])
    mass = np.asarray(res.mass())
    e_rest = rest_energy(sc.model, float(mass[0]))
    available = energy - e_rest
    return dict(n=n, dx=sc.model.grid.dx, period=period, times=times, X=X, Y=Y, h=h,
                bed=np.asarray(sc.model.bed), l1_T=rel_l1(h[k1], h_ex1),
                l1_5T=rel_l1(h[-1], h_ex5), available=available,
                drift=(available[-1] - available[0]) / available[0],
                mass=abs(mass[-1] - mass[0]) / mass[0], steps=int(res.num_steps),
                seconds=seconds)


def profiles_figure(path: Path, r: dict) -> Path:
    plt = pyplot()

    from swe.scenarios import thacker_bowl

    n = r["n"]
    j = n // 2  # the row just above y = 0
    x = r["X"][j]
    xf = np.linspace(x[0], x[-1], 801)
    yf = np.full_like(xf, r["Y"][j, 0])
    bed = H0 * ((xf**2 + yf**2) / A**2 - 1.0)
    per = FRAMES_PER_PERIOD
    picks = [(per // 2, "T/2"), (per, "T"), (PERIODS * per, f"{PERIODS}T")]
    fig, axes = plt.subplots(1, len(picks), figsize=(12, 3.4), sharey=True)
    for ax, (k, label) in zip(axes, picks):
        t = r["times"][k]
        h_ex, _, _ = thacker_bowl.exact(xf, yf, t, a=A, sigma=SIGMA, h0=H0, g=G)
        wet_ex = h_ex > 0
        h_num = r["h"][k, j]
        wet = h_num > 1e-6
        ax.plot(xf, bed, color="0.5", lw=1, label="bed")
        ax.plot(xf[wet_ex], (h_ex + bed)[wet_ex], "k-", lw=1.2, label="exact")
        ax.plot(x[wet], (h_num + r["bed"][j])[wet], "o", ms=2.5, color="tab:blue",
                label=f"swe {n}x{n}")
        ax.set_title(f"t = {label}")
        ax.set_xlabel("x (m)")
        ax.set_ylim(-0.12, 0.12)
        ax.grid(True, lw=0.3)
    axes[0].set_ylabel(f"surface elevation (m) at y = {r['Y'][j, 0]:.3g} m")
    axes[0].legend(loc="upper center", fontsize=8)
    return save(fig, path)


def error_map_figure(path: Path, r: dict) -> Path:
    plt = pyplot()

    from swe.scenarios import thacker_bowl

    k = FRAMES_PER_PERIOD
    h_ex, _, _ = thacker_bowl.exact(r["X"], r["Y"], r["times"][k], a=A, sigma=SIGMA, h0=H0,
                                    g=G)
    err = r["h"][k] - h_ex
    lim = float(np.abs(err).max())
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.8))
    ext = (r["X"].min(), r["X"].max(), r["Y"].min(), r["Y"].max())
    im = axes[0].imshow(r["h"][k], origin="lower", extent=ext, cmap="Blues")
    axes[0].contour(r["X"], r["Y"], h_ex, levels=[1e-9], colors="r", linewidths=0.8)
    fig.colorbar(im, ax=axes[0], label="h (m)")
    axes[0].set_title(f"depth after one period, {r['n']}x{r['n']}\n(red: exact shoreline)",
                      fontsize=9)
    im = axes[1].imshow(err, origin="lower", extent=ext, cmap="RdBu_r", vmin=-lim, vmax=lim)
    fig.colorbar(im, ax=axes[1], label="h - h_exact (m)")
    axes[1].set_title("error after one period", fontsize=9)
    for ax in axes:
        ax.set_xlim(-1.6, 1.6)
        ax.set_ylim(-1.6, 1.6)
        ax.set_xlabel("x (m)")
    axes[0].set_ylabel("y (m)")
    return save(fig, path)


def energy_figure(path: Path, runs: list[dict]) -> Path:
    plt = pyplot()

    fig, ax = plt.subplots(figsize=(5, 3.5))
    for r in runs:
        ax.plot(r["times"] / r["period"], r["available"] / r["available"][0], ".-", ms=3,
                label=f"{r['n']}x{r['n']}")
    ax.axhline(1.0, color="k", lw=0.8, label="exact")
    ax.set_xlabel("t / T")
    ax.set_ylabel("available energy / initial")
    ax.legend(fontsize=8)
    ax.grid(True, lw=0.3)
    return save(fig, path)


def run(quick: bool = False, outdir: Path = FIGURES) -> CaseResult:
    outdir = Path(outdir)
    sizes = QUICK if quick else FULL
    runs = [run_one(n) for n in sizes]
    dx = [r["dx"] for r in runs]
    errs = [r["l1_T"] for r in runs]
    order = fitted_order(dx, errs)
    rows = [[f"{r['n']}x{r['n']}", r["dx"], r["l1_T"], r["l1_5T"], r["drift"], r["mass"],
             r["steps"], round(r["seconds"], 1)] for r in runs]
    finest = runs[-1]
    ratios = [a / b for a, b in zip(errs[:-1], errs[1:])]
    checks = [
        check(f"L1(h) after one period at {finest['n']}x{finest['n']}", finest["l1_T"],
              below=0.05),
        check(f"L1(h) after one period decreases with resolution "
              f"({', '.join(str(r['n']) for r in runs)}): smallest coarse/fine ratio",
              min(ratios), above=1.0),
    ]
    figures = [
        profiles_figure(outdir / f"{NAME}_profiles.png", finest),
        error_map_figure(outdir / f"{NAME}_error_map.png", finest),
        convergence_figure(outdir / f"{NAME}_convergence.png", dx, errs,
                           "L1(h), t = T", order=order),
        energy_figure(outdir / f"{NAME}_energy.png", runs),
    ]
    omega = math.sqrt(2 * G * H0) / A
    setup = (
        f"Bowl `B = h0 ((x^2 + y^2)/a^2 - 1)` with a = {A:g} m, h0 = {H0:g} m, sigma = "
        f"{SIGMA:g} m, g = {G:g} m/s^2, on [-2, 2]^2 m with walls (never reached); "
        f"omega = sqrt(2 g h0)/a = {omega:.4f} 1/s, period T = {2 * math.pi / omega:.4f} s. "
        f"`scenarios/thacker_bowl.py` (initial state = exact solution at t = 0), default "
        f"scheme ({default_scheme()}), float64, grids "
        f"{', '.join(f'{n}x{n}' for n in sizes)}, each run for {PERIODS} periods. Error: "
        "relative L1 of h over the whole domain, `sum|h - h_exact| / sum h_exact`, at t = T "
        f"and t = {PERIODS}T. Energy: `State.energy` minus the energy of the same volume at "
        f"rest in the discrete bowl (the available energy, conserved by the exact solution); "
        f"drift = relative change of the available energy over {PERIODS} periods. Fitted "
        f"order of L1(h) at t = T: {order:.2f}."
    )
    reference = (
        "Thacker (1981), *Some exact solutions to the nonlinear shallow-water wave "
        "equations*, J. Fluid Mech. 107, 499-508, planar-surface solution (GeoClaw "
        "`bowl-slosh`): `h = max(0, (sigma h0/a^2)(2x cos wt + 2y sin wt - sigma) - B)`, "
        "`u = -sigma w sin wt`, `v = sigma w cos wt`, `w = sqrt(2 g h0)/a` "
        "(`scenarios/thacker_bowl.exact`)."
    )
    notes = (f"Available energy after {PERIODS} periods: "
             + ", ".join(f"{r['n']}x{r['n']}: {100 * r['drift']:+.2f}%" for r in runs)
             + "; the loss is the scheme's numerical dissipation (limiter clipping at the "
               "moving shoreline), shrinking with resolution.")
    return CaseResult(NAME, TITLE, setup, reference,
                      ["grid", "dx (m)", "L1(h) t=T", f"L1(h) t={PERIODS}T",
                       f"energy drift {PERIODS}T", "mass change", "steps",
                       "wall s (incl. compile)"],
                      rows, checks, figures, notes=notes)


if __name__ == "__main__":
    sys.exit(main(run))

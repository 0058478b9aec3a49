"""Lake at rest over Gaussian bumps and an emerged island: well-balancing, shoreline included.

Runs ``scenarios/lake_at_rest.py`` for 10 000 fixed steps at the CFL limit with every
Riemann solver and both reconstructions; the exact solution is that nothing moves.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from validation.common import (CaseResult, muscl_name, FIGURES, check, main, pyplot, save,
                               save_maps)

TITLE = "Lake at rest with a dry island (well-balancing)"
NAME = "lake_at_rest"

ETA0 = 0.5
CFL = 0.45
FULL = dict(n=100, steps=10_000)
QUICK = dict(n=40, steps=1_000)
FRAMES = 10                    # saved frames after the start, evenly spaced in steps
H_VEL = 1e-6                   # velocities are measured where h > this (swe's default h_dry)
# (label, riemann, reconstruction); the first is the default scheme.
ALL = [("MUSCL-HLLC", "hllc", "muscl"), ("MUSCL-HLL", "hll", "muscl"),
       ("MUSCL-Rusanov", "rusanov", "muscl"), ("1st-order HLLC", "hllc", "first_order"),
       ("1st-order HLL", "hll", "first_order"), ("1st-order Rusanov", "rusanov", "first_order")]
# Quick mode: every flux and both reconstructions, in three compilations.
QUICK_SCHEMES = [ALL[0], ALL[4], ALL[2]]


def run_one(n: int, steps: int, riemann: str, reconstruction: str) -> dict:
    import swe
    from swe.scenarios import lake_at_rest

    sc = lake_at_rest.build(n=n, eta0=ETA0)
    m = sc.model
    model = swe.ShallowWater(m.grid, bed=m.bed, g=m.g, boundaries=m.boundaries,
                             scheme=swe.FiniteVolume(riemann=riemann,
                                                     reconstruction=reconstruction))
    state0 = sc.state0
    h0 = np.asarray(state0.h)
    bed = np.asarray(model.bed)
    # The CFL step rounded down to a multiple of 2^-16 s: every output time k dt, and the
    # running time t + dt, are then exact in float64, so no step is shortened to land on
    # an output (the run takes exactly `steps` full steps).
    dt = np.floor(CFL * model.grid.dx / np.sqrt(float(model.g) * h0.max()) * 2**16) / 2**16
    save_at = dt * np.arange(0, steps + 1, steps // FRAMES)
    start = time.perf_counter()
    res = swe.simulate(model, state0, t_end=steps * dt, save_at=save_at, dt=dt,
                       dtype="float64", envelopes=False)
    seconds = time.perf_counter() - start
    h = np.asarray(res.states.h)
    hu = np.asarray(res.states.hu)
    hv = np.asarray(res.states.hv)
    wet0 = h0 > 0
    moving = h > H_VEL
    u = np.where(moving, np.abs(hu) / np.where(moving, h, 1.0), 0.0)
    v = np.where(moving, np.abs(hv) / np.where(moving, h, 1.0), 0.0)
    eta_err = np.abs(h + bed - ETA0)[:, wet0]
    mass = np.asarray(res.mass())
    return dict(n=n, dx=model.grid.dx, dt=dt, steps=int(res.num_steps), seconds=seconds,
                times=np.asarray(res.times), u_max=float(u.max()), v_max=float(v.max()),
                speed_t=np.maximum(u, v).max(axis=(1, 2)), q_max=float(max(np.abs(hu).max(),
                np.abs(hv).max())), eta_err=float(eta_err.max()),
                dry_h=float(h[:, ~wet0].max()) if (~wet0).any() else 0.0,
                mass=float(np.abs(mass - mass[0]).max() / mass[0]),
                dry_fraction=float((~wet0).mean()), bed=bed, h_final=h[-1],
                u_final=np.hypot(np.where(moving[-1], hu[-1], 0.0),
                                 np.where(moving[-1], hv[-1], 0.0))
                / np.where(moving[-1], h[-1], 1.0),
                extent=(*model.grid.x, *model.grid.y))


def map_figure(path: Path, r: dict, label: str) -> Path:
    plt = pyplot()

    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
    ext = r["extent"]
    im = axes[0].imshow(r["bed"], origin="lower", extent=ext, cmap="terrain")
    fig.colorbar(im, ax=axes[0], label="bed (m)")
    wet = (r["h_final"] > 0).astype(float)
    n = r["bed"].shape[0]
    xs = np.linspace(ext[0], ext[1], n + 1)
    xc = 0.5 * (xs[1:] + xs[:-1])
    axes[0].contour(xc, xc, r["bed"], levels=[ETA0], colors="b", linewidths=1.0)
    axes[0].contour(xc, xc, wet, levels=[0.5], colors="r", linewidths=0.8, linestyles="--")
    axes[0].set_title(f"bed; still-water shoreline eta = {ETA0:g} m (blue),\n"
                      "wet/dry edge after the run (red dashes)", fontsize=9)
    speed = np.where(r["h_final"] > H_VEL, r["u_final"], np.nan)
    with np.errstate(divide="ignore"):
        logs = np.log10(np.maximum(speed, 1e-300))
    im = axes[1].imshow(logs, origin="lower", extent=ext, cmap="viridis",
                        vmin=max(np.nanmin(logs), -20), vmax=max(np.nanmax(logs), -12))
    fig.colorbar(im, ax=axes[1], label="log10 |u| (m/s)")
    axes[1].set_title(f"speed after {r['steps']} steps, {label}, {n}x{n}\n(white: dry)",
                      fontsize=9)
    return save_maps(fig, axes, path)


def history_figure(path: Path, runs: dict) -> Path:
    plt = pyplot()

    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for label, r in runs.items():
        steps = np.rint(r["times"] / r["dt"]).astype(int)
        ax.semilogy(steps, np.maximum(r["speed_t"], 1e-20), ".-", ms=4, label=label)
    ax.axhline(1e-10, color="r", lw=0.8, ls="--", label="threshold 1e-10")
    ax.set_xlabel("step")
    ax.set_ylabel("max(|u|, |v|) over wet cells (m/s)\n(0 shown at 1e-20)")
    ax.legend(fontsize=7, ncol=2)
    ax.grid(True, which="both", lw=0.3)
    return save(fig, path)


def run(quick: bool = False, outdir: Path = FIGURES) -> CaseResult:
    outdir = Path(outdir)
    cfg = QUICK if quick else FULL
    schemes = QUICK_SCHEMES if quick else ALL
    runs = {label: run_one(cfg["n"], cfg["steps"], riem, rec) for label, riem, rec in schemes}
    rows = [[label, f"{r['n']}x{r['n']}", r["steps"], r["u_max"], r["v_max"], r["q_max"],
             r["eta_err"], r["dry_h"], r["mass"], round(r["seconds"], 1)]
            for label, r in runs.items()]
    every = list(runs.values())
    first = every[0]
    steps = cfg["steps"]
    checks = [
        check(f"|steps taken - {steps}|, largest over the runs",
              max(abs(r["steps"] - steps) for r in every), below=0.5),
        check(f"max |u|, |v| (m/s) over wet cells, all frames, all {len(every)} schemes",
              max(max(r["u_max"], r["v_max"]) for r in every), below=1e-10),
        check(f"max |eta - eta0| (m) over initially wet cells, all frames, all "
              f"{len(every)} schemes", max(r["eta_err"] for r in every), below=1e-12),
    ]
    figures = [map_figure(outdir / f"{NAME}_map.png", first, schemes[0][0]),
               history_figure(outdir / f"{NAME}_history.png", runs)]
    setup = (
        f"`scenarios/lake_at_rest.py` with n = {cfg['n']}: a {10:g} m square basin with "
        f"walls, {cfg['n']}x{cfg['n']} cells, flat floor at z = 0 with two submerged Gaussian "
        f"bumps (crests 0.4 and 0.3 m) and an island of crest 0.8 m rising through the "
        f"still surface eta0 = {ETA0:g} m ({100 * first['dry_fraction']:.1f}% of the cells "
        f"dry). Water at rest, `State.from_surface(eta0)`. Fixed step at the CFL limit, "
        f"dt = {CFL:g} dx / sqrt(g h_max) rounded down to a multiple of 2^-16 s (so that "
        f"output times fall exactly on steps) = {first['dt']:.6g} s, {steps} steps "
        f"({steps * first['dt']:.1f} s), SSP-RK2, float64, every Riemann solver"
        + (f" (HLLC, HLL, Rusanov) with {muscl_name()} and first order"
           if not quick else ": MUSCL-HLLC, first-order HLL, MUSCL-Rusanov")
        + f". {FRAMES + 1} frames saved, evenly spaced in steps; every measure is the "
        f"maximum over all frames. Velocities u = hu/h over cells with h > {H_VEL:g} m "
        "(swe's `h_dry`); the surface error over the cells wet at the start; the table also "
        "gives max |hu|, |hv| over all cells and the largest depth that appears in an "
        "initially dry cell."
    )
    reference = (
        "The lake at rest, `u = v = 0`, `h + b = eta0` where `b < eta0` and `h = 0` "
        "elsewhere, is a steady solution over any bed; a well-balanced scheme (hydrostatic "
        "reconstruction, Audusse et al. 2004, SIAM J. Sci. Comput. 25, 2050-2065) keeps it to "
        "round-off, also at a dry shoreline. Set-up after LeVeque (1998), J. Comput. Phys. "
        "146, 346-365, and Xing & Shu (2005), J. Comput. Phys. 208, 206-227, with an emerged "
        "bump."
    )
    notes = ("Largest velocity by scheme: "
             + ", ".join(f"{k} {max(r['u_max'], r['v_max']):.1e}" for k, r in runs.items())
             + " m/s; largest surface error: "
             + ", ".join(f"{k} {r['eta_err']:.1e}" for k, r in runs.items()) + " m.")
    columns = ["scheme", "grid", "steps", "max |u| (m/s)", "max |v| (m/s)",
               "max |hu|,|hv| (m^2/s)", "max |eta - eta0| wet (m)", "max h in dry cells (m)",
               "rel. mass change", "wall s (incl. compile)"]
    return CaseResult(NAME, TITLE, setup, reference, columns, rows, checks, figures,
                      notes=notes)


if __name__ == "__main__":
    sys.exit(main(run))

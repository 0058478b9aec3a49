"""Rotating shallow water on an f-plane: a steady gradient-wind eddy, and Basilisk's geo.c.

(a) An axisymmetric Gaussian eddy in exact gradient-wind balance is a steady solution of
the continuous equations: whatever moves after one inertial period is discretisation error,
which must shrink at an order of at least 1.5.

(b) The geostrophic adjustment set-up of Basilisk ``src/test/geo.c`` (``scenarios/
geostrophic_adjustment.py``, started, as geo.c is, from the geostrophic velocities): no exact
solution; mass conservation and sanity figures are reported.

Both parts run on the same 1000 km basin and grid sizes with the same number of outputs, so
each grid size is compiled once.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np

from validation.common import (CaseResult, default_scheme, check, convergence_figure, FIGURES,
                               fitted_order, main, pyplot, save)

TITLE = "Geostrophic balance on an f-plane: steady gradient-wind eddy and geo.c adjustment"
NAME = "geostrophic"

SIZE = 1.0e6  # m, the basin of both parts (geo.c's)
FRAMES = 20   # output intervals of both parts (same count: one compilation per grid size)

# (a) the steady eddy
F0_A, G_A, H_A, R_A, ETA_A = 1.0e-4, 9.81, 10.0, 1.0e5, 0.5
FULL_A = (64, 128, 256)
QUICK_A = (32, 64, 128)

# (b) geo.c
F0_B, G_B, H_B, R_B, ETA_B = 1.0285e-4, 0.01, 1000.0, 1.0e5, 599.5
DAYS_B = 20.0
FULL_B = (64, 128)
QUICK_B = (64,)


def gradient_wind(X, Y, f=F0_A, g=G_A, R=R_A, eta0=ETA_A):
    """Surface and velocity of the exact steady eddy ``eta = eta0 exp(-r^2/R^2)``.

    The azimuthal velocity solves the gradient-wind balance ``u^2/r + f u = g eta_r``:
    ``u = (r/2) (-f + sqrt(f^2 + 4 g eta_r / r))`` with ``eta_r / r = -2 eta0 / R^2
    exp(-r^2/R^2)`` (the regular root, which tends to the geostrophic ``g eta_r / f``).
    With ``u_r = 0`` and ``h = h(r)`` the continuity equation holds trivially, so the state
    is an exact steady solution. Returns ``(eta, u, v)`` (``u`` and ``v`` Cartesian).
    """
    r2 = X**2 + Y**2
    bump = np.exp(-r2 / R**2)
    eta = eta0 * bump
    disc = f**2 - 8.0 * g * eta0 / R**2 * bump
    if np.any(disc < 0):
        raise ValueError("no gradient-wind balance: the anticyclone is too strong")
    # u_theta / r, so that (u, v) = (u_theta / r) (-y, x)
    omega = 0.5 * (-f + np.sqrt(disc))
    return eta, -omega * Y, omega * X


def simulate_a(n: int) -> dict:
    import swe

    half = SIZE / 2
    grid = swe.Grid(nx=n, ny=n, x=(-half, half), y=(-half, half))
    X, Y = (np.asarray(c) for c in grid.cell_centers())
    model = swe.ShallowWater(grid, bed=-H_A, g=G_A, coriolis=swe.FPlane(F0_A))
    eta, u, v = gradient_wind(X, Y)
    state0 = swe.State.from_surface(model, eta=eta, u=u, v=v)
    period = 2.0 * math.pi / F0_A
    start = time.perf_counter()
    res = swe.simulate(model, state0, t_end=period, save_at=period / FRAMES)
    seconds = time.perf_counter() - start
    h = np.asarray(res.states.h)
    h0 = np.asarray(state0.h)
    anomaly = np.abs(h0 - H_A).sum()
    mass = np.asarray(res.mass())
    return dict(n=n, dx=grid.dx, X=X, Y=Y, h=h, h0=h0, hu=np.asarray(res.states.hu),
                hv=np.asarray(res.states.hv), u0=u, v0=v,
                l1=float(np.abs(h[-1] - h0).sum() / anomaly),
                l1_half=float(np.abs(h[FRAMES // 2] - h0).sum() / anomaly),
                linf=float(np.abs(h[-1] - h0).max() / ETA_A),
                mass=abs(mass[-1] - mass[0]) / mass[0], steps=int(res.num_steps),
                seconds=seconds)


def simulate_b(n: int) -> dict:
    import swe
    from swe.scenarios import geostrophic_adjustment

    sc = geostrophic_adjustment.build(n=n, size=SIZE, H=H_B, g=G_B, f0=F0_B, R=R_B,
                                      eta0=ETA_B, balanced=True, days=DAYS_B)
    start = time.perf_counter()
    res = swe.simulate(sc.model, sc.state0, t_end=sc.t_end, save_at=sc.t_end / FRAMES)
    seconds = time.perf_counter() - start
    model = sc.model
    X, Y = (np.asarray(c) for c in model.grid.cell_centers())
    h = np.asarray(res.states.h)
    h0 = np.asarray(sc.state0.h)
    times = np.asarray(res.times)
    energy = np.array([float(res.frame(k).energy(model)) for k in range(times.size)])
    mass = np.asarray(res.mass())
    # Available energy: minus the energy of the same volume at rest (flat bed at -H).
    area = model.grid.cell_area * n * n
    depth = mass[0] / area
    e_rest = G_B * depth * (0.5 * depth - H_B) * area
    eta = h - H_B
    k = FRAMES
    w = np.clip(eta[k], 0.0, None)
    return dict(n=n, dx=model.grid.dx, X=X, Y=Y, times=times, h=h, h0=h0,
                hu=np.asarray(res.states.hu), hv=np.asarray(res.states.hv),
                max_err=np.abs(h - h0).max(axis=(1, 2)),
                energy=energy / energy[0], available=(energy - e_rest) / (energy[0] - e_rest),
                mass=abs(mass[-1] - mass[0]) / mass[0], eta_max=float(eta[k].max()),
                h_min=float(h.min()), finite=bool(np.all(np.isfinite(h))),
                centroid=(float((w * X).sum() / w.sum()), float((w * Y).sum() / w.sum())),
                speed_max=float(np.sqrt((np.asarray(res.states.hu[k]) / h[k]) ** 2
                                        + (np.asarray(res.states.hv[k]) / h[k]) ** 2).max()),
                steps=int(res.num_steps), seconds=seconds)


def eddy_figure(path: Path, runs: list[dict]) -> Path:
    plt = pyplot()

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))
    for r in runs:
        j = r["n"] // 2
        x = r["X"][j] / 1e3
        axes[0].plot(x, r["h"][-1, j] - H_A, ".-", ms=2.5, lw=0.7,
                     label=f"{r['n']}x{r['n']}")
        v = r["hv"][-1, j] / r["h"][-1, j]
        axes[1].plot(x, v, ".-", ms=2.5, lw=0.7, label=f"{r['n']}x{r['n']}")
    xf = np.linspace(-SIZE / 2, SIZE / 2, 2001)
    eta, _, v = gradient_wind(xf, np.zeros_like(xf))
    axes[0].plot(xf / 1e3, eta, "k-", lw=1, label="exact (steady)")
    axes[1].plot(xf / 1e3, v, "k-", lw=1, label="exact (gradient wind)")
    axes[0].set_ylabel("surface elevation eta (m)")
    axes[1].set_ylabel("v (m/s) along y = 0")
    for ax in axes:
        ax.set_xlim(-350, 350)
        ax.set_xlabel("x (km)")
        ax.grid(True, lw=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("steady eddy after one inertial period (profiles through the centre)",
                 fontsize=9)
    return save(fig, path)


def adjusted_figure(path: Path, r: dict) -> Path:
    plt = pyplot()

    k = FRAMES
    eta = r["h"][k] - H_B
    u = r["hu"][k] / r["h"][k]
    v = r["hv"][k] / r["h"][k]
    X, Y = r["X"] / 1e3, r["Y"] / 1e3
    fig, axes = plt.subplots(1, 3, figsize=(15, 4), layout="constrained")
    ext = (X.min(), X.max(), Y.min(), Y.max())
    im = axes[0].imshow(eta, origin="lower", extent=ext, cmap="viridis")
    step = max(1, r["n"] // 24)
    axes[0].quiver(X[::step, ::step], Y[::step, ::step], u[::step, ::step],
                   v[::step, ::step], color="w", scale=8, width=0.004)
    fig.colorbar(im, ax=axes[0], label="eta (m)")
    axes[0].set_title(f"surface and velocity after {DAYS_B:g} days, {r['n']}x{r['n']}",
                      fontsize=9)
    err = r["h"][k] - r["h0"]
    lim = float(np.abs(err).max())
    im = axes[1].imshow(err, origin="lower", extent=ext, cmap="RdBu_r", vmin=-lim, vmax=lim)
    fig.colorbar(im, ax=axes[1], label="h - h(t=0) (m)")
    axes[1].set_title("change of the surface since t = 0 (geo.c's error field)", fontsize=9)
    for ax in axes[:2]:
        ax.set_xlabel("x (km)")
    axes[0].set_ylabel("y (km)")
    j = r["n"] // 2
    for kk in (0, FRAMES // 4, k):
        axes[2].plot(X[j], r["h"][kk, j] - H_B, lw=1, label=f"t = {r['times'][kk] / 86400:g} d")
    axes[2].set_xlabel("x (km)")
    axes[2].set_ylabel("eta (m) along y = 0")
    axes[2].legend(fontsize=8)
    axes[2].grid(True, lw=0.3)
    return save(fig, path)


def history_figure(path: Path, runs: list[dict]) -> Path:
    plt = pyplot()

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.4))
    for r in runs:
        days = r["times"] / 86400
        axes[0].plot(days, r["max_err"], ".-", label=f"{r['n']}x{r['n']}")
        axes[1].plot(days, r["available"], ".-", label=f"{r['n']}x{r['n']}")
    axes[0].set_ylabel("max |h - h(t=0)| (m)")
    axes[1].set_ylabel("available energy / initial")
    for ax in axes:
        ax.set_xlabel("time (days)")
        ax.grid(True, lw=0.3)
        ax.legend(fontsize=8)
    return save(fig, path)


def run(quick: bool = False, outdir: Path = FIGURES) -> CaseResult:
    outdir = Path(outdir)
    sizes_a = QUICK_A if quick else FULL_A
    sizes_b = QUICK_B if quick else FULL_B
    runs_a = [simulate_a(n) for n in sizes_a]
    runs_b = [simulate_b(n) for n in sizes_b]
    dx = [r["dx"] for r in runs_a]
    errs = [r["l1"] for r in runs_a]
    order = fitted_order(dx, errs)
    rows = [[f"(a) {r['n']}x{r['n']}", r["dx"], r["l1"], r["l1_half"], r["linf"], r["mass"],
             "", r["steps"], round(r["seconds"], 1)] for r in runs_a]
    rows += [[f"(b) {r['n']}x{r['n']}", r["dx"], "", "", float(r["max_err"][-1] / ETA_B),
              r["mass"], float(r["available"][-1] - 1.0), r["steps"], round(r["seconds"], 1)]
             for r in runs_b]
    names = ", ".join(str(n) for n in sizes_a)
    fb = runs_b[-1]
    checks = [
        check(f"(a) fitted order of L1(h) after one inertial period over n = {names}", order,
              above=1.5),
        check(f"(b) relative mass change over {DAYS_B:g} days at {fb['n']}x{fb['n']}",
              fb["mass"], below=1e-12),
        check(f"(b) change of the available energy over {DAYS_B:g} days at "
              f"{fb['n']}x{fb['n']} (must not grow; NaN if the state is not finite)",
              fb["available"][-1] - 1.0 if fb["finite"] else float("nan"), below=1e-9),
    ]
    figures = [
        eddy_figure(outdir / f"{NAME}_eddy_profiles.png", runs_a),
        convergence_figure(outdir / f"{NAME}_eddy_convergence.png", dx, errs,
                           "L1(h) after 2 pi / f", order=order),
        adjusted_figure(outdir / f"{NAME}_geo_adjusted.png", fb),
        history_figure(outdir / f"{NAME}_geo_history.png", runs_b),
    ]
    ro = max(np.hypot(r["u0"], r["v0"]).max() for r in runs_a[-1:]) / (F0_A * R_A)
    setup = (
        f"**(a) steady eddy.** Flat bed at -{H_A:g} m, g = {G_A:g} m/s^2, f-plane f = "
        f"{F0_A:g} 1/s (Rossby radius sqrt(gH)/f = {math.sqrt(G_A * H_A) / F0_A / 1e3:.0f} km),"
        f" eta = {ETA_A:g} exp(-r^2/R^2) m with R = {R_A / 1e3:g} km and the exact "
        f"gradient-wind azimuthal velocity (Rossby number max|u|/(fR) = {ro:.3f}), sampled at "
        f"cell centres; {SIZE / 1e3:g} km square basin with walls (5R from the centre); one "
        f"inertial period 2 pi/f = {2 * math.pi / F0_A / 3600:.2f} h; grids "
        f"{', '.join(f'{n}x{n}' for n in sizes_a)}. Error: `sum|h(T) - h(0)| / "
        f"sum|h(0) - H|` (relative to the eddy's anomaly, over the whole domain; also at T/2) "
        f"and max|h(T) - h(0)| / eta0. Fitted order {order:.2f}.\n\n"
        f"**(b) geo.c.** `scenarios/geostrophic_adjustment.py` with balanced=True (geo.c "
        f"starts from the linear geostrophic velocities, as does the scenario by default): "
        f"reduced gravity {G_B:g} m/s^2, f0 = {F0_B:g} 1/s, R = {R_B / 1e3:g} km, eta0 = "
        f"{ETA_B:g} m, {SIZE / 1e3:g} km basin {H_B:g} m deep, walls, run {DAYS_B:g} days as "
        f"geo.c logs (the scenario's default is 5), grids "
        f"{', '.join(f'{n}x{n}' for n in sizes_b)} (geo.c uses 64x64). Unlike geo.c "
        "(`linearised = true`, where the geostrophic state is exactly steady) swe solves the "
        f"non-linear equations (eta0/H = {ETA_B / H_B:.2f}, Rossby number 0.05): the "
        "geostrophic start lacks the centrifugal term, so the eddy adjusts slightly. "
        "Reported: max|h - h(0)| / eta0 at the end (geo.c's error), change of the available "
        "energy (energy minus that of the same volume at rest), mass change. All runs: default "
        f"scheme ({default_scheme()}), float64."
    )
    reference = (
        "(a) Exact steady solution: for `u_r = 0`, `h = h(r)`, the shallow-water equations "
        "reduce to the gradient-wind balance `u^2/r + f u = g deta/dr` (e.g. Vallis 2017, "
        "*Atmospheric and Oceanic Fluid Dynamics*, sec. 2.9.1), solved exactly for the "
        "initial velocity. (b) No exact solution; set-up of Basilisk `src/test/geo.c` "
        "(Popinet & Rickard 2007, Ocean Modelling 16, sec. 6.1; Le Roux et al. 1998, Mon. Wea. "
        "Rev. 126; Dupont 2001)."
    )
    notes = "(b) " + "; ".join(
        f"{r['n']}x{r['n']}: max eta {r['eta_max']:.1f} m after {DAYS_B:g} d (eta0 {ETA_B:g}), "
        f"max|h - h0| {r['max_err'][-1]:.1f} m, centroid shift "
        f"({r['centroid'][0] / 1e3:.1f}, {r['centroid'][1] / 1e3:.1f}) km, max speed "
        f"{r['speed_max']:.3f} m/s, normalised total energy {r['energy'][-1]:.8f}, available "
        f"energy {100 * (r['available'][-1] - 1):+.2f}%, mass {r['mass']:.1e}"
        for r in runs_b)
    return CaseResult(NAME, TITLE, setup, reference,
                      ["run", "dx (m)", "L1(h) T", "L1(h) T/2", "max err / eta0",
                       "mass change", "available energy change", "steps",
                       "wall s (incl. compile)"],
                      rows, checks, figures, notes=notes)


if __name__ == "__main__":
    sys.exit(main(run))

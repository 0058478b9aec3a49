"""Simulation-based calibration of ``swe.calibration`` (Talts et al. 2018): are the posterior
intervals of a shallow-water calibration calibrated?

Each replicate draws parameters from the prior, simulates gauge records with noise, runs NUTS
on them and records the rank of the true value among the posterior draws. If the sampler and
the likelihood are right, the ranks are uniform and a central q% interval holds the truth in
q% of the replicates. The replicates are independent: all of them run at once, vmapped (the
sampler's trees in lockstep), on one device.
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

import numpy as np

from validation.common import FIGURES, HERE, CaseResult, Check, main, pyplot, save

TITLE = "Calibrated posteriors: simulation-based calibration of NUTS on a 1-D basin"
NAME = "calibration_sbc"

LENGTH, CELLS, DEPTH, WIDTH = 2000.0, 40, 5.0, 150.0   # m, cells, m, m
TIMES = np.arange(1, 7) * 10.0                          # s
GAUGES = [("west", 300.0), ("centre", 1000.0), ("east", 1700.0)]
NOISE = 0.01                                            # m
FULL = dict(replicates=100, warmup=200, draws=300, thin=3)
QUICK = dict(replicates=20, warmup=100, draws=100, thin=1)
SEED = 2018
RESULTS = HERE / "calibration_sbc.json"


def priors():
    from swe import calibration as cal

    # x0 west of the centre gauge only: the basin and its gauges are mirror-symmetric, and
    # a prior on both sides would hold the mirror image of every source as a second mode.
    return {"amplitude": cal.LogNormal(math.log(0.3), 0.4), "x0": cal.Uniform(400.0, 1000.0)}


def forward_model():
    import jax.numpy as jnp

    import swe

    grid = swe.Grid(nx=CELLS, ny=1, x=(0.0, LENGTH), y=(0.0, 50.0))
    x = jnp.asarray(np.asarray(grid.xc))
    model = swe.ShallowWater(grid, bed=-DEPTH, friction=swe.Manning(0.03),
                             boundaries=swe.Boundaries(west=swe.Wall(), east=swe.Wall()))
    gauges = [(name, gx, 25.0) for name, gx in GAUGES]

    def forward(params):
        eta = params["amplitude"] * jnp.exp(-(((x - params["x0"]) / WIDTH) ** 2))[None, :]
        return swe.simulate(model, swe.State.from_surface(model, eta=eta), float(TIMES[-1]),
                            save_at=TIMES, gauges=gauges, envelopes=False, throw=False,
                            max_steps=500)
    return forward


def study(replicates: int, warmup: int, draws: int, thin: int, seed: int = SEED):
    """Ranks of the truth among ``draws // thin`` thinned draws, and whether each central
    50% and 90% interval holds it, for every replicate and parameter."""
    import jax
    import jax.numpy as jnp

    from swe import calibration as cal
    from swe.calibration import sampling
    from swe.calibration.likelihood import build_posterior

    forward = forward_model()
    pri = priors()
    template = cal.synthetic_observations(forward, {k: p.median for k, p in pri.items()},
                                          noise=NOISE)
    post = build_posterior(forward, pri, template, NOISE)
    start = jnp.asarray([p.to_unconstrained(p.median) for p in pri.values()])

    def replicate(key):
        k_theta, k_noise, k_warm, k_draw = jax.random.split(key, 4)
        keys = jax.random.split(k_theta, len(pri))
        z_true = jnp.stack([p.to_unconstrained(p.sample(k)) for k, p in zip(keys, pri.values())])
        pred, failed = post.predictions(z_true)
        records = {v: pred[v] + post.likelihood.simulate_noise(k_noise, {})[v] for v in pred}
        lp = post.with_observations(records).log_density
        state, params, n_warm, div_warm = sampling.warm_up(lp, k_warm, start, warmup)
        _, out = sampling.draw(lp, state, params, k_draw, 0, draws)
        kept = out.position[thin - 1::thin]
        return (z_true, kept, failed, n_warm + jnp.sum(out.n_steps),
                div_warm + jnp.sum(out.diverging))

    t0 = time.perf_counter()
    keys = jax.random.split(jax.random.key(seed), replicates)
    z_true, kept, failed, grads, divergent = jax.jit(jax.vmap(replicate))(keys)
    seconds = time.perf_counter() - t0
    z_true, kept = np.asarray(z_true), np.asarray(kept)
    ranks = (kept < z_true[:, None, :]).sum(axis=1)            # (replicate, parameter)
    lo50, hi50 = np.quantile(kept, [0.25, 0.75], axis=1)
    lo90, hi90 = np.quantile(kept, [0.05, 0.95], axis=1)
    return dict(
        names=list(pri), replicates=replicates, warmup=warmup, draws=draws, thin=thin,
        seed=seed, kept=int(kept.shape[1]), ranks=ranks.T.tolist(),
        cover50=((lo50 <= z_true) & (z_true <= hi50)).mean(axis=0).tolist(),
        cover90=((lo90 <= z_true) & (z_true <= hi90)).mean(axis=0).tolist(),
        failed_truth=int(np.asarray(failed).sum()), gradients=int(np.asarray(grads).sum()),
        divergences=int(np.asarray(divergent).sum()), seconds=seconds)


def chi_square(ranks, kept: int, bins: int = 10) -> tuple[float, int]:
    """Pearson's statistic of the rank histogram in ``bins`` equal bins of the ranks
    0..kept, and its degrees of freedom."""
    counts = np.histogram(ranks, bins=bins, range=(-0.5, kept + 0.5))[0]
    expected = len(ranks) / bins
    return float(((counts - expected) ** 2 / expected).sum()), bins - 1


# The 99.9th percentile of chi-square(9): a uniform histogram passes 999 times in 1000.
CHI2_9_999 = 27.877


def run(quick: bool = False, outdir: Path = FIGURES) -> CaseResult:
    import platform

    import jax

    settings = QUICK if quick else FULL
    res = study(**settings)
    res["machine"] = f"{platform.machine()}, {jax.device_count()} {jax.default_backend()} device(s)"
    if not quick and outdir == FIGURES:
        RESULTS.write_text(json.dumps(res, indent=1) + "\n")
    n = res["replicates"]
    # The binomial band that a calibrated 90% interval stays in 999 times in 1000.
    half = 3.29 * math.sqrt(0.9 * 0.1 / n)
    checks, rows = [], []
    for k, name in enumerate(res["names"]):
        chi2, dof = chi_square(res["ranks"][k], res["kept"])
        rows.append([name, n, res["kept"], f"{chi2:.2f} ({dof} dof)",
                     f"{100 * res['cover50'][k]:.1f}%", f"{100 * res['cover90'][k]:.1f}%"])
        checks.append(Check(f"{name}: rank chi-square", chi2, f"< {CHI2_9_999} (p > 0.001)",
                            chi2 < CHI2_9_999))
        lo, hi = (0.84, 0.96) if not quick else (0.9 - half, 0.9 + half)
        checks.append(Check(f"{name}: 90% interval coverage", res["cover90"][k],
                            f"in [{lo:.3g}, {hi:.3g}]", lo <= res["cover90"][k] <= hi))
    checks.append(Check("true parameters whose run failed", res["failed_truth"], "= 0",
                        res["failed_truth"] == 0))
    figures = [rank_figure(res, outdir / f"{NAME}_ranks.png")]
    setup = (
        f"A 1-D basin {LENGTH:g} m long, {CELLS} cells, {DEPTH:g} m deep, walls, Manning n "
        f"0.03; a Gaussian hump of the surface of width {WIDTH:g} m, amplitude "
        f"`amplitude` (m) at `x0` (m), released at rest; gauges at "
        + ", ".join(f"x = {gx:g} m" for _, gx in GAUGES)
        + f" record the surface every {TIMES[0]:g} s to {TIMES[-1]:g} s with independent "
        f"Gaussian noise of {NOISE} m. Priors: `amplitude ~ LogNormal(log 0.3, 0.4)`, "
        "`x0 ~ Uniform(400, 1000)` (west of the centre gauge: the basin is mirror-symmetric, "
        "and a source on either side would make the mirror image a second mode, which a "
        "chain started in between can fall into). Each of the "
        f"{n} replicates draws the truth from the priors, simulates records, and runs one "
        f"NUTS chain ({res['warmup']} warm-up steps, {res['draws']} draws, every "
        f"{res['thin']}th kept: {res['kept']} draws) from the prior medians, with "
        "`swe.calibration`'s log posterior and BlackJAX's window adaptation; all replicates "
        f"vmapped in one compiled call ({res['seconds']:.0f} s, {res['gradients']} "
        f"gradients in all, {res['divergences']} divergences; {res['machine']}). Float64.")
    reference = (
        "Talts, Betancourt, Simpson, Vehtari & Gelman (2018), *Validating Bayesian inference "
        "algorithms with simulation-based calibration*, arXiv:1804.06788: for data drawn "
        "from the prior predictive, the rank of the true parameter among L posterior draws "
        "is uniform on 0..L if the inference is exact. Checks: Pearson's chi-square of the "
        "rank histogram in 10 bins against chi-square(9) at p = 0.001, and the coverage of "
        "the central 90% interval (84-96% for the full study: two binomial standard "
        "deviations at 100 replicates).")
    return CaseResult(NAME, TITLE, setup, reference,
                      ["parameter", "replicates", "draws kept", "rank chi-square",
                       "50% coverage", "90% coverage"], rows, checks, figures)


def rank_figure(res, path: Path) -> Path:
    plt = pyplot()
    names = res["names"]
    fig, axes = plt.subplots(1, len(names), figsize=(4.2 * len(names), 3.2))
    n, bins = res["replicates"], 10
    for ax, name, ranks in zip(np.atleast_1d(axes), names, res["ranks"]):
        ax.hist(ranks, bins=bins, range=(-0.5, res["kept"] + 0.5), color="C0", alpha=0.8)
        expected = n / bins
        band = 3.29 * math.sqrt(expected * (1 - 1 / bins))
        ax.axhspan(expected - band, expected + band, color="0.85", zorder=0,
                   label="99.9% band of a uniform")
        ax.axhline(expected, color="k", lw=0.8)
        ax.set_xlabel(f"rank of the true {name} among {res['kept']} draws")
        ax.set_ylabel("replicates")
        ax.legend(fontsize=7, loc="lower center")
    fig.tight_layout()
    return save(fig, path)


if __name__ == "__main__":
    sys.exit(main(run))

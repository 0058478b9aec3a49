"""MCMC convergence diagnostics: rank-normalised split R-hat, bulk and tail ESS.

Implements the diagnostics of

    Vehtari, A., Gelman, A., Simpson, D., Carpenter, B. & Bürkner, P.-C. (2021).
    Rank-normalization, folding, and localization: An improved R-hat for assessing
    convergence of MCMC. Bayesian Analysis 16(2), 667-718. doi:10.1214/20-BA1221

as Stan and ArviZ compute them (arviz-stats ``rhat(method="rank")``,
``ess(method="bulk")`` and ``ess(method="tail", prob=0.05)`` agree to rounding). Pure NumPy
(and the standard library's normal quantile), so that ArviZ and SciPy stay optional.

Every function takes draws shaped ``(chain, draw)``. Chains are split in halves, so that a
chain drifting within itself shows up as disagreement between its halves. Degenerate input
gives NaN rather than an error: NaN in the draws, fewer than 4 draws per chain, or fewer
than 2 chains for R-hat (as ArviZ), and constant draws. For constant draws ArviZ reports an
ESS equal to the number of draws; here, as in Stan and the R package posterior, it is NaN:
draws that never move say nothing about mixing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    import xarray as xr

__all__ = ["Summary", "ess_bulk", "ess_tail", "rhat", "summary"]

_MIN_DRAWS = 4
_TAIL_PROB = 0.05  # ess_tail looks at the 5% and 95% quantiles (the paper, Stan, ArviZ)

# The standard library's inverse normal CDF (Wichura's AS241, ~1e-16 relative error), made
# elementwise; about 0.2 us a value, so no SciPy is needed.
_norm_ppf = np.frompyfunc(NormalDist().inv_cdf, 1, 1)


def _as_draws(draws: npt.ArrayLike) -> np.ndarray:
    x = np.asarray(draws, dtype=float)
    if x.ndim != 2:
        raise ValueError(f"draws must be a 2-D array shaped (chain, draw); got shape {x.shape}")
    return x


def _undefined(x: np.ndarray, min_chains: int) -> bool:
    """Whether the diagnostic is undefined for ``x`` (and so NaN)."""
    return bool(x.shape[0] < min_chains or x.shape[1] < _MIN_DRAWS
                or np.isnan(x).any() or np.all(x == x.flat[0]))


def _split_chains(x: np.ndarray) -> np.ndarray:
    # With an odd number of draws the middle one is dropped, as in Stan and ArviZ.
    half = x.shape[1] // 2
    return np.vstack((x[:, :half], x[:, -half:]))


def _average_ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 1..S of all entries of ``x`` pooled; ties get the average of their ranks."""
    flat = x.ravel()
    order = np.argsort(flat, kind="stable")
    ordered = flat[order]
    first = np.r_[True, ordered[1:] != ordered[:-1]]  # first entry of each run of ties
    starts = np.flatnonzero(first)
    ends = np.r_[starts[1:], flat.size]  # one past the last of each run
    group = np.cumsum(first) - 1
    ranks = np.empty(flat.size)
    ranks[order] = ((starts + 1 + ends) / 2)[group]
    return ranks.reshape(x.shape)


def _z_scale(x: np.ndarray) -> np.ndarray:
    """Rank normalisation: normal scores of the pooled ranks, Blom's offset 3/8.

    Makes R-hat and ESS well defined for heavy tails (infinite variance) and invariant
    under monotone transforms of the parameter.
    """
    p = (_average_ranks(x) - 3 / 8) / (x.size + 1 / 4)
    return _norm_ppf(p).astype(float)


def _rhat(x: np.ndarray) -> float:
    """Classic R-hat of chains ``x`` (chain, draw): sqrt of pooled over within-chain var."""
    n = x.shape[1]
    between = n * np.var(x.mean(axis=1), ddof=1)
    within = np.mean(np.var(x, axis=1, ddof=1))
    # Chains each constant at different values: within = 0 and R-hat is infinite (or
    # huge, by rounding); no warning for that, nor for 0/0 (a folded sample can be constant).
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.sqrt((between / within + n - 1) / n))


def _autocov(x: np.ndarray) -> np.ndarray:
    """Autocovariance of each chain at lags 0..n-1 (biased, divided by n), by FFT."""
    n = x.shape[1]
    m = 1 << (2 * n - 1).bit_length()  # >= 2n: the zero padding makes the circular
    centred = x - x.mean(axis=1, keepdims=True)  # correlation of the FFT a linear one
    f = np.fft.rfft(centred, n=m, axis=1)
    return np.fft.irfft(f * np.conjugate(f), n=m, axis=1)[:, :n] / n


def _ess(x: np.ndarray) -> float:
    """Stan's effective sample size of split chains ``x`` (chain, draw).

    The autocorrelations of all chains are combined through the variance estimate
    var_plus (so chains that disagree lower the ESS), then summed over Geyer's initial
    monotone sequence.
    """
    n_chain, n_draw = x.shape
    if np.ptp(x) < np.finfo(float).resolution:
        # Only reachable for a constant transform of non-constant draws, e.g. the 95%
        # indicator of a two-valued parameter; ArviZ counts that as n_chain * n_draw.
        return float(x.size)
    acov = _autocov(x)
    mean_var = np.mean(acov[:, 0]) * n_draw / (n_draw - 1.0)  # within-chain variance W
    # Split chains always number >= 2, so the between-chain term is always defined.
    var_plus = mean_var * (n_draw - 1.0) / n_draw + np.var(x.mean(axis=1), ddof=1)
    rho = 1.0 - (mean_var - acov.mean(axis=0)) / var_plus

    rho_hat = np.zeros(n_draw)
    rho_hat[0] = even = 1.0
    rho_hat[1] = odd = rho[1]
    # Geyer's initial positive sequence: keep pairs of lags while their sum is positive.
    t = 1
    while t < n_draw - 3 and even + odd > 0.0:
        even, odd = rho[t + 1], rho[t + 2]
        if even + odd >= 0:
            rho_hat[t + 1], rho_hat[t + 2] = even, odd
        t += 2
    max_t = t - 2
    if even > 0:  # Stan's refinement: the even lag of the first negative pair still counts
        rho_hat[max_t + 1] = even
    # Initial monotone sequence: pair sums may not increase (they would be noise).
    for t in range(1, max_t - 1, 2):
        if rho_hat[t + 1] + rho_hat[t + 2] > rho_hat[t - 1] + rho_hat[t]:
            rho_hat[t + 1] = rho_hat[t + 2] = (rho_hat[t - 1] + rho_hat[t]) / 2.0
    tau = -1.0 + 2.0 * np.sum(rho_hat[: max_t + 1]) + np.sum(rho_hat[max_t + 1 : max_t + 2])
    # Antithetic chains can make tau tiny; Stan caps the ESS at S log10(S).
    tau = max(tau, 1.0 / np.log10(x.size))
    return math.nan if np.isnan(rho_hat).any() else float(x.size / tau)


def rhat(draws: npt.ArrayLike) -> float:
    """Rank-normalised split R-hat: the larger of the bulk and the folded (tail) R-hat.

    Folding (distance to the median) catches chains that agree in location but not in
    scale. NaN for fewer than 2 chains or 4 draws a chain, NaN draws or constant draws.
    """
    x = _as_draws(draws)
    if _undefined(x, min_chains=2):
        return math.nan
    split = _split_chains(x)
    bulk = _rhat(_z_scale(split))
    tail = _rhat(_z_scale(np.abs(split - np.median(split))))
    return max(bulk, tail)


def ess_bulk(draws: npt.ArrayLike) -> float:
    """Bulk effective sample size: the ESS of the rank-normalised split chains."""
    x = _as_draws(draws)
    if _undefined(x, min_chains=1):
        return math.nan
    return _ess(_z_scale(_split_chains(x)))


def ess_tail(draws: npt.ArrayLike) -> float:
    """Tail effective sample size: the smaller ESS of the indicators x <= q5% and x <= q95%."""
    x = _as_draws(draws)
    if _undefined(x, min_chains=1):
        return math.nan
    with np.errstate(invalid="ignore"):  # +-inf draws may interpolate to a NaN quantile
        quantiles = np.quantile(x, [_TAIL_PROB, 1 - _TAIL_PROB])
    return min(_ess(_split_chains((x <= q).astype(float))) for q in quantiles)


def _quantile_name(p: float) -> str:
    # 0.05 -> q05, 0.95 -> q95, 0.025 -> q025, 0.1 -> q10: the digits after "0.".
    return "q" + f"{p:.6f}"[2:].rstrip("0").ljust(2, "0")


def _format(column: str, value: float) -> str:
    if column == "r_hat":
        return f"{value:.3f}"
    if column.startswith("ess"):
        return f"{value:.0f}"
    return f"{value:.4g}"


@dataclass
class Summary:
    """Posterior summary: ``rows[name][column]``, printable as an aligned table."""

    rows: dict[str, dict[str, float]]
    columns: tuple[str, ...]

    def __getitem__(self, name: str) -> dict[str, float]:
        return self.rows[name]

    def __str__(self) -> str:
        table = [["", *self.columns]]
        table += [[name, *(_format(c, row[c]) for c in self.columns)]
                  for name, row in self.rows.items()]
        widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
        return "\n".join(
            "  ".join([line[0].ljust(widths[0])]
                      + [cell.rjust(w) for cell, w in zip(line[1:], widths[1:])]).rstrip()
            for line in table)

    def to_dataframe(self):
        """The table as a ``pandas.DataFrame`` (pandas is imported only here)."""
        import pandas as pd

        return pd.DataFrame.from_dict(self.rows, orient="index", columns=list(self.columns))


def summary(posterior: xr.Dataset, var_names: str | list[str] | None = None,
            prob: float = 0.90) -> Summary:
    """Mean, sd (ddof=1), central ``prob`` interval, R-hat and bulk/tail ESS per variable.

    ``posterior``: a Dataset whose variables have dims ("chain", "draw"), one scalar per
    draw. The interval columns are named after their quantiles: q05/q95 for prob=0.9,
    q025/q975 for prob=0.95.
    """
    if not 0 < prob < 1:
        raise ValueError(f"prob must be in (0, 1); got {prob}")
    if var_names is None:
        names = list(posterior.data_vars)
    else:
        names = [var_names] if isinstance(var_names, str) else list(var_names)
    lo, hi = (1 - prob) / 2, (1 + prob) / 2
    columns = ("mean", "sd", _quantile_name(lo), _quantile_name(hi),
               "r_hat", "ess_bulk", "ess_tail")
    rows = {}
    for name in names:
        da = posterior[name]
        if set(da.dims) != {"chain", "draw"}:
            raise ValueError(f"variable {name!r} has dims {da.dims}; summary expects "
                             "exactly ('chain', 'draw'), one scalar per draw")
        x = _as_draws(da.transpose("chain", "draw").values)
        with np.errstate(invalid="ignore"):  # +-inf draws: NaN moments, not warnings
            sd = float(np.std(x, ddof=1)) if x.size > 1 else math.nan
            q_lo, q_hi = np.quantile(x, [lo, hi]) if x.size else (math.nan, math.nan)
            mean = float(np.mean(x)) if x.size else math.nan
        rows[str(name)] = {"mean": mean, "sd": sd, columns[2]: float(q_lo),
                           columns[3]: float(q_hi), "r_hat": rhat(x),
                           "ess_bulk": ess_bulk(x), "ess_tail": ess_tail(x)}
    return Summary(rows, columns)

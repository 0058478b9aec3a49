"""Rank-normalised R-hat and bulk/tail ESS of swe.calibration.diagnostics: ArviZ and theory."""

import math
import re

import numpy as np
import pytest
import xarray as xr

from swe.calibration.diagnostics import Summary, ess_bulk, ess_tail, rhat, summary


def _ar1(rng, rho, n_chain, n_draw):
    """Stationary Gaussian AR(1) chains with unit innovations."""
    eps = rng.standard_normal((n_chain, n_draw))
    x = np.empty_like(eps)
    x[:, 0] = eps[:, 0] / np.sqrt(1 - rho**2)
    for t in range(1, n_draw):
        x[:, t] = rho * x[:, t - 1] + eps[:, t]
    return x


def _case(name):
    rng = np.random.default_rng(20240611)
    if name == "ar1":
        return _ar1(rng, 0.6, 4, 500)
    if name == "heavy_tailed":  # infinite variance; odd length, so splitting drops a draw
        return rng.standard_t(1.5, size=(4, 501))
    if name == "shifted_chain":
        x = _ar1(rng, 0.6, 4, 500)
        x[0] += 1.0
        return x
    if name == "discrete":  # many ties: average ranks
        return rng.poisson(1.5, size=(4, 400)).astype(float)
    raise KeyError(name)


# (rhat, ess_bulk, ess_tail) from arviz-stats 0.8.0: array_stats.rhat(x, method="rank"),
# .ess(x, method="bulk"), .ess(x, method="tail", prob=0.05), on the draws of _case(name).
ARVIZ = {
    "ar1": (1.0021135909220587, 415.4446426852826, 773.8809171207263),
    "heavy_tailed": (1.0011685957050325, 1936.012873826536, 1820.971159934967),
    "shifted_chain": (1.0591970598302696, 97.36979883925535, 644.8505343645995),
    "discrete": (1.0040787177739725, 1455.0914685623488, 1371.3141492724562),
}


@pytest.mark.parametrize("name", sorted(ARVIZ))
def test_matches_recorded_arviz_values(name):
    x = _case(name)
    assert (rhat(x), ess_bulk(x), ess_tail(x)) == pytest.approx(ARVIZ[name], rel=1e-8)


@pytest.mark.parametrize("name", sorted(ARVIZ))
def test_matches_live_arviz(name):
    base = pytest.importorskip("arviz_stats.base")
    x = _case(name)
    ref = base.array_stats
    expected = (float(ref.rhat(x, method="rank")), float(ref.ess(x, method="bulk")),
                float(ref.ess(x, method="tail", prob=0.05)))
    assert (rhat(x), ess_bulk(x), ess_tail(x)) == pytest.approx(expected, rel=1e-10)


def test_iid_draws_are_fully_efficient():
    x = np.random.default_rng(1).standard_normal((4, 1000))
    assert ess_bulk(x) == pytest.approx(x.size, rel=0.10)
    assert ess_tail(x) == pytest.approx(x.size, rel=0.20)
    assert rhat(x) < 1.01


def test_ar1_ess_is_n_times_one_minus_rho_over_one_plus_rho():
    rho = 0.6
    x = _ar1(np.random.default_rng(2), rho, 4, 5000)
    assert ess_bulk(x) == pytest.approx(x.size * (1 - rho) / (1 + rho), rel=0.15)


def test_shifted_chain_is_flagged():
    x = np.random.default_rng(3).standard_normal((4, 1000))
    assert rhat(x) < 1.01
    x[2] += 2.0
    assert rhat(x) > 1.1


def test_folding_flags_a_chain_with_a_different_scale():
    # Same location, 3x the spread: the split R-hat of the draws misses it, the folded
    # (tail) R-hat does not.
    x = np.random.default_rng(4).standard_normal((4, 1000))
    x[1] *= 3.0
    half = x.shape[1] // 2
    split = np.vstack((x[:, :half], x[:, half:]))
    between = half * np.var(split.mean(axis=1), ddof=1)
    within = np.var(split, axis=1, ddof=1).mean()
    plain = np.sqrt((between / within + half - 1) / half)
    assert plain < 1.01
    assert rhat(x) > 1.1


def test_rank_based_so_invariant_under_monotone_transforms():
    x = _case("heavy_tailed")
    y = np.arctan(x)  # strictly increasing
    assert ess_bulk(y) == pytest.approx(ess_bulk(x), rel=1e-12)
    assert ess_tail(y) == pytest.approx(ess_tail(x), rel=1e-12)


@pytest.mark.parametrize("draws", [
    np.full((4, 100), 2.5),                       # constant
    np.ones((4, 3)),                              # too short
    np.random.default_rng(5).normal(size=(4, 3)),
    np.where(np.arange(400).reshape(4, 100) == 7, np.nan, 1.0 * np.arange(400).reshape(4, 100)),
    np.full((2, 10), np.nan),
    np.zeros((0, 10)),
])
def test_degenerate_draws_give_nan(draws):
    assert math.isnan(rhat(draws))
    assert math.isnan(ess_bulk(draws))
    assert math.isnan(ess_tail(draws))


def test_one_chain_has_ess_but_no_rhat():
    x = np.random.default_rng(6).standard_normal((1, 400))
    assert math.isnan(rhat(x))
    assert ess_bulk(x) > 200 and ess_tail(x) > 200


def test_chains_stuck_at_different_values():
    x = np.repeat(np.arange(4.0)[:, None], 50, axis=1)
    assert rhat(x) > 1e6  # infinite up to rounding, and no warning
    assert ess_bulk(x) < 10


def test_infinite_draws_are_ranked():
    x = np.random.default_rng(7).standard_normal((4, 200))
    y = x.copy()
    y[0, 0] = np.inf  # x[0, 0] is not the largest draw, so the ranks change
    assert np.isfinite([rhat(y), ess_bulk(y), ess_tail(y)]).all()


@pytest.mark.parametrize("shape", [(100,), (2, 3, 100), ()])
def test_draws_must_be_2d(shape):
    for f in (rhat, ess_bulk, ess_tail):
        expected = r"\(chain, draw\); got shape " + re.escape(str(shape))
        with pytest.raises(ValueError, match=expected):
            f(np.zeros(shape))


def _posterior():
    rng = np.random.default_rng(8)
    return xr.Dataset({
        "n": (("chain", "draw"), 0.03 + 0.002 * _ar1(rng, 0.5, 4, 300)),
        "sigma": (("draw", "chain"), np.exp(rng.normal(size=(300, 4)))),  # transposed dims
    })


def test_summary_rows():
    post = _posterior()
    s = summary(post)
    assert isinstance(s, Summary)
    assert list(s.rows) == ["n", "sigma"]
    assert s.columns == ("mean", "sd", "q05", "q95", "r_hat", "ess_bulk", "ess_tail")
    for name in ("n", "sigma"):
        x = post[name].transpose("chain", "draw").values
        row = s[name]
        assert list(row) == list(s.columns)
        assert row["mean"] == pytest.approx(np.mean(x), rel=1e-12)
        assert row["sd"] == pytest.approx(np.std(x, ddof=1), rel=1e-12)
        assert row["q05"] == pytest.approx(np.quantile(x, 0.05), rel=1e-12)
        assert row["q95"] == pytest.approx(np.quantile(x, 0.95), rel=1e-12)
        assert row["r_hat"] == rhat(x)
        assert row["ess_bulk"] == ess_bulk(x)
        assert row["ess_tail"] == ess_tail(x)


def test_summary_prob_and_var_names():
    s = summary(_posterior(), var_names="sigma", prob=0.95)
    assert list(s.rows) == ["sigma"]
    assert s.columns[2:4] == ("q025", "q975")
    assert summary(_posterior(), prob=0.8).columns[2:4] == ("q10", "q90")


def test_summary_str_and_dataframe():
    s = summary(_posterior())
    lines = str(s).splitlines()
    assert len(lines) == 3
    assert lines[0].split() == list(s.columns)
    assert lines[1].split()[0] == "n"
    assert len({len(line) for line in lines}) == 1  # aligned
    r_hat, ess = lines[2].split()[5:7]
    assert r_hat == f"{s['sigma']['r_hat']:.3f}" and ess == str(round(s["sigma"]["ess_bulk"]))
    df = s.to_dataframe()
    assert list(df.columns) == list(s.columns) and list(df.index) == ["n", "sigma"]
    assert df.loc["n", "sd"] == s["n"]["sd"]


def test_summary_degenerate_and_bad_input():
    post = xr.Dataset({"c": (("chain", "draw"), np.ones((2, 50)))})
    row = summary(post)["c"]
    assert row["mean"] == 1.0 and row["sd"] == 0.0
    assert all(math.isnan(row[c]) for c in ("r_hat", "ess_bulk", "ess_tail"))
    assert "nan" in str(summary(post))
    vec = xr.Dataset({"v": (("chain", "draw", "k"), np.zeros((2, 50, 3)))})
    with pytest.raises(ValueError, match="'v' has dims"):
        summary(vec)
    with pytest.raises(ValueError, match="prob"):
        summary(post, prob=1.0)

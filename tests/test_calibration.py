"""Bayesian calibration: priors, the log posterior and its gradient, failed runs, the NUTS
sampler's calibration on an exact posterior, a twin experiment, the posterior file, the CLI."""

import math
import re
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import xarray as xr

import swe
from swe import calibration as cal
from swe.calibration import sampling
from swe.calibration.likelihood import build_posterior

# A 1-D basin of 12 cells at rest, 10 m deep, with a Gaussian hump of the surface.
GRID = swe.Grid(nx=12, ny=1, x=(0.0, 1200.0), y=(0.0, 100.0))
X = np.asarray(GRID.xc)
TIMES = np.array([10.0, 20.0, 30.0, 40.0])
GAUGES = [("left", 250.0, 50.0), ("right", 950.0, 50.0)]
FIRST_ORDER = swe.FiniteVolume(reconstruction="first_order")


def basin(params, dt=None, max_steps=None):
    model = swe.ShallowWater(GRID, bed=-10.0, friction=swe.Manning(params.get("n", 0.03)),
                             scheme=FIRST_ORDER,
                             boundaries=swe.Boundaries(west=swe.Wall(), east=swe.Wall()))
    x0 = params.get("x0", 600.0)
    eta = params["amplitude"] * jnp.exp(-(((jnp.asarray(X) - x0) / 200.0) ** 2))[None, :]
    return swe.simulate(model, swe.State.from_surface(model, eta=eta), TIMES[-1],
                        save_at=TIMES, gauges=GAUGES, envelopes=False, throw=False, dt=dt,
                        max_steps=max_steps)


def fixed_step(params):
    return basin(params, dt=2.0)


def observed(forward, truth, noise=0.01, seed=0):
    return cal.synthetic_observations(forward, truth, noise=noise, seed=seed)


@pytest.mark.parametrize("prior", [cal.Normal(0.3, 0.2), cal.LogNormal(-1.0, 0.5),
                                   cal.Uniform(-0.5, 2.0), cal.HalfNormal(0.7)])
def test_each_prior_is_a_density_in_its_unconstrained_space(prior):
    z = jnp.linspace(-40.0, 40.0, 400001)
    p = jnp.exp(jax.vmap(prior.log_density_unconstrained)(z))
    assert float(jnp.sum(p) * (z[1] - z[0])) == pytest.approx(1.0, abs=1e-6)
    # The Jacobian term: p(x) |dx/dz| in z equals log_density + log_jacobian.
    z0 = jnp.asarray(0.37)
    direct = prior.log_density(prior.to_constrained(z0)) + jnp.log(
        jnp.abs(jax.grad(prior.to_constrained)(z0)))
    assert float(prior.log_density_unconstrained(z0)) == pytest.approx(float(direct), rel=1e-12)
    assert float(prior.to_unconstrained(prior.to_constrained(z0))) == pytest.approx(0.37)
    draws = np.asarray(prior.sample(jax.random.key(0), (200000,)))
    mean = float(jnp.sum(p * jax.vmap(prior.to_constrained)(z)) * (z[1] - z[0]))
    assert draws.mean() == pytest.approx(mean, abs=4 * draws.std() / math.sqrt(draws.size))


@pytest.mark.parametrize("bad, needle", [
    (lambda: cal.Normal(0.0, -1.0), "scale=-1.0"),
    (lambda: cal.Uniform(2.0, 1.0), "high=1.0"),
    (lambda: cal.LogNormal(float("nan"), 1.0), "loc=nan"),
    (lambda: cal.AR1(0.1, 1.0), "AR1 rho=1.0"),
])
def test_bad_priors_are_named(bad, needle):
    with pytest.raises(ValueError, match=re.escape(needle)):
        bad()


def test_log_density_gradient_matches_finite_differences():
    """Every prior kind, and a noise prior, through the whole run (float64)."""
    truth = {"amplitude": 0.4, "n": 0.03, "x0": 560.0}
    obs = observed(fixed_step, truth)
    priors = {"amplitude": cal.Normal(0.3, 0.3), "n": cal.LogNormal(math.log(0.03), 0.5),
              "x0": cal.Uniform(300.0, 900.0)}
    post = build_posterior(fixed_step, priors, obs, cal.HalfNormal(0.05))
    assert post.names == ("amplitude", "n", "x0", "noise")
    z = post.unconstrained({"amplitude": 0.35, "n": 0.04, "x0": 520.0, "noise": 0.02})
    lp = jax.jit(post.log_density)
    grad = np.asarray(jax.jit(jax.grad(post.log_density))(z))
    for k in range(z.size):
        e = np.zeros(z.size)
        e[k] = 1e-5
        fd = (float(lp(z + e)) - float(lp(z - e))) / 2e-5
        assert grad[k] == pytest.approx(fd, rel=1e-5, abs=1e-6), post.names[k]


def test_ar1_likelihood_is_the_gaussian_with_its_covariance():
    """Independent of the recursion: the dense multivariate normal with covariance
    sigma^2 rho^|i - j|, missing values dropped."""
    truth = {"amplitude": 0.4}
    obs = observed(fixed_step, truth)
    values = obs["eta"].values.copy()
    values[0, 1] = np.nan  # a gap in the left gauge's series
    obs["eta"] = (("gauge", "time"), values)
    post = build_posterior(fixed_step, {"amplitude": cal.Normal(0.3, 0.3)}, obs,
                           cal.AR1(0.02, cal.Uniform(0.0, 1.0)))
    values = {"amplitude": 0.37, "noise_rho": 0.6}
    z = post.unconstrained(values)
    pred, _ = post.predictions(z)
    got = float(post.likelihood.log_likelihood(pred, post.constrained(z)))
    expected = 0.0
    for g in range(2):
        keep = np.isfinite(obs["eta"].values[g])
        t = TIMES[keep] / 10.0
        cov = 0.02**2 * 0.6 ** np.abs(t[:, None] - t[None, :])
        r = obs["eta"].values[g][keep] - np.asarray(pred["eta"][g])[keep]
        sign, logdet = np.linalg.slogdet(cov)
        expected += -0.5 * (r @ np.linalg.solve(cov, r) + logdet + r.size * math.log(2 * math.pi))
    assert got == pytest.approx(expected, rel=1e-12)


def test_failed_run_is_minus_inf_with_a_finite_gradient():
    """A fixed step past the CFL limit fails for a tall hump: -inf, gradient finite."""
    forward = lambda p: basin(p, dt=6.0)  # noqa: E731
    obs = observed(forward, {"amplitude": 0.1})
    post = build_posterior(forward, {"amplitude": cal.Normal(0.3, 1.0)}, obs, 0.01)
    lp = jax.jit(post.log_density)
    bad = post.unconstrained({"amplitude": 30.0})
    assert float(lp(post.unconstrained({"amplitude": 0.1}))) > 0
    assert float(lp(bad)) == -math.inf
    grad = jax.jit(jax.grad(post.log_density))(bad)
    assert np.all(np.isfinite(np.asarray(grad)))
    with pytest.raises(ValueError, match="amplitude=30"):
        cal.map_estimate(forward, {"amplitude": cal.Normal(0.3, 1.0)}, obs, noise=0.01,
                         init={"amplitude": 30.0})


def linear_gaussian(k_data, theta):
    """y = A theta + noise: the exact posterior is Gaussian."""
    a = jnp.array([[1.0, 0.5], [0.2, 1.5], [0.7, -0.4]])
    sigma = 0.8
    y = a @ theta + sigma * jax.random.normal(k_data, (3,))
    precision = jnp.eye(2) + a.T @ a / sigma**2
    cov = jnp.linalg.inv(precision)
    mean = cov @ a.T @ y / sigma**2

    def logdensity(z):
        r = y - a @ z
        return -0.5 * jnp.sum(z**2) - 0.5 * jnp.sum(r**2) / sigma**2
    return logdensity, mean, cov


def test_nuts_is_calibrated_on_an_exact_posterior():
    """Simulation-based calibration (Talts et al. 2018) at a fixed seed: 200 replicates
    vmapped, the truth's rank among 99 thinned draws uniform by a chi-square test; and one
    long chain's mean and sd within their Monte Carlo error."""
    reps, warm, n, thin = 200, 200, 396, 4

    def replicate(key):
        k_theta, k_data, k_warm, k_draw = jax.random.split(key, 4)
        theta = jax.random.normal(k_theta, (2,))
        logdensity, _, _ = linear_gaussian(k_data, theta)
        state, params, _, _ = sampling.warm_up(logdensity, k_warm, jnp.zeros(2), warm)
        _, draws = sampling.draw(logdensity, state, params, k_draw, 0, n)
        kept = draws.position[thin - 1::thin]
        return jnp.sum(kept < theta[None, :], axis=0), jnp.sum(draws.diverging)

    ranks, divergent = jax.jit(jax.vmap(replicate))(jax.random.split(jax.random.key(3), reps))
    ranks = np.asarray(ranks)
    assert int(divergent.sum()) == 0
    bins = 10  # 100 possible ranks in 10 bins of 10
    for d in range(2):
        counts = np.bincount(ranks[:, d] // 10, minlength=bins)
        chi2 = float(((counts - reps / bins) ** 2 / (reps / bins)).sum())
        assert chi2 < 21.67, (d, counts)  # the 99th percentile of chi-square(9)

    logdensity, mean, cov = linear_gaussian(jax.random.key(5), jnp.array([0.5, -1.0]))
    state, params, _, _ = jax.jit(lambda k: sampling.warm_up(logdensity, k, jnp.zeros(2), 300))(
        jax.random.key(6))
    _, draws = jax.jit(lambda s, p, k: sampling.draw(logdensity, s, p, k, 0, 4000))(
        state, params, jax.random.key(7))
    x = np.asarray(draws.position)
    sd = np.sqrt(np.diag(np.asarray(cov)))
    for d in range(2):
        ess = cal.ess_bulk(x[None, :, d])
        assert abs(x[:, d].mean() - float(mean[d])) < 4 * sd[d] / math.sqrt(ess)
        assert x[:, d].std() == pytest.approx(sd[d], rel=4 * math.sqrt(0.5 / ess) + 0.02)


def test_chains_split_over_devices_equal_vmapped_chains():
    logdensity, _, _ = linear_gaussian(jax.random.key(1), jnp.array([0.2, 0.1]))

    def chain(key, z0):
        state, params, _, _ = sampling.warm_up(logdensity, key, z0, 50)
        return sampling.draw(logdensity, state, params, key, 0, 20)[1].position

    keys = jax.random.split(jax.random.key(2), 4)
    z0 = jnp.zeros((4, 2))
    one = sampling._over_chains(chain, None)(keys, z0)
    split = sampling._over_chains(chain, sampling._chain_mesh(4, jax.devices()[:2]))(keys, z0)
    # The same draws to round-off (XLA fuses a batch of 2 and of 4 chains differently).
    np.testing.assert_allclose(np.asarray(one), np.asarray(split), rtol=1e-8, atol=1e-10)


def test_twin_experiment_recovers_the_truth_and_writes_arviz_layout(tmp_path):
    """A small twin experiment: the hump's amplitude and Manning's n. With its fixed step,
    a run of a hump above about 0.7 m passes the CFL limit and fails (-inf) close to the
    posterior: the chains meet such runs and pass them by. The posterior file round-trips
    with ArviZ's groups and dims, and the summary equals direct statistics of the draws."""
    forward = lambda p: basin(p, dt=9.8)  # noqa: E731
    truth = {"amplitude": 0.55, "n": 0.03}
    obs = observed(forward, truth, noise=0.05, seed=4)
    fails = lambda a: bool(np.asarray(forward({"amplitude": jnp.asarray(a),  # noqa: E731
                                               "n": jnp.asarray(0.03)}).failed))
    assert fails(0.8) and not fails(0.6)
    priors = {"amplitude": cal.Normal(0.5, 1.0), "n": cal.LogNormal(math.log(0.03), 0.3)}
    post = cal.sample(forward, priors, obs, noise=0.05, chains=2, warmup=150, draws=150,
                      seed=1, progress=False)
    draws = post["posterior"]["amplitude"].values
    assert np.all(np.isfinite(post["sample_stats"]["lp"].values)) and draws.max() < 0.8
    assert post.attrs["warmup_divergences"] + int(post["sample_stats"]["diverging"].sum()) > 0

    table = cal.summary(post)
    for name in truth:
        assert table[name]["q05"] <= truth[name] <= table[name]["q95"], table
    assert table["amplitude"]["r_hat"] < 1.05 and table["amplitude"]["ess_bulk"] > 50, table
    assert table["amplitude"]["sd"] < 0.1
    assert post.attrs["n_gradient"] > post.attrs["chains"] * post.attrs["draws"]

    x = post["posterior"]["amplitude"].values
    row = table["amplitude"]
    assert row["mean"] == pytest.approx(x.mean(), rel=1e-12)
    assert row["sd"] == pytest.approx(x.std(ddof=1), rel=1e-12)
    assert row["q05"] == pytest.approx(np.quantile(x, 0.05), rel=1e-12)
    assert row["r_hat"] == pytest.approx(cal.rhat(x), rel=1e-12)
    assert row["ess_bulk"] == pytest.approx(cal.ess_bulk(x), rel=1e-12)
    assert row["ess_tail"] == pytest.approx(cal.ess_tail(x), rel=1e-12)

    path = tmp_path / "posterior.nc"
    post.to_netcdf(path)
    back = xr.open_datatree(path)
    assert set(back.children) >= {"posterior", "sample_stats", "observed_data",
                                  "posterior_predictive"}
    for name in truth:
        assert back["posterior"][name].dims == ("chain", "draw")
        assert back["posterior"][name].shape == (2, 150)
    for name in ("diverging", "acceptance_rate", "step_size", "n_steps", "tree_depth", "lp"):
        assert back["sample_stats"][name].dims == ("chain", "draw")
    assert back["posterior_predictive"]["eta"].dims == ("chain", "draw", "gauge", "time")
    np.testing.assert_array_equal(back["observed_data"]["eta"].values, obs["eta"].values)
    for key in ("wall_time", "n_forward", "n_gradient", "inference_library_version",
                "swe_version"):
        assert key in back.attrs
    # The predictive draws spread about as the noise does (the fit's own spread is small)
    # and centre on the records to within it.
    ppc = back["posterior_predictive"]["eta"].values
    assert 0.045 < float(np.std(ppc, axis=(0, 1)).mean()) < 0.06
    resid = ppc.mean(axis=(0, 1)) - back["observed_data"]["eta"].values
    assert float(np.sqrt(np.mean(resid**2))) < 0.06
    assert str(cal.summary(path)) == str(table)
    arviz_base = pytest.importorskip("arviz_base")
    tree = arviz_base.convert_to_datatree(back)
    assert tree["posterior"]["amplitude"].shape == (2, 150)


def test_bad_observations_and_parameters_are_named():
    truth = {"amplitude": 0.4}
    obs = observed(fixed_step, truth)
    priors = {"amplitude": cal.Normal(0.3, 0.3)}
    with pytest.raises(ValueError, match=r"gauges \['nowhere'\]"):
        build_posterior(fixed_step, priors, obs.assign_coords(gauge=["left", "nowhere"]), 0.01)
    with pytest.raises(ValueError, match=r"observation times \[15.0\]"):
        build_posterior(fixed_step, priors, obs.assign_coords(time=[10.0, 15.0, 30.0, 40.0]),
                        0.01)
    with pytest.raises(ValueError, match="KeyError: 'amplitude'"):
        build_posterior(fixed_step, {"height": cal.Normal(0.3, 0.3)}, obs, 0.01)
    with pytest.raises(ValueError, match="noise='0.01' is invalid"):
        build_posterior(fixed_step, priors, obs, "0.01")
    with pytest.raises(ValueError, match="dims"):
        build_posterior(fixed_step, priors, obs.transpose("time", "gauge").rename(
            gauge="station"), 0.01)
    with pytest.raises(ValueError, match="priors"):
        cal.sample(fixed_step, {}, obs, noise=0.01)


CAL_FILE = """
import numpy as np
import swe
from swe import calibration as cal
import jax.numpy as jnp

grid = swe.Grid(nx=12, ny=1, x=(0.0, 1200.0), y=(0.0, 100.0))
x = np.asarray(grid.xc)

def forward(params):
    model = swe.ShallowWater(grid, bed=-10.0, scheme=swe.FiniteVolume(reconstruction="first_order"))
    eta = params["amplitude"] * jnp.exp(-(((x - 600.0) / 200.0) ** 2))[None, :]
    return swe.simulate(model, swe.State.from_surface(model, eta=eta), 40.0,
                        save_at=[10.0, 20.0, 30.0, 40.0], gauges=[("left", 250.0, 50.0)],
                        envelopes=False, throw=False, dt=2.0)

priors = {PRIORS}
TRUTH = {"amplitude": 0.4}
observations = {OBS}
"""


def write_cal_file(path, priors='{"amplitude": cal.Normal(0.3, 0.3)}',
                   obs="cal.synthetic_observations(forward, TRUTH, noise=0.01)", drop=None):
    text = CAL_FILE.replace("{PRIORS}", priors).replace("{OBS}", obs)
    if drop:
        text = "\n".join(line for line in text.splitlines() if not line.startswith(drop))
    path.write_text(textwrap.dedent(text))
    return path


def swe_cmd(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "swe", "calibrate", *args], capture_output=True,
                          text=True, timeout=300, cwd=cwd)


@pytest.mark.parametrize("make, flags, needle", [
    (lambda p: write_cal_file(p, drop="priors"), [], "does not define priors"),
    (lambda p: write_cal_file(p, priors='{"height": cal.Normal(0.3, 0.3)}'), [],
     "forward(params) raised KeyError"),
    (lambda p: write_cal_file(p, obs="'missing.nc'"), [], "no such file"),
    (lambda p: write_cal_file(p), ["--chains", "0"], "--chains 0 is invalid"),
    (lambda p: write_cal_file(p), ["--draws", "many"], "invalid int value"),
    (lambda p: p, [], "does not exist"),
])
def test_cli_bad_input_exits_2_with_one_line(tmp_path, make, flags, needle):
    path = make(tmp_path / "calib.py")
    p = swe_cmd(str(path), *flags, cwd=tmp_path)
    assert p.returncode == 2, p.stderr
    assert needle in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_cli_map_and_observations_file(tmp_path):
    """A file naming its observations by a path relative to itself, run from another
    directory: the MAP finds the truth, and a short sample writes its posterior file.
    (Records whose gauges or times the run does not produce are ValueErrors, tested above;
    the CLI turns ValueErrors into one line and exit 2, tested with the other bad input.)"""
    truth = {"amplitude": 0.4}
    obs = cal.synthetic_observations(lambda p: basin(p, dt=2.0), truth, noise=0.001)
    obs = obs.sel(gauge=["left"])
    obs.to_netcdf(tmp_path / "records.nc")
    path = write_cal_file(tmp_path / "calib.py", obs="'records.nc'")
    p = swe_cmd(str(path), "--map-only", cwd="/")
    assert p.returncode == 0, p.stderr
    value = float(p.stdout.split("amplitude = ")[1].split()[0])
    assert value == pytest.approx(0.4, abs=0.01)
    out = tmp_path / "post.nc"
    p = swe_cmd(str(path), "--chains", "1", "--warmup", "40", "--draws", "40", "-o", str(out))
    assert p.returncode == 0, p.stderr
    assert "divergences after warm-up" in p.stdout and "min bulk ESS per 1000" in p.stdout
    assert "truth inside the 90% interval" in p.stdout and out.exists()
    posterior = xr.open_datatree(out)["posterior"]
    assert posterior["amplitude"].shape == (1, 40)
    assert float(posterior["amplitude"].mean()) == pytest.approx(0.4, abs=0.01)


def test_a_parameter_the_records_ignore_is_named():
    """A parameter the forward run does not use shows up as uninformed at the fit (cal.sample
    warns with its name); one that moves the wave does not."""
    from swe.calibration.likelihood import build_posterior
    from swe.calibration.sampling import Counter, _laplace_covariance, uninformed

    def forward(p):  # "n_typo" never reaches the model
        return fixed_step({"amplitude": p["amplitude"]})

    priors = {"amplitude": cal.Normal(0.3, 0.2), "n_typo": cal.LogNormal(-3.5, 0.3)}
    obs = observed(fixed_step, {"amplitude": 0.35})
    post = build_posterior(forward, priors, obs, noise=0.01)
    z = post.unconstrained({"amplitude": 0.35, "n_typo": 0.03})
    cov, hess = _laplace_covariance(post, z, Counter())
    assert cov is not None
    assert uninformed(post, z, hess) == ["n_typo"]

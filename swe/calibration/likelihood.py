"""Gauge observations, noise models and the log posterior of a forward model's parameters.

The forward model is any ``forward(params) -> swe.Result`` that saves frames at the
observation times and records the observed gauges. Its predictions are read at the cells
that contain the gauges (as in the output files), compared with the observations through a
Gaussian noise model, and the whole log posterior is differentiated with ``jax.grad``
through the run.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import os
from collections.abc import Callable, Mapping

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..errors import check_finite_scalar
from ..state import desingularised_velocity
from .priors import AbstractPrior, check_priors

VARIABLES = ("eta", "h", "u", "v")
_LOG_2PI = math.log(2.0 * math.pi)


class AR1(eqx.Module):
    """AR(1)-correlated Gaussian noise along each gauge's series.

    Residuals ``r_k = obs_k - pred_k`` of one gauge follow a stationary Gauss-Markov
    (Ornstein-Uhlenbeck) process of standard deviation ``sigma`` (the variable's units) whose
    correlation between consecutive observation times is ``rho`` in ``[0, 1)``: for a gap of
    ``m`` observation steps (missing values) it is ``rho**m``. ``sigma`` and ``rho`` are numbers
    or priors (then inferred, as parameters ``noise`` and ``noise_rho``). Independent noise on
    tsunami gauges can make MCMC fail to converge (Giraldi et al. 2017, Comput. Geosci.).
    """

    sigma: object
    rho: object

    def __check_init__(self):
        _check_noise_value("AR1 sigma", self.sigma, positive=True)
        _check_noise_value("AR1 rho", self.rho, unit=True)


def _check_noise_value(name, value, positive=False, unit=False):
    if isinstance(value, AbstractPrior):
        return value
    if positive:
        return check_finite_scalar(name, value, lower=0.0, lower_open=True)
    return check_finite_scalar(name, value, lower=0.0, upper=1.0, upper_open=True)


@dataclasses.dataclass(frozen=True)
class _Noise:
    """The noise model of one observed variable: ``sigma`` and ``rho`` (None: independent),
    each a float or the name of an inferred parameter."""

    sigma: float | str
    rho: float | str | None


def check_noise(noise, variables) -> tuple[dict[str, _Noise], dict[str, AbstractPrior]]:
    """Per-variable noise models and the priors of the inferred noise parameters.

    ``noise``: a number (standard deviation), a prior, an :class:`AR1`, or a dict
    ``{variable: one of those}`` covering every observed variable.
    """
    if isinstance(noise, Mapping):
        missing = [v for v in variables if v not in noise]
        extra = [k for k in noise if k not in variables]
        if missing or extra:
            raise ValueError(f"noise has the keys {sorted(noise)!r}; expected one entry for each "
                             f"observed variable {list(variables)!r}")
        specs = {v: noise[v] for v in variables}
        suffix = {v: f"_{v}" for v in variables}
    else:
        specs = {v: noise for v in variables}
        suffix = {v: "" for v in variables}
    models, priors = {}, {}
    for var, spec in specs.items():
        rho = None
        if isinstance(spec, AR1):
            sigma, rho = spec.sigma, spec.rho
        else:
            sigma = spec
        if not isinstance(sigma, AbstractPrior):
            if isinstance(sigma, bool) or not isinstance(sigma, numbers.Real):
                raise ValueError(f"noise={spec!r} is invalid; expected a standard deviation "
                                 "(a number > 0, in the variable's units), a prior such as "
                                 "cal.HalfNormal(0.1), cal.AR1(sigma, rho), or a dict of these "
                                 "per variable")
            sigma = _check_noise_value("noise", sigma, positive=True)
        names = {}
        for key, value in (("sigma", sigma), ("rho", rho)):
            if isinstance(value, AbstractPrior):
                name = ("noise" if key == "sigma" else "noise_rho") + suffix[var]
                priors[name] = value
                names[key] = name
            else:
                names[key] = None if value is None else float(value)
        models[var] = _Noise(names["sigma"], names["rho"])
    return models, priors


def load_observations(observations, base_dir=None):
    """``observations`` as an ``xarray.Dataset`` (a Dataset, or a netCDF path, relative to
    ``base_dir`` if given), checked: variables among ``eta, h, u, v`` with dims
    ``(gauge, time)``, ``time`` in seconds since the run's start, NaN where missing."""
    import xarray as xr

    if isinstance(observations, (str, os.PathLike)):
        path = os.fspath(observations)
        if base_dir is not None and not os.path.isabs(path):
            path = os.path.join(base_dir, path)
        if not os.path.isfile(path):
            raise ValueError(f"observations={os.fspath(observations)!r}: no such file "
                             f"({path}); expected a netCDF file of gauge records")
        with xr.open_dataset(path, decode_timedelta=False) as ds:
            observations = ds.load()
    if not isinstance(observations, xr.Dataset):
        raise ValueError(f"observations={observations!r} is invalid; expected an xarray.Dataset "
                         "(or a netCDF path) with variables among eta, h, u, v, dims "
                         "(gauge, time)")
    found = [v for v in VARIABLES if v in observations.data_vars]
    if not found:
        raise ValueError(f"observations has the variables {sorted(map(str, observations.data_vars))!r}; "
                         f"expected one or more of {list(VARIABLES)!r}")
    for v in found:
        if set(observations[v].dims) != {"gauge", "time"}:
            raise ValueError(f"observations[{v!r}] has dims {observations[v].dims!r}; expected "
                             "('gauge', 'time')")
    for c in ("gauge", "time"):
        if c not in observations.coords:
            raise ValueError(f"observations has no {c!r} coordinate; expected 'gauge' (the gauge "
                             "names used in forward) and 'time' (seconds since the run's start)")
    time = observations["time"].values
    if np.issubdtype(time.dtype, np.timedelta64):
        time = time / np.timedelta64(1, "s")
    elif not np.issubdtype(time.dtype, np.number):
        raise ValueError(f"observations' time has dtype {time.dtype}; expected seconds since "
                         "the run's start (numbers or timedeltas)")
    time = np.asarray(time, dtype=float)
    if not (np.all(np.isfinite(time)) and np.all(np.diff(time) > 0)):
        raise ValueError("observations' time must be finite and strictly increasing (s)")
    out = observations[found].assign_coords(time=time)
    out = out.assign_coords(gauge=np.asarray([str(g) for g in observations["gauge"].values],
                                             dtype=object))
    if not any(np.isfinite(out[v].values).any() for v in found):
        raise ValueError("observations hold no finite value")
    return out


@dataclasses.dataclass
class Likelihood:
    """The data and noise model, ready to evaluate: gauge cells, frame indices, and for AR(1)
    the index of each observation's predecessor in its series."""

    variables: tuple[str, ...]
    noise: dict          # var -> _Noise
    obs: dict            # var -> (gauge, time), zeros where missing
    mask: dict           # var -> bool (gauge, time)
    first: dict          # var -> bool: the first observation of its gauge's series
    prev: dict           # var -> index of the previous observation of the same gauge
    lag: dict            # var -> the gap to it, in observation steps
    steps: np.ndarray    # observation times in observation steps from the first
    cell_j: np.ndarray
    cell_i: np.ndarray
    frame: np.ndarray    # the run's output frame of each observation time

    def predict(self, result) -> dict:
        """Predictions ``(gauge, time)`` of every observed variable from a Result."""
        states = result.states
        j, i = self.cell_j, self.cell_i
        h = states.h[self.frame][:, j, i].T
        out = {}
        for v in self.variables:
            if v == "h":
                out[v] = h
            elif v == "eta":
                out[v] = h + result.model.bed[j, i][:, None]
            else:
                q = (states.hu if v == "u" else states.hv)[self.frame][:, j, i].T
                out[v] = desingularised_velocity(h, q, result.model.h_dry)
        return out

    def log_likelihood(self, predictions: dict, noise_params: dict):
        total = 0.0
        for v in self.variables:
            model = self.noise[v]
            sigma = _value(model.sigma, noise_params)
            mask = self.mask[v]
            r = jnp.where(mask, self.obs[v] - predictions[v], 0.0)
            if model.rho is None:
                mean = 0.0
                var = sigma**2 * jnp.ones_like(r)
            else:
                rho = _value(model.rho, noise_params)
                phi = jnp.where(self.first[v], 0.0, rho ** self.lag[v])
                mean = phi * jnp.take_along_axis(r, self.prev[v], axis=1)
                var = sigma**2 * (1.0 - phi**2)
            z = (r - mean) ** 2 / var + jnp.log(var) + _LOG_2PI
            total = total - 0.5 * jnp.sum(jnp.where(mask, z, 0.0))
        return total

    def simulate_noise(self, key, noise_params: dict, shape=()) -> dict:
        """Noise draws of every variable, ``shape + (gauge, time)``, from the noise model."""
        out = {}
        for v, k in zip(self.variables, jax.random.split(key, len(self.variables))):
            model = self.noise[v]
            sigma = _value(model.sigma, noise_params)
            eps = jax.random.normal(k, shape + self.obs[v].shape)
            if model.rho is None:
                out[v] = sigma * eps
                continue
            # The OU process at the observation times, in time order; missing times included
            # so that the gaps need no special case.
            rho = _value(model.rho, noise_params)
            eps = jnp.moveaxis(eps, -1, 0)
            gap = np.diff(self.steps, prepend=self.steps[0])

            def step(prev, xs):
                e, m = xs
                phi = rho**m
                cur = jnp.where(m == 0, sigma * e, phi * prev + sigma * jnp.sqrt(1 - phi**2) * e)
                return cur, cur
            _, series = jax.lax.scan(step, jnp.zeros(eps.shape[1:]), (eps, jnp.asarray(gap)))
            out[v] = jnp.moveaxis(series, 0, -1)
        return out


def _value(spec, params):
    return params[spec] if isinstance(spec, str) else spec


def _series_links(mask: np.ndarray, steps: np.ndarray):
    """For AR(1): whether each entry opens its gauge's series, the index of the previous
    observed entry of the same gauge, and the gap in observation steps."""
    g, t = mask.shape
    first = np.zeros((g, t), bool)
    prev = np.zeros((g, t), np.int32)
    lag = np.ones((g, t))
    for a in range(g):
        last = -1
        for b in range(t):
            if not mask[a, b]:
                continue
            if last < 0:
                first[a, b] = True
            else:
                prev[a, b] = last
                lag[a, b] = steps[b] - steps[last]
            last = b
    return first, prev, lag


def build_likelihood(observations, noise, result, dtype) -> tuple[Likelihood, dict]:
    """The :class:`Likelihood` of ``observations`` against a probe run's ``result`` (which
    tells the gauge cells and output times), and the priors of inferred noise parameters."""
    variables = tuple(v for v in VARIABLES if v in observations.data_vars)
    models, noise_priors = check_noise(noise, variables)
    gauges = {g.name: g for g in result.gauges}
    names = list(observations["gauge"].values)
    missing = [n for n in names if n not in gauges]
    if missing:
        raise ValueError(f"observations name the gauges {missing!r}, which forward's run does "
                         f"not record (it records {sorted(gauges)!r}); pass them to "
                         "swe.simulate(..., gauges=...)")
    grid = result.model.grid
    cells = [grid.cell_index(gauges[n].x, gauges[n].y) for n in names]
    run_times = np.asarray(result.times, dtype=float)
    obs_times = np.asarray(observations["time"].values, dtype=float)
    tol = 1e-9 * max(1.0, float(np.max(np.abs(run_times))))
    frame = np.searchsorted(run_times, obs_times - tol)
    frame = np.minimum(frame, run_times.size - 1)
    off = np.abs(run_times[frame] - obs_times) > tol
    if off.any():
        raise ValueError(f"observation times {obs_times[off][:5].tolist()!r} (s) are not output "
                         "times of forward's run; save at them with swe.simulate(..., "
                         f"save_at=...) (the run saves at {run_times[:8].tolist()!r}"
                         f"{' ...' if run_times.size > 8 else ''})")
    spacing = np.diff(obs_times)
    unit = float(spacing.min()) if spacing.size else 1.0
    steps = np.rint((obs_times - obs_times[0]) / unit).astype(float) if spacing.size else np.zeros(1)
    obs, mask, first, prev, lag = {}, {}, {}, {}, {}
    for v in variables:
        values = np.asarray(observations[v].transpose("gauge", "time").values, dtype=float)
        m = np.isfinite(values)
        if models[v].rho is not None and spacing.size and not np.allclose(
                spacing / unit, np.rint(spacing / unit), atol=1e-6):
            raise ValueError("cal.AR1 needs observation times on a regular step (missing values "
                             "as NaN); the observations' time spacing is irregular")
        obs[v] = jnp.asarray(np.where(m, values, 0.0), dtype)
        mask[v] = jnp.asarray(m)
        f, p, lg = _series_links(m, steps)
        first[v], prev[v], lag[v] = jnp.asarray(f), jnp.asarray(p), jnp.asarray(lg, dtype)
    like = Likelihood(variables=variables, noise=models, obs=obs, mask=mask, first=first,
                      prev=prev, lag=lag, cell_j=np.array([c[0] for c in cells]),
                      cell_i=np.array([c[1] for c in cells]), frame=frame, steps=steps)
    return like, noise_priors


class Posterior:
    """The log posterior of a forward model's parameters, in an unconstrained space.

    ``names`` orders the parameters of the flat vector ``z``: the forward model's, then the
    inferred noise parameters. :meth:`log_density` is what the sampler sees: ``-inf`` for a
    failed run, with a finite (zero) gradient there.
    """

    def __init__(self, forward: Callable, priors: dict, likelihood: Likelihood,
                 noise_priors: dict, dtype, observations):
        self.forward = forward
        self.observations = observations
        self.model_names = tuple(priors)
        self.priors = {**priors, **noise_priors}
        self.names = tuple(self.priors)
        self.likelihood = likelihood
        self.dtype = dtype
        self.log_density = _guarded(self._log_density)

    def with_observations(self, values: Mapping) -> "Posterior":
        """The same posterior for other records of the same gauges and times (``{variable:
        (gauge, time) array}``, traceable): what simulation-based calibration vmaps over."""
        like = dataclasses.replace(self.likelihood, obs={
            v: jnp.where(self.likelihood.mask[v], values[v], 0.0) for v in self.likelihood.variables})
        return Posterior(self.forward, {n: self.priors[n] for n in self.model_names}, like,
                         {n: p for n, p in self.priors.items() if n not in self.model_names},
                         self.dtype, self.observations)

    def constrained(self, z) -> dict:
        return {n: p.to_constrained(z[..., k]) for k, (n, p) in enumerate(self.priors.items())}

    def unconstrained(self, values: Mapping) -> jnp.ndarray:
        return jnp.stack([jnp.asarray(p.to_unconstrained(jnp.asarray(values[n], self.dtype)))
                          for n, p in self.priors.items()])

    def log_prior(self, z):
        return sum(p.log_density_unconstrained(z[k]) for k, p in enumerate(self.priors.values()))

    def predictions(self, z):
        """Predictions at the gauges and whether the run failed, at unconstrained ``z``."""
        params = self.constrained(z)
        result = self.forward({n: params[n] for n in self.model_names})
        pred = self.likelihood.predict(result)
        failed = jnp.asarray(result.failed)
        for v, p in pred.items():
            failed = failed | ~jnp.all(jnp.where(self.likelihood.mask[v], jnp.isfinite(p), True))
        return pred, failed

    def _log_density(self, z):
        params = self.constrained(z)
        pred, failed = self.predictions(z)
        # The double-where guard: a failed run's NaN predictions never reach the arithmetic.
        safe = {v: jnp.where(failed, self.likelihood.obs[v], p) for v, p in pred.items()}
        lp = self.log_prior(z) + self.likelihood.log_likelihood(safe, params)
        return jnp.where(failed | ~jnp.isfinite(lp), -jnp.inf, lp)


def _guarded(fn):
    """``fn`` whose gradient is zero wherever its value is not finite.

    A failed run's reverse pass goes through NaN states, and zero cotangents times NaN
    Jacobians are NaN; the sampler needs a finite gradient with the ``-inf`` to reject the
    proposal as a divergence and go on.
    """

    @jax.custom_vjp
    def guarded(z):
        return fn(z)

    def fwd(z):
        value, grad = jax.value_and_grad(fn)(z)
        grad = jnp.where(jnp.isfinite(value), grad, 0.0)
        return value, grad

    def bwd(grad, g):
        return (g * grad,)

    guarded.defvjp(fwd, bwd)
    return guarded


def build_posterior(forward, priors, observations, noise, probe_values=None, base_dir=None,
                    dtype=None) -> Posterior:
    """Check everything against one probe run of ``forward`` and return the
    :class:`Posterior`. The probe runs at ``probe_values`` (default: the prior medians)."""
    if not callable(forward):
        raise ValueError(f"forward={forward!r} is invalid; expected a function "
                         "forward(params: dict) -> swe.Result")
    priors = check_priors(priors)
    observations = load_observations(observations, base_dir)
    values = {n: p.median for n, p in priors.items()} if probe_values is None else probe_values
    if dtype is None:
        dtype = jnp.float64 if jax.config.read("jax_enable_x64") else jnp.float32
    try:
        result = forward({n: jnp.asarray(values[n], dtype) for n in priors})
    except Exception as e:  # noqa: BLE001 - the user's function; name what it was given
        raise ValueError(f"forward(params) raised {type(e).__name__}: {e} (params: "
                         f"{_describe(values, priors)}; the priors name the parameters "
                         f"{list(priors)!r})") from e
    from ..simulate import Result

    if not isinstance(result, Result):
        raise ValueError(f"forward(params) returned {type(result).__name__}; expected the "
                         "swe.Result of swe.simulate(..., gauges=..., throw=False)")
    like, noise_priors = build_likelihood(observations, noise, result, dtype)
    clash = set(noise_priors) & set(priors)
    if clash:
        raise ValueError(f"priors name {sorted(clash)!r}, which are the inferred noise "
                         "parameters' names; rename them")
    return Posterior(forward, priors, like, noise_priors, dtype, observations)


def _describe(values, priors) -> str:
    return ", ".join(f"{n}={float(values[n]):.6g}" for n in priors)


def synthetic_observations(forward, truth: Mapping, *, noise, variables=("eta",), seed: int = 0,
                           gauges=None):
    """Gauge records for a twin experiment: ``forward(truth)``'s series at its output
    times plus noise drawn from ``noise`` (a standard deviation or an
    :class:`AR1` of numbers). An ``xarray.Dataset`` as :func:`sample` takes it, with the
    true parameters in its attributes (``truth_<name>``)."""
    import xarray as xr

    for v in variables:
        if v not in VARIABLES:
            raise ValueError(f"variables has {v!r}; expected some of {list(VARIABLES)!r}")
    result = forward({k: jnp.asarray(float(v)) for k, v in truth.items()})
    if bool(np.asarray(result.failed)):
        raise ValueError(f"forward(truth) failed (truth: {dict(truth)!r})")
    names = [g.name for g in result.gauges] if gauges is None else list(gauges)
    if not names:
        raise ValueError("forward's run records no gauges; pass gauges=... to swe.simulate")
    times = np.asarray(result.times, dtype=float)
    frame = xr.Dataset({v: (("gauge", "time"), np.zeros((len(names), times.size)))
                        for v in variables}, coords={"gauge": names, "time": times})
    noise_model, noise_priors = check_noise(noise, variables)
    if noise_priors:
        raise ValueError("synthetic_observations needs numbers for the noise, not priors")
    like, _ = build_likelihood(frame, noise, result, jnp.asarray(0.0).dtype)
    clean = like.predict(result)
    draws = like.simulate_noise(jax.random.key(seed), {})
    data = {v: (("gauge", "time"), np.asarray(clean[v] + draws[v]),
                {"units": "m" if v in ("eta", "h") else "m s-1"}) for v in variables}
    attrs = {f"truth_{k}": float(v) for k, v in truth.items()}
    time_attrs = {"units": "s", "long_name": "time since the start of the run"}
    return xr.Dataset(data, coords={"gauge": ("gauge", np.asarray(names, dtype=object)),
                                    "time": ("time", times, time_attrs)}, attrs=attrs)

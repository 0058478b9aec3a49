"""MAP fits and NUTS sampling of a :class:`~swe.calibration.likelihood.Posterior`.

NUTS (Hoffman & Gelman 2014) from BlackJAX, tuned by Stan's window adaptation (step size by
dual averaging, a diagonal mass matrix from the warm-up draws). Chains run vmapped on one
device, or split over devices (``jax.shard_map``) when several exist, so that a chain
never waits for another device's trajectories. Each draw's random key is derived from the
seed, the chain and the draw index alone: the same seed gives the same chains whatever the
chunking of the progress display. Split over another number of devices, the chains agree
to round-off (XLA fuses another batch of chains differently), which a long chain can
amplify into other draws.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import math
import sys
import threading
import time
import warnings
from collections.abc import Mapping
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import check_finite_scalar, check_positive_int
from .likelihood import Posterior, build_posterior

# Draws of the posterior predictive kept per chain (evenly thinned).
PREDICTIVE_DRAWS = 100
# BFGS fits behind init="map": from the prior median and from prior draws.
MAP_STARTS = 4


class Counter:
    """Forward runs and gradients (each gradient is one run and its reverse pass)."""

    def __init__(self):
        self.forward = 0
        self.gradient = 0


def _check_init(posterior: Posterior, z: jnp.ndarray, what: str):
    lp = float(jax.jit(posterior.log_density)(z))
    if not math.isfinite(lp):
        values = posterior.constrained(z)
        shown = ", ".join(f"{n}={float(values[n]):.6g}" for n in posterior.names)
        raise ValueError(f"{what} ({shown}) has log density {lp}: the forward run fails or the "
                         "parameters lie outside the priors' support; choose another init")
    return lp


def _optimise(posterior: Posterior, z0, counter: Counter, max_steps: int = 200):
    """Maximise the log posterior in the unconstrained space: BFGS with a dogleg trust
    region, in units of each prior's spread (so that the first trust region spans about
    one prior standard deviation and no step flies to parameters that stall the run)."""
    import optimistix as optx

    scale = jnp.asarray([p.unconstrained_scale for p in posterior.priors.values()], z0.dtype)

    def loss(w, _):
        return -posterior.log_density(z0 + scale * w)

    sol = optx.minimise(loss, _trust_region_bfgs()(rtol=1e-7, atol=1e-7), jnp.zeros_like(z0),
                        max_steps=max_steps, throw=False)
    counter.gradient += int(sol.stats["num_steps"]) + 1
    z = z0 + scale * sol.value
    lp = float(jax.jit(posterior.log_density)(z))
    counter.forward += 1
    if not math.isfinite(lp) or lp < float(jax.jit(posterior.log_density)(z0)):
        return z0
    return z


@functools.cache
def _trust_region_bfgs():
    import lineax as lx
    import optimistix as optx

    class TrustRegionBFGS(optx.AbstractBFGS):
        rtol: float
        atol: float
        norm: object = optx.max_norm
        use_inverse: bool = False
        search: object = optx.ClassicalTrustRegion()
        descent: object = optx.DoglegDescent(linear_solver=lx.AutoLinearSolver(well_posed=False))
        verbose: object = lambda **_: None  # noqa: E731

    return TrustRegionBFGS


def _best_map(posterior: Posterior, z0, key, counter: Counter, max_steps: int = 200):
    """The best of BFGS fits from ``z0`` (the prior median) and from ``MAP_STARTS - 1``
    draws of the priors: the chains start around the fit, and a fit from one point can end
    in a lower mode (a source's mirror image, an alias of a wave's period)."""
    logdensity = jax.jit(posterior.log_density)
    best, best_lp = z0, -math.inf
    keys = jax.random.split(key, MAP_STARTS - 1)
    starts = [z0] + [jnp.stack([p.to_unconstrained(p.sample(jax.random.fold_in(k, i)))
                                for i, p in enumerate(posterior.priors.values())]
                               ).astype(z0.dtype) for k in keys]
    for start in starts:
        counter.forward += 1
        if not math.isfinite(float(logdensity(start))):
            continue
        z = _optimise(posterior, start, counter, max_steps)
        lp = float(logdensity(z))
        if lp > best_lp:
            best, best_lp = z, lp
    return best


def _laplace_covariance(posterior: Posterior, z, counter: Counter):
    """The inverse Hessian of ``-log p`` at ``z`` by central differences of the gradient
    (2 d gradients), or None where it is not positive definite; and the Hessian itself."""
    grad = jax.jit(jax.grad(posterior.log_density))
    d = z.shape[0]
    eps = [1e-4 * p.unconstrained_scale for p in posterior.priors.values()]
    cols = []
    for k in range(d):
        e = jnp.zeros(d).at[k].set(eps[k])
        cols.append((grad(z + e) - grad(z - e)) / (2 * eps[k]))
    counter.gradient += 2 * d
    hess = -np.asarray(jnp.stack(cols, axis=1))
    hess = 0.5 * (hess + hess.T)
    if not np.all(np.isfinite(hess)):
        return None, hess
    try:
        np.linalg.cholesky(hess)
    except np.linalg.LinAlgError:
        return None, hess
    return np.linalg.inv(hess), hess


def uninformed(posterior: Posterior, z, hess) -> list[str]:
    """The model parameters the records say nothing about at ``z``: those whose curvature
    of ``-log p`` (``hess``, from :func:`_laplace_covariance`) is the prior's alone, to
    within the finite differences' error. A parameter the forward run ignores (a typo in
    its name inside ``forward``, a zone that never floods within the records) is one."""
    prior = -np.asarray(jax.hessian(posterior.log_prior)(z))
    out = []
    for k, name in enumerate(posterior.model_names):
        data = hess[k, k] - prior[k, k]
        if np.isfinite(data) and abs(data) <= 1e-6 * max(abs(prior[k, k]), 1e-300):
            out.append(name)
    return out


def map_estimate(forward, priors, observations, *, noise, init=None, max_steps: int = 200,
                 seed: int = 0, base_dir=None) -> dict:
    """The maximum a posteriori parameters (a dict of floats), by BFGS in the unconstrained
    space: from ``init`` (a dict of values), or the best of fits from the prior medians and
    from ``MAP_STARTS - 1`` prior draws (``seed``)."""
    posterior = build_posterior(forward, priors, observations, noise, probe_values=init,
                                base_dir=base_dir)
    z0 = _start(posterior, init)
    _check_init(posterior, z0, "init")
    max_steps = check_positive_int("max_steps", max_steps)
    if init is None:
        z = _best_map(posterior, z0, jax.random.key(seed), Counter(), max_steps)
    else:
        z = _optimise(posterior, z0, Counter(), max_steps)
    return {n: float(v) for n, v in posterior.constrained(z).items()}


def _start(posterior: Posterior, init) -> jnp.ndarray:
    values = {n: p.median for n, p in posterior.priors.items()}
    if isinstance(init, Mapping):
        unknown = [k for k in init if k not in posterior.priors]
        if unknown:
            raise ValueError(f"init names {unknown!r}, which are not parameters; expected "
                             f"some of {list(posterior.names)!r}")
        for k, v in init.items():
            if not posterior.priors[k].in_support(float(v)):
                raise ValueError(f"init[{k!r}]={v!r} lies outside the support of its prior "
                                 f"{posterior.priors[k]!r}")
            values[k] = float(v)
    return posterior.unconstrained(values).astype(posterior.dtype)


def _chain_mesh(chains: int, devices):
    """A 1-D mesh over the devices that share the chains evenly (None: one device)."""
    devices = jax.devices() if devices is None else list(devices)
    n = max((d for d in range(1, len(devices) + 1) if chains % d == 0), default=1)
    if n == 1:
        return None
    return jax.sharding.Mesh(np.asarray(devices[:n]), ("chain",),
                             axis_types=(jax.sharding.AxisType.Auto,))


def _over_chains(fn, mesh):
    """``fn`` of one chain, vmapped over a leading chain axis and split over ``mesh``."""
    batched = jax.vmap(fn)
    if mesh is None:
        return jax.jit(batched)
    from ..parallel import _compare_closures_without_sharding

    _compare_closures_without_sharding()  # gradients of diffrax inside shard_map
    spec = jax.sharding.PartitionSpec("chain")
    return jax.jit(jax.shard_map(batched, mesh=mesh, in_specs=spec, out_specs=spec,
                                 check_vma=False))


class Draws(NamedTuple):
    """One chain's draws (leading axis: draw) and their NUTS statistics."""

    position: jnp.ndarray      # unconstrained
    lp: jnp.ndarray
    diverging: jnp.ndarray
    acceptance_rate: jnp.ndarray
    n_steps: jnp.ndarray
    tree_depth: jnp.ndarray


DENSE_MASS_MAX_PARAMETERS = 10  # above this, the warm-up adapts a diagonal mass matrix


def warm_up(logdensity, key, z0, num_steps: int, inverse_mass_matrix=None,
            max_doublings: int = 10, target_accept: float = 0.8):
    """Stan's window adaptation of one NUTS chain from ``z0``: the last state, the tuned
    ``step_size`` and ``inverse_mass_matrix``, and the gradients and divergences it took.
    A 2-D ``inverse_mass_matrix`` (a covariance) makes the adapted matrix dense; a 1-D one
    or None, diagonal."""
    import blackjax

    adapt = blackjax.window_adaptation(blackjax.nuts, logdensity,
                                       max_num_doublings=max_doublings,
                                       initial_inverse_mass_matrix=inverse_mass_matrix,
                                       is_mass_matrix_diagonal=inverse_mass_matrix is None
                                       or inverse_mass_matrix.ndim == 1,
                                       target_acceptance_rate=target_accept)
    (state, params), info = adapt.run(key, z0, num_steps=num_steps)
    params = {k: params[k] for k in ("step_size", "inverse_mass_matrix")}
    return (state, params, jnp.sum(info.info.num_integration_steps),
            jnp.sum(info.info.is_divergent))


def draw(logdensity, state, params, key, first, num_draws: int, max_doublings: int = 10):
    """``num_draws`` NUTS transitions of one chain; draw ``i`` uses ``fold_in(key, i)``,
    counting from ``first``. Returns the last state and the :class:`Draws`."""
    import blackjax

    kernel = blackjax.nuts(logdensity, step_size=params["step_size"],
                           inverse_mass_matrix=params["inverse_mass_matrix"],
                           max_num_doublings=max_doublings)

    def body(state, i):
        state, info = kernel.step(jax.random.fold_in(key, i), state)
        return state, Draws(state.position, state.logdensity, info.is_divergent,
                            info.acceptance_rate, info.num_integration_steps,
                            info.num_trajectory_expansions)
    return jax.lax.scan(body, state, first + jnp.arange(num_draws))


class _Progress:
    """A one-line bar on a terminal: draws done, divergences, elapsed time."""

    def __init__(self, enabled: bool, stream=None):
        self.stream = sys.stderr if stream is None else stream
        self.enabled = enabled and bool(getattr(self.stream, "isatty", lambda: False)())

    @contextlib.contextmanager
    def ticking(self, label: str):
        """An elapsed-time line, redrawn every second, while a compiled call runs (the
        warm-up is one call: its steps cannot report from inside)."""
        if not self.enabled:
            yield
            return
        stop = threading.Event()
        start = time.perf_counter()

        def tick():
            while not stop.wait(1.0):
                self.stream.write(f"\r{label} {time.perf_counter() - start:.0f} s")
                self.stream.flush()
        thread = threading.Thread(target=tick, daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
            self.stream.write(f"\r{label} {time.perf_counter() - start:.0f} s\n")
            self.stream.flush()

    def bar(self, label: str, done: int, total: int, start: float, extra: str = ""):
        if not self.enabled:
            return
        width = 30
        filled = int(round(width * done / max(total, 1)))
        self.stream.write(f"\r{label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total} "
                          f"{time.perf_counter() - start:.0f} s {extra}")
        if done >= total:
            self.stream.write("\n")
        self.stream.flush()


def sample(forward, priors, observations, *, noise, chains: int = 4, warmup: int = 500,
           draws: int = 1000, seed: int = 0, init="map", progress: bool = True,
           devices=None, base_dir=None, max_doublings: int = 10,
           target_accept: float = 0.8):
    """Sample the posterior of ``priors``' parameters given gauge ``observations`` with NUTS.

    * ``forward(params) -> swe.Result``: ``params`` maps each prior's name to a scalar; the
      run must record the observed gauges (``gauges=``), save frames at the observation
      times (``save_at=``) and should use ``throw=False`` (a failed run is then a rejected
      proposal, counted as a divergence, instead of an exception).
    * ``priors``: ``{name: cal.Normal | cal.LogNormal | cal.Uniform | cal.HalfNormal}``.
    * ``observations``: an ``xarray.Dataset`` (or a netCDF path) with variables among
      ``eta, h, u, v`` of dims ``(gauge, time)``; ``time`` in s since the run's start; NaN
      where missing.
    * ``noise``: the observation noise: a standard deviation (the variable's units), a prior
      (inferred as the parameter ``noise``), :class:`~swe.calibration.AR1`, or a dict of
      these per variable (parameters ``noise_<variable>``).
    * ``init``: ``"map"`` (chains start around the MAP, spread by its Laplace covariance,
      which also seeds the warm-up's mass matrix), ``"prior"`` (draws from the priors) or a
      dict of values.
    * ``devices``: the devices to split the chains over (default all; chains run vmapped on
      each).
    * ``target_accept``: the mean acceptance rate the warm-up tunes the step size for
      (Stan's 0.8). Raise it (0.9, 0.95) when divergences remain after warm-up: smaller
      steps follow sharper curvature, at the price of more gradients per draw.

    Returns an ``xarray.DataTree`` in ArviZ's layout: ``posterior`` (one variable per
    parameter, dims ``(chain, draw)``), ``sample_stats``, ``observed_data`` and
    ``posterior_predictive`` (thinned draws, noise included); its attributes hold the wall
    time and the number of forward runs and gradients.
    """
    chains = check_positive_int("chains", chains)
    warmup = check_positive_int("warmup", warmup)
    draws = check_positive_int("draws", draws)
    max_doublings = check_positive_int("max_doublings", max_doublings)
    target_accept = check_finite_scalar("target_accept", target_accept, lower=0.0, upper=1.0,
                                        lower_open=True, upper_open=True)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ValueError(f"seed={seed!r} is invalid; expected an integer")
    if not (init in ("map", "prior") or isinstance(init, Mapping)):
        raise ValueError(f"init={init!r} is invalid; expected 'map', 'prior' or a dict of "
                         "parameter values")
    started = time.perf_counter()
    show = _Progress(progress)
    counter = Counter()
    posterior = build_posterior(forward, priors, observations, noise,
                                probe_values=init if isinstance(init, Mapping) else None,
                                base_dir=base_dir)
    counter.forward += 1
    d = len(posterior.names)
    key = jax.random.key(seed)
    k_init, k_warm, k_draw, k_pred = jax.random.split(key, 4)
    logdensity = jax.jit(posterior.log_density)

    # Starting points, and the Laplace covariance that seeds the mass matrix.
    cov = None
    z0 = _start(posterior, init)
    if init == "map":
        _check_init(posterior, z0, "the prior median")
        with show.ticking(f"MAP fit of {d} parameters from {MAP_STARTS} starting points"):
            z0 = _best_map(posterior, z0, jax.random.fold_in(k_init, 1), counter)
            cov, hess = _laplace_covariance(posterior, z0, counter)
        ignored = uninformed(posterior, z0, hess)
        if ignored:
            warnings.warn(f"the records carry no information about {ignored!r}: the forward "
                          "run's predictions at the gauges do not change with them at the "
                          "MAP fit (does forward use them? do the records cover the time "
                          "they act?); their posterior will be their prior", stacklevel=2)
    if init == "prior":
        keys = jax.random.split(k_init, chains)
        starts = jnp.stack([
            jnp.stack([p.to_unconstrained(p.sample(jax.random.fold_in(keys[c], k)))
                       for k, p in enumerate(posterior.priors.values())])
            for c in range(chains)]).astype(posterior.dtype)
    else:
        scale = np.sqrt(np.diag(cov)) if cov is not None else 0.1 * np.ones(d)
        jitter = jax.random.normal(k_init, (chains, d), posterior.dtype)
        spread = jnp.asarray(scale, posterior.dtype)[None, :] * jitter
        starts = z0[None, :] + spread if chains > 1 else z0[None, :]
    for c in range(chains):
        lp = float(logdensity(starts[c]))
        counter.forward += 1
        if not math.isfinite(lp):
            if init == "map":
                starts = starts.at[c].set(z0)  # the MAP itself was checked
            else:
                _check_init(posterior, starts[c], f"chain {c}'s starting point")

    # Warm-up: Stan's windows, vmapped (or split over devices) across chains.
    mesh = _chain_mesh(chains, devices)
    # A dense mass matrix where the warm-up's windows have enough draws to estimate it:
    # calibrated coefficients often trade off (two Manning zones, a source's amplitude and
    # extent), and a diagonal one leaves NUTS long trajectories along the ridge.
    if cov is None:
        imm = None
    elif d <= DENSE_MASS_MAX_PARAMETERS:
        imm = jnp.asarray(cov)
    else:
        imm = jnp.asarray(np.diag(cov))
    t_warm = time.perf_counter()
    with show.ticking(f"warm-up: {chains} chains x {warmup} steps"):
        state, params, warm_steps, warm_div = _over_chains(
            lambda k, z: warm_up(posterior.log_density, k, z, warmup, imm, max_doublings,
                                 target_accept),
            mesh)(jax.random.split(k_warm, chains), starts)
        jax.block_until_ready(state)
    warm_time = time.perf_counter() - t_warm
    counter.gradient += int(jnp.sum(warm_steps)) + chains

    # Sampling in equal chunks (one compiled function) so that the bar moves; the few
    # surplus draws of the last chunk are dropped.
    chain_keys = jax.random.split(k_draw, chains)
    n_chunks = -(-draws // 50)
    chunk = -(-draws // n_chunks)
    chunk_fn = _over_chains(
        lambda s, p, k, f: draw(posterior.log_density, s, p, k, f, chunk, max_doublings), mesh)
    pieces = []
    t_draw = time.perf_counter()
    for c in range(n_chunks):
        firsts = jnp.full((chains,), c * chunk, dtype=jnp.int32)
        state, out = chunk_fn(state, params, chain_keys, firsts)
        pieces.append(jax.tree.map(np.asarray, out))
        divergent = int(sum(p.diverging.sum() for p in pieces))
        show.bar("sampling", min((c + 1) * chunk, draws), draws, t_draw,
                 f"{divergent} divergent")
    sample_time = time.perf_counter() - t_draw
    positions, lps, divergent, accept, n_steps, depth = (
        np.concatenate([p[k] for p in pieces], axis=1)[:, :draws] for k in range(6))
    counter.gradient += int(n_steps.sum())

    # The posterior predictive at thinned draws, noise included.
    keep = np.unique(np.linspace(0, draws - 1, min(draws, PREDICTIVE_DRAWS)).round().astype(int))
    zs = jnp.asarray(positions[:, keep])

    def predict(z, k):
        pred, failed = posterior.predictions(z)
        noise_draw = posterior.likelihood.simulate_noise(k, posterior.constrained(z))
        return {v: jnp.where(failed, jnp.nan, pred[v] + noise_draw[v]) for v in pred}

    # A batch of runs at a time (lax.map): memory for ``chains`` runs' frames, not all.
    flat = zs.reshape((chains * keep.size, d))
    pred_keys = jax.random.split(k_pred, chains * keep.size)
    predictive = jax.jit(lambda z, k: jax.lax.map(lambda a: predict(*a), (z, k),
                                                  batch_size=chains))(flat, pred_keys)
    predictive = {v: x.reshape((chains, keep.size) + x.shape[1:])
                  for v, x in predictive.items()}
    counter.forward += chains * keep.size

    values = {n: np.asarray(v) for n, v in posterior.constrained(jnp.asarray(positions)).items()}
    stats = dict(diverging=divergent.astype(bool), acceptance_rate=accept,
                 step_size=np.broadcast_to(np.asarray(params["step_size"])[:, None],
                                           (chains, draws)).copy(),
                 n_steps=n_steps.astype(np.int64), tree_depth=depth.astype(np.int64), lp=lps)
    wall = time.perf_counter() - started
    attrs = _attrs(counter, wall, warm_time, sample_time, chains, warmup, draws, seed, init,
                   int(np.asarray(warm_div).sum()), mesh)
    attrs["target_accept"] = float(target_accept)
    return _datatree(posterior, values, stats, predictive, keep, attrs)


def _attrs(counter, wall, warm_time, sample_time, chains, warmup, draws, seed, init,
           warm_divergent, mesh) -> dict:
    import blackjax
    import xarray

    from .. import __version__

    return {
        "created_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "inference_library": "blackjax",
        "inference_library_version": blackjax.__version__,
        "sampler": "NUTS with window adaptation",
        "swe_version": __version__,
        "jax_version": jax.__version__,
        "xarray_version": xarray.__version__,
        "wall_time": wall,
        "warmup_time": warm_time,
        "sampling_time": sample_time,
        "n_forward": counter.forward,
        "n_gradient": counter.gradient,
        "chains": chains,
        "warmup": warmup,
        "draws": draws,
        "seed": int(seed),
        "init": init if isinstance(init, str) else "values",
        "warmup_divergences": warm_divergent,
        "devices": 1 if mesh is None else int(mesh.devices.size),
    }


def _datatree(posterior: Posterior, values, stats, predictive, keep, attrs):
    import xarray as xr

    chains, draws = next(iter(values.values())).shape
    coords = {"chain": np.arange(chains), "draw": np.arange(draws)}
    like = posterior.likelihood
    post = xr.Dataset({n: (("chain", "draw"), v) for n, v in values.items()}, coords=coords,
                      attrs=attrs)
    for n, p in posterior.priors.items():
        post[n].attrs["prior"] = repr(p)
    sample_stats = xr.Dataset({k: (("chain", "draw"), v) for k, v in stats.items()},
                              coords=coords, attrs=attrs)
    obs = posterior.observations
    ppc = xr.Dataset(
        {v: (("chain", "draw", "gauge", "time"), np.asarray(predictive[v]))
         for v in like.variables},
        coords={"chain": np.arange(chains), "draw": keep, "gauge": obs["gauge"].values,
                "time": obs["time"].values}, attrs=attrs)
    from ..output import CONVENTIONS, VARIABLES

    # CF metadata on the gauge records (the parameters have no standard names).
    time_attrs = {"units": "s", "long_name": "time since the start of the run"}
    obs = obs.assign_coords(time=("time", obs["time"].values, time_attrs))
    ppc = ppc.assign_coords(time=("time", obs["time"].values, time_attrs))
    for ds in (obs, ppc):
        ds["gauge"].attrs.update(VARIABLES["gauge"])
        ds.attrs["featureType"] = "timeSeries"
        for v in like.variables:
            ds[v].attrs.update(VARIABLES[f"gauge_{v}"])
    tree = xr.DataTree.from_dict({"posterior": post, "sample_stats": sample_stats,
                                  "observed_data": obs, "posterior_predictive": ppc})
    tree.attrs = {"Conventions": CONVENTIONS, **attrs}
    return tree

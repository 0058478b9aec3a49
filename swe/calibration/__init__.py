"""Bayesian calibration of a model's parameters against gauge records.

``from swe import calibration as cal``. Write ``forward(params) -> swe.Result`` with
:func:`swe.simulate` (``gauges=``, ``save_at=`` the observation times, ``throw=False``),
give priors, observations and a noise model, and :func:`sample` runs NUTS with gradients
through the whole run:

    post = cal.sample(forward, {"n": cal.LogNormal(-3.5, 0.5)}, obs, noise=0.02)
    print(cal.summary(post))

Modules: :mod:`.priors` (distributions and their unconstrained spaces),
:mod:`.likelihood` (observations, noise models, the log posterior), :mod:`.sampling` (MAP
and NUTS), :mod:`.diagnostics` (rank-normalised R-hat and ESS).
"""

from .diagnostics import Summary, ess_bulk, ess_tail, rhat
from .diagnostics import summary as _summary
from .likelihood import (AR1, Posterior, build_posterior, load_observations,
                         synthetic_observations)
from .experiment import Experiment, load_experiment
from .priors import AbstractPrior, HalfNormal, LogNormal, Normal, Uniform
from .sampling import map_estimate, sample


def summary(posterior, var_names=None, prob: float = 0.90) -> Summary:
    """One row per parameter: mean, sd, q05, q95, r_hat, ess_bulk, ess_tail.

    ``posterior``: the DataTree of :func:`sample` (or its ``posterior`` Dataset, or a path
    to the netCDF file it was written to).
    """
    import os

    import xarray as xr

    if isinstance(posterior, (str, os.PathLike)):
        posterior = xr.open_datatree(posterior)
    if isinstance(posterior, xr.DataTree):
        if "posterior" not in posterior.children:
            raise ValueError("the DataTree has no 'posterior' group; expected what "
                             "cal.sample returns")
        posterior = posterior["posterior"].to_dataset()
    return _summary(posterior, var_names=var_names, prob=prob)


__all__ = ["AR1", "AbstractPrior", "Experiment", "load_experiment", "HalfNormal", "LogNormal", "Normal", "Posterior", "Summary",
           "Uniform", "build_posterior", "ess_bulk", "ess_tail", "load_observations",
           "map_estimate", "rhat", "sample", "summary", "synthetic_observations"]

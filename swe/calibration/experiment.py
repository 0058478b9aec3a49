"""Calibration files: a Python file that defines ``forward``, ``priors``, ``observations``
and optionally ``noise`` (and ``TRUTH`` for a twin experiment), as ``swe calibrate`` reads it.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from pathlib import Path

from .likelihood import VARIABLES, load_observations
from .priors import HalfNormal

REQUIRED = ("forward", "priors", "observations")


@dataclasses.dataclass
class Experiment:
    name: str
    forward: object
    priors: dict
    observations: object
    noise: object
    base_dir: str | None
    truth: dict | None


def builtin_experiments() -> list[str]:
    """The twin experiments shipped in ``scenarios/calibration/``."""
    from ..scenario import _scenarios_package

    _scenarios_package()
    package = importlib.import_module("swe.scenarios.calibration")
    return sorted(m.name for m in pkgutil.iter_modules(package.__path__)
                  if not m.name.startswith("_"))


def default_noise(observations):
    """Noise inferred per variable under a half-normal prior on its standard deviation,
    scaled by the spread of that variable's records (weakly informative)."""
    import numpy as np

    out = {}
    for v in VARIABLES:
        if v in observations.data_vars:
            values = np.asarray(observations[v].values, dtype=float)
            scale = float(np.nanstd(values)) or 1.0
            out[v] = HalfNormal(scale)
    return out


def load_experiment(name_or_path: str) -> Experiment:
    """The experiment in a ``.py`` file (or a built-in twin experiment's name)."""
    from ..scenario import is_path, load_file

    if is_path(name_or_path):
        module = load_file(name_or_path, "calibration")
        base_dir = str(Path(name_or_path).resolve().parent)
    else:
        names = builtin_experiments()
        if name_or_path not in names:
            raise ValueError(f"unknown calibration {name_or_path!r}; choose one of "
                             f"{', '.join(names)} or give a path to a .py file")
        module = importlib.import_module(f"swe.scenarios.calibration.{name_or_path}")
        base_dir = str(Path(module.__file__).parent)
    missing = [n for n in REQUIRED if not hasattr(module, n)]
    if missing:
        raise ValueError(f"calibration file {name_or_path!r} does not define "
                         f"{', '.join(missing)}; it must define forward(params) -> swe.Result, "
                         "priors (a dict of cal priors) and observations (a Dataset or a "
                         "netCDF path), and may define noise")
    observations = load_observations(module.observations, base_dir)
    noise = getattr(module, "noise", None)
    if noise is None:
        noise = default_noise(observations)
    return Experiment(name=Path(name_or_path).stem, forward=module.forward,
                      priors=module.priors, observations=observations, noise=noise,
                      base_dir=base_dir, truth=getattr(module, "TRUTH", None))

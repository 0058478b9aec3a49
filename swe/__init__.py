"""swe: a well-balanced, wetting-and-drying, differentiable shallow-water solver in JAX.

The public face. Build a :class:`Grid`, a :class:`ShallowWater` model over a bed, an
initial :class:`State`, then :func:`simulate` and ``Result.to_xarray()``.
"""

from .version import __version__
from .cache import enable_compilation_cache
from .boundaries import AbstractBoundary, Boundaries, Inflow, Outflow, Periodic, Stage, Wall
from .ensemble import EnsembleResult, iterate_ensemble, simulate_ensemble
from .errors import SimulationError
from .grid import Grid
from .scenario import Gauge, Scenario
from .model import FiniteVolume, ShallowWater
from .simulate import Result, iterate, simulate
from .sources import (AbstractForcing, AbstractFriction, AbstractMassSource, BetaPlane, Chezy,
                      FPlane, LinearDrag, Manning, PointSource, Rain, WindStress)
from .state import State

__all__ = [
    "AbstractBoundary", "AbstractForcing", "AbstractFriction", "AbstractMassSource", "Boundaries", "BetaPlane", "Gauge", "Scenario", "Chezy", "FiniteVolume", "FPlane", "Grid", "Inflow",
    "LinearDrag", "Manning", "Outflow", "Periodic", "PointSource", "Rain", "Result",
    "ShallowWater", "SimulationError", "Stage", "State", "Wall", "WindStress", "simulate", "iterate",
    "simulate_ensemble", "iterate_ensemble", "EnsembleResult", "enable_compilation_cache",
    "__version__",
]

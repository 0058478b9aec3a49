"""Scenarios: a model, an initial state, a run length, outputs, gauges and metadata.

A scenario file (built in under ``scenarios/``, installed as ``swe.scenarios``, or any
``.py`` path) exposes ``build(**params) -> swe.Scenario`` in which every parameter has a
default. The defaults live in ``build``'s signature and nowhere else: ``swe list`` and
``--set`` read them from there.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import importlib.util
import inspect
import numbers
import pkgutil
import sys
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType

import equinox as eqx
import jax
import numpy as np

from .model import ShallowWater
from .state import State

DEFAULT_SCENARIO = "radial_dam_break"


def _coordinate(value):
    """A gauge coordinate as a Python float: NumPy and JAX scalars (0-d arrays) included;
    other arrays refused; anything else unchanged, for :class:`Gauge`'s check to refuse."""
    if (not isinstance(value, (bool, np.bool_)) and np.ndim(value) == 0
            and isinstance(value, (numbers.Real, np.generic, np.ndarray, jax.Array))
            and np.issubdtype(np.asarray(value).dtype, np.number)):
        return float(value)
    if isinstance(value, (np.ndarray, jax.Array)):
        raise ValueError(f"a gauge coordinate has shape {np.shape(value)}; expected a number "
                         "in m")
    return value


class Gauge(eqx.Module):
    """A named point ``(x, y)`` (m) where time series are recorded."""

    name: str = eqx.field(static=True)
    x: float = eqx.field(static=True, converter=_coordinate)
    y: float = eqx.field(static=True, converter=_coordinate)

    def __check_init__(self):
        if not isinstance(self.name, str) or not all(
                isinstance(c, numbers.Real) and not isinstance(c, bool) for c in (self.x, self.y)):
            raise ValueError(f"gauge ({self.name!r}, {self.x!r}, {self.y!r}) is invalid; "
                             "expected a name and two coordinates in m")


def as_gauge(g) -> Gauge:
    """A :class:`Gauge` from itself or a ``(name, x, y)`` tuple (ValueError otherwise)."""
    if isinstance(g, Gauge):
        return g
    if isinstance(g, (tuple, list)) and len(g) == 3:
        return Gauge(*g)
    raise ValueError(f"gauges contains {g!r}; expected swe.Gauge(name, x, y) or (name, x, y) "
                     "entries: a name and two coordinates in m")


class Scenario(eqx.Module):
    """Everything a run needs.

    ``save_at`` is an output interval (s) or a list of output times; ``gauges`` a sequence of
    :class:`Gauge` (or ``(name, x, y)`` tuples); ``metadata`` free-form attributes (``title``,
    ``description``, the parameters...) written into the output file, except
    ``metadata["grid_mapping"]``: the coordinate reference system as CF grid-mapping
    attributes (a DEM's), written as a variable ``crs`` that every field names;
    ``run_options`` extra keyword arguments for :func:`swe.simulate` (e.g. ``cfl``,
    ``integrator``).
    """

    model: ShallowWater
    state0: State
    t_end: float = eqx.field(static=True)
    save_at: object = eqx.field(static=True, default=None)
    gauges: tuple[Gauge, ...] = eqx.field(static=True, default=())
    metadata: dict = eqx.field(static=True, default_factory=dict)
    run_options: dict = eqx.field(static=True, default_factory=dict)
    arrival_threshold: float = eqx.field(static=True, default=0.01)

    def __init__(self, model, state0, t_end, save_at=None, gauges=(), metadata=None,
                 run_options=None, arrival_threshold=0.01):
        if not isinstance(model, ShallowWater):
            raise ValueError(f"model={model!r} is invalid; expected a swe.ShallowWater")
        if not isinstance(state0, State):
            raise ValueError(f"state0={state0!r} is invalid; expected a swe.State")
        self.model = model
        self.state0 = state0
        self.t_end = float(t_end)
        self.save_at = save_at
        gs = []
        for g in gauges:
            g = as_gauge(g)
            model.grid.cell_index(g.x, g.y)  # raises if off the grid
            gs.append(g)
        names = [g.name for g in gs]
        if len(set(names)) != len(names):
            raise ValueError(f"gauge names {names!r} are not unique")
        self.gauges = tuple(gs)
        self.metadata = dict(metadata or {})
        self.run_options = dict(run_options or {})
        self.arrival_threshold = float(arrival_threshold)


def builtin_scenarios() -> list[str]:
    """Names of the scenarios shipped in ``scenarios/``."""
    scenarios = _scenarios_package()
    return sorted(m.name for m in pkgutil.iter_modules(scenarios.__path__)
                  if not m.name.startswith("_") and not m.ispkg)


def _scenarios_package() -> ModuleType:
    """``swe.scenarios``: installed, the package; in a source checkout used without
    installing it (``PYTHONPATH=.``, as ``scripts/gpu_bench.sh`` runs on a bare device
    machine), the checkout's top-level ``scenarios/`` folder, registered under that name."""
    try:
        return importlib.import_module("swe.scenarios")
    except ModuleNotFoundError as exc:
        if exc.name != "swe.scenarios":
            raise
        folder = Path(__file__).resolve().parent.parent / "scenarios"
        if not (folder / "__init__.py").is_file():
            raise
        spec = importlib.util.spec_from_file_location(
            "swe.scenarios", folder / "__init__.py", submodule_search_locations=[str(folder)])
        module = importlib.util.module_from_spec(spec)
        sys.modules["swe.scenarios"] = module
        spec.loader.exec_module(module)
        return module


def is_path(name_or_path: str) -> bool:
    """Whether a command-line argument names a file rather than a built-in."""
    return name_or_path.endswith(".py") or "/" in name_or_path or "\\" in name_or_path


def load_file(path: str, what: str) -> ModuleType:
    """Execute a user's ``.py`` file as a module; a ValueError of one line if it is missing
    or fails (``what`` names the kind of file in the message)."""
    file = Path(path)
    if not file.is_file():
        raise ValueError(f"{what} file {path!r} does not exist or is not a file")
    spec = importlib.util.spec_from_file_location(f"swe_user_{what}_{file.stem}", file)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # a user file: report it in one line
        raise ValueError(f"{what} file {path!r} failed to load: "
                         f"{type(exc).__name__}: {exc}") from exc
    return module


def load_module(name_or_path: str) -> ModuleType:
    """The module of a built-in scenario name or of a ``.py`` file path."""
    if is_path(name_or_path):
        module = load_file(name_or_path, "scenario")
    else:
        names = builtin_scenarios()
        if name_or_path not in names:
            raise ValueError(f"unknown scenario {name_or_path!r}; choose one of "
                             f"{', '.join(names)} or give a path to a .py file")
        module = importlib.import_module(f"swe.scenarios.{name_or_path}")
    if not callable(getattr(module, "build", None)):
        raise ValueError(f"scenario {name_or_path!r} has no build(**params) function")
    module.__swe_name__ = name_or_path
    return module


def _name(module: ModuleType) -> str:
    """The scenario's name as the user gave it (a built-in name or a file path)."""
    return getattr(module, "__swe_name__", module.__name__.split(".")[-1])


def _open_keywords(module: ModuleType) -> bool:
    """Whether ``build`` takes ``**kwargs`` (any key is passed on to it)."""
    return any(p.kind == p.VAR_KEYWORD
               for p in inspect.signature(module.build).parameters.values())


def _check_key(key: str, known: Mapping, module: ModuleType) -> None:
    if key not in known and not _open_keywords(module):
        raise ValueError(f"unknown parameter {key!r} for scenario {_name(module)!r}; "
                         f"valid keys: {', '.join(known) or '(none: build() takes no parameters)'}")


def kind_of(default) -> str:
    """What a parameter with this default accepts: ``"True or False"``, ``"an integer"``,
    ``"a number"``, ``"a string"``, ``"a list"``, or ``"any value"`` (a None default or
    another type)."""
    if isinstance(default, bool):
        return "True or False"
    if isinstance(default, int):
        return "an integer"
    if isinstance(default, float):
        return "a number"
    if isinstance(default, str):
        return "a string"
    if isinstance(default, (list, tuple)):
        return "a list"
    return "any value"


def check_value(option: str, key: str, value, default, module: ModuleType) -> None:
    """``value`` must be of the kind of the parameter's default (:func:`kind_of`): True or
    False for a bool, an integer for an int (grid sizes), a number for a float, a string
    for a str, a list for a list or tuple; any value where the default is None or of
    another type."""
    kind = kind_of(default)
    ok = {"True or False": lambda v: isinstance(v, bool),
          "an integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
          "a number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
          "a string": lambda v: isinstance(v, str),
          "a list": lambda v: isinstance(v, (list, tuple))}.get(kind, lambda v: True)
    if not ok(value):
        raise ValueError(f"{option} {key}={value!r} is invalid for scenario "
                         f"{_name(module)!r}; expected {kind} (default {default!r})")


def parameter_help(module: ModuleType) -> list[tuple[str, object, str, str, str]]:
    """``(name, default, units, kind, meaning)`` of each ``build()`` parameter: units and
    meaning from the module's ``PARAMETERS`` (``{name: (meaning, units)}``; ``"?"`` and
    ``""`` where it has none), the kind from the default (:func:`kind_of`)."""
    documented = getattr(module, "PARAMETERS", {})
    rows = []
    for name, default in parameters(module).items():
        meaning, units = documented.get(name, ("", "?"))
        rows.append((name, default, units, kind_of(default), meaning))
    return rows


def _literal(text: str):
    """A Python literal, or the text itself where it is none (``path=dem.nc`` needs no
    quotes); the parameter's kind is checked afterwards."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def parameters(module: ModuleType) -> dict[str, object]:
    """``build``'s parameters and their defaults, in order."""
    params = {}
    for p in inspect.signature(module.build).parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.default is p.empty:
            raise ValueError(f"scenario parameter {p.name!r} has no default; every build() "
                             "parameter needs one")
        params[p.name] = p.default
    return params


def parse_overrides(pairs, module: ModuleType) -> dict[str, object]:
    """``KEY=VALUE`` strings to keyword arguments: values parsed as Python literals, and
    text that is none taken as a string (``path=dem.nc``)."""
    known = parameters(module)
    out = {}
    for pair in pairs or ():
        key, sep, text = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"--set {pair!r} is invalid; expected KEY=VALUE")
        _check_key(key, known, module)
        value = _literal(text.strip())
        if key in known:
            check_value("--set", key, value, known[key], module)
        out[key] = value
    return out


def parse_ensemble(text: str, module: ModuleType) -> tuple[str, list]:
    """``KEY=v1,v2,...`` or ``KEY=start:stop:count`` (evenly spaced, both ends included)."""
    key, sep, values = text.partition("=")
    key = key.strip()
    known = parameters(module)
    if not sep or not key or not values.strip():
        raise ValueError(f"--ensemble {text!r} is invalid; expected KEY=v1,v2,... or "
                         "KEY=start:stop:count")
    _check_key(key, known, module)
    try:
        if ":" in values:
            start, stop, count = (ast.literal_eval(v.strip()) for v in values.split(":"))
            if not isinstance(count, int) or count < 1:
                raise ValueError
            members = [start + (stop - start) * k / max(count - 1, 1) for k in range(count)]
        else:
            members = [_literal(v.strip()) for v in values.split(",")]
    except (ValueError, SyntaxError, TypeError):
        raise ValueError(f"--ensemble {text!r}: values must be separated by commas, or be "
                         "start:stop:count (numbers, and an integer count >= 1)")
    if key in known:
        for value in members:
            check_value("--ensemble", key, value, known[key], module)
    return key, members


def build(name_or_path: str = DEFAULT_SCENARIO, params: Mapping | None = None) -> Scenario:
    """Load and build a scenario with parameter overrides."""
    module = load_module(name_or_path)
    params = dict(params or {})
    known = parameters(module)
    for key in params:
        _check_key(key, known, module)
    try:
        scenario = module.build(**params)
    except ValueError:
        raise
    except Exception as exc:
        if not params:
            raise  # the scenario's own defaults: a bug in it, shown with its traceback
        given = ", ".join(f"{k}={v!r}" for k, v in params.items())
        raise ValueError(f"scenario {name_or_path!r} failed to build with {given}: "
                         f"{type(exc).__name__}: {exc}") from exc
    if not isinstance(scenario, Scenario):
        raise ValueError(f"scenario {name_or_path!r}: build() returned {type(scenario).__name__}, "
                         "expected a swe.Scenario")
    merged = {**known, **params}
    metadata = {"scenario": Path(name_or_path).stem, **scenario.metadata, "parameters": merged}
    return dataclasses.replace(scenario, metadata=metadata)

"""Error types and the argument checks shared by every constructor.

Checks run on concrete values only: inside ``jax.jit`` or ``jax.grad`` an argument may be a
tracer, and then its value cannot be inspected, so the check is skipped (the caller already
validated the concrete inputs it traced from).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import jax
import jax.numpy as jnp
import numpy as np


class SimulationError(RuntimeError):
    """A run that blew up: NaN or inf in the state, or a time step below its floor.

    Attributes ``time`` (simulated seconds) and ``step`` (number of accepted steps) say where.
    """

    def __init__(self, message: str, *, time: float, step: int):
        super().__init__(message)
        self.time = time
        self.step = step


def is_concrete(x) -> bool:
    """True when ``x`` holds a value we can inspect (not a tracer inside jit/grad/vmap)."""
    return not isinstance(x, jax.core.Tracer)


@jax.jit
def _finite_and_min(x):
    return jnp.all(jnp.isfinite(x)), jnp.min(x)


def finite_and_min(arr) -> tuple[bool, float]:
    """Whether a concrete array's values are all finite, and its least value (NaN where some
    are not): reduced where the array lives, so that only two numbers cross to the host (a
    check of a state on an accelerator copied every field to the host: at 8192^2 cells,
    float32, about 1 GB and a second a run on a TPU v5e)."""
    if not isinstance(arr, jax.Array) or arr.ndim == 0 or arr.size == 0:  # on the host
        host = np.asarray(arr)
        finite = bool(np.all(np.isfinite(host)))
        return finite, float(host.min()) if host.size else math.inf
    finite, low = jax.device_get(_finite_and_min(arr))
    return bool(finite), float(low)


def _describe(value) -> str:
    if isinstance(value, (int, float, str, bool)) or value is None:
        return repr(value)
    arr = np.asarray(value)
    if arr.ndim == 0:
        return repr(arr.item())
    return f"array of shape {arr.shape}"


def check_choice(name: str, value, choices: Iterable[str]) -> str:
    choices = tuple(choices)
    if not isinstance(value, str) or value.lower() not in choices:
        raise ValueError(
            f"{name}={value!r} is not supported; choose one of {', '.join(map(repr, choices))}"
        )
    return value.lower()


def check_positive_int(name: str, value, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name}={value!r} is invalid; expected an integer >= {minimum}")
    return int(value)


def check_finite_scalar(name: str, value, *, lower=None, upper=None, lower_open=False,
                        upper_open=False):
    """Checks a scalar against an interval.

    Python and NumPy numbers come back as ``float``; JAX arrays (possibly tracers, which are
    not inspected) come back as they are.
    """
    if value is None or isinstance(value, (str, bool)) or callable(value):
        raise ValueError(f"{name}={value!r} is invalid; expected a finite real number")
    if isinstance(value, jax.Array):
        if value.ndim != 0:
            raise ValueError(f"{name} must be a scalar, got {_describe(value)}")
        if not is_concrete(value):
            return value
        v = float(value)
        out = value
    else:
        try:
            arr = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"{name}={value!r} is invalid; expected a finite real number")
        if arr.ndim != 0:
            raise ValueError(f"{name} must be a scalar, got {_describe(value)}")
        v = out = float(arr)
    ok = math.isfinite(v)
    if lower is not None:
        ok = ok and (v > lower if lower_open else v >= lower)
    if upper is not None:
        ok = ok and (v < upper if upper_open else v <= upper)
    if not ok:
        lo = "-inf" if lower is None else f"{lower}"
        hi = "inf" if upper is None else f"{upper}"
        left = "(" if lower_open or lower is None else "["
        right = ")" if upper_open or upper is None else "]"
        raise ValueError(f"{name}={v!r} is invalid; expected a finite number in {left}{lo}, {hi}{right}")
    return out


def check_field(name: str, value, shape: tuple[int, int], *, nonnegative: bool = False,
                dtype=None):
    """A scalar or an ``(ny, nx)`` array: checks shape and values, returns a JAX array.

    Scalars stay 0-d (they broadcast for free); arrays must match ``shape`` exactly.
    """
    if value is None or isinstance(value, (str, bool)) or callable(value):
        raise ValueError(
            f"{name}={value!r} is invalid; expected a scalar or an array of shape {shape}"
        )
    try:
        arr = jnp.asarray(value, dtype=dtype)
    except TypeError as exc:
        raise ValueError(
            f"{name}={value!r} is invalid; expected a scalar or an array of shape {shape}"
        ) from exc
    if not jnp.issubdtype(arr.dtype, jnp.number) or jnp.issubdtype(arr.dtype, jnp.complexfloating):
        raise ValueError(f"{name} has dtype {arr.dtype}; expected real numbers")
    if arr.ndim != 0 and arr.shape != tuple(shape):
        raise ValueError(
            f"{name} has shape {arr.shape}; expected a scalar or shape {tuple(shape)} = (ny, nx)"
        )
    if not jnp.issubdtype(arr.dtype, jnp.floating):
        arr = arr.astype(jnp.result_type(float))
    if is_concrete(arr):
        finite, low = finite_and_min(arr)
        if finite and not (nonnegative and low < 0):
            return arr
        host = np.asarray(arr)  # a bad value: where it is, for the message
        if not finite:
            bad = np.argwhere(~np.isfinite(host))
            where = f" at index {tuple(int(i) for i in bad[0])}" if host.ndim else ""
            raise ValueError(f"{name} contains NaN or inf{where}; every value must be finite")
        if nonnegative and np.any(host < 0):
            idx = np.unravel_index(np.argmin(host), host.shape) if host.ndim else ()
            raise ValueError(
                f"{name} has a negative value {float(host.min())!r}"
                f"{' at index ' + str(tuple(int(i) for i in idx)) if idx else ''}; "
                "expected values >= 0"
            )
    return arr

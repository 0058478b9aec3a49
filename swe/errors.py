"""Error types and the argument checks shared by every constructor.

Checks run on concrete values only: inside ``jax.jit`` or ``jax.grad`` an argument may be a
tracer, and then its value cannot be inspected, so the check is skipped (the caller already
validated the concrete inputs it traced from).
"""

from __future__ import annotations

import contextlib
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


# Platforms whose arrays are checked by NumPy: there a copy to the host costs nothing,
# and a reduction would be compiled for every new shape. Elsewhere (GPU, TPU) the checks
# reduce where the array lives and only a few numbers cross to the host.
HOST_PLATFORMS = ("cpu",)


def on_host(arr) -> bool:
    """Whether ``arr`` is checked by NumPy: anything but a JAX array with values, or a JAX
    array this process holds whole on :data:`HOST_PLATFORMS`."""
    if not isinstance(arr, jax.Array) or arr.ndim == 0 or arr.size == 0:
        return True
    return arr.is_fully_addressable and all(d.platform in HOST_PLATFORMS
                                            for d in arr.devices())


@jax.jit
def _summary(x):
    # Indices as (row, column) of the array seen as rows of its last axis: a flat index
    # is 32-bit without x64 and would overflow past 2^31 values (46341^2 cells).
    rows = x.reshape(-1, x.shape[-1])
    bad = ~jnp.isfinite(rows)
    bad_row = jnp.argmax(jnp.any(bad, axis=1))
    low_row = jnp.argmin(jnp.min(rows, axis=1))
    return (~jnp.any(bad), jnp.min(rows), bad_row, jnp.argmax(bad[bad_row]), low_row,
            jnp.argmin(rows[low_row]))


def _unravel(flat, shape) -> tuple:
    return tuple(int(i) for i in np.unravel_index(int(flat), shape))


def _index(row, col, shape) -> tuple:
    return _unravel(int(row) * shape[-1] + int(col), shape)


def value_summary(arr) -> tuple[bool, float, tuple | None, tuple | None]:
    """``(finite, least, first_bad, where_least)`` of a concrete array: whether its values
    are all finite, the least of them (``nan`` where one is NaN, ``inf`` for no values),
    the index of its first non-finite value (None if all are finite) and, where the least
    is negative, its index (None otherwise); indices in C order, ``()`` for 0-d arrays.
    Off :data:`HOST_PLATFORMS` the array is reduced where it lives (on a TPU v5e, copying
    an 8192^2 float32 state to the host to check it takes about a second a run);
    also inside a traced function, for arrays made outside it."""
    if on_host(arr):
        host = np.asarray(arr)
        if not host.size:
            return bool(np.all(np.isfinite(host))), math.inf, None, None
        bad = ~np.isfinite(host)
        finite = not bad.any()
        low = float(host.min())
        first = None if finite else _unravel(np.argmax(bad), host.shape)
        least = _unravel(np.argmin(host), host.shape) if low < 0 else None
        return finite, low, first, least
    with jax.ensure_compile_time_eval():
        finite, low, bad_row, bad_col, low_row, low_col = jax.device_get(_summary(arr))
    return (bool(finite), float(low),
            None if finite else _index(bad_row, bad_col, arr.shape),
            _index(low_row, low_col, arr.shape) if low < 0 else None)


def finite_and_min(arr) -> tuple[bool, float]:
    """Whether a concrete array's values are all finite, and its least value (see
    :func:`value_summary`)."""
    return value_summary(arr)[:2]


def _describe(value) -> str:
    if isinstance(value, (int, float, str, bool)) or value is None:
        return repr(value)
    arr = np.asarray(value)
    if arr.ndim == 0:
        return repr(arr.item())
    return f"array of shape {arr.shape}"


def check_forcing_output(name: str, out, shape: tuple, expected: str):
    """The value a forcing function of ``t`` returned, as an array: numeric and
    broadcastable to ``shape`` (``()``: a number; ValueError naming the argument and
    ``expected`` otherwise). Shapes are known while tracing: no cost at run time."""
    try:
        arr = jnp.asarray(out)
    except (TypeError, ValueError):
        arr = None
    if arr is None or not jnp.issubdtype(arr.dtype, jnp.number):
        raise ValueError(f"{name}(t) returned {out!r}; expected {expected}")
    try:
        fits = jnp.broadcast_shapes(arr.shape, tuple(shape)) == tuple(shape)
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"{name}(t) returned an array of shape {arr.shape}; expected "
                         f"{expected}")
    return arr


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
    # A value that is not a tracer is converted as a value even inside a traced function
    # (where jnp.asarray would make it a tracer and skip its check).
    def concrete():
        return (jax.ensure_compile_time_eval() if is_concrete(value)
                else contextlib.nullcontext())
    try:
        with concrete():
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
        with concrete():
            arr = arr.astype(jnp.result_type(float))
    if is_concrete(arr):
        finite, low, bad, least = value_summary(arr)
        if not finite:
            where = f" at index {bad}" if bad else ""
            raise ValueError(f"{name} contains NaN or inf{where}; every value must be finite")
        if nonnegative and low < 0:
            where = f" at index {least}" if least else ""  # () for a 0-d value
            raise ValueError(f"{name} has a negative value {low!r}{where}; expected values >= 0")
    return arr

"""The uniform, cell-centred Cartesian grid. Arrays on it are ``(ny, nx)``."""

from __future__ import annotations

import math

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from .errors import check_positive_int


def _check_extent(name: str, extent) -> tuple[float, float]:
    try:
        lo, hi = (float(v) for v in extent)
    except (TypeError, ValueError):
        raise ValueError(f"{name}={extent!r} is invalid; expected a pair (start, end) in metres")
    if not (math.isfinite(lo) and math.isfinite(hi) and hi > lo):
        raise ValueError(f"{name}={extent!r} is invalid; expected finite (start, end) with end > start")
    return lo, hi


class Grid(eqx.Module):
    """A uniform grid of ``nx`` by ``ny`` cells covering ``x`` by ``y`` (metres).

    The grid is static: every field is a Python value, so changing it recompiles, and
    everything derived from it (spacing, shapes) is known at trace time. ``ny=1`` is a 1-D
    channel. When ``y`` is omitted the cells are square.
    """

    nx: int = eqx.field(static=True)
    ny: int = eqx.field(static=True)
    x: tuple[float, float] = eqx.field(static=True)
    y: tuple[float, float] = eqx.field(static=True)

    def __init__(self, nx: int, ny: int = 1, x=(0.0, 1.0), y=None):
        self.nx = check_positive_int("nx", nx)
        self.ny = check_positive_int("ny", ny)
        self.x = _check_extent("x", x)
        if y is None:
            dx = (self.x[1] - self.x[0]) / self.nx
            y = (0.0, dx * self.ny)
        self.y = _check_extent("y", y)

    @property
    def shape(self) -> tuple[int, int]:
        return (self.ny, self.nx)

    @property
    def dx(self) -> float:
        return (self.x[1] - self.x[0]) / self.nx

    @property
    def dy(self) -> float:
        return (self.y[1] - self.y[0]) / self.ny

    @property
    def cell_area(self) -> float:
        return self.dx * self.dy

    @property
    def domain(self) -> Grid:
        """The whole domain's grid: the grid itself (on a device mesh a model's grid is a
        :class:`swe.decomposition.GridBlock`, whose ``domain`` is the whole grid)."""
        return self

    @property
    def rows(self):
        """The index of each row of cells, ``0 .. ny - 1``."""
        return jnp.arange(self.ny)

    @property
    def columns(self):
        """The index of each column of cells, ``0 .. nx - 1``."""
        return jnp.arange(self.nx)

    @property
    def xc(self) -> Float[Array, " nx"]:
        """Cell-centre x coordinates (m)."""
        return self.x[0] + (self.columns + 0.5) * self.dx

    @property
    def yc(self) -> Float[Array, " ny"]:
        """Cell-centre y coordinates (m)."""
        return self.y[0] + (self.rows + 0.5) * self.dy

    def cell_centers(self) -> tuple[Float[Array, "ny nx"], Float[Array, "ny nx"]]:
        """``(X, Y)``, each ``(ny, nx)``, of cell-centre coordinates in metres."""
        X, Y = jnp.meshgrid(self.xc, self.yc, indexing="xy")
        return X, Y

    def cell_index(self, x: float, y: float) -> tuple[int, int]:
        """The ``(j, i)`` index of the cell containing the point ``(x, y)``."""
        if not (self.x[0] <= x <= self.x[1] and self.y[0] <= y <= self.y[1]):
            raise ValueError(
                f"point ({x!r}, {y!r}) is outside the grid x={self.x}, y={self.y}"
            )
        i = min(int((x - self.x[0]) / self.dx), self.nx - 1)
        j = min(int((y - self.y[0]) / self.dy), self.ny - 1)
        return j, i

"""Where a model's cells are: the whole grid on one device, or one block of a device mesh.

A model holds one of two decompositions with the same interface, so the operators never
ask which they have:

* :class:`SingleDevice`: every ghost cell comes from the boundary conditions.
* :class:`MeshBlock`: the model as one device of a ``jax.shard_map`` mesh sees it
  (:func:`swe.parallel.localise` attaches it). Ghost cells across a block edge are the
  neighbouring device's edge cells (``lax.ppermute``); the boundary conditions fill them
  on the domain's outer edges only; a periodic pair wraps across the mesh. Reductions
  (the CFL wave speed) take every device's value.

:class:`GridBlock` is the grid of one block: the cells a device holds, with their global
indices and coordinates, so that forcings computed from the grid (a Coriolis parameter, a
point source's cell, a user's field of ``x`` and ``y``) need nothing special on a mesh.
:class:`BlockValues` cuts a function of time that returns whole-grid values to the block.
"""

from __future__ import annotations

from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import lax

from .boundaries import Periodic, ghost_cells, impose_face_fluxes, pad_bed
from .grid import Grid

AXIS_NAMES = {0: "y", 1: "x"}


def _pad_ones(theta, axis):
    pad = [(0, 0), (0, 0)]
    pad[axis] = (1, 1)
    return jnp.pad(theta, pad, constant_values=1.0)


class SingleDevice(eqx.Module):
    """The whole grid on one device: ghost cells from the boundary conditions only."""

    on_mesh: ClassVar[bool] = False

    def ghost_cells(self, h, qn, qt, bed_padded, boundaries, *, axis, ng, t, g, h_dry):
        """:func:`swe.boundaries.ghost_cells`."""
        return ghost_cells(h, qn, qt, bed_padded, boundaries, axis=axis, ng=ng, t=t, g=g,
                           h_dry=h_dry)

    def pad_bed(self, bed, boundaries, axis: int, ng: int):
        """:func:`swe.boundaries.pad_bed`."""
        return pad_bed(bed, boundaries, axis, ng)

    def pad_factor(self, theta, boundaries, axis: int):
        """Positivity factors with one ghost each side, 1 there: the ghost cells are
        reservoirs of the boundary condition, never limited."""
        return _pad_ones(theta, axis)

    def impose_face_fluxes(self, mass_flux, boundaries, *, axis: int, t):
        """:func:`swe.boundaries.impose_face_fluxes`."""
        return impose_face_fluxes(mass_flux, boundaries, axis=axis, t=t)

    def max(self, x):
        """``x`` itself: there is no other device."""
        return x

    def cut(self, fn, edge: int | None = None):
        """``fn`` itself: whole-grid values are this device's."""
        return fn

    def grid_of(self, grid: Grid) -> Grid:
        """``grid`` itself."""
        return grid


class MeshBlock(eqx.Module):
    """One block of a grid of ``shape`` split over a ``sizes = (mesh_y, mesh_x)`` device
    mesh whose axes are named ``"y"`` and ``"x"``. Static: no arrays. Its methods run
    inside ``jax.shard_map``."""

    sizes: tuple[int, int] = eqx.field(static=True)  # devices along (y, x)
    shape: tuple[int, int] = eqx.field(static=True)  # the whole grid's (ny, nx)
    on_mesh: ClassVar[bool] = True

    def split(self, axis: int) -> bool:
        return self.sizes[axis] > 1

    def block_shape(self) -> tuple[int, int]:
        return (self.shape[0] // self.sizes[0], self.shape[1] // self.sizes[1])

    def offset(self, axis: int):
        """The global index of the block's first cell along ``axis``."""
        if not self.split(axis):
            return 0
        return lax.axis_index(AXIS_NAMES[axis]) * self.block_shape()[axis]

    def _neighbours(self, arrays, axis: int, ng: int, periodic: bool):
        """``(low, high)`` halos: the previous device's last ``ng`` slices and the next
        device's first ``ng``. Without a neighbour (an outer edge) they are zeros."""
        n = self.sizes[axis]
        name = AXIS_NAMES[axis]
        up = [(i, i + 1) for i in range(n - 1)] + ([(n - 1, 0)] if periodic else [])
        down = [(i + 1, i) for i in range(n - 1)] + ([(0, n - 1)] if periodic else [])
        length = arrays[0].shape[axis]
        last = tuple(lax.slice_in_dim(a, length - ng, length, axis=axis) for a in arrays)
        first = tuple(lax.slice_in_dim(a, 0, ng, axis=axis) for a in arrays)
        return lax.ppermute(last, name, up), lax.ppermute(first, name, down)

    def _select(self, axis, physical, neighbour, periodic):
        """Physical ghosts on the outer edges, the neighbours' cells elsewhere."""
        if periodic:
            return neighbour
        i = lax.axis_index(AXIS_NAMES[axis])
        lo_p, hi_p = physical
        lo_n, hi_n = neighbour
        first, last = i == 0, i == self.sizes[axis] - 1
        lo = tuple(jnp.where(first, p, q) for p, q in zip(lo_p, lo_n))
        hi = tuple(jnp.where(last, p, q) for p, q in zip(hi_p, hi_n))
        return lo, hi

    def ghost_cells(self, h, qn, qt, bed_padded, boundaries, *, axis, ng, t, g, h_dry):
        """:func:`swe.boundaries.ghost_cells` for a block of the decomposed grid."""
        kw = dict(axis=axis, ng=ng, t=t, g=g, h_dry=h_dry)
        if not self.split(axis):
            return ghost_cells(h, qn, qt, bed_padded, boundaries, **kw)
        periodic = isinstance(boundaries.pair(axis)[0], Periodic)
        neighbour = self._neighbours((h, qn, qt), axis, ng, periodic)
        physical = None if periodic else ghost_cells(h, qn, qt, bed_padded, boundaries, **kw)
        return self._select(axis, physical, neighbour, periodic)

    def pad_bed(self, bed, boundaries, axis: int, ng: int):
        if not self.split(axis):
            return pad_bed(bed, boundaries, axis, ng)
        periodic = isinstance(boundaries.pair(axis)[0], Periodic)
        (lo_n,), (hi_n,) = self._neighbours((bed,), axis, ng, periodic)
        if periodic:
            lo, hi = lo_n, hi_n
        else:
            padded = pad_bed(bed, boundaries, axis, ng)
            n = bed.shape[axis]
            lo_p = lax.slice_in_dim(padded, 0, ng, axis=axis)
            hi_p = lax.slice_in_dim(padded, n + ng, n + 2 * ng, axis=axis)
            (lo,), (hi,) = self._select(axis, ((lo_p,), (hi_p,)), ((lo_n,), (hi_n,)), False)
        return jnp.concatenate([lo, bed, hi], axis=axis)

    def pad_factor(self, theta, boundaries, axis: int):
        """Positivity factors with one ghost each side: 1 outside the domain (ghosts are
        never limited), the neighbour's value across a block edge."""
        if not self.split(axis):
            return _pad_ones(theta, axis)
        periodic = isinstance(boundaries.pair(axis)[0], Periodic)
        neighbour = self._neighbours((theta,), axis, 1, periodic)
        ones = tuple((jnp.ones_like(x[0]),) for x in neighbour)
        (lo,), (hi,) = self._select(axis, ones, neighbour, periodic)
        return jnp.concatenate([lo, theta, hi], axis=axis)

    def impose_face_fluxes(self, mass_flux, boundaries, *, axis: int, t):
        """Prescribed boundary fluxes on the outer edges' faces only."""
        imposed = impose_face_fluxes(mass_flux, boundaries, axis=axis, t=t)
        if not self.split(axis) or imposed is mass_flux:
            return imposed
        i = lax.axis_index(AXIS_NAMES[axis])
        face = lax.broadcasted_iota(jnp.int32, mass_flux.shape, axis)
        outer = ((face == 0) & (i == 0)) | (
            (face == mass_flux.shape[axis] - 1) & (i == self.sizes[axis] - 1))
        return jnp.where(outer, imposed, mass_flux)

    def max(self, x):
        """The maximum over every device (differentiable: gather, then max)."""
        for axis in (0, 1):
            if self.split(axis):
                x = jnp.max(lax.all_gather(x, AXIS_NAMES[axis]))
        return x

    def cut(self, fn, edge: int | None = None):
        """``fn``, a function of ``t`` returning whole-grid values, as one returning this
        block's part (:class:`BlockValues`); anything else unchanged."""
        if not callable(fn) or isinstance(fn, (eqx.Module, BlockValues)):
            return fn
        return BlockValues(fn, self, edge)

    def grid_of(self, grid: Grid) -> GridBlock:
        """The block's part of ``grid``."""
        return GridBlock(grid, self)


class GridBlock(eqx.Module):
    """The cells of one block of a :class:`Grid` split over a device mesh, with the same
    attributes as the grid: ``shape``, ``nx``, ``ny``, ``xc``, ``yc``, ``cell_centers()``,
    ``rows`` and ``columns`` are the block's (coordinates and indices global), ``dx``,
    ``dy`` and ``cell_area`` the grid's, and ``x``, ``y``, ``domain`` and
    ``cell_index`` those of the whole domain."""

    domain: Grid
    block: MeshBlock

    @property
    def shape(self) -> tuple[int, int]:
        return self.block.block_shape()

    @property
    def ny(self) -> int:
        return self.shape[0]

    @property
    def nx(self) -> int:
        return self.shape[1]

    @property
    def x(self):
        return self.domain.x

    @property
    def y(self):
        return self.domain.y

    @property
    def dx(self) -> float:
        return self.domain.dx

    @property
    def dy(self) -> float:
        return self.domain.dy

    @property
    def cell_area(self) -> float:
        return self.domain.cell_area

    @property
    def rows(self):
        """Global row index of each of the block's rows."""
        return self.block.offset(0) + jnp.arange(self.ny)

    @property
    def columns(self):
        """Global column index of each of the block's columns."""
        return self.block.offset(1) + jnp.arange(self.nx)

    @property
    def xc(self):
        return self.domain.x[0] + (self.columns + 0.5) * self.dx

    @property
    def yc(self):
        return self.domain.y[0] + (self.rows + 0.5) * self.dy

    def cell_centers(self):
        return tuple(jnp.meshgrid(self.xc, self.yc, indexing="xy"))

    def cell_index(self, x: float, y: float) -> tuple[int, int]:
        """The global ``(j, i)`` index of the cell containing ``(x, y)``."""
        return self.domain.cell_index(x, y)


class BlockValues(eqx.Module):
    """A function of ``t`` that returns whole-grid values (an ``(ny, nx)`` field, a row or
    column of it, or a 1-D profile along an edge), cut to one device's ``block``. Scalars
    pass through. ``edge`` is the grid axis a 1-D profile runs along (None: no 1-D
    values)."""

    fn: object
    block: MeshBlock
    edge: int | None = eqx.field(static=True, default=None)

    def __call__(self, t):
        value = jnp.asarray(self.fn(t))
        axes = {0: 0, 1: 1} if value.ndim == 2 else {0: self.edge} if value.ndim == 1 else {}
        for dim, axis in axes.items():
            if (axis is None or not self.block.split(axis)
                    or value.shape[dim] != self.block.shape[axis]):
                continue  # replicated, or broadcast along this axis
            value = lax.dynamic_slice_in_dim(value, self.block.offset(axis),
                                             self.block.block_shape()[axis], axis=dim)
        return value


def cut_functions(module, decomposition, edge=None):
    """``module`` with every function it holds (a function of ``t`` returning whole-grid
    values) cut to the block by ``decomposition.cut``; the default of
    :meth:`swe.sources.AbstractForcing.on_block`."""
    return jax.tree.map(lambda x: decomposition.cut(x, edge) if callable(x) else x, module,
                        is_leaf=lambda x: isinstance(x, BlockValues))

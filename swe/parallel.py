"""Domain decomposition over a device mesh with ``jax.shard_map``.

The grid is split into ``mesh_y x mesh_x`` blocks, one per device; every device runs the
same compiled solve on its block. What crosses block edges:

* **Halos.** Before each sweep of a Runge-Kutta stage, ``lax.ppermute`` brings the
  neighbours' ``ng`` edge rows (or columns) of ``(h, hu, hv)``: once per sweep, for all
  three fields together, as wide as the stencil (1 first order, 2 MUSCL). The draining-time
  factors of the positivity limiter, one cell wide, cross once more per stage. The bed's
  halo is exchanged once per run.
* **Physical boundaries** are applied by the devices on the domain's outer edges only; a
  periodic pair wraps across the mesh (the last device's neighbour is the first).
* **Reductions**: the CFL wave speed is gathered from every device (``all_gather`` then
  ``max``, which keeps it differentiable), so all devices take the same steps.

Each device's model sees its block (:func:`localise`): its grid is the block's
(:class:`swe.decomposition.GridBlock`, so that fields a forcing computes from the grid, a
Coriolis parameter or a point source's cell, are the block's), arrays of the grid's shape
are split with it, and each forcing and boundary condition is cut by its own ``on_block``
(functions of time return the whole grid's values, which each device cuts to its block).
The result equals the single-device run to round-off, for every boundary kind, with
bathymetry, friction, Coriolis, wind, rain, point sources and a user's own forcing.
"""

from __future__ import annotations

import equinox as eqx
import jax
import numpy as np
from jax.sharding import PartitionSpec as P

from .decomposition import MeshBlock
from .run import solve as solve_block


# The equinox releases whose closure conversion compares sharding metadata, and for which
# the adjustment below was checked (pyproject.toml pins equinox to them).
# tests/test_parallel.py::test_equinox_closure_check_still_needs_the_adjustment runs the
# upstream reproduction without it: when a release stops failing there, the adjustment and
# the pin go.
EQUINOX_CLOSURE_CHECK_VERSIONS = ("0.13.",)


def _compare_closures_without_sharding():
    """Let diffrax's gradients run inside ``shard_map`` with equinox 0.13.

    equinox 0.13's closure conversion (``eqx.filter_closure_convert``, used by diffrax's
    adjoint) checks that a converted function is called with arguments of the structure it
    was traced with, comparing shape, dtype *and sharding*. Inside ``jax.shard_map`` the
    sharding metadata of the same argument differs between the forward and the transposed
    trace, so every gradient through a sharded run fails with "Closure-converted function
    called with different dynamic arguments" (diffrax issue 765). The upstream fix, equinox
    pull request 1261, compares shape and dtype only; until it is released this applies the
    same comparison by replacing equinox's private ``_ad._strip_weak_dtype`` (the function
    that builds the compared structs), once, when a mesh is first used. It applies only to
    the pinned equinox versions (:data:`EQUINOX_CLOSURE_CHECK_VERSIONS`) and only if that
    function exists; otherwise it does nothing.
    """
    from equinox import _ad

    if (getattr(_ad, "_swe_shard_map_fix", False) or not hasattr(_ad, "_strip_weak_dtype")
            or not eqx.__version__.startswith(EQUINOX_CLOSURE_CHECK_VERSIONS)):
        return
    _ad._strip_weak_dtype = lambda tree: jax.tree.map(
        lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), tree)
    _ad._swe_shard_map_fix = True


def make_mesh(mesh, grid):
    """A 2-D ``(y, x)`` device mesh from ``mesh``: a :class:`jax.sharding.Mesh` with axes
    ``("y", "x")``, a shape ``(mesh_y, mesh_x)``, or a string ``"2x4"``. The grid must
    divide evenly; the error names the mesh shapes that would."""
    devices = jax.devices()
    if isinstance(mesh, jax.sharding.Mesh):
        if tuple(mesh.axis_names) != ("y", "x"):
            raise ValueError(f"mesh has axes {tuple(mesh.axis_names)}; expected ('y', 'x')")
        shape = (mesh.shape["y"], mesh.shape["x"])
    else:
        shape = _parse_shape(mesh)
        count = shape[0] * shape[1]
        if count > len(devices):
            cpu = devices[0].platform == "cpu"
            raise ValueError(
                f"mesh={mesh!r} needs {count} devices; {len(devices)} "
                f"{'is' if len(devices) == 1 else 'are'} available ({devices[0].platform})"
                + ("; on a CPU, `swe run --devices N` or XLA_FLAGS="
                   "--xla_force_host_platform_device_count=N (set before JAX starts) makes "
                   "N host devices" if cpu else ""))
        mesh = jax.sharding.Mesh(np.array(devices[:count]).reshape(shape), ("y", "x"),
                                 axis_types=(jax.sharding.AxisType.Auto,) * 2)
    ny, nx = grid.shape
    if ny % shape[0] or nx % shape[1]:
        count = shape[0] * shape[1]
        valid = [f"{a}x{count // a}" for a in range(1, count + 1)
                 if count % a == 0 and ny % a == 0 and nx % (count // a) == 0]
        raise ValueError(
            f"mesh={shape[0]}x{shape[1]} does not divide the {ny}x{nx} grid (ny x nx) evenly; "
            f"with {count} devices use one of: {', '.join(valid) or 'none (change the grid)'}")
    return mesh


def auto_mesh(devices: int, grid) -> tuple[int, int]:
    """The ``(mesh_y, mesh_x)`` of ``devices`` devices that divides the grid into the most
    nearly square blocks (the shortest halos)."""
    if devices < 1 or devices > len(jax.devices()):
        raise ValueError(f"devices={devices} is invalid; expected 1..{len(jax.devices())} "
                         f"(the devices available; on a CPU, swe run --devices N makes N)")
    ny, nx = grid.shape
    shapes = [(a, devices // a) for a in range(1, devices + 1) if devices % a == 0
              and ny % a == 0 and nx % (devices // a) == 0]
    if not shapes:
        raise ValueError(f"devices={devices} cannot split the {ny}x{nx} grid (ny x nx) "
                         "evenly; choose a device count whose factors divide ny and nx")
    return min(shapes, key=lambda s: abs(np.log((ny / s[0]) / (nx / s[1]))))


def gathered(frames):
    """Frames of a multi-host run with their fields gathered to every process."""
    from jax.experimental import multihost_utils

    def gather(x):
        # Arrays split over processes are gathered; host-local ones (the initial state,
        # the same on every process) are already whole.
        if isinstance(x, jax.Array) and not x.is_fully_addressable:
            return multihost_utils.process_allgather(x, tiled=True)
        return x

    for frame in frames:
        fields = jax.tree.map(gather, (frame.state, frame.envelopes))
        yield eqx.tree_at(lambda f: (f.state, f.envelopes), frame, fields)


def _parse_shape(mesh) -> tuple[int, int]:
    if isinstance(mesh, str):
        parts = mesh.lower().split("x")
        try:
            shape = tuple(int(p) for p in parts)
        except ValueError:
            shape = ()
    else:
        shape = tuple(int(p) for p in np.atleast_1d(mesh))
    if len(shape) == 1:
        shape = (shape[0], 1)
    if len(shape) != 2 or min(shape) < 1:
        raise ValueError(f"mesh={mesh!r} is invalid; expected 'YxX' (devices along y and x, "
                         "e.g. '2x4'), a shape (2, 4) or a jax.sharding.Mesh")
    return shape


def _spec(path, leaf, grid):
    """How a model or state leaf is split: fields by (y, x), edge profiles along their
    edge, everything else replicated."""
    shape = np.shape(leaf)
    ny, nx = grid.shape
    if len(shape) >= 2 and shape[-2:] in ((ny, nx), (ny, 1), (1, nx)):
        lead = (None,) * (len(shape) - 2)
        return P(*lead, "y" if shape[-2] == ny and ny > 1 else None,
                 "x" if shape[-1] == nx and nx > 1 else None)
    if len(shape) == 1:
        names = {getattr(k, "name", None) for k in path}
        if names & {"west", "east"} and shape[0] == ny:
            return P("y")
        if names & {"south", "north"} and shape[0] == nx:
            return P("x")
    return P()


def specs(tree, grid):
    return jax.tree_util.tree_map_with_path(lambda p, x: _spec(p, x, grid), tree)


def localise(model, mesh):
    """The model as each device sees it: its grid the device's block
    (:class:`swe.decomposition.GridBlock`), its forcings and boundary conditions as
    their ``on_block`` cuts them, and the :class:`swe.decomposition.MeshBlock` attached.
    Arrays of the grid's shape are split by :func:`specs`."""
    sizes = (mesh.shape["y"], mesh.shape["x"])
    shape = model.grid.shape
    ng = model.scheme.ghost_cells
    for n, parts, name in zip(shape, sizes, ("ny", "nx")):
        if parts > 1 and n // parts < ng:
            raise ValueError(
                f"mesh={sizes[0]}x{sizes[1]} gives blocks {shape[0] // sizes[0]}x"
                f"{shape[1] // sizes[1]} cells; the scheme needs at least {ng} cells per "
                f"block along each split axis ({name} = {n}): use fewer devices along it")

    block = MeshBlock(sizes, shape)
    forcings = tuple(f.on_block(block) for f in model.forcings)
    return eqx.tree_at(lambda m: (m.grid, m.forcings, m.boundaries, m.decomposition), model,
                       (block.grid_of(model.grid), forcings, model.boundaries.on_block(block),
                        block))


def solve(mesh, model, y0, *args):
    """:func:`swe.run.solve` on ``mesh``: every device runs it on its block."""
    _compare_closures_without_sharding()
    # Arrays cross into shard_map; the rest (functions of t, static settings) is closed over.
    arrays, static = eqx.partition(localise(model, mesh), eqx.is_array)
    return _solve_on_mesh(mesh, model.grid, arrays, static, y0, *args)


@eqx.filter_jit
def _solve_on_mesh(mesh, grid, arrays, static, y0, *args):
    y0_specs = specs(y0, grid)
    in_specs = (specs(arrays, grid), y0_specs)
    # (ts, ys, result, num_steps): saved states gain a leading time axis.
    ys_specs = jax.tree.map(lambda sp: P(None, *sp), y0_specs,
                            is_leaf=lambda x: isinstance(x, P))
    out_specs = (P(), ys_specs, P(), P())

    def block(m, y):
        return solve_block(eqx.combine(m, static), y, *args)

    return _sharded(block, mesh, in_specs, out_specs)(arrays, y0)


def _sharded(f, mesh, in_specs, out_specs):
    return jax.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                         check_vma=False)

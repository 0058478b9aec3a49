"""Domain decomposition on 8 fake CPU devices (conftest): sharded runs equal single-device
runs, for every boundary kind with bathymetry, friction, Coriolis, wind, rain and a point
source (forcings given as functions of time included); gradients too."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import swe

GRID = swe.Grid(nx=16, ny=16, x=(0.0, 1600.0), y=(0.0, 1600.0))
X, Y = (np.asarray(a) for a in GRID.cell_centers())
BED = -5.0 + 3.0 * np.exp(-((X - 900.0) ** 2 + (Y - 800.0) ** 2) / 250.0**2) + 0.001 * X
EDGE = np.linspace(0.2, 0.6, 16)  # an edge profile: split along its edge with the grid
# Every boundary kind: four kinds on the edges of one case, periodic pairs in the other.
BOUNDARIES = {
    "inflow-outflow-stage-wall": swe.Boundaries(
        west=swe.Inflow(EDGE), east=swe.Outflow(),
        # A profile that is a function of t: each device must cut out its own part.
        south=swe.Stage(lambda t: 0.1 * jnp.sin(t / 20) + 0.05 * jnp.asarray(EDGE)),
        north=swe.Wall()),
    "periodic": swe.Boundaries(west=swe.Periodic(), east=swe.Periodic(),
                               south=swe.Periodic(), north=swe.Periodic()),
}


CELLS = np.exp(-((X - 1100.0) ** 2 + (Y - 400.0) ** 2) / 300.0**2)


def _case(boundaries):
    # Fields that are functions of t (rain, wind) and a point source with a hydrograph:
    # on a mesh each device must see its own block of every one of them.
    model = swe.ShallowWater(
        GRID, bed=BED, friction=swe.Manning(0.03), coriolis=swe.BetaPlane(1e-4, 1e-9),
        wind=swe.WindStress(lambda t: 0.2 * jnp.asarray(CELLS) * jnp.cos(t / 30), 0.05),
        sources=[swe.Rain(lambda t: 2e-4 * jnp.asarray(CELLS) * (1.0 + jnp.sin(t / 10))),
                 swe.PointSource(1250.0, 1300.0, lambda t: 40.0 * jnp.minimum(t / 20, 1.0))],
        boundaries=boundaries)
    eta = 0.5 * np.exp(-((X - 500.0) ** 2 + (Y - 700.0) ** 2) / 200.0**2)
    return model, swe.State.from_surface(model, eta=eta)


def _max_rel_diff(a, b):
    return max(float(np.abs(np.asarray(x) - np.asarray(y)).max() / max(np.abs(x).max(), 1e-300))
               for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))


@pytest.mark.parametrize("name,integrator", [(name, "ssprk2") for name in BOUNDARIES]
                         + [("inflow-outflow-stage-wall", "split"),
                            ("inflow-outflow-stage-wall", "strang")])
def test_sharded_runs_equal_the_single_device_run(name, integrator):
    model, s0 = _case(BOUNDARIES[name])
    options = dict(integrator=integrator)  # cfl: the integrator's default
    ref = swe.simulate(model, s0, 60.0, save_at=20.0, **options)
    assert float(np.abs(np.asarray(ref.final.hu)).max()) > 1e-3  # something happens
    assert float(ref.mass()[-1] - ref.mass()[0]) > 1e3  # the sources did add water
    for mesh in ("8x1", "1x8", "2x4"):
        r = swe.simulate(model, s0, 60.0, save_at=20.0, mesh=mesh, **options)
        assert int(r.num_steps) == int(ref.num_steps)
        np.testing.assert_array_equal(np.asarray(r.times), np.asarray(ref.times))
        assert _max_rel_diff(r.states, ref.states) < 1e-13, mesh
        assert _max_rel_diff(r.envelopes, ref.envelopes) < 1e-13, mesh


def test_a_one_device_mesh_is_bit_identical():
    model, s0 = _case(BOUNDARIES["periodic"])
    ref = swe.simulate(model, s0, 30.0)
    r = swe.simulate(model, s0, 30.0, mesh=(1, 1))
    assert _max_rel_diff(r.states, ref.states) == 0.0


def test_sharded_gradient_equals_unsharded():
    bump = np.exp(-((X - 800.0) ** 2 + (Y - 800.0) ** 2) / 300.0**2)

    def loss(n, amp, mesh):
        # Walls and an outflow: the halo exchange is what is differentiated here (every
        # boundary kind is checked forwards above; each costs compile time in reverse).
        model = swe.ShallowWater(GRID, bed=-5.0 + amp * bump, friction=swe.Manning(n),
                                 boundaries=swe.Boundaries(east=swe.Outflow()))
        s0 = swe.State.from_surface(model, eta=0.3 * jnp.exp(
            -((X - 500.0) ** 2 + (Y - 700.0) ** 2) / 200.0**2))
        r = swe.simulate(model, s0, 40.0, save_at=[20.0, 40.0], envelopes=False,
                         checkpoints=8, max_steps=200, mesh=mesh)
        return jnp.sum(r.states.h[:, 5:9, 8:12] ** 2)

    g1 = jax.grad(loss, argnums=(0, 1))(0.03, 2.0, None)
    g2 = jax.grad(loss, argnums=(0, 1))(0.03, 2.0, "2x4")
    for a, b in zip(g1, g2):
        assert abs(float(a)) > 0
        assert abs(float(a) - float(b)) <= 1e-12 * abs(float(a))


def test_bad_meshes_are_rejected_with_the_valid_shapes():
    model, s0 = _case(BOUNDARIES["periodic"])
    odd = swe.ShallowWater(swe.Grid(nx=12, ny=10, x=(0, 1), y=(0, 1)))
    with pytest.raises(ValueError, match=r"mesh=4x2 does not divide the 10x12 grid.*1x8|2x4"):
        swe.simulate(odd, swe.State(h=1.0, hu=0.0, hv=0.0), 0.1, mesh="4x2")
    with pytest.raises(ValueError, match="needs 16 devices; 8 are available"):
        swe.simulate(model, s0, 1.0, mesh="4x4")
    with pytest.raises(ValueError, match="mesh='two' is invalid"):
        swe.simulate(model, s0, 1.0, mesh="two")


def test_sharded_thinc_bvd_run_equals_the_single_device_run():
    """THINC-BVD's five-cell stencils take three ghost cells from the neighbouring blocks;
    a mesh whose blocks are narrower than that is refused with the reason."""
    model, s0 = _case(BOUNDARIES["inflow-outflow-stage-wall"])
    model = swe.ShallowWater(model.grid, bed=model.bed, friction=model.friction,
                             boundaries=model.boundaries,
                             scheme=swe.FiniteVolume(limiter="thinc-bvd"))
    ref = swe.simulate(model, s0, 60.0, save_at=20.0)
    r = swe.simulate(model, s0, 60.0, save_at=20.0, mesh="2x4")
    assert int(r.num_steps) == int(ref.num_steps)
    assert _max_rel_diff(r.states, ref.states) < 1e-13
    with pytest.raises(ValueError, match="mesh=1x8 gives blocks 16x2 cells; the scheme needs "
                                         "at least 3 cells per block"):
        swe.simulate(model, s0, 60.0, mesh="1x8")


_CLOSURE_CHECK = """
import functools, sys
import jax, jax.numpy as jnp, equinox as eqx
from jax.sharding import NamedSharding, PartitionSpec as P
if sys.argv[1] == "adjusted":
    from swe.parallel import _compare_closures_without_sharding
    _compare_closures_without_sharding()
mesh = jax.make_mesh((2,), ("i",))
@functools.partial(jax.shard_map, mesh=mesh, in_specs=P("i"), out_specs=P("i"),
                   check_vma=False)
def run(x):
    constant = jnp.array(1.0)
    converted = eqx.filter_closure_convert(lambda y: x * y, constant)
    return converted(constant + 0)  # + 0 gives the argument the manual mesh's sharding
x = jax.device_put(jnp.array([2.0, 3.0]), NamedSharding(mesh, P("i")))
try:
    print("result", jax.jit(run)(x).tolist())
except ValueError as e:
    print("ValueError", str(e).splitlines()[0])
"""


def test_equinox_closure_check_still_needs_the_adjustment():
    """equinox pull request 1261's reproduction of diffrax issue 765: without
    ``swe.parallel._compare_closures_without_sharding`` the pinned equinox rejects a
    closure-converted call inside ``shard_map``; with it the call runs. When a release of
    equinox accepts the call on its own, drop the adjustment and widen the pin."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2",
           "JAX_PLATFORMS": "cpu"}
    out = {}
    for mode in ("plain", "adjusted"):
        run = subprocess.run([sys.executable, "-c", _CLOSURE_CHECK, mode], env=env,
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        out[mode] = run.stdout.strip().splitlines()[-1]
    assert out["plain"].startswith("ValueError Closure-converted function called with "
                                   "different dynamic arguments"), (
        f"equinox now accepts the call ({out['plain']!r}): remove the adjustment in "
        "swe.parallel and the equinox pin in pyproject.toml")
    assert out["adjusted"] == "result [2.0, 3.0]"

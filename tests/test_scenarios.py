"""Every built-in scenario builds with small parameters and runs a few steps."""

import inspect
import math

import numpy as np
import pytest

import swe
from swe import scenario as scn

# Small grids and short runs: each distinct grid compiles once, so keep them tiny.
SMALL = {
    "dam_break": dict(nx=24, t_end=2.0),
    "radial_dam_break": dict(n=8, t_end=5.0),
    "lake_at_rest": dict(n=8, t_end=1.0),
    "thacker_bowl": dict(n=10, periods=0.05),
    "geostrophic_adjustment": dict(n=8, days=0.1),
    "tsunami_runup": dict(nx=40, t_end=1.0),
    "river_flood": dict(nx=12, ny=6, t_end=60.0),
    "from_netcdf": dict(t_end=5.0),
}
GENERIC_SIZES = {"n": 8, "nx": 12, "ny": 6}


def _small_params(name):
    if name in SMALL:
        return SMALL[name]
    known = scn.parameters(scn.load_module(name))
    return {k: v for k, v in GENERIC_SIZES.items() if k in known and known[k] != 1}


@pytest.mark.parametrize("name", scn.builtin_scenarios())
def test_builtin_scenario_builds_and_runs(name):
    sc = scn.build(name, _small_params(name))
    assert isinstance(sc, swe.Scenario)
    assert sc.metadata["title"] and sc.metadata["description"]
    assert sc.metadata["scenario"] == name
    assert set(sc.metadata["parameters"]) == set(scn.parameters(scn.load_module(name)))
    assert sc.gauges, "every scenario names gauges"
    if name in SMALL:
        t_end, save_at = sc.t_end, sc.save_at
    else:  # a scenario this file does not know yet: a few CFL steps of it
        dt = float(sc.model.stable_time_step(sc.state0, sc.run_options.get("cfl", 0.45)))
        t_end = min(sc.t_end, 5 * dt) if math.isfinite(dt) else sc.t_end / 100
        save_at = None
    # Forward Euler without envelopes halves the compile time, which dominates these runs;
    # the scenario's own integrator and the envelopes are exercised in test_simulate.py.
    options = {**sc.run_options, "integrator": "euler"}
    result = swe.simulate(sc.model, sc.state0, t_end=t_end, save_at=save_at,
                          gauges=sc.gauges, envelopes=False, **options)
    assert 1 <= int(result.num_steps) <= 400
    for field in (result.states.h, result.states.hu, result.states.hv):
        assert np.all(np.isfinite(np.asarray(field)))
    assert float(result.times[-1]) == pytest.approx(t_end)


def test_every_parameter_has_a_default():
    for name in scn.builtin_scenarios():
        module = scn.load_module(name)
        assert module.__doc__, f"{name} needs a module docstring"
        for p in inspect.signature(module.build).parameters.values():
            assert p.default is not p.empty, f"{name}: {p.name} has no default"


@pytest.mark.parametrize("name", scn.builtin_scenarios())
def test_build_rejects_unknown_keys(name):
    with pytest.raises(ValueError, match="unknown parameter 'no_such_key'"):
        scn.build(name, {"no_such_key": 1})


def test_thacker_exact_matches_initial_state():
    from swe.scenarios.thacker_bowl import exact

    params = dict(n=16, a=1.2, sigma=0.4, h0=0.15)
    sc = scn.build("thacker_bowl", params)
    X, Y = (np.asarray(c) for c in sc.model.grid.cell_centers())
    h, u, v = exact(X, Y, 0.0, a=1.2, sigma=0.4, h0=0.15)
    np.testing.assert_allclose(np.asarray(sc.state0.h), h, rtol=0, atol=1e-14)
    np.testing.assert_allclose(np.asarray(sc.state0.hu), h * u, rtol=0, atol=1e-14)
    np.testing.assert_allclose(np.asarray(sc.state0.hv), h * v, rtol=0, atol=1e-14)
    wet = h > 0
    assert wet.any() and (~wet).any()  # a shoreline inside the domain
    omega = math.sqrt(2 * 9.81 * 0.15) / 1.2
    np.testing.assert_allclose(v[wet], 0.4 * omega)
    assert np.all(u == 0.0)
    assert sc.t_end == pytest.approx(2 * math.pi / omega)
    # One period later the exact solution is back where it started.
    h1, _, _ = exact(X, Y, sc.t_end, a=1.2, sigma=0.4, h0=0.15)
    np.testing.assert_allclose(h1, h, atol=1e-12)


def test_tsunami_wave_moves_towards_the_beach():
    sc = scn.build("tsunami_runup", dict(nx=200))
    h, hu = np.asarray(sc.state0.h)[0], np.asarray(sc.state0.hu)[0]
    x = np.asarray(sc.model.grid.xc)
    assert np.all(hu <= 0.0) and hu.min() < 0.0  # westwards, the beach is at x < 0
    assert np.all(h[x < 0] == 0.0)  # the beach starts dry
    assert sc.metadata["runup_predicted_m"] == pytest.approx(
        2.831 * math.sqrt(19.85) * 0.0185**1.25)


def test_from_netcdf_reads_a_file_and_reports_problems(tmp_path):
    from swe.scenarios import from_netcdf
    import xarray as xr

    path = from_netcdf.write_example(tmp_path / "terrain.nc")
    sc = scn.build("from_netcdf", dict(path=str(path)))
    with xr.open_dataset(path) as ds:
        x, y = ds.x.values, ds.y.values
        np.testing.assert_allclose(np.asarray(sc.model.bed), ds.bed.values)
    dx = x[1] - x[0]
    assert sc.model.grid.x == pytest.approx((x[0] - dx / 2, x[-1] + dx / 2))
    assert sc.model.grid.shape == (y.size, x.size)

    with pytest.raises(ValueError, match="does not exist"):
        scn.build("from_netcdf", dict(path=str(tmp_path / "missing.nc")))
    with xr.open_dataset(path) as ds:
        ds.load()
    ds.drop_vars("manning_n").to_netcdf(tmp_path / "no_n.nc")
    with pytest.raises(ValueError, match=r"no_n\.nc.*missing variable 'manning_n'"):
        scn.build("from_netcdf", dict(path=str(tmp_path / "no_n.nc")))
    assert scn.build("from_netcdf", dict(path=str(tmp_path / "no_n.nc"), manning=0.03))
    uneven = ds.assign_coords(x=np.concatenate([x[:-1], [x[-1] + 0.5 * dx]]))
    uneven.to_netcdf(tmp_path / "uneven.nc")
    with pytest.raises(ValueError, match=r"uneven\.nc.*'x' is not uniformly spaced"):
        scn.build("from_netcdf", dict(path=str(tmp_path / "uneven.nc")))
    # Rasters often run north to south: flipped on reading.
    ds.isel(y=slice(None, None, -1)).to_netcdf(tmp_path / "flipped.nc")
    flipped = scn.build("from_netcdf", dict(path=str(tmp_path / "flipped.nc")))
    np.testing.assert_array_equal(np.asarray(flipped.model.bed), np.asarray(sc.model.bed))


def test_scenarios_from_an_uninstalled_checkout(tmp_path):
    """A source checkout run with ``PYTHONPATH=.`` and no install (as scripts/gpu_bench.sh
    runs on a bare device machine) finds the built-in scenarios in ``scenarios/``."""
    import shutil
    import site
    import subprocess
    import sys
    from pathlib import Path

    root = Path(swe.__file__).resolve().parent.parent
    shutil.copytree(root / "swe", tmp_path / "swe",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(Path(scn._scenarios_package().__file__).parent, tmp_path / "scenarios",
                    ignore=shutil.ignore_patterns("__pycache__"))
    # -S: no site hooks, so no installed (or editable) swe.scenarios to fall back on.
    code = (f"import sys; sys.path[:0] = [{str(tmp_path)!r}]; "
            f"sys.path += {site.getsitepackages() + [site.getusersitepackages()]!r}; "
            "import swe.scenario as s; m = s.load_module('thacker_bowl'); "
            "print(m.__file__); print(','.join(s.builtin_scenarios()))")
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out[0] == str(tmp_path / "scenarios" / "thacker_bowl.py")
    assert out[1].split(",") == scn.builtin_scenarios()


def test_gauge_coordinates_from_numpy_and_jax_scalars_are_floats():
    """Coordinates taken from arrays (``X[j, i]``, ``grid.xc[5]``) are stored as floats,
    with no warning about arrays set as static fields."""
    import warnings

    import jax.numpy as jnp

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = swe.Gauge("a", np.float64(10.0), jnp.asarray(2.5, jnp.float32))
    assert (type(g.x), type(g.y), g.x, g.y) == (float, float, 10.0, 2.5)
    with pytest.raises(ValueError, match=r"has shape \(2,\); expected a number in m"):
        swe.Gauge("a", np.array([1.0, 2.0]), 1.0)


def test_scenario_parameters_out_of_range_are_one_clear_error():
    with pytest.raises(ValueError, match=r"slope=0\.0 is invalid; expected a number > 0"):
        scn.build("river_flood", {"slope": 0.0})
    with pytest.raises(ValueError, match=r"x0=1200\.0 is invalid; the dam must stand inside"):
        scn.build("dam_break", {"x0": 1200.0})
    sc = scn.build("dam_break", {"x0": 100.0, "nx": 100})  # gauges kept in the channel
    assert [g.x for g in sc.gauges] == [5.0, 100.0, 300.0]

"""The swe command end to end, in subprocesses, as a user runs it."""

import dataclasses
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import xarray as xr

import swe
from swe.output import VARIABLES
from swe.scenario import build

ENV = {**os.environ, "SWE_CACHE_DIR": ""}


def swe_cmd(*args, **kw):
    return subprocess.run([sys.executable, "-m", "swe", *args], capture_output=True, text=True,
                          env=ENV, timeout=300, **kw)


def test_run_writes_a_cf_file_equal_to_the_python_result(tmp_path):
    out = tmp_path / "tmp.nc"
    p = swe_cmd("run", "dam_break", "--set", "nx=200", "-o", str(out))
    assert p.returncode == 0, p.stderr
    assert "200x1 = 200 cells" in p.stdout and "cell-updates/s" in p.stdout
    assert "water volume" in p.stdout and str(out) in p.stdout
    assert not (tmp_path / "tmp.nc.partial").exists()
    ds = xr.open_dataset(out)
    assert ds.attrs["Conventions"] == "CF-1.10"
    assert "swe run dam_break --set nx=200" in ds.attrs["history"]
    assert ds.attrs["param_nx"] == 200 and ds.attrs["riemann"] == "hllc"
    for name in ("h", "u", "v", "eta", "bed", "max_depth", "max_speed", "arrival_time",
                 "gauge_h", "x", "y", "time"):
        assert name in ds.variables
        for key in ("standard_name", "long_name", "positive"):
            assert ds[name].attrs.get(key) == VARIABLES[name].get(key)
        assert "units" in ds[name].attrs or "units" in ds[name].encoding
    assert ds["x"].attrs["axis"] == "X" and ds["time"].attrs["axis"] == "T"
    assert ds["h"].dims == ("time", "y", "x") and ds["gauge_h"].dims == ("gauge", "time")
    assert np.all(np.diff(ds["time"].values) > np.timedelta64(0))
    assert ds.sizes["time"] == 21
    # Round trip: the file opens to what the Python API returns for the same run.
    jax_x64 = __import__("jax").config.jax_enable_x64
    assert jax_x64
    sc = build("dam_break", {"nx": 200})
    r = swe.simulate(sc.model, sc.state0, sc.t_end, sc.save_at, gauges=sc.gauges,
                     arrival_threshold=sc.arrival_threshold)
    ref = r.to_xarray()
    for name in ref.variables:
        if ref[name].dtype.kind == "f":
            np.testing.assert_allclose(ds[name].values, ref[name].values, rtol=1e-12, atol=1e-12)
        else:
            np.testing.assert_array_equal(ds[name].values, ref[name].values)


@pytest.mark.parametrize("name,params,integrator", [
    ("dam_break", {"nx": 200}, "split"),
    ("radial_dam_break", {"n": 40, "t_end": 10.0}, "strang")])
def test_run_with_the_split_schemes_and_the_roe_flux(tmp_path, name, params, integrator):
    out = tmp_path / "split.nc"
    sets = [a for k, v in params.items() for a in ("--set", f"{k}={v}")]
    p = swe_cmd("run", name, *sets, "--integrator", integrator, "--riemann", "roe",
                "--limiter", "mc", "-o", str(out))
    assert p.returncode == 0, p.stderr
    ds = xr.open_dataset(out)
    assert ds.attrs["integrator"] == integrator and ds.attrs["cfl"] == 0.9
    assert ds.attrs["riemann"] == "roe" and ds.attrs["limiter"] == "mc"
    sc = build(name, params)
    model = dataclasses.replace(sc.model, scheme=swe.FiniteVolume(riemann="roe", limiter="mc"))
    r = swe.simulate(model, sc.state0, sc.t_end, sc.save_at, integrator=integrator)
    np.testing.assert_allclose(ds["h"].values, np.asarray(r.states.h), rtol=0, atol=1e-12)


@pytest.mark.parametrize("args,needle", [
    (["run", "no_such_scenario"], "unknown scenario 'no_such_scenario'; choose one of"),
    (["run", "dam_break", "--set", "nope=1"], "unknown parameter 'nope'"),
    (["run", "dam_break", "--set", "nx=abc"], "--set nx='abc' is invalid for scenario "
                                              "'dam_break'; expected an integer"),
    (["run", "dam_break", "--set", "nx"], "expected KEY=VALUE"),
    (["run", "dam_break", "--set", "nx=0"], "nx=0 is invalid"),
    (["run", "dam_break", "--set", "t_end='5'"], "--set t_end='5' is invalid for scenario "
                                                 "'dam_break'; expected a number"),
    (["run", "dam_break", "--set", "nx=10.5"], "expected an integer (default 1000)"),
    (["run", "lake_at_rest", "--set", "walls='no'"], "expected True or False"),
    (["run", "lake_at_rest", "--ensemble", "walls=1,2"], "--ensemble walls=1 is invalid"),
    (["run", "lake_at_rest", "--set", "eta0=0.4", "--ensemble", "eta0=0.5,0.6"],
     "eta0 is given by --set and by --ensemble"),
    (["run", "dam_break", "--limiter", "superbee"], "limiter='superbee' is not supported"),
    (["run", "dam_break", "--cfl", "1.5"], "cfl=1.5 is invalid"),
    (["run", "dam_break", "--compress", "12"], "compress=12 is invalid; expected a zlib level"),
    (["run", "dam_break", "--integrator", "rk4"], "integrator='rk4' is not supported"),
    (["run", "dam_break", "--precision", "float16"], "invalid choice"),
    (["run", "missing_file.py"], "does not exist"),
    (["plot", "missing.nc"], "does not exist"),
    (["frobnicate"], "invalid choice"),
    (["bench", "--stream", "-5"], "argument --stream: '-5' is invalid; expected a number > 0"),
    (["bench", "--threads", "0"], "argument --threads: '0' is invalid; expected a number > 0"),
])
def test_bad_input_exits_2_with_one_line(args, needle):
    p = swe_cmd(*args)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert needle in lines[0]
    assert "Traceback" not in p.stderr


def test_unreadable_file_and_broken_scenario_file(tmp_path):
    bad = tmp_path / "bad.nc"
    bad.write_text("not a netCDF file")
    p = swe_cmd("plot", str(bad))
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1
    script = tmp_path / "broken.py"
    script.write_text("raise RuntimeError('boom')\n")
    p = swe_cmd("run", str(script))
    assert p.returncode == 2 and "boom" in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_output_paths_checked_before_the_run(tmp_path):
    """An output that names a directory, a Zarr name on a file or on a folder that is not
    a Zarr store (whose contents a finished run would delete), an empty name, or the
    scenario's own input file: one line, exit 2, before any computing, nothing lost."""
    from swe.output import check_output_path

    folder = tmp_path / "folder"
    folder.mkdir()
    notes = tmp_path / "mine.zarr" / "notes.txt"
    notes.parent.mkdir()
    notes.write_text("keep me")
    (tmp_path / "file.zarr").write_text("")
    dem = tmp_path / "dem.nc"
    dem.write_text("")
    cases = [(folder, "is a directory; expected a file name"),
             (notes.parent, "is a directory that is not a Zarr store"),
             (tmp_path / "file.zarr", "is an existing file; a .zarr output is a directory"),
             ("", "output '' is invalid")]
    for path, needle in cases:
        with pytest.raises(ValueError, match=re.escape(needle)):
            check_output_path(path)
    with pytest.raises(ValueError, match="is the scenario's input file"):
        check_output_path(tmp_path / "." / "dem.nc", inputs=[str(dem)])
    assert check_output_path(tmp_path / "new" / "out.nc") == tmp_path / "new" / "out.nc"
    p = swe_cmd("run", "lake_at_rest", "--set", "n=8", "--set", "t_end=0.1", "-o",
                str(notes.parent))
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1
    assert "not a Zarr store" in p.stderr and notes.read_text() == "keep me"
    assert not list(tmp_path.glob("*.partial"))


def test_scenario_file_with_keyword_parameters(tmp_path):
    """``def build(**params)`` (as the README writes the signature) takes any --set key;
    an override that the scenario cannot use is one line, exit 2, naming it."""
    script = tmp_path / "kw.py"
    script.write_text(
        "import swe\n"
        "def build(**params):\n"
        "    n = params.get('n', 8)\n"
        "    grid = swe.Grid(nx=n, ny=1, x=(0.0, 1.0))\n"
        "    return swe.Scenario(swe.ShallowWater(grid), swe.State(h=[[1.0] * n], hu=0.0,\n"
        "                        hv=0.0), t_end=0.05 * params.get('scale', 1.0))\n")
    out = tmp_path / "kw.nc"
    p = swe_cmd("run", str(script), "--set", "n=12", "-o", str(out), "--quiet")
    assert p.returncode == 0, p.stderr
    assert xr.open_dataset(out).sizes["x"] == 12
    p = swe_cmd("run", str(script), "--set", "scale='a'", "-o", str(out))
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    assert "failed to build with scale='a': TypeError" in p.stderr


def test_list_and_info():
    p = swe_cmd("list")
    assert p.returncode == 0
    assert "radial_dam_break (default)" in p.stdout and "h_left = 10.0" in p.stdout
    p = swe_cmd("info")
    assert p.returncode == 0 and "jax " in p.stdout and "default precision" in p.stdout


def test_blow_up_keeps_frames_and_reports_where(tmp_path):
    script = tmp_path / "unstable.py"
    script.write_text(
        "import numpy as np\nimport swe\n\n"
        "def build(dt=50.0):\n"
        "    grid = swe.Grid(nx=40, ny=1, x=(0.0, 400.0))\n"
        "    model = swe.ShallowWater(grid, bed=-2.0)\n"
        "    x = np.asarray(grid.xc)\n"
        "    s0 = swe.State.from_surface(model, eta=0.5 * np.exp(-((x - 200) / 30) ** 2)[None])\n"
        "    return swe.Scenario(model, s0, t_end=5000.0, save_at=100.0,\n"
        "                        run_options=dict(dt=dt))\n")
    out = tmp_path / "u.nc"
    p = swe_cmd("run", str(script), "-o", str(out), "--quiet")
    assert p.returncode == 1
    assert "blew up at t=" in p.stderr and "step" in p.stderr
    partial = tmp_path / "u.nc.partial"
    assert partial.exists() and not out.exists()
    ds = xr.open_dataset(partial)
    assert ds.sizes["time"] >= 1 and np.all(np.isfinite(ds["h"].values))


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_interrupted_run_keeps_a_readable_partial_file(tmp_path, sig):
    out = tmp_path / "long.nc"
    partial = tmp_path / "long.nc.partial"
    proc = subprocess.Popen(
        [sys.executable, "-m", "swe", "run", "radial_dam_break", "--set", "n=120",
         "--set", "t_end=2000.0", "-o", str(out), "--quiet"],
        env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        # A shell's background job starts with SIGINT ignored, and Python then keeps it
        # ignored: give the child the default disposition, as in a terminal.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.time() + 240
        size = 0
        # Wait until a few frames (each ~350 kB) are on disk, then kill between two of them.
        while time.time() < deadline and size < 1_200_000:
            time.sleep(0.2)
            size = partial.stat().st_size if partial.exists() else 0
        assert size >= 1_200_000, "the run never wrote frames"
        proc.send_signal(sig)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not out.exists() and partial.exists()
    with xr.open_dataset(partial) as ds:
        assert ds.sizes["time"] >= 2
        assert np.all(np.diff(ds["time"].values) > np.timedelta64(0))
        assert np.isfinite(ds["h"].values).all()


def test_zarr_output_and_plots(tmp_path):
    store = tmp_path / "d.zarr"
    p = swe_cmd("run", "dam_break", "--set", "nx=100", "--set", "t_end=5.0", "-o", str(store),
                "--quiet")
    assert p.returncode == 0, p.stderr
    assert store.is_dir() and not (tmp_path / "d.zarr.partial").exists()
    ds = xr.open_zarr(store, consolidated=False)
    assert ds.sizes["time"] == 21 and ds.attrs["Conventions"] == "CF-1.10"
    assert ds["h"].attrs["standard_name"] == "sea_floor_depth_below_sea_surface"
    assert float(ds["max_depth"].max()) == pytest.approx(10.0)
    # 1-D profiles from a netCDF run, and a 2-D map with velocity arrows.
    nc = tmp_path / "d.nc"
    assert swe_cmd("run", "dam_break", "--set", "nx=100", "--set", "t_end=5.0", "-o", str(nc),
                   "--quiet").returncode == 0
    p = swe_cmd("plot", str(nc), "--var", "h", "-o", str(tmp_path / "d.png"))
    assert p.returncode == 0 and (tmp_path / "d.png").stat().st_size > 10_000
    r2 = tmp_path / "r.nc"
    assert swe_cmd("run", "--set", "n=40", "--set", "t_end=5.0", "-o", str(r2),
                   "--quiet").returncode == 0
    p = swe_cmd("plot", str(r2), "--time", "2.5", "-o", str(tmp_path / "r.png"))
    assert p.returncode == 0 and (tmp_path / "r.png").stat().st_size > 10_000
    p = swe_cmd("plot", str(r2), "--var", "nope")
    assert p.returncode == 2 and "choose one of h, u, v, eta" in p.stderr


def test_second_process_takes_the_solver_from_the_persistent_cache(tmp_path):
    env = {**os.environ, "SWE_CACHE_DIR": str(tmp_path / "cache")}

    def cache_hits():
        p = subprocess.run([sys.executable, "-m", "swe", "run", "dam_break", "--set", "nx=50",
                            "-o", str(tmp_path / "out.nc")], capture_output=True, text=True,
                           env=env, timeout=300)
        assert p.returncode == 0, p.stderr
        return int(p.stdout.split("programs from the persistent cache: ")[1].split(")")[0])

    assert cache_hits() == 0
    # The compiled run itself is in the cache (no host callback keeps it out)...
    assert any(f.name.startswith("jit_solve") for f in (tmp_path / "cache").iterdir())
    # ...and a second process takes it from there.
    assert cache_hits() >= 1


def test_run_with_the_pallas_kernel_and_its_refusals(tmp_path):
    """``--kernel pallas-interpret`` runs the default scenario's stages through the Pallas
    kernel (interpret mode) and writes what XLA's stages give, with the kernel it took in
    the file's attributes; ``--kernel pallas`` on a CPU and an unknown kernel exit 2 with
    one line."""
    out, ref = tmp_path / "pallas.nc", tmp_path / "xla.nc"
    sets = ("--set", "n=24", "--set", "t_end=2.0")
    for path, kernel in ((out, "pallas-interpret"), (ref, "xla")):
        p = swe_cmd("run", "radial_dam_break", *sets, "--kernel", kernel, "--quiet",
                    "-o", str(path))
        assert p.returncode == 0, p.stderr
    ds, want = xr.open_dataset(out), xr.open_dataset(ref)
    assert ds.attrs["stage_kernel"] == "pallas-interpret" and want.attrs["stage_kernel"] == "xla"
    assert ds.sizes["time"] > 1
    np.testing.assert_allclose(ds["h"].values, want["h"].values, rtol=0, atol=1e-12)
    for kernel, message in (("pallas", "kernel='pallas' needs a TPU"),
                            ("cuda", "kernel='cuda' is not supported")):
        p = swe_cmd("run", "radial_dam_break", *sets, "--kernel", kernel, "-o",
                    str(tmp_path / "bad.nc"))
        assert p.returncode == 2 and message in p.stderr, p.stderr
        assert len(p.stderr.strip().splitlines()) == 1
        assert not (tmp_path / "bad.nc").exists()


def test_scenario_info_lists_every_parameter_with_units_and_meaning():
    """``swe info SCENARIO``: the scenario's description, then each build() parameter with
    its default, units, the kind it accepts and its meaning; every built-in scenario
    documents every parameter (``PARAMETERS``). ``swe list`` shows the units too."""
    from swe.scenario import builtin_scenarios, load_module, parameter_help, parameters

    for name in builtin_scenarios():
        module = load_module(name)
        documented = getattr(module, "PARAMETERS", {})
        assert list(documented) == list(parameters(module)), name
        for key, default, units, kind, meaning in parameter_help(module):
            assert units and units != "?" and meaning, (name, key)
    p = swe_cmd("info", "river_flood")
    assert p.returncode == 0, p.stderr
    assert "A river flood in a synthetic valley" in p.stdout
    row = next(line for line in p.stdout.splitlines() if line.split()[:1] == ["peak_discharge"])
    assert row.split()[1:4] == ["1500.0", "m^3/s", "a"] and "number" in row
    p = swe_cmd("info", "from_netcdf")  # and the file format it reads
    assert p.returncode == 0 and "netCDF" in p.stdout and "path" in p.stdout
    p = swe_cmd("list")
    assert p.returncode == 0 and "peak_discharge = 1500.0 [m^3/s]" in p.stdout
    p = swe_cmd("info", "no_such_scenario")
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1


def test_string_values_need_no_quotes(tmp_path):
    """``--set path=dem.nc``: text that is not a Python literal is a string, then checked
    against the parameter's kind like any value."""
    from swe.scenarios import from_netcdf

    dem = from_netcdf.write_example(tmp_path / "dem.nc")
    out = tmp_path / "out.nc"
    p = swe_cmd("run", "from_netcdf", "--set", f"path={dem}", "--set", "t_end=2",
                "--set", "outflow_sides=east,north", "-o", str(out))
    assert p.returncode == 0, p.stderr
    assert xr.open_dataset(out).sizes["time"] >= 2


def test_compressed_output_is_smaller_and_holds_the_same_values(tmp_path):
    plain, packed = tmp_path / "plain.nc", tmp_path / "packed.nc"
    for out, extra in ((plain, []), (packed, ["--compress"])):
        p = swe_cmd("run", "radial_dam_break", "--set", "n=60", "--set", "t_end=10", "-o",
                    str(out), *extra)
        assert p.returncode == 0, p.stderr
    a, b = xr.open_dataset(plain), xr.open_dataset(packed)
    assert b["h"].encoding["zlib"] and b["h"].encoding["complevel"] == 4
    assert packed.stat().st_size < 0.7 * plain.stat().st_size
    for name in ("h", "u", "max_depth", "gauge_h"):
        np.testing.assert_array_equal(a[name].values, b[name].values)


def test_a_dems_coordinate_reference_system_reaches_the_output(tmp_path):
    """from_netcdf carries the DEM's CF grid mapping (crs_wkt included) into the output: a
    variable ``crs`` named by every field's ``grid_mapping``; Result.to_xarray takes one."""
    from swe.scenarios import from_netcdf

    wkt = ('PROJCS["WGS 84 / UTM zone 33N",GEOGCS["WGS 84",DATUM["WGS_1984",SPHEROID['
           '"WGS 84",6378137,298.257223563]],PRIMEM["Greenwich",0],UNIT["degree",'
           '0.0174532925199433]],PROJECTION["Transverse_Mercator"],UNIT["metre",1]]')
    ds = xr.open_dataset(from_netcdf.write_example(tmp_path / "plain.nc")).load()
    ds["utm"] = ((), 0, {"grid_mapping_name": "transverse_mercator", "crs_wkt": wkt,
                         "longitude_of_central_meridian": 15.0})
    ds["bed"].attrs["grid_mapping"] = "utm"
    dem = tmp_path / "dem.nc"
    ds.to_netcdf(dem)
    out = tmp_path / "out.nc"
    p = swe_cmd("run", "from_netcdf", "--set", f"path={dem}", "--set", "t_end=2", "-o",
                str(out))
    assert p.returncode == 0, p.stderr
    result = xr.open_dataset(out)
    assert result["crs"].attrs["crs_wkt"] == wkt
    assert result["crs"].attrs["longitude_of_central_meridian"] == 15.0
    assert result["h"].attrs["grid_mapping"] == "crs" == result["bed"].attrs["grid_mapping"]
    sc = build("from_netcdf", {"path": str(tmp_path / "plain.nc"), "t_end": 1.0})
    assert "grid_mapping" not in sc.metadata  # a DEM without one: none written
    r = swe.simulate(sc.model, sc.state0, 1.0)
    mapped = r.to_xarray(grid_mapping={"grid_mapping_name": "transverse_mercator"})
    assert mapped["eta"].attrs["grid_mapping"] == "crs" and "crs" not in r.to_xarray()
    with pytest.raises(ValueError, match="grid_mapping='utm' is invalid"):
        r.to_xarray(grid_mapping="utm")


def test_a_run_that_never_holds_water_warns(tmp_path):
    """from_netcdf with its lake level below the whole bed: a warning, not a silent run."""
    out = tmp_path / "dry.nc"
    p = swe_cmd("run", "from_netcdf", "--set", "eta0=-100", "--set", "t_end=2", "-o", str(out))
    assert p.returncode == 0, p.stderr
    assert "warning: no cell held water" in p.stderr and "water volume 0 -> 0 m^3" in p.stdout
    p = swe_cmd("run", "from_netcdf", "--set", "t_end=2", "-o", str(out))
    assert p.returncode == 0 and "warning" not in p.stderr

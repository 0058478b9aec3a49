"""The scripts in examples/ run as a user runs them (``python examples/NAME.py --coarse
--output-dir DIR``, a fresh process) and their numbers make physical sense.

Each writes ``summary.json`` to its output folder; the tests read it and the files beside it.
The examples turn on float64 themselves; the subprocess gets strict rank promotion and
warnings as errors, as the tests do, and one CPU device, as a user's run does.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run_example(name: str, out: Path) -> dict:
    env = dict(os.environ, JAX_NUMPY_RANK_PROMOTION="raise")
    # conftest's fake devices are for the sharding tests; an example runs on one device.
    flags = [f for f in env.get("XLA_FLAGS", "").split()
             if not f.startswith("--xla_force_host_platform_device_count")]
    env["XLA_FLAGS"] = " ".join(flags)
    proc = subprocess.run([sys.executable, "-W", "error", str(EXAMPLES / f"{name}.py"),
                           "--coarse", "--output-dir", str(out)],
                          cwd=out.parent, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{name} failed:\n{proc.stdout}\n{proc.stderr}"
    # Nothing is written outside the output folder (the working directory is its parent).
    assert [p.name for p in out.parent.iterdir()] == [out.name]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["example"] == name and summary["coarse"] is True
    return summary


def test_flood_on_dem_writes_cf_output_that_matches_its_dem_and_its_inflows(tmp_path):
    out = tmp_path / "flood"
    s = run_example("flood_on_dem", out)
    with xr.open_dataset(out / "flood.nc") as ds, xr.open_dataset(out / "dem.nc") as dem:
        assert ds.attrs["Conventions"].startswith("CF-1.")
        assert ds.h.dims == ("time", "y", "x") and ds.h.attrs["units"] == "m"
        # The DEM was written north to south, as rasters are: the run's bed is the same
        # terrain with y ascending.
        np.testing.assert_array_equal(ds.bed.values, dem.bed.sortby("y").values)
        max_depth = ds.max_depth.values
        cell_area = float((ds.x[1] - ds.x[0]) * (ds.y[1] - ds.y[0]))
        final_volume = float(ds.h.isel(time=-1).sum()) * cell_area
    assert s["max_depth_m"] == pytest.approx(float(max_depth.max()), rel=1e-12)
    assert s["max_depth_m"] > 2.0  # bankfull channel (2.5 m) overtopped by the flood peak
    assert s["flooded_area_km2"] == pytest.approx(
        float((max_depth > 0.1).sum()) * cell_area / 1e6, rel=1e-12)
    assert s["flooded_outside_channel_km2"] > 0.5  # the floodplain is flooded
    assert s["town_max_depth_m"] > 0.1
    # The valley started dry: it holds at most what the river and the rain brought in
    # (the rest left through the outflow), and most of it three hours later.
    volume_in = s["river_volume_in_m3"] + s["rain_volume_in_m3"]
    assert s["final_volume_m3"] == pytest.approx(final_volume, rel=1e-9)
    assert 0.5 * volume_in < final_volume <= volume_in * (1 + 1e-9)


def test_tsunami_gauges_record_arrivals_in_order_of_distance(tmp_path):
    out = tmp_path / "tsunami"
    s = run_example("tsunami_gauges", out)
    rows = sorted(s["gauges"], key=lambda r: r["distance_km"])
    arrivals = [r["arrival_s"] for r in rows]
    assert all(np.isfinite(arrivals)), rows  # the wave reached every gauge
    assert np.all(np.diff(arrivals) > 0), rows
    assert np.all(np.diff([r["peak_time_s"] for r in rows]) > 0), rows
    # Over the flat deep ocean the crest spreads and decays with distance.
    deep = [r for r in rows if r["depth_m"] > 3000.0]
    assert len(deep) >= 2 and np.all(np.diff([r["peak_m"] for r in deep]) < 0), deep
    assert all(0.0 < r["peak_m"] < 2.0 for r in rows)  # below the 2 m source
    with xr.open_dataset(out / "gauges.nc") as ds:
        assert ds.gauge_eta.dims == ("gauge", "time")
        assert sorted(ds.gauge.values.tolist()) == sorted(r["gauge"] for r in rows)


def test_gradient_through_simulate_equals_central_differences(tmp_path):
    s = run_example("gradient", tmp_path / "gradient")
    assert s["observed_peak_m"] > 0.02  # the wave reaches the gauge within the record
    for g in s["gradients"]:
        assert abs(g["grad"] - g["finite_difference"]) <= 1e-5 * abs(g["finite_difference"]), g
        # Clearly nonzero: a 1% change of the parameter changes the misfit by more than
        # 0.01% of itself.
        assert abs(g["grad"]) * g["value"] > 1e-2 * s["misfit"], g

def test_ensemble_members_slow_down_monotonically_with_roughness(tmp_path):
    out = tmp_path / "ensemble"
    s = run_example("ensemble", out)
    rows = s["members"]
    n = [r["manning_n"] for r in rows]
    assert len(rows) >= 3 and np.all(np.diff(n) > 0)
    assert np.all(np.diff([r["arrival_middle_s"] for r in rows]) > 0), rows
    assert np.all(np.diff([r["arrival_east_s"] for r in rows]) > 0), rows
    assert np.all(np.diff([r["max_speed_m_s"] for r in rows]) < 0), rows
    with xr.open_dataset(out / "ensemble.nc") as ds:
        np.testing.assert_allclose(ds.ensemble.values, n)
        assert ds.max_depth.dims == ("ensemble", "y", "x")
        np.testing.assert_allclose(ds.max_speed.max(dim=("y", "x")).values,
                                   [r["max_speed_m_s"] for r in rows], rtol=1e-12)

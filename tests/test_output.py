"""Result.to_xarray: dims, values and CF-1.10 metadata."""

import numpy as np

import swe
from swe.output import VARIABLES


def test_dataset_has_cf_variables_and_round_trips_values():
    grid = swe.Grid(nx=10, ny=6, x=(0.0, 100.0), y=(-30.0, 30.0))
    X, Y = (np.asarray(a) for a in grid.cell_centers())
    bed = -1.0 + 0.02 * X
    model = swe.ShallowWater(grid, bed=bed)
    s0 = swe.State.from_surface(model, eta=0.1 * np.exp(-((X - 30) ** 2) / 100.0), u=0.1)
    r = swe.simulate(model, s0, t_end=4.0, save_at=1.0)
    ds = r.to_xarray()
    assert ds.attrs["Conventions"] == "CF-1.10"
    assert ds["h"].dims == ("time", "y", "x") and ds["bed"].dims == ("y", "x")
    for name in ("h", "u", "v", "eta", "bed", "x", "y", "time"):
        for key, value in VARIABLES[name].items():
            assert ds[name].attrs[key] == value
        assert "units" in ds[name].attrs or "units" in ds[name].encoding
    assert ds["x"].attrs["axis"] == "X" and ds["y"].attrs["axis"] == "Y"
    assert ds["time"].attrs["axis"] == "T"
    seconds = (ds["time"].values - np.datetime64("2000-01-01T00:00:00")) / np.timedelta64(1, "s")
    np.testing.assert_array_equal(seconds, [0, 1, 2, 3, 4])
    assert ds["time"].encoding["units"] == "seconds since 2000-01-01 00:00:00"
    np.testing.assert_allclose(ds["x"].values, grid.xc)
    np.testing.assert_allclose(ds["y"].values, grid.yc)
    np.testing.assert_allclose(ds["h"].values, r.states.h)
    np.testing.assert_allclose(ds["eta"].values, np.asarray(r.states.h) + bed[None])
    wet = ds["h"].values > 1e-3
    np.testing.assert_allclose(ds["u"].values[wet], (np.asarray(r.states.hu)[wet]
                                                     / np.asarray(r.states.h)[wet]), rtol=1e-12)
    assert ds.attrs["riemann"] == "hllc" and ds.attrs["integrator"] == "ssprk2"

"""CF-1.10 output. Names, units and standard names live in one table, ``VARIABLES``."""

from __future__ import annotations

import numpy as np

from . import __version__
from .state import desingularised_velocity

CONVENTIONS = "CF-1.10"

# One table of metadata, read by every writer (cf. xgcm/pyqg): never scattered in code.
VARIABLES: dict[str, dict[str, str]] = {
    "x": dict(standard_name="projection_x_coordinate", long_name="cell-centre x coordinate",
              units="m", axis="X"),
    "y": dict(standard_name="projection_y_coordinate", long_name="cell-centre y coordinate",
              units="m", axis="Y"),
    "time": dict(standard_name="time", long_name="simulated time", axis="T"),
    "h": dict(standard_name="sea_floor_depth_below_sea_surface", long_name="water depth",
              units="m"),
    "u": dict(standard_name="sea_water_x_velocity", long_name="depth-averaged x velocity",
              units="m s-1"),
    "v": dict(standard_name="sea_water_y_velocity", long_name="depth-averaged y velocity",
              units="m s-1"),
    "eta": dict(standard_name="sea_surface_height_above_geoid",
                long_name="free-surface elevation (bed elevation where dry)", units="m"),
    "bed": dict(standard_name="altitude", long_name="bed elevation", units="m"),
}


def attrs(name: str) -> dict[str, str]:
    """The CF attributes of variable ``name`` (a copy, safe to modify)."""
    return dict(VARIABLES[name])


def to_dataset(result, time_units: str = "seconds since 2000-01-01 00:00:00"):
    """Build the CF ``xarray.Dataset`` of a :class:`~swe.Result`."""
    import xarray as xr

    model = result.model
    grid = model.grid
    st = result.states
    h = np.asarray(st.h)
    h_dry = np.asarray(model.h_dry)
    u = np.asarray(desingularised_velocity(st.h, st.hu, h_dry))
    v = np.asarray(desingularised_velocity(st.h, st.hv, h_dry))
    bed = np.asarray(model.bed)
    dims = ("time", "y", "x")
    ds = xr.Dataset(
        data_vars={
            "h": (dims, h, attrs("h")),
            "u": (dims, u, attrs("u")),
            "v": (dims, v, attrs("v")),
            "eta": (dims, h + bed, attrs("eta")),
            "bed": (("y", "x"), bed, attrs("bed")),
        },
        coords={
            "time": ("time", np.asarray(result.times), {**attrs("time"), "units": time_units}),
            "y": ("y", np.asarray(grid.yc), attrs("y")),
            "x": ("x", np.asarray(grid.xc), attrs("x")),
        },
        attrs={
            "Conventions": CONVENTIONS,
            "title": "swe shallow-water simulation",
            "source": f"swe-jax {__version__}",
            "g": float(model.g),
            "riemann": model.scheme.riemann,
            "reconstruction": model.scheme.reconstruction,
            "limiter": model.scheme.limiter,
            "num_steps": int(result.num_steps),
            **{k: (v if v is not None else "none") for k, v in result.settings.items()},
        },
    )
    # xarray would otherwise decode time to datetimes on read; keep seconds and no fill.
    ds["time"].encoding.update({"units": time_units, "_FillValue": None})
    return ds

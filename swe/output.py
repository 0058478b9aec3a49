"""CF-1.10 output: the in-memory ``xarray.Dataset`` and the incremental file writers.

Names, units and standard names live in one table, ``VARIABLES``; every writer reads it.
Files are written to ``OUT.partial``, one frame appended (and synced) per output time, and
renamed to ``OUT`` only when the run completes, so an interrupted run keeps every frame
already written and never leaves a file that looks complete.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from .pointwise import desingularised_velocity
from .stages import stage_kernel_for_run
from .version import __version__

CONVENTIONS = "CF-1.10"
DEFAULT_START = "2000-01-01T00:00:00"

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
    # surface_altitude: the height of the ground or sea floor above the geoid, as a DEM's.
    # positive: CF readers (and the IOOS checker) take an altitude for a vertical axis.
    "bed": dict(standard_name="surface_altitude", long_name="bed elevation", units="m",
                positive="up"),
    "max_depth": dict(standard_name="sea_floor_depth_below_sea_surface",
                      long_name="maximum water depth over the run", units="m",
                      cell_methods="time: maximum"),
    "max_speed": dict(standard_name="sea_water_speed",
                      long_name="maximum depth-averaged speed over the run", units="m s-1",
                      cell_methods="time: maximum"),
    # No standard name: CF's "time" needs units "seconds since <epoch>", which readers
    # decode into dates; this is a duration in seconds (the IOOS checker flagged "time").
    "arrival_time": dict(long_name="simulated time at which the depth first exceeded the "
                                   "arrival threshold, in seconds like the time coordinate "
                                   "(t0 if wet from the start; NaN: never)",
                         units="s"),
    "gauge": dict(long_name="gauge name", cf_role="timeseries_id"),
    "gauge_x": dict(standard_name="projection_x_coordinate", long_name="gauge x", units="m"),
    "gauge_y": dict(standard_name="projection_y_coordinate", long_name="gauge y", units="m"),
    "gauge_h": dict(standard_name="sea_floor_depth_below_sea_surface",
                    long_name="water depth at gauge", units="m"),
    "gauge_u": dict(standard_name="sea_water_x_velocity", long_name="x velocity at gauge",
                    units="m s-1"),
    "gauge_v": dict(standard_name="sea_water_y_velocity", long_name="y velocity at gauge",
                    units="m s-1"),
    "gauge_eta": dict(standard_name="sea_surface_height_above_geoid",
                      long_name="surface elevation at gauge", units="m"),
}
FIELDS = ("h", "u", "v", "eta")
ENVELOPES = ("max_depth", "max_speed", "arrival_time")


def attrs(name: str) -> dict[str, str]:
    """The CF attributes of variable ``name`` (a copy, safe to modify)."""
    return dict(VARIABLES[name])


def check_start_time(start_time) -> np.datetime64:
    """``start_time`` as a datetime (ValueError naming it otherwise). Times without a zone
    are taken as UTC; a zone suffix (``Z``, ``+01:00``) is refused, as NumPy drops it."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # NumPy warns, then drops a zone
            return np.datetime64(str(start_time), "s")
    except (ValueError, Warning):
        raise ValueError(f"start_time={start_time!r} is invalid; expected an ISO 8601 date "
                         "and time without a zone, such as '2000-01-01T00:00:00' (UTC)") from None


def time_units(start_time: str) -> str:
    return f"seconds since {check_start_time(start_time).astype(str).replace('T', ' ')}"


def frame_fields(model, state) -> dict[str, np.ndarray]:
    """``h, u, v, eta`` of a state as NumPy arrays (leading dims kept)."""
    h = np.asarray(state.h)
    h_dry = np.asarray(model.h_dry)
    return {
        "h": h,
        "u": np.asarray(desingularised_velocity(state.h, state.hu, h_dry)),
        "v": np.asarray(desingularised_velocity(state.h, state.hv, h_dry)),
        "eta": h + np.asarray(model.bed),
    }


def envelope_fields(envelopes) -> dict[str, np.ndarray]:
    arrival = np.asarray(envelopes.arrival)
    return {"max_depth": np.asarray(envelopes.max_depth),
            "max_speed": np.asarray(envelopes.max_speed),
            "arrival_time": np.where(np.isfinite(arrival), arrival, np.nan)}


def gauge_fields(model, gauges, fields) -> dict[str, np.ndarray]:
    """Gauge series ``(gauge, time)`` from fields ``(time, y, x)``: the containing cell."""
    idx = [model.grid.cell_index(g.x, g.y) for g in gauges]
    j = np.array([a for a, _ in idx], dtype=int)
    i = np.array([b for _, b in idx], dtype=int)
    return {f"gauge_{k}": np.moveaxis(fields[k][..., j, i], -1, 0) for k in FIELDS}


def global_attrs(model, settings, extra=None) -> dict:
    out = {
        "Conventions": CONVENTIONS,
        "title": "swe shallow-water simulation",
        "source": f"swe-jax {__version__}",
        "g": float(model.g),
        "riemann": model.scheme.riemann_name,
        "reconstruction": model.scheme.reconstruction,
        "limiter": model.scheme.limiter,
        "stage_kernel": stage_kernel_for_run(model, settings.get("integrator", "ssprk2")),
        "nx": model.grid.nx,
        "ny": model.grid.ny,
    }
    out.update({k: v for k, v in settings.items()})
    out.update(extra or {})
    return {k: _attr_value(v) for k, v in out.items()}


def _attr_value(v):
    """netCDF attributes take numbers and strings only."""
    if v is None:
        return "none"
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, (int, float, str, np.integer, np.floating)):
        return v
    return repr(v)


def _skeleton(model, gauges, start_time, attributes, dtype, times, fields, envelopes,
              members=None, member_name="member", grid_mapping=None):
    """The CF dataset for given frames; with zero frames it is the file header.

    ``members``: an ensemble's labels; every variable but the bed then gains a leading
    ``ensemble`` dimension (the header only: give no frames). ``grid_mapping``: see
    :func:`with_grid_mapping`."""
    import xarray as xr

    grid = model.grid
    dims = ("time", "y", "x")
    ny, nx = grid.shape
    nt = len(times)
    data = {name: (dims, fields[name] if fields else np.zeros((nt, ny, nx), dtype),
                   attrs(name)) for name in FIELDS}
    data["bed"] = (("y", "x"), np.asarray(model.bed), attrs("bed"))
    for name in ENVELOPES:
        value = envelopes[name] if envelopes else np.full((ny, nx), np.nan, dtype)
        data[name] = (("y", "x"), value, attrs(name))
    coords = {
        "time": ("time", check_start_time(start_time).astype("datetime64[ns]")
                 + (np.asarray(times, np.float64) * 1e9).round().astype("timedelta64[ns]"),
                 attrs("time")),
        "y": ("y", np.asarray(grid.yc), attrs("y")),
        "x": ("x", np.asarray(grid.xc), attrs("x")),
    }
    if gauges:
        series = gauge_fields(model, gauges, fields) if fields else {
            f"gauge_{k}": np.zeros((len(gauges), nt), dtype) for k in FIELDS}
        for k in FIELDS:
            data[f"gauge_{k}"] = (("gauge", "time"), series[f"gauge_{k}"], attrs(f"gauge_{k}"))
        coords["gauge"] = ("gauge", np.array([g.name for g in gauges], dtype=object),
                           attrs("gauge"))
        coords["gauge_x"] = ("gauge", np.array([g.x for g in gauges]), attrs("gauge_x"))
        coords["gauge_y"] = ("gauge", np.array([g.y for g in gauges]), attrs("gauge_y"))
    ds = xr.Dataset(data_vars=data, coords=coords, attrs=attributes)
    if members is not None:
        for name in ds.data_vars:
            if name != "bed":
                ds[name] = ds[name].expand_dims(ensemble=len(members)).copy()
        ds = ds.assign_coords(ensemble=("ensemble", np.asarray(members)))
        ds["ensemble"].attrs.update(long_name=f"ensemble member ({member_name})")
        ds.attrs["ensemble_members"] = len(members)
    ds["time"].encoding.update({"units": time_units(start_time), "dtype": "float64",
                                "_FillValue": None})
    for name in ("x", "y", "gauge_x", "gauge_y"):
        if name in ds:
            ds[name].encoding["_FillValue"] = None
    return with_grid_mapping(ds, grid_mapping)


def check_grid_mapping(grid_mapping) -> dict | None:
    """CF grid-mapping attributes (``grid_mapping_name``, ``crs_wkt``, ...) as a dict of
    strings and numbers, or None; ValueError naming ``grid_mapping`` otherwise."""
    if grid_mapping is None:
        return None
    if not isinstance(grid_mapping, Mapping) or not grid_mapping or not all(
            isinstance(k, str) and isinstance(v, (str, int, float, np.integer, np.floating))
            for k, v in grid_mapping.items()):
        raise ValueError(f"grid_mapping={grid_mapping!r} is invalid; expected a dict of CF "
                         "grid-mapping attributes, e.g. {'grid_mapping_name': "
                         "'transverse_mercator', 'crs_wkt': '...'}, or None")
    return dict(grid_mapping)


def with_grid_mapping(ds, grid_mapping):
    """``ds`` with its coordinate reference system: a scalar variable ``crs`` holding the
    CF grid-mapping attributes ``grid_mapping`` (a DEM's, say), named by the
    ``grid_mapping`` attribute of every variable on ``(y, x)``. Unchanged for None."""
    grid_mapping = check_grid_mapping(grid_mapping)
    if grid_mapping is None:
        return ds
    ds["crs"] = ((), np.int32(0), grid_mapping)
    for name, var in ds.data_vars.items():
        if {"y", "x"} <= set(var.dims):
            var.attrs["grid_mapping"] = "crs"
    return ds


def to_dataset(result, start_time: str = DEFAULT_START, attrs=None, grid_mapping=None):
    """The CF ``xarray.Dataset`` of a :class:`~swe.Result` (``grid_mapping``: see
    :func:`with_grid_mapping`)."""
    model = result.model
    fields = frame_fields(model, result.states)
    envelopes = envelope_fields(result.envelopes) if result.envelopes is not None else None
    # A run that failed with throw=False says so (its frames from the failure on are NaN).
    failed = {"failed": True} if bool(np.any(result.failed)) else {}
    attributes = global_attrs(model, {**result.settings, "num_steps": int(result.num_steps),
                                      **failed}, attrs)
    return _skeleton(model, result.gauges, start_time, attributes, fields["h"].dtype,
                     np.asarray(result.times), fields, envelopes, grid_mapping=grid_mapping)


class NetCDFWriter:
    """Appends frames to ``path.partial`` along an unlimited ``time`` and renames it to
    ``path`` on :meth:`close`. The header comes from the same table as :func:`to_dataset`,
    so a finished file opens to the same dataset as ``Result.to_xarray()``.

    With ``members`` (an ensemble's labels) the file has a leading ``ensemble`` dimension,
    ``(ensemble, time, y, x)``, and takes the :class:`~swe.ensemble.EnsembleFrame` s of
    :func:`swe.iterate_ensemble`; it opens to the same dataset as
    ``EnsembleResult.to_xarray()``.

    ``compress``: a zlib level, 1 (fastest) to 9 (smallest), with byte shuffling, for every
    data variable (fields in chunks of one frame); 0 (the default) writes uncompressed.
    ``grid_mapping``: the coordinate reference system's CF attributes
    (:func:`with_grid_mapping`).
    """

    def __init__(self, path, model, *, gauges=(), settings=None, attrs=None,
                 start_time: str = DEFAULT_START, dtype="float64", members=None,
                 member_name: str = "member", compress: int = 0, grid_mapping=None):
        compress = check_compress(compress)
        self.path = Path(path)
        self.partial = self.path.with_name(self.path.name + ".partial")
        self.model, self.gauges, self.start_time = model, tuple(gauges), start_time
        self.attributes = global_attrs(model, dict(settings or {}), attrs)
        self.dtype = np.dtype(dtype)
        self.ensemble = members is not None
        header = _skeleton(model, self.gauges, start_time, self.attributes, self.dtype, [],
                           None, None, members, member_name, grid_mapping)
        self.partial.parent.mkdir(parents=True, exist_ok=True)
        encoding = {}
        if compress:
            for name, var in header.data_vars.items():
                chunks = tuple(1 if d in ("time", "ensemble") else header.sizes[d]
                               for d in var.dims)
                encoding[name] = {"zlib": True, "complevel": compress, "shuffle": True,
                                  **({"chunksizes": chunks} if var.dims else {})}
        header.to_netcdf(self.partial, unlimited_dims=["time"], format="NETCDF4",
                         encoding=encoding)
        import netCDF4

        self.nc = netCDF4.Dataset(self.partial, "a")
        self.count = 0

    def write(self, frame):
        """Append one :class:`~swe.simulate.Frame` and sync it to disk."""
        k = self.count
        nc = self.nc
        nc["time"][k] = frame.time
        fields = frame_fields(self.model, frame.state)
        # Fields (time, y, x), or (ensemble, time, y, x) with members first.
        at = (slice(None), k) if self.ensemble else (k,)
        for name in FIELDS:
            nc[name][at] = fields[name]
        if self.gauges:
            series = gauge_fields(self.model, self.gauges, {n: f[..., None, :, :]
                                                            for n, f in fields.items()})
            for name, value in series.items():  # (gauge, [ensemble,] time=1)
                value = np.moveaxis(value[..., 0], 0, -1)
                nc[name][at[:-1] + (slice(None), k)] = value
        for name, value in envelope_fields(frame.envelopes).items():
            nc[name][:] = value
        nc.setncattr("num_steps", int(np.max(frame.num_steps)))
        nc.sync()
        self.count += 1

    def close(self, complete: bool = True):
        """Close the file; rename it into place only if the run completed."""
        self.nc.close()
        if complete:
            os.replace(self.partial, self.path)
        return self.path if complete else self.partial


class ZarrWriter:
    """The same layout as :class:`NetCDFWriter`, appended to a Zarr store with
    ``to_zarr(append_dim="time")`` (needs the ``zarr`` package). Zarr compresses every
    chunk with its default codec whatever ``compress`` says."""

    def __init__(self, path, model, *, gauges=(), settings=None, attrs=None,
                 start_time: str = DEFAULT_START, dtype="float64", compress: int = 0,
                 grid_mapping=None):
        check_compress(compress)
        self.grid_mapping = check_grid_mapping(grid_mapping)
        try:
            import zarr  # noqa: F401
        except ImportError as exc:
            raise ValueError("-o *.zarr needs the zarr package: pip install 'swe-jax[zarr]'") from exc
        self.path = Path(path)
        self.partial = self.path.with_name(self.path.name + ".partial")
        self.model, self.gauges, self.start_time = model, tuple(gauges), start_time
        self.attributes = global_attrs(model, dict(settings or {}), attrs)
        self.dtype = np.dtype(dtype)
        self.count = 0

    def write(self, frame):
        fields = {n: f[None] for n, f in frame_fields(self.model, frame.state).items()}
        ds = _skeleton(self.model, self.gauges, self.start_time, self.attributes, self.dtype,
                       [frame.time], fields, envelope_fields(frame.envelopes),
                       grid_mapping=self.grid_mapping)
        ds.attrs["num_steps"] = int(frame.num_steps)
        if self.count == 0:
            ds.to_zarr(self.partial, mode="w", consolidated=False)
        else:
            dynamic = [n for n in ds.data_vars if "time" in ds[n].dims]
            ds[dynamic].drop_vars([c for c in ("gauge", "gauge_x", "gauge_y") if c in ds]
                                  ).to_zarr(self.partial, append_dim="time", consolidated=False)
            ds[list(ENVELOPES)].to_zarr(self.partial, mode="r+", consolidated=False)
        self.count += 1

    def close(self, complete: bool = True):
        if complete:
            import shutil

            if self.path.exists():
                check_output_path(self.path)  # still a Zarr store (or empty)
                shutil.rmtree(self.path)
            os.replace(self.partial, self.path)
        return self.path if complete else self.partial


class NullWriter:
    """Stands in for a writer on the processes of a multi-host run that do not write
    (process 0 writes the file)."""

    count = 0
    path = None

    def write(self, frame):
        self.count += 1

    def close(self, complete: bool = True):
        return None


def is_zarr(path) -> bool:
    return str(path).rstrip("/").endswith(".zarr")


ZARR_MARKERS = (".zgroup", ".zattrs", "zarr.json")  # Zarr v2 and v3 stores


def check_output_path(path, inputs=()) -> Path:
    """``path`` as an output, checked before a run starts (ValueError naming it): not
    empty; for netCDF not an existing directory; for ``.zarr`` not an existing file, nor
    a non-empty directory that is not a Zarr store (a finished run replaces the path, and
    must not delete a folder of something else); and none of ``inputs`` (files the
    scenario reads, such as a DEM). Missing parent directories are created on writing."""
    if str(path) in ("", "."):
        raise ValueError(f"output {str(path)!r} is invalid; expected a file name such as "
                         "out.nc or out.zarr")
    path = Path(path)
    if is_zarr(path):
        if path.exists() and not path.is_dir():
            raise ValueError(f"output {str(path)!r} is an existing file; a .zarr output is "
                             "a directory (a Zarr store): choose another name")
        if (path.is_dir() and any(path.iterdir())
                and not any((path / m).exists() for m in ZARR_MARKERS)):
            raise ValueError(f"output {str(path)!r} is a directory that is not a Zarr store; "
                             "it would be replaced: remove it or choose another name")
    elif path.is_dir():
        raise ValueError(f"output {str(path)!r} is a directory; expected a file name such "
                         f"as {str(path / 'out.nc')!r}")
    for source in inputs:
        if path.exists() and Path(source).exists() and os.path.samefile(path, source):
            raise ValueError(f"output {str(path)!r} is the scenario's input file; choose "
                             "another name")
    return path


def check_compress(level) -> int:
    """A zlib level 0 (none) to 9: ValueError naming ``compress`` otherwise."""
    if isinstance(level, bool) or not isinstance(level, (int, np.integer)) or not 0 <= level <= 9:
        raise ValueError(f"compress={level!r} is invalid; expected a zlib level from 1 "
                         "(fastest) to 9 (smallest), or 0 for none")
    return int(level)


def writer_for(path, model, **kwargs):
    """A writer chosen by the file name: ``.zarr`` gives Zarr, anything else netCDF."""
    check_output_path(path)
    cls = ZarrWriter if is_zarr(path) else NetCDFWriter
    return cls(path, model, **kwargs)

"""A run on your own terrain: bed and Manning zones read from a netCDF file.

The file (``path``) must hold, on one grid of cell centres:

* coordinates ``x`` and ``y`` (m, 1-D, uniformly spaced, at least 2 points each; ``y`` may
  run north to south, as rasters often do, and is then flipped);
* ``bed`` (m), the bed elevation on dims ``(y, x)`` (``(x, y)`` is transposed), with no
  missing values;
* ``manning_n`` (s m^(-1/3)), Manning's coefficient on the same dims, >= 0: land-use zones.
  It may be left out of the file when ``manning`` gives one uniform value instead.

The grid's extent is that of the cells: ``x[0] - dx/2`` to ``x[-1] + dx/2``, likewise in y.
A coordinate reference system is carried into the output: the CF grid-mapping variable
that ``bed``'s ``grid_mapping`` attribute names (or, without one, a variable ``crs`` or
``spatial_ref``, as GDAL and rioxarray write), with its attributes (``crs_wkt``,
``grid_mapping_name``, ...).
Every problem (no such file, not netCDF, a missing variable, wrong dims or shape, uneven
spacing, NaNs) raises a ``ValueError`` that names the file.

The initial water is a still lake at level ``eta0`` (m) over the cells whose bed lies below
it, within the western ``lake_fraction`` of the x extent (1.0: everywhere): with a fraction
below 1, a dam break released at t = 0. ``outflow_sides`` names the sides (any of
``"west,east,south,north"``, comma-separated; ``""`` for none) that are transmissive
outflows; the others are walls. Keep a reservoir's sides walls: a transmissive edge lets
water in as soon as the flow next to it turns inwards. The run lasts ``t_end`` (s).

With ``path=None`` an example file is written on first use (see :func:`write_example`) to
``$XDG_CACHE_HOME/swe`` (default ``~/.cache/swe``, or the temporary directory when that is
not writable): a 1600 m by 800 m valley at 20 m spacing falling 10 m eastwards, closed by
a dam with an 80 m breach at x = 560 m, a reservoir behind it filled to ``eta0 = 18 m`` by
the default ``lake_fraction = 0.35``, a channel (n = 0.035), grassy slopes (n = 0.05) and a
wood (n = 0.1) downstream.
"""

import os
import tempfile
from pathlib import Path

import numpy as np

import swe


# What each build() parameter means and its units (shown by `swe info <scenario>`).
PARAMETERS = {
    "path": ("the DEM netCDF file; None uses a cached built-in example", "-"),
    "eta0": ("surface level of the initial still lake", "m"),
    "lake_fraction": ("western fraction of the x extent filled to eta0", "1"),
    "manning": ("uniform Manning coefficient; None: manning_n from file", "s m^(-1/3)"),
    "outflow_sides": ("comma-separated transmissive sides; others walls", "-"),
    "t_end": ("run length", "s"),
    "g": ("gravitational acceleration", "m/s^2"),
}

EXAMPLE_NAME = "from_netcdf_example_v1.nc"


def write_example(path):
    """Write the example terrain (a CF-1.10 netCDF with ``bed`` and ``manning_n``) to ``path``.

    Returns the path. The file is written to a temporary name and then renamed, so a reader
    never sees a half-written file.
    """
    import xarray as xr

    path = Path(path)
    dx = 20.0
    x = dx * (np.arange(80) + 0.5)  # 0 .. 1600 m
    y = dx * (np.arange(40) + 0.5)  # 0 .. 800 m
    X, Y = np.meshgrid(x, y)
    across = np.abs(Y - 400.0)
    bed = 10.0 - 10.0 * X / 1600.0 + 0.04 * across + 1.0 * (across > 60.0)
    dam = (X > 540.0) & (X < 580.0)
    breach = across < 40.0
    bed = np.where(dam & ~breach, 25.0, bed)
    manning_n = np.where(across <= 60.0, 0.035, 0.05)
    wood = (X > 1000.0) & (X < 1400.0) & (Y > 520.0) & (Y < 700.0)
    manning_n = np.where(wood, 0.1, manning_n)
    ds = xr.Dataset(
        {"bed": (("y", "x"), bed, {"units": "m", "standard_name": "surface_altitude",
                                   "long_name": "bed elevation"}),
         "manning_n": (("y", "x"), manning_n, {"units": "s m-1/3",
                                               "long_name": "Manning roughness coefficient"})},
        coords={"x": ("x", x, {"units": "m", "axis": "X",
                               "standard_name": "projection_x_coordinate"}),
                "y": ("y", y, {"units": "m", "axis": "Y",
                               "standard_name": "projection_y_coordinate"})},
        attrs={"Conventions": "CF-1.10",
               "title": "swe example terrain: a valley with a breached dam",
               "source": "swe scenarios/from_netcdf.py write_example()"})
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".nc", dir=path.parent)
    os.close(fd)
    try:
        ds.to_netcdf(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return path


def example_path():
    """The cached example file, written on first use."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    user = getattr(os, "getuid", lambda: 0)()
    for folder in (Path(base) / "swe", Path(tempfile.gettempdir()) / f"swe-{user}"):
        path = folder / EXAMPLE_NAME
        if path.is_file():
            return path
        try:
            return write_example(path)
        except OSError:
            continue
    raise ValueError("could not write the example terrain file to ~/.cache/swe or the "
                     "temporary directory; pass path= to a netCDF file of your own")


def _coordinate(ds, name, where):
    if name not in ds.coords and name not in ds.variables:
        raise ValueError(f"{where}: no coordinate {name!r}; expected 1-D coordinates x and y "
                         "(m) at the cell centres")
    values = np.asarray(ds[name].values, dtype=float)
    if values.ndim != 1 or values.size < 2:
        raise ValueError(f"{where}: coordinate {name!r} has shape {values.shape}; expected a "
                         "1-D array of at least 2 cell centres")
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{where}: coordinate {name!r} contains NaN or inf")
    step = np.diff(values)
    if not (np.all(step > 0) or np.all(step < 0)) or not np.allclose(
            step, step[0], rtol=1e-6, atol=0.0):
        raise ValueError(f"{where}: coordinate {name!r} is not uniformly spaced (spacings "
                         f"from {step.min()!r} to {step.max()!r} m); resample the file onto a "
                         "uniform grid first")
    return values


def _field(ds, name, where, dims=("y", "x")):
    if name not in ds.data_vars:
        raise ValueError(f"{where}: missing variable {name!r}; the file has "
                         f"{', '.join(map(repr, ds.data_vars)) or 'no variables'}")
    da = ds[name]
    if set(da.dims) != set(dims) or da.ndim != 2:
        raise ValueError(f"{where}: variable {name!r} has dims {da.dims} and shape "
                         f"{da.shape}; expected dims {dims}")
    values = np.asarray(da.transpose(*dims).values, dtype=float)
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{where}: variable {name!r} has {int(np.sum(~np.isfinite(values)))} "
                         "missing (NaN/fill) values; fill them before running")
    return values


def read_grid_mapping(path) -> dict | None:
    """The CF grid-mapping attributes of the terrain file ``path`` (the variable that
    ``bed``'s ``grid_mapping`` attribute names, else a variable ``crs`` or
    ``spatial_ref``), or None where it has none."""
    import xarray as xr

    with xr.open_dataset(path) as ds:
        name = ds["bed"].attrs.get("grid_mapping") or ds["bed"].encoding.get("grid_mapping")
        names = [name] if name else ["crs", "spatial_ref"]
        for candidate in names:
            if candidate in ds.variables:
                attrs = {k: (v.item() if isinstance(v, np.generic) else v)
                         for k, v in ds[candidate].attrs.items()
                         if isinstance(v, (str, int, float, np.integer, np.floating))}
                return attrs or None
    return None


def read_terrain(path, need_manning=True):
    """``(x, y, bed, manning_n)`` from ``path``, checked; y ascending, arrays ``(ny, nx)``.

    ``manning_n`` is None when ``need_manning`` is false.
    """
    import xarray as xr

    where = f"netCDF file {str(path)!r}"
    if not Path(path).is_file():
        raise ValueError(f"{where} does not exist or is not a file")
    try:
        ds = xr.open_dataset(path)
    except Exception as exc:  # any reader failure: report it in one line
        raise ValueError(f"{where} could not be read as netCDF: {type(exc).__name__}: "
                         f"{exc}") from exc
    with ds:
        x = _coordinate(ds, "x", where)
        y = _coordinate(ds, "y", where)
        bed = _field(ds, "bed", where)
        manning_n = _field(ds, "manning_n", where) if need_manning else None
    if bed.shape != (y.size, x.size):
        raise ValueError(f"{where}: variable 'bed' has shape {bed.shape}; expected "
                         f"(len(y), len(x)) = {(y.size, x.size)}")
    if manning_n is not None and np.any(manning_n < 0):
        raise ValueError(f"{where}: variable 'manning_n' has a negative value "
                         f"{float(manning_n.min())!r}; Manning coefficients must be >= 0")
    if x[1] < x[0]:
        x, bed = x[::-1], bed[:, ::-1]
        manning_n = None if manning_n is None else manning_n[:, ::-1]
    if y[1] < y[0]:
        y, bed = y[::-1], bed[::-1, :]
        manning_n = None if manning_n is None else manning_n[::-1, :]
    return x, y, bed, manning_n


def build(path=None, eta0=18.0, lake_fraction=0.35, manning=None, outflow_sides="east",
          t_end=300.0, g=9.81):
    sides = [s.strip().lower() for s in str(outflow_sides or "").split(",") if s.strip()]
    for side in sides:
        if side not in ("west", "east", "south", "north"):
            raise ValueError(f"outflow_sides={outflow_sides!r} is invalid; expected side names "
                             "from 'west,east,south,north' separated by commas, or ''")
    if not 0.0 <= lake_fraction <= 1.0:
        raise ValueError(f"lake_fraction={lake_fraction!r} is invalid; expected a number in "
                         "[0, 1]")
    path = example_path() if path is None else Path(os.path.expanduser(str(path)))
    x, y, bed, manning_n = read_terrain(path, need_manning=manning is None)
    dx, dy = x[1] - x[0], y[1] - y[0]
    grid = swe.Grid(nx=x.size, ny=y.size, x=(x[0] - dx / 2, x[-1] + dx / 2),
                    y=(y[0] - dy / 2, y[-1] + dy / 2))
    boundaries = swe.Boundaries(**{side: swe.Outflow() for side in sides})
    model = swe.ShallowWater(grid, bed=bed, g=g, boundaries=boundaries,
                             friction=swe.Manning(manning_n if manning is None else manning))
    x_lake = grid.x[0] + lake_fraction * (grid.x[1] - grid.x[0])
    eta = np.where(x[None, :] <= x_lake, eta0, bed)
    state0 = swe.State.from_surface(model, eta=np.broadcast_to(eta, bed.shape))
    xs = [float(grid.x[0] + f * (grid.x[1] - grid.x[0])) for f in (0.2, 0.5, 0.8)]
    yc = float(0.5 * (grid.y[0] + grid.y[1]))
    gauges = [("west", xs[0], yc), ("middle", xs[1], yc), ("east", xs[2], yc)]
    return swe.Scenario(
        model, state0, t_end=t_end, save_at=t_end / 15, gauges=gauges,
        metadata=dict(title="Terrain from netCDF",
                      description=f"Lake at eta0 = {eta0} m released over the terrain of "
                                  f"{path.name}",
                      source_file=str(path),
                      **({"grid_mapping": crs} if (crs := read_grid_mapping(path)) else {})),
        arrival_threshold=0.05)

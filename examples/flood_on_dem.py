"""A river flood and a rain storm on a digital elevation model (DEM) read from netCDF.

The usual workflow: a DEM (a GeoTIFF from a survey or a national mapping agency) and a
land-use map are resampled onto one uniform grid and converted to netCDF, e.g. with
``rioxarray`` (``rioxarray.open_rasterio("dem.tif").squeeze().to_dataset(name="bed")``,
coordinates renamed to ``x`` and ``y``) or ``gdal_translate -of netCDF``. The built-in
scenario ``from_netcdf`` reads such a file: coordinates ``x``, ``y`` (m, projected, cell
centres), the bed elevation ``bed`` (m) and Manning's coefficient ``manning_n``
(s m^(-1/3)) on dims ``(y, x)``. ``y`` may run north to south, as rasters do.

To stay self-contained, this script first writes a synthetic DEM of that form: a valley
``LENGTH`` (m) long falling eastwards at ``SLOPE``, a meandering river channel, a level
floodplain between rising valley sides, and a town on the north floodplain. Manning zones:
channel 0.03, fields 0.05, town 0.1. It then

1. loads the DEM with the ``from_netcdf`` scenario (its reservoir left empty,
   ``lake_fraction=0``: the valley starts dry; the east side is an outflow);
2. adds a flood hydrograph entering the channel through the west edge (``swe.Inflow``,
   peak ``PEAK_DISCHARGE`` m^3/s at ``TIME_TO_PEAK`` s) and a rain storm over the whole
   valley (``swe.Rain``, ``RAIN_MM_PER_H`` for ``RAIN_HOURS``);
3. runs for ``T_END`` s with gauges in the channel, on the floodplain and in the town;
4. writes CF-1.10 netCDF output (``flood.nc``: depth, velocities and surface every 15 min,
   maximum depth and speed and the arrival time of 0.1 m of water over the whole run,
   and the gauge series) and prints the maximum depth, the flooded area and the volumes.

Run ``python examples/flood_on_dem.py [--coarse] [--output-dir DIR]``. Outputs (the DEM
``dem.nc``, ``flood.nc``, ``summary.json``) go to the output folder. ``--coarse`` (100 m
cells) runs in seconds; the default (20 m cells) is a typical flood-mapping resolution.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr

import swe
from swe.scenarios import from_netcdf

# float64: the CPU default of `swe run`. On a GPU or TPU leave this out (float32), which is
# ample for flood depths of centimetres to metres.
jax.config.update("jax_enable_x64", True)

LENGTH, WIDTH = 4000.0, 2000.0  # m
SLOPE = 1e-3  # m/m, down the valley (eastwards)
CHANNEL_WIDTH, CHANNEL_DEPTH = 60.0, 2.5  # m
MEANDER_AMPLITUDE, MEANDER_WAVELENGTH = 150.0, 2000.0  # m
N_CHANNEL, N_FIELDS, N_TOWN = 0.03, 0.05, 0.1  # s m^(-1/3)
BASE_DISCHARGE, PEAK_DISCHARGE = 20.0, 600.0  # m^3/s
TIME_TO_PEAK = 3600.0  # s
RAIN_MM_PER_H, RAIN_HOURS = 30.0, 1.0
T_END = 3 * 3600.0  # s
FLOOD_DEPTH = 0.1  # m: a cell is flooded if the water ever stood deeper than this
TOWN = dict(x=(2200.0, 2800.0), y=(300.0, 650.0))  # m


def channel_axis(x):
    """y (m) of the river channel's centre line at ``x`` (m)."""
    return MEANDER_AMPLITUDE * np.sin(2.0 * np.pi * x / MEANDER_WAVELENGTH)


def write_dem(path: Path, cell: float) -> Path:
    """Write the synthetic DEM and land use to ``path`` (netCDF), as a converted raster
    would be: cell-centre coordinates, ``y`` from north to south."""
    x = cell * (np.arange(round(LENGTH / cell)) + 0.5)
    y = (cell * (np.arange(round(WIDTH / cell)) + 0.5) - WIDTH / 2)[::-1]  # north first
    X, Y = np.meshgrid(x, y)
    # At least one cell of channel across, however coarse the raster.
    channel = np.abs(Y - channel_axis(X)) <= 0.5 * max(CHANNEL_WIDTH, cell)
    valley_sides = 0.03 * np.maximum(np.abs(Y) - 600.0, 0.0)
    bed = SLOPE * (LENGTH - X) + valley_sides - CHANNEL_DEPTH * channel
    town = ((X > TOWN["x"][0]) & (X < TOWN["x"][1]) & (Y > TOWN["y"][0]) & (Y < TOWN["y"][1]))
    manning_n = np.where(channel, N_CHANNEL, np.where(town, N_TOWN, N_FIELDS))
    ds = xr.Dataset(
        {"bed": (("y", "x"), bed, {"units": "m", "standard_name": "surface_altitude"}),
         "manning_n": (("y", "x"), manning_n, {"units": "s m-1/3",
                                               "long_name": "Manning roughness coefficient"})},
        coords={"x": ("x", x, {"units": "m", "standard_name": "projection_x_coordinate"}),
                "y": ("y", y, {"units": "m", "standard_name": "projection_y_coordinate"})},
        attrs={"Conventions": "CF-1.10", "title": "synthetic river valley DEM"})
    ds.to_netcdf(path)
    return path


def hydrograph(t):
    """River discharge entering the valley (m^3/s) at time ``t`` (s): a gamma-shaped flood
    wave on the base flow. Plain arithmetic, so it works on traced values too."""
    s = t / TIME_TO_PEAK
    return BASE_DISCHARGE + (PEAK_DISCHARGE - BASE_DISCHARGE) * (s * math.e ** (1.0 - s)) ** 4


def rain_intensity(t):
    """Rain (m/s) at time ``t`` (s): uniform over the valley for the first RAIN_HOURS."""
    return jnp.where(t < RAIN_HOURS * 3600.0, RAIN_MM_PER_H / 1000.0 / 3600.0, 0.0)


def flood_model(terrain: swe.ShallowWater) -> swe.ShallowWater:
    """The terrain's bed and Manning zones, with the river inflow and the rain added."""
    grid = terrain.grid
    bed = np.asarray(terrain.bed)
    # The river enters through the channel cells of the west edge: the DEM's lowest there.
    channel_edge = bed[:, 0] <= bed[:, 0].min() + 0.5 * CHANNEL_DEPTH
    # swe.Inflow takes a discharge per unit width (m^2/s) along the edge; this profile
    # spreads 1 m^3/s over the channel cells.
    profile = channel_edge / (channel_edge.sum() * grid.dy)
    boundaries = swe.Boundaries(west=swe.Inflow(lambda t: hydrograph(t) * profile),
                                east=swe.Outflow(), south=swe.Wall(), north=swe.Wall())
    return swe.ShallowWater(grid, bed=terrain.bed, g=terrain.g, friction=terrain.friction,
                            boundaries=boundaries, sources=[swe.Rain(rain_intensity)])


def volumes_in() -> tuple[float, float]:
    """Water volumes (m^3) brought in over the run by the river and by the rain."""
    t = np.linspace(0.0, T_END, 100_001)
    river = float(np.sum(0.5 * (hydrograph(t[1:]) + hydrograph(t[:-1])) * np.diff(t)))
    rain = RAIN_MM_PER_H / 1000.0 * min(RAIN_HOURS * 3600.0, T_END) / 3600.0 * LENGTH * WIDTH
    return river, rain


def main(coarse: bool = False, output_dir: str | Path | None = None) -> dict:
    """Write the DEM, run the flood, write ``flood.nc``; return the summary."""
    out = Path(output_dir if output_dir is not None else "flood_on_dem_output")
    out.mkdir(parents=True, exist_ok=True)
    cell = 100.0 if coarse else 20.0
    dem = write_dem(out / "dem.nc", cell)

    scenario = from_netcdf.build(path=dem, lake_fraction=0.0, outflow_sides="east",
                                 t_end=T_END)
    model = flood_model(scenario.model)
    grid = model.grid
    gauges = [("upstream_channel", 400.0, float(channel_axis(400.0))),
              ("downstream_channel", 3600.0, float(channel_axis(3600.0))),
              ("south_floodplain", 2000.0, -450.0),
              ("town", 0.5 * sum(TOWN["x"]), 0.5 * sum(TOWN["y"]))]

    start = time.perf_counter()
    result = swe.simulate(model, scenario.state0, T_END, save_at=900.0, gauges=gauges,
                          arrival_threshold=FLOOD_DEPTH)
    wall = time.perf_counter() - start

    ds = result.to_xarray(attrs={"title": "River flood and rain storm on a DEM",
                                 "dem_file": str(dem)})
    ds.to_netcdf(out / "flood.nc")

    X, Y = (np.asarray(a) for a in grid.cell_centers())
    in_town = ((X > TOWN["x"][0]) & (X < TOWN["x"][1]) & (Y > TOWN["y"][0]) & (Y < TOWN["y"][1]))
    max_depth = ds.max_depth.values
    flooded = max_depth > FLOOD_DEPTH
    channel = np.asarray(model.friction.n) == N_CHANNEL
    river_in, rain_in = volumes_in()
    final_volume = float(result.mass()[-1])
    summary = dict(
        example="flood_on_dem", coarse=coarse, cells=[grid.ny, grid.nx],
        steps=int(result.num_steps), wall_s=wall,
        max_depth_m=float(max_depth.max()),
        flooded_area_km2=float(flooded.sum() * grid.cell_area / 1e6),
        flooded_outside_channel_km2=float((flooded & ~channel).sum() * grid.cell_area / 1e6),
        town_flooded_fraction=float(flooded[in_town].mean()),
        town_max_depth_m=float(max_depth[in_town].max()),
        river_volume_in_m3=river_in, rain_volume_in_m3=rain_in, final_volume_m3=final_volume,
        gauge_max_depth_m={str(g): float(ds.gauge_h.sel(gauge=g).max()) for g in ds.gauge.values},
        output=str(out / "flood.nc"))
    print(f"{grid.nx} x {grid.ny} cells of {cell:g} m, {summary['steps']} steps to "
          f"t = {T_END / 3600:g} h in {wall:.1f} s (compile included)")
    print(f"maximum depth            {summary['max_depth_m']:.2f} m")
    print(f"flooded area (> {FLOOD_DEPTH} m)   {summary['flooded_area_km2']:.2f} km2, "
          f"{summary['flooded_outside_channel_km2']:.2f} km2 outside the channel")
    print(f"town                     {100 * summary['town_flooded_fraction']:.0f}% flooded, "
          f"deepest {summary['town_max_depth_m']:.2f} m")
    print(f"volumes                  river in {river_in:.3g} m3, rain {rain_in:.3g} m3, "
          f"in the valley at the end {final_volume:.3g} m3")
    for name, depth in summary["gauge_max_depth_m"].items():
        print(f"  gauge {name:<20} max depth {depth:.2f} m")
    print(f"wrote {out / 'flood.nc'}")
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--coarse", action="store_true", help="coarse grid, runs in seconds")
    parser.add_argument("--output-dir", default=None,
                        help="folder for the outputs (default: ./flood_on_dem_output)")
    args = parser.parse_args()
    main(coarse=args.coarse, output_dir=args.output_dir)

"""A tsunami crossing an ocean basin onto a continental shelf, recorded by tide gauges.

The basin is 300 km (x, west to east) by 200 km (y). A 4000 m deep ocean rises over a
continental slope (x = 180-240 km) to a shelf (200 m to 50 m deep) and a coast at
x = 290 km; east of it, dry land up to 20 m. The west, south and north sides are open
ocean (transmissive), the east side a wall behind the land.

The source is the sea-surface uplift of a submarine earthquake, the usual instantaneous
approximation: a Gaussian hump of amplitude ``AMPLITUDE`` (m) and width ``WIDTH`` (m) at
``SOURCE``, with the water at rest. Gauges stand where a warning centre has them: two deep
ocean pressure gauges (DART-like), one on the continental slope, one on the shelf and one
in shallow water just off the coast. For each gauge the script prints

* the arrival time (s): the first time the surface departs from its initial level by more
  than ``ARRIVAL_THRESHOLD`` (m), interpolated between saved frames;
* the peak amplitude (m) above the initial level, and when it occurs.

The wave slows from sqrt(g h) = 198 m/s in the deep ocean to 22 m/s on a 50 m shelf, so
the arrivals spread out towards the coast, and it grows as it shoals.

Run ``python examples/tsunami_gauges.py [--coarse] [--output-dir DIR]``. It writes the gauge
records (CF netCDF, ``gauges.nc``), ``summary.json`` and, if matplotlib is installed,
``gauges.png`` to the output folder. ``--coarse`` (5 km cells, 30 s frames) runs in seconds;
the default (1 km cells, 10 s frames) is a regional-model resolution.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import jax
import numpy as np

import swe

# float64: the CPU default of `swe run`. On a GPU or TPU leave this out (float32), which is
# ample for tsunami amplitudes of centimetres to metres.
jax.config.update("jax_enable_x64", True)

LENGTH, WIDTH_Y = 300e3, 200e3  # m
SOURCE = (100e3, 100e3)  # m, centre of the uplift
AMPLITUDE = 2.0  # m
WIDTH = 20e3  # m, e-folding radius of the uplift
ARRIVAL_THRESHOLD = 0.01  # m
T_END = 3600.0  # s
# name, x (m), y (m)
GAUGES = [
    ("dart_west", 40e3, 100e3),
    ("dart_north", 100e3, 180e3),
    ("slope", 210e3, 100e3),
    ("shelf", 260e3, 100e3),
    ("coast", 287e3, 100e3),
]


def bathymetry(x):
    """Bed elevation (m, positive up) as a function of x (m): ocean, slope, shelf, coast."""
    return np.interp(x, [0.0, 180e3, 240e3, 285e3, 290e3, LENGTH],
                     [-4000.0, -4000.0, -200.0, -50.0, 0.0, 20.0])


def build_model(cell: float) -> swe.ShallowWater:
    """The basin at a cell size of ``cell`` (m)."""
    grid = swe.Grid(nx=round(LENGTH / cell), ny=round(WIDTH_Y / cell),
                    x=(0.0, LENGTH), y=(0.0, WIDTH_Y))
    X, _ = grid.cell_centers()
    # Frictionless: over a few hours bottom friction matters only in the last metres of
    # water; add friction=swe.Manning(0.025) to model the inundation itself.
    return swe.ShallowWater(grid, bed=bathymetry(np.asarray(X)),
                            boundaries=swe.Boundaries(west=swe.Outflow(), south=swe.Outflow(),
                                                      north=swe.Outflow(), east=swe.Wall()))


def initial_state(model: swe.ShallowWater) -> swe.State:
    """Sea at rest at z = 0, raised by the source's uplift; the land stays dry."""
    X, Y = (np.asarray(a) for a in model.grid.cell_centers())
    uplift = AMPLITUDE * np.exp(-((X - SOURCE[0]) ** 2 + (Y - SOURCE[1]) ** 2) / WIDTH**2)
    return swe.State.from_surface(model, eta=np.maximum(uplift, np.asarray(model.bed)))


def arrival_time(t, anomaly, threshold):
    """First time |anomaly| exceeds ``threshold``, linearly interpolated between frames;
    NaN if it never does."""
    above = np.flatnonzero(np.abs(anomaly) > threshold)
    if above.size == 0:
        return float("nan")
    k = above[0]
    if k == 0:
        return float(t[0])
    a0, a1 = abs(anomaly[k - 1]), abs(anomaly[k])
    return float(t[k - 1] + (threshold - a0) / (a1 - a0) * (t[k] - t[k - 1]))


def gauge_table(ds) -> list[dict]:
    """Per gauge: distance from the source, depth, arrival, peak amplitude and its time."""
    seconds = ((ds.time - ds.time[0]) / np.timedelta64(1, "s")).values
    rows = []
    for name in ds.gauge.values:
        eta = ds.gauge_eta.sel(gauge=name).values
        anomaly = eta - eta[0]  # the still level (0, or the uplift at a gauge inside it)
        x, y = float(ds.gauge_x.sel(gauge=name)), float(ds.gauge_y.sel(gauge=name))
        # The gauge samples its cell: the model's bed there, not the bathymetry at (x, y).
        bed = float(ds.gauge_eta.sel(gauge=name)[0] - ds.gauge_h.sel(gauge=name)[0])
        peak = int(np.argmax(anomaly))
        rows.append(dict(
            gauge=str(name),
            distance_km=float(np.hypot(x - SOURCE[0], y - SOURCE[1]) / 1e3),
            depth_m=-bed,
            arrival_s=arrival_time(seconds, anomaly, ARRIVAL_THRESHOLD),
            peak_m=float(anomaly[peak]),
            peak_time_s=float(seconds[peak]),
        ))
    return rows


def plot(ds, rows, path: Path) -> bool:
    """Save the gauge records as a figure; False if matplotlib is not installed."""
    try:
        import matplotlib
    except ImportError:
        return False
    matplotlib.use("Agg")  # no display needed
    import matplotlib.pyplot as plt

    minutes = ((ds.time - ds.time[0]) / np.timedelta64(60, "s")).values
    fig, axes = plt.subplots(len(rows), 1, figsize=(7, 1.6 * len(rows)), sharex=True)
    for ax, row in zip(np.atleast_1d(axes), rows):
        eta = ds.gauge_eta.sel(gauge=row["gauge"]).values
        ax.plot(minutes, eta - eta[0], lw=1)
        ax.axvline(row["arrival_s"] / 60, color="0.6", ls="--", lw=0.8)
        ax.set_ylabel("m")
        ax.set_title(f"{row['gauge']} ({row['distance_km']:.0f} km, {row['depth_m']:.0f} m deep)",
                     fontsize=9, loc="left")
    np.atleast_1d(axes)[-1].set_xlabel("minutes after the earthquake")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def main(coarse: bool = False, output_dir: str | Path | None = None) -> dict:
    """Run the tsunami, print the gauge table, write the outputs; return the summary."""
    out = Path(output_dir if output_dir is not None else "tsunami_gauges_output")
    out.mkdir(parents=True, exist_ok=True)
    cell, save_every = (5e3, 30.0) if coarse else (1e3, 10.0)

    model = build_model(cell)
    state0 = initial_state(model)
    start = time.perf_counter()
    # Gauges are sampled at every saved frame, so save_at sets their time resolution.
    result = swe.simulate(model, state0, T_END, save_at=save_every, gauges=GAUGES)
    wall = time.perf_counter() - start
    ds = result.to_xarray(attrs={"title": "Tsunami in a basin with a continental shelf"})

    rows = gauge_table(ds)
    print(f"{model.grid.nx} x {model.grid.ny} cells of {cell / 1e3:g} km, "
          f"{int(result.num_steps)} steps to t = {T_END:g} s in {wall:.1f} s (compile included)")
    print(f"{'gauge':<11} {'dist km':>8} {'depth m':>8} {'arrival s':>10} {'peak m':>7} "
          f"{'at s':>7}")
    for r in rows:
        print(f"{r['gauge']:<11} {r['distance_km']:8.0f} {r['depth_m']:8.0f} "
              f"{r['arrival_s']:10.0f} {r['peak_m']:7.3f} {r['peak_time_s']:7.0f}")

    # The gauge records alone (dims gauge, time) are small; the full fields are in `ds`.
    gauge_vars = [v for v in ds.data_vars if v.startswith("gauge_")]
    ds[gauge_vars].to_netcdf(out / "gauges.nc")
    plotted = plot(ds, rows, out / "gauges.png")
    summary = dict(example="tsunami_gauges", coarse=coarse, cells=[model.grid.ny, model.grid.nx],
                   steps=int(result.num_steps), wall_s=wall, gauges=rows, plot=plotted)
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(f"wrote {out / 'gauges.nc'}" + (f", {out / 'gauges.png'}" if plotted else ""))
    return summary


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--coarse", action="store_true", help="coarse grid, runs in seconds")
    parser.add_argument("--output-dir", default=None,
                        help="folder for the outputs (default: ./tsunami_gauges_output)")
    args = parser.parse_args()
    main(coarse=args.coarse, output_dir=args.output_dir)

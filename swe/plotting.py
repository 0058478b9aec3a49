"""Figures of an output file (``swe plot``), from its xarray Dataset: maps of a field at one
time or of an envelope, a 1-D profile, and gauge hydrographs. Needs matplotlib (the
``plot`` extra).

Maps draw water only where there is water (cells shallower than :data:`DRY_DEPTH` are
left out of water variables), over a hillshade of the bed with its contours; velocity
arrows carry a scale key. Coordinates are plain metres (no offset, as UTM eastings would
otherwise get), and times are seconds or hours after the run's start, never the file's
calendar epoch.
"""

from __future__ import annotations

import numpy as np

# Cells shallower than this (m) are dry in a map of a water variable.
DRY_DEPTH = 1e-3
# Variables of the water, masked where dry; the bed is drawn everywhere.
WATER = ("h", "u", "v", "eta", "max_depth", "max_speed", "arrival_time")
ENVELOPES = ("max_depth", "max_speed", "arrival_time")
COLORMAPS = {"h": "Blues", "max_depth": "Blues", "eta": "viridis", "u": "RdBu_r",
             "v": "RdBu_r", "max_speed": "magma_r", "arrival_time": "plasma",
             "bed": "terrain"}


def seconds(ds) -> np.ndarray:
    """The file's times as seconds after its first frame."""
    return np.asarray((ds.time - ds.time[0]) / np.timedelta64(1, "s"), dtype=float)


def duration(t: float) -> str:
    """``t`` seconds as text: seconds under an hour, else hours and minutes."""
    if abs(t) < 3600:
        return f"{t:g} s"
    h, m = divmod(round(t / 60), 60)
    return f"{h} h {m:02d} min"


def frame_index(ds, time) -> int:
    """The index of the frame nearest ``time`` (s after the start; None: the last)."""
    return len(ds.time) - 1 if time is None else int(np.abs(seconds(ds) - time).argmin())


def _plain_axes(ax):
    for axis in (ax.xaxis, ax.yaxis):
        formatter = axis.get_major_formatter()
        if hasattr(formatter, "set_useOffset"):
            formatter.set_useOffset(False)
            formatter.set_scientific(False)


def _label(var) -> str:
    return f"{var.attrs.get('long_name', var.name)} ({var.attrs.get('units', '')})"


def _round_speed(v: float) -> float:
    """A round speed near ``v`` for the arrows' key."""
    if not v > 0:
        return 1.0
    e = 10 ** np.floor(np.log10(v))
    return float(min((1, 2, 5, 10), key=lambda m: abs(m * e - v)) * e)


def map_figure(ds, var: str = "eta", time=None, title: str | None = None, arrows=True):
    """A map of ``var`` (a field at the frame nearest ``time``, or an envelope or the bed)
    over the bed's hillshade and contours, dry cells left out, with velocity arrows and
    their scale key for fields of a frame. Returns the matplotlib figure."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import LightSource

    x, y = np.asarray(ds.x), np.asarray(ds.y)
    bed = np.asarray(ds.bed, dtype=float)
    timed = "time" in ds[var].dims
    k = frame_index(ds, time) if timed or "h" in ds else None
    frame = ds.isel(time=k) if k is not None else ds
    values = np.asarray(frame[var], dtype=float)
    fig, ax = plt.subplots(figsize=(8, 5.5))
    dx = abs(x[1] - x[0]) if x.size > 1 else 1.0
    dy = abs(y[1] - y[0]) if y.size > 1 else 1.0
    relief = LightSource(azdeg=315, altdeg=45).hillshade(bed, vert_exag=1.0, dx=dx, dy=dy)
    extent = (x[0] - dx / 2, x[-1] + dx / 2, y[0] - dy / 2, y[-1] + dy / 2)
    ax.imshow(relief, cmap="gray", origin="lower", extent=extent, vmin=0, vmax=1,
              interpolation="nearest")
    if var in WATER:
        depth = np.asarray(ds.max_depth if var in ENVELOPES else frame.h, dtype=float)
        values = np.ma.masked_where(~(depth > DRY_DEPTH) | ~np.isfinite(values), values)
        alpha = 0.9
    else:
        alpha = 0.55
    mesh = ax.pcolormesh(x, y, values, shading="nearest", alpha=alpha,
                         cmap=COLORMAPS.get(var, "viridis"))
    fig.colorbar(mesh, ax=ax, label=_label(ds[var]))
    if np.ptp(bed) > 0:
        ax.contour(x, y, bed, levels=10, colors="k", linewidths=0.4, alpha=0.5)
    if timed and arrows and {"u", "v"} <= set(ds.data_vars):
        step = max(1, max(x.size, y.size) // 25)
        sub = frame.isel(x=slice(None, None, step), y=slice(None, None, step))
        wet = np.asarray(sub.h) > DRY_DEPTH
        u = np.where(wet, np.asarray(sub.u), np.nan)
        v = np.where(wet, np.asarray(sub.v), np.nan)
        speed = np.hypot(u, v)
        if np.any(speed > 0):
            arrows_ = ax.quiver(np.asarray(sub.x), np.asarray(sub.y), u, v, color="k",
                                alpha=0.8)
            key = _round_speed(float(np.nanmax(speed)))
            ax.quiverkey(arrows_, 0.86, -0.13, key, f"{key:g} m/s", labelpos="E",
                         coordinates="axes")
    ax.set_aspect("equal")
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    _plain_axes(ax)
    when = f" at t = {duration(seconds(ds)[k])}" if timed else (
        " over the run" if var in ENVELOPES else "")
    ax.set_title(f"{title or ds.attrs.get('title', '')}: {var}{when}".lstrip(": "))
    return fig


def profile_figure(ds, var: str = "eta", time=None, title: str | None = None):
    """``var`` along a 1-D channel: at the frame nearest ``time``, or at up to six frames
    through the run when ``time`` is None; the bed under ``eta`` and ``h``."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4))
    t = seconds(ds)
    timed = "time" in ds[var].dims
    frames = ([frame_index(ds, time)] if time is not None else
              np.linspace(0, len(t) - 1, min(len(t), 6)).astype(int)) if timed else [None]
    for j in frames:
        da = ds[var].isel(y=0) if j is None else ds[var].isel(time=j, y=0)
        ax.plot(ds.x, da, label=None if j is None else f"t = {duration(t[j])}")
    if var in ("eta", "h"):
        ax.plot(ds.x, ds.bed.isel(y=0), "k-", lw=1, label="bed")
    ax.set_xlabel("x (m)")
    ax.set_ylabel(_label(ds[var]))
    _plain_axes(ax)
    ax.legend()
    when = f" at t = {duration(t[frames[0]])}" if timed and time is not None else ""
    ax.set_title(f"{title or ds.attrs.get('title', '')}: {var}{when}".lstrip(": "))
    return fig


def hydrograph_figure(ds, gauges=None, title: str | None = None):
    """The surface elevation (with each gauge's bed) and the depth at the gauges named in
    ``gauges`` (None: every gauge) against time."""
    import matplotlib.pyplot as plt

    names = [str(n) for n in np.asarray(ds.gauge)]
    chosen = names if gauges is None else list(gauges)
    for name in chosen:
        if name not in names:
            raise ValueError(f"gauge {name!r} is not in the file; its gauges are "
                             f"{', '.join(names)}")
    t = seconds(ds)
    hours = t[-1] >= 3 * 3600
    scale, unit = (3600.0, "h") if hours else (1.0, "s")
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
    for name in chosen:
        g = names.index(name)
        line, = top.plot(t / scale, ds.gauge_eta.isel(gauge=g), label=name)
        h = np.asarray(ds.gauge_h.isel(gauge=g))
        eta = np.asarray(ds.gauge_eta.isel(gauge=g))
        top.plot(t / scale, eta - h, ":", color=line.get_color(), lw=0.8)  # the bed there
        bottom.plot(t / scale, h, color=line.get_color())
    top.set_ylabel(_label(ds.gauge_eta) + "; dotted: bed")
    bottom.set_ylabel(_label(ds.gauge_h))
    bottom.set_xlabel(f"time after the start ({unit})")
    top.legend()
    for ax in (top, bottom):
        _plain_axes(ax)
    top.set_title(f"{title or ds.attrs.get('title', '')}: gauges".lstrip(": "))
    return fig


def figure(ds, var: str = "eta", time=None, gauges=None, title: str | None = None):
    """The figure ``swe plot`` draws: hydrographs of ``gauges`` if given, else a map of
    ``var`` (a 1-D profile for a one-row grid). ValueError naming what the file holds
    when ``var`` is not in it."""
    if gauges is not None:
        if "gauge" not in ds.coords:
            raise ValueError("the file has no gauges; the scenario records none")
        return hydrograph_figure(ds, None if list(gauges) == ["all"] else gauges, title)
    kinds = [v for v in ds.data_vars if {"y", "x"} <= set(ds[v].dims)
             and set(ds[v].dims) <= {"time", "y", "x"}]
    if var not in kinds:
        raise ValueError(f"variable {var!r} is not in the file; choose one of "
                         f"{', '.join(kinds)}, or --gauge NAME for a hydrograph")
    if ds.sizes["y"] == 1:
        return profile_figure(ds, var, time, title)
    return map_figure(ds, var, time, title)

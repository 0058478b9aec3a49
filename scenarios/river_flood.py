"""A river flood in a synthetic valley: inflow hydrograph, zoned Manning friction, a town.

The flood modeller's case. A valley ``length`` (m) long (x, west to east) and ``width`` (m)
wide (y), ``nx`` by ``ny`` cells, falls eastwards with slope ``slope`` (m/m). Its cross
section is a trapezoid: a floodplain floor ``floor_width`` (m) wide, level across, between
valley walls rising with slope ``side_slope`` (m/m); walls close the two sides. A
rectangular channel ``channel_width`` (m) wide and ``channel_depth`` (m) deep meanders along
the axis (a sine of amplitude ``meander_amplitude`` (m) and wavelength
``length / meanders``).

At t = 0 the channel carries a base flow ``base_discharge`` (m^3/s) at its normal depth
(wide-channel Manning law) and the floodplain is dry. Through the west boundary enters,
over the channel cells only, an :class:`swe.Inflow` hydrograph rising from the base flow to
``peak_discharge`` (m^3/s) at ``time_to_peak`` (s) along a gamma-shaped curve,
``Q(t) = Q_base + (Q_peak - Q_base) (t / t_p exp(1 - t / t_p))^4``; the east boundary is a
transmissive :class:`swe.Outflow`. The bankfull capacity of the default channel is about
500 m^3/s (``metadata["bankfull_discharge"]``), so the 1500 m^3/s peak spills over the
floodplain and reaches the town; the flood wave is attenuated and delayed on its way down
the valley (peak about 1000 m^3/s mid-valley at the defaults). The run lasts ``t_end`` (s,
default 3 h).

Friction is Manning with zones (s m^(-1/3)): ``n_channel`` in the channel, ``n_floodplain``
on the fields, and ``n_town`` over a built-up block on the north floodplain half-way down
the valley. Gauges sit in the channel upstream, mid-valley and downstream, on the
floodplain, and in the town.
"""

import math

import numpy as np

import swe


# What each build() parameter means and its units (shown by `swe info <scenario>`).
PARAMETERS = {
    "nx": ("cells along x", "1"),
    "ny": ("cells along y", "1"),
    "length": ("valley length, west to east", "m"),
    "width": ("valley width, south to north", "m"),
    "floor_width": ("width of the level floodplain floor", "m"),
    "slope": ("valley slope, falling eastwards", "m/m"),
    "side_slope": ("slope of the valley walls beyond the floor", "m/m"),
    "channel_width": ("width of the river channel", "m"),
    "channel_depth": ("depth of the channel below the floodplain", "m"),
    "meander_amplitude": ("amplitude of the sine meanders of the channel", "m"),
    "meanders": ("meander wavelengths along the valley", "1"),
    "base_discharge": ("base flow of the river, at t = 0", "m^3/s"),
    "peak_discharge": ("peak of the inflow hydrograph", "m^3/s"),
    "time_to_peak": ("time of the hydrograph peak", "s"),
    "t_end": ("run length", "s"),
    "n_channel": ("Manning coefficient in the channel", "s m^(-1/3)"),
    "n_floodplain": ("Manning coefficient on the floodplain fields", "s m^(-1/3)"),
    "n_town": ("Manning coefficient over the town", "s m^(-1/3)"),
}


def build(nx=120, ny=40, length=6000.0, width=2000.0, floor_width=1200.0, slope=1e-3,
          side_slope=0.02, channel_width=150.0, channel_depth=2.0, meander_amplitude=150.0,
          meanders=2.0,
          base_discharge=50.0, peak_discharge=1500.0, time_to_peak=3600.0, t_end=10800.0,
          n_channel=0.03, n_floodplain=0.06, n_town=0.1):
    for name, value in (("slope", slope), ("n_channel", n_channel), ("channel_width",
                                                                   channel_width)):
        if not value > 0:
            raise ValueError(f"{name}={value!r} is invalid; expected a number > 0 (the base "
                             "flow's normal depth depends on it)")
    half = width / 2
    grid = swe.Grid(nx=nx, ny=ny, x=(0.0, length), y=(-half, half))
    X, Y = (np.asarray(a) for a in grid.cell_centers())
    y_axis = np.asarray(meander_amplitude * np.sin(2.0 * np.pi * meanders * grid.xc / length))
    across = np.abs(Y - y_axis[None, :])
    # At least one cell of channel in every column, however coarse the grid.
    in_channel = (across <= 0.5 * max(channel_width, grid.dy))
    walls = side_slope * np.maximum(np.abs(Y) - 0.5 * floor_width, 0.0)
    bed = slope * (length - X) + walls - channel_depth * in_channel

    town = (X > 0.45 * length) & (X < 0.6 * length) & (Y > 0.3 * half) & (Y < 0.55 * half)
    manning_n = np.where(in_channel, n_channel, np.where(town, n_town, n_floodplain))

    # Base flow at normal depth, velocity along the channel's direction.
    h_base = (base_discharge * n_channel / (channel_width * math.sqrt(slope))) ** 0.6
    speed = base_discharge / (channel_width * h_base) if h_base > 0 else 0.0
    dydx = np.gradient(y_axis, grid.xc) if nx > 1 else np.zeros(nx)
    norm = np.sqrt(1.0 + dydx**2)
    u = np.where(in_channel, speed / norm[None, :], 0.0)
    v = np.where(in_channel, speed * dydx[None, :] / norm[None, :], 0.0)
    eta = np.where(in_channel, bed + h_base, bed)
    model_bcs = _boundaries(in_channel[:, 0], grid.dy, base_discharge, peak_discharge,
                            time_to_peak)
    model = swe.ShallowWater(grid, bed=bed, g=9.81, friction=swe.Manning(manning_n),
                             boundaries=model_bcs)
    state0 = swe.State.from_surface(model, eta=eta, u=u, v=v)

    def channel_point(x):
        return (x, float(meander_amplitude * np.sin(2.0 * np.pi * meanders * x / length)))

    gauges = [("upstream", *channel_point(0.1 * length)),
              ("mid_valley", *channel_point(0.5 * length)),
              ("downstream", *channel_point(0.9 * length)),
              ("floodplain_south", 0.5 * length, -0.45 * half),
              ("town", 0.525 * length, 0.425 * half)]
    return swe.Scenario(
        model, state0, t_end=t_end, save_at=t_end / 15, gauges=gauges,
        metadata=dict(title="River flood",
                      description="Flood hydrograph through a meandering channel in a synthetic "
                                  "valley with zoned Manning friction and a town",
                      bankfull_discharge=_bankfull(channel_width, channel_depth, slope,
                                                   n_channel)),
        arrival_threshold=0.05)


def hydrograph(base, peak, t_peak):
    """The inflow hydrograph ``Q(t)`` (m^3/s) of base flow ``base``, peak ``peak`` (m^3/s)
    at ``t_peak`` (s)."""

    def discharge(t):
        s = t / t_peak
        # Plain arithmetic: works on floats and on traced scalars alike.
        return base + (peak - base) * (s * math.e ** (1.0 - s)) ** 4
    return discharge


def _boundaries(channel_edge, dy, base, peak, t_peak):
    """West inflow over the channel cells of the first column; east outflow; side walls."""
    cells = max(int(channel_edge.sum()), 1)
    profile = channel_edge.astype(float) / (cells * dy)  # per unit width, sums to 1 m^3/s
    discharge = hydrograph(base, peak, t_peak)
    return swe.Boundaries(west=swe.Inflow(lambda t: discharge(t) * profile),
                          east=swe.Outflow(), south=swe.Wall(), north=swe.Wall())


def _bankfull(width, depth, slope, n):
    """Manning discharge (m^3/s) of the rectangular channel full to its banks."""
    area = width * depth
    radius = area / (width + 2.0 * depth)
    return area * radius ** (2.0 / 3.0) * math.sqrt(slope) / n

"""1-D dam break in a channel (Stoker, wet bed; Ritter, dry bed when ``h_right=0``).

A flat channel of ``length`` (m) with walls at both ends and ``nx`` cells; the dam at ``x0``
holds ``h_left`` (m) against ``h_right`` (m). The exact solution is a rarefaction, a middle
state and a shock (or a dry front): see ``validation/``.
"""

import numpy as np

import swe


# What each build() parameter means and its units (shown by `swe info <scenario>`).
PARAMETERS = {
    "length": ("channel length", "m"),
    "x0": ("position of the dam along the channel", "m"),
    "h_left": ("water depth upstream of the dam (x < x0)", "m"),
    "h_right": ("water depth downstream of the dam; 0 for a dry bed", "m"),
    "nx": ("cells along the channel", "1"),
    "t_end": ("run length", "s"),
    "g": ("gravitational acceleration", "m/s^2"),
}


def build(length=1000.0, x0=500.0, h_left=10.0, h_right=1.0, nx=1000, t_end=20.0, g=9.81):
    grid = swe.Grid(nx=nx, ny=1, x=(0.0, length))
    if not 0.0 < x0 < length:
        raise ValueError(f"x0={x0!r} is invalid; the dam must stand inside the channel, "
                         f"0 < x0 < length = {length!r} (m)")
    x = np.asarray(grid.xc)
    model = swe.ShallowWater(grid, g=g)
    h0 = np.where(x < x0, h_left, h_right)[None, :]
    state0 = swe.State(h=h0, hu=0.0, hv=0.0)
    # A fifth of the channel either side of the dam, kept inside the channel.
    gauges = [("upstream", max(x0 - 0.2 * length, 0.5 * grid.dx), 0.5 * grid.dy),
              ("dam", x0, 0.5 * grid.dy),
              ("downstream", min(x0 + 0.2 * length, length - 0.5 * grid.dx), 0.5 * grid.dy)]
    return swe.Scenario(
        model, state0, t_end=t_end, save_at=t_end / 20, gauges=gauges,
        metadata=dict(title="1-D dam break",
                      description="Stoker (wet) or Ritter (dry) dam break in a walled channel"),
        arrival_threshold=h_right + 0.01)

"""Solitary wave running up a plane beach (Synolakis 1987, J. Fluid Mech. 185, 523).

A 1-D channel (``ny = 1``, ``nx`` cells). The beach is on the LEFT (west): the still
shoreline is at x = 0 and the bed ``b(x) = -x / cot_beta`` (m) rises to the west, over dry
land, and falls to the east until it meets a flat sea floor of depth ``d`` (m) at the toe
``X0 = d cot_beta`` (default slope 1:19.85). A solitary wave of height ``H = H_over_d * d``
(m),

    eta = H sech^2(gamma (x - X1) / d),   u = -eta sqrt(g / d),   gamma = sqrt(3 H / (4 d)),

starts over the flat floor, centred at ``X1 = X0 + L`` with ``L = d arccosh(sqrt(20)) / gamma``
(where its surface is 5% of its crest at the toe, Synolakis' choice), moving west towards the
beach. The maximum runup (highest bed elevation reached by the shoreline) of a
non-breaking wave follows Synolakis' law

    R / d = 2.831 sqrt(cot_beta) (H / d)^(5/4),

0.086 d for the default ``H_over_d = 0.0185`` (non-breaking); ``H_over_d = 0.3`` is his
breaking case, for which the law overpredicts. The land extends far enough west to hold at
least twice the predicted runup; the offshore (east) end, at ``2 X1``, is transmissive. The
run lasts ``t_end`` (s; 25 s is about 80 ``sqrt(d / g)``, past the maximum runup at about 55-60
``sqrt(d / g)`` and into the rundown). Frictionless, as in the experiments' comparisons.
"""

import math

import numpy as np

import swe


# What each build() parameter means and its units (shown by `swe info <scenario>`).
PARAMETERS = {
    "nx": ("cells along x", "1"),
    "d": ("depth of the flat sea floor offshore", "m"),
    "H_over_d": ("solitary wave height over depth, H / d", "1"),
    "cot_beta": ("beach slope as cot(beta): 1 rise in cot_beta run", "1"),
    "t_end": ("run length", "s"),
    "g": ("gravitational acceleration", "m/s^2"),
}


def build(nx=1600, d=1.0, H_over_d=0.0185, cot_beta=19.85, t_end=25.0, g=9.81):
    H = H_over_d * d
    gamma = math.sqrt(3.0 * H / (4.0 * d))
    X0 = d * cot_beta
    L = d * math.acosh(math.sqrt(20.0)) / gamma
    X1 = X0 + L
    runup = 2.831 * math.sqrt(cot_beta) * H_over_d**1.25 * d
    land = max(0.25 * d, 2.0 * runup) * cot_beta
    grid = swe.Grid(nx=nx, ny=1, x=(-land, 2.0 * X1))
    x = np.asarray(grid.xc)
    bed = np.maximum(-x / cot_beta, -d)[None, :]
    boundaries = swe.Boundaries(west=swe.Wall(), east=swe.Outflow())
    model = swe.ShallowWater(grid, bed=bed, g=g, boundaries=boundaries)
    eta = H / np.cosh(gamma * (x - X1) / d) ** 2
    # The wave sits wholly over the flat floor; the beach starts dry above z = 0.
    eta = np.where(x >= X0, eta, 0.0)[None, :]
    u = -eta * math.sqrt(g / d)
    state0 = swe.State.from_surface(model, eta=eta, u=u)
    y = 0.5 * grid.dy
    gauges = [("offshore", X1, y), ("toe", X0, y), ("mid_slope", 0.5 * X0, y),
              ("shoreline", 0.0, y), ("inland", -0.5 * runup * cot_beta, y)]
    return swe.Scenario(
        model, state0, t_end=t_end, save_at=t_end / 20, gauges=gauges,
        metadata=dict(title="Solitary wave runup on a plane beach",
                      description="Synolakis (1987) solitary wave climbing a 1:cot_beta beach "
                                  "(beach on the west, still shoreline at x = 0)",
                      runup_law="R/d = 2.831 sqrt(cot beta) (H/d)^(5/4)",
                      runup_predicted_m=runup, toe_x=X0, crest_x=X1),
        arrival_threshold=1e-3)

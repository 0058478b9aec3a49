"""Face reconstruction, written for one cell: slope limiters and Koren's face limiter
(:data:`LIMITERS` maps each name to the deviations of a cell's two face values), the MUSCL
face values of a cell from its neighbours, and the MUSCL-Hancock predictor. ``swe.operator``
lifts them over the grid. The hydrostatic reconstruction of the interfaces, which makes the
scheme well balanced, is :func:`swe.pointwise.hydrostatic_reconstruction`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax.numpy as jnp


def minmod(a, b):
    """Most compressive-safe TVD limiter: the smaller slope when signs agree, else 0."""
    return jnp.where(a * b > 0.0, jnp.where(jnp.abs(a) <= jnp.abs(b), a, b), 0.0)


def mc(a, b):
    """Monotonised central limiter (van Leer 1977): ``minmod(2a, 2b, (a + b)/2)``."""
    return minmod(0.5 * (a + b), 2.0 * minmod(a, b))


def van_leer(a, b):
    """Van Leer's harmonic limiter ``2ab / (a + b)`` when signs agree, else 0."""
    ab = a * b
    den = jnp.where(ab > 0.0, a + b, 1.0)
    return jnp.where(ab > 0.0, 2.0 * ab / den, 0.0)


def koren(a, b):
    """Koren's limiter (1993) of van Leer's third-order upwind-biased faces (``kappa = 1/3``),
    from a cell's backward and forward differences ``a, b``.

    Returns the deviations of its right and of its left face value from the cell value,
    ``right = min(2|a|, 2|b|, (|a| + 2|b|)/3) / 2`` and ``left = min(2|a|, 2|b|,
    (2|a| + |b|)/3) / 2``, with the sign of ``a`` and ``b`` where they agree, else 0.
    Unlimited, the faces are those of the parabola through the three cell averages, so the
    faces are third-order accurate where the data are smooth and monotone; the bound
    ``2 min(|a|, |b|)`` (MC's) keeps them TVD. Unlike the slope limiters, the two faces
    differ: each leans on the difference across it, 2:1.
    """
    abs_a, abs_b = jnp.abs(a), jnp.abs(b)
    bound = 2.0 * jnp.minimum(abs_a, abs_b)
    half = jnp.where(a * b > 0.0, jnp.where(b > 0.0, 0.5, -0.5), 0.0)
    return (half * jnp.minimum(bound, (abs_a + 2.0 * abs_b) * (1.0 / 3.0)),
            half * jnp.minimum(bound, (2.0 * abs_a + abs_b) * (1.0 / 3.0)))


def _centred(slope_limiter):
    """Face deviations ``(right, left)`` of a slope limiter: both half its slope."""
    def deviations(a, b):
        half = 0.5 * slope_limiter(a, b)
        return half, half
    deviations.__name__ = deviations.__qualname__ = f"centred_{slope_limiter.__name__}"
    return deviations


# Steepness of the THINC jump: on the benchmark at N = 256 (THINC-BVD on h, u and v), L1 of h
# 1.82e-3 / 1.61e-3 / 1.48e-3 / 1.44e-3 / 1.41e-3 / 1.67e-3 at beta 1.3 / 1.6 / 2.0 / 2.2 /
# 2.5 / 2.7 (Koren alone 1.89e-3).
THINC_BETA = 2.5


def _thinc_position(a, b):
    """``(monotone, dq, theta, lo, c)`` of THINC from a cell's differences ``a, b``: the
    jump ``dq`` and direction ``theta`` between the neighbours, the lower neighbour ``lo``
    relative to the cell value, and ``c``, where the cell value lies between them (0 at
    the lower, 1 at the upper; strictly inside for monotone data). ``c`` is not clipped:
    a cell on a plateau beside a step (``c`` of order 1e-14, its surface flat to
    round-off beside a dry cell) must keep faces within round-off of its value, or a lake
    at rest moves (clipped at 1e-8, it drifted to 4e-8 m/s in 500 steps)."""
    monotone = a * b > 0.0
    s = a + b
    dq = jnp.abs(s)
    theta = jnp.where(s >= 0.0, 1.0, -1.0)
    lo = jnp.minimum(-a, b)
    return monotone, dq, theta, lo, -lo / jnp.where(monotone, dq, 1.0)


def thinc_exponential(a, b, beta=THINC_BETA):
    """The one transcendental of :func:`thinc`, ``exp(theta beta (2c - 1))``: computed
    apart in plain vectorised loops by the grid kernels (see ``swe.operator``)."""
    _, _, theta, _, c = _thinc_position(a, b)
    return jnp.exp(theta * beta * (2.0 * c - 1.0))


def thinc(a, b, beta=THINC_BETA, exponential=None):
    """THINC face deviations ``(right, left)`` of a cell from its backward and forward
    differences ``a, b`` (Xiao et al. 2005; Sun, Inaba & Xiao 2016): the cell is taken to
    hold a hyperbolic-tangent jump of steepness ``beta`` between its neighbours' values,
    placed so that its average is the cell value, and its faces are the jump's values
    there. Monotone data only (``a b > 0``); elsewhere both deviations are 0.
    ``exponential``: :func:`thinc_exponential` of the same ``a, b``, if already computed.

    A candidate for :func:`bvd_cell`, which uses it where it jumps less across the faces
    than the MUSCL candidate: on its own it steepens smooth profiles into steps.
    """
    monotone, dq, theta, lo, _ = _thinc_position(a, b)
    if exponential is None:
        exponential = thinc_exponential(a, b, beta)
    tb = jnp.tanh(beta)
    big = (exponential / jnp.cosh(beta) - 1.0) / tb
    right = lo + 0.5 * dq * (1.0 + theta * (tb + big) / (1.0 + big * tb))
    left = lo + 0.5 * dq * (1.0 + theta * big)
    return jnp.where(monotone, right, 0.0), jnp.where(monotone, -left, 0.0)


SLOPE_LIMITERS = {"minmod": minmod, "mc": mc, "vanleer": van_leer}
# Name -> face limiter: (backward, forward difference) -> (right, left face deviation).
LIMITERS = {**{name: _centred(fn) for name, fn in SLOPE_LIMITERS.items()}, "koren": koren}


class BVD(NamedTuple):
    """A THINC-BVD reconstruction (:func:`bvd_cell`): its MUSCL candidate (a face limiter
    of :data:`LIMITERS`) and the THINC steepness."""

    muscl: Callable
    beta: float = THINC_BETA


# Name -> THINC-BVD reconstruction (a five-cell stencil; Koren's faces as the MUSCL candidate).
BVD_LIMITERS = {"thinc-bvd": BVD(koren)}
RECONSTRUCTIONS = {"first_order": 1, "muscl": 2}  # value: ghost cells needed


THIN_FILM = 0.01  # first order where h <= THIN_FILM x the bed's step across a face


def first_order_at_dry(h0, bm, b0, bp, deviations, h_dry):
    """Zero the face ``deviations`` (from the cell value) of a dry or nearly dry cell
    (depth ``h0``, bed ``b0`` between ``bm`` and ``bp``): MUSCL falls back to first order
    in a cell whose depth is at most ``h_dry`` or ``THIN_FILM`` (1%) of the bed's step
    across either of its faces.

    MUSCL on the surface gives a face bed ``eta - h`` from two separately limited slopes.
    In a dry cell on curved ground (its surface is its bed) that face bed can rise above a
    thin neighbouring film's face surface; the hydrostatic reconstruction then gives the
    film no depth at that face, so no water leaves it while the bed-slope terms accelerate
    it without bound. Films thin against the bed's step across a cell are the known weak
    point of the hydrostatic reconstruction (Delestre, Cordier, Darboux & James 2012).
    Without this fallback, the stress validation case (64^2, random bed) took 113061
    steps with van Leer's limiter (a 0.3 mm film at 220 m/s) and 245027 with MC, against
    5371 with minmod; with it, all three take about 5400. Wet cells next to dry ones keep
    their slopes: zeroing those too cost Thacker's planar case half its accuracy at the
    shoreline (L1 0.0066 against 0.0043 at 200^2), and 1% (not 0 or 10%) is the smallest
    threshold that stops the films in the stress case without that cost (10%: L1 0.0122
    against 0.0074 after 5 periods). A flat surface stays flat, so the scheme stays well
    balanced; the test is per face and so mirror-symmetric across a wall.
    """
    step = jnp.maximum(jnp.abs(b0 - bm), jnp.abs(bp - b0))
    thin = h0 <= jnp.maximum(h_dry, THIN_FILM * step)
    return tuple(jnp.where(thin, 0.0, d) for d in deviations)


def hancock_predictor(h, un, ut, right, left, *, courant, g, h_dry):
    """MUSCL-Hancock half-step predictor (van Leer 1984; Toro 2009, sec. 14.4) of the
    shallow-water equations in primitive form along one direction, over a bed.

    ``h, un, ut``: cell values; ``right, left``: the deviations ``(h, un, ut, eta)`` of
    the cell's right and left face values from its cell values, those of the surface
    ``eta = h + b`` included (equal, the limited half slopes, for a slope limiter);
    ``courant = dt / dx``. Returns the cell values advanced by ``dt / 2`` with
    ``w_t + A(w) w_x = 0`` and the slope ``(right + left) / dx``, the bed entering through
    the surface slope (``u_t + u u_x + g eta_x = 0``), and the face deviations (the faces'
    bed is ``eta - h`` from these). Cells fall back to
    first order (zero slopes, no prediction) where a predicted face depth would be
    negative, and dry cells (``h <= h_dry``) are not predicted: the surface slope of dry
    land is the bed's and would give them a velocity, which the Riemann solver's dry-front
    speeds read. A lake at rest (``un = 0``, a flat surface) is left exactly as it is, so
    the hydrostatic reconstruction that follows keeps it at rest.
    """
    dh, dun, dut, deta = (0.5 * (r + l) for r, l in zip(right, left))
    hp = h - courant * (un * dh + h * dun)
    unp = un - courant * (un * dun + g * deta)
    utp = ut - courant * (un * dut)
    ok = (h > h_dry) & (hp + right[0] >= 0.0) & (hp - left[0] >= 0.0)

    def pick(new, old):
        return jnp.where(ok, new, old)

    def kept(deviations):
        return tuple(pick(d, jnp.zeros_like(d)) for d in deviations)

    return (pick(hp, h), pick(unp, un), pick(utp, ut)), kept(right), kept(left)


def muscl_cell(hm, h0, hp, um, u0, up, tm, t0, tp, bm, b0, bp, g, h_dry, courant=None, *,
               limiter):
    """The MUSCL face values of one cell from its neighbours along one direction, written
    for one cell (scalars in): depth ``h``, normal and tangential velocity ``u, t`` and bed
    ``b`` of the cells before (``m``), at (``0``) and after (``p``) it, gravity, ``h_dry``
    and, for a sweep of a split step, ``courant = dt / dx`` (the MUSCL-Hancock predictor).
    ``limiter`` is one of :data:`LIMITERS`: (backward, forward difference) to the
    (right, left) face deviations.

    Returns the values at its right face ``(h, u, t, b)`` and then at its left face: the
    limited face deviations of ``h, u, t`` and of the surface ``eta = h + b``
    (:func:`first_order_at_dry` zeroes them in dry and nearly dry cells), then the
    predictor if any. MUSCL on the surface: the face bed is ``eta - h`` (Audusse et al.
    2004, sec. 3), so a flat surface stays flat at every face; the bed does not move with
    the predictor (it comes from the depth before it).
    """
    pairs = [limiter(a, b) for a, b in
             cell_differences(hm, h0, hp, um, u0, up, tm, t0, tp, bm, b0, bp)]
    return _faces(h0, u0, t0, bm, b0, bp, pairs, g, h_dry, courant)


def cell_differences(hm, h0, hp, um, u0, up, tm, t0, tp, bm, b0, bp):
    """The backward and forward differences ``(a, b)`` of a cell for each of ``h, u, t``
    and the surface ``h + b`` (the limiters' arguments)."""
    return tuple((q0 - qm, qp - q0) for qm, q0, qp in
                 ((hm, h0, hp), (um, u0, up), (tm, t0, tp), (hm + bm, h0 + b0, hp + bp)))


def bvd_candidates(hm, h0, hp, um, u0, up, tm, t0, tp, bm, b0, bp, *exponentials, limiter,
                   beta=THINC_BETA):
    """Both candidates of a THINC-BVD reconstruction of one cell from its neighbours: for
    each of ``h, u, t`` and the surface ``h + b``, the MUSCL deviations ``(right, left)``
    (face limiter ``limiter``) and then the THINC ones (:func:`thinc`); 16 values.
    ``exponentials``: optionally :func:`thinc_exponential` of the four at slots
    ``(before, at, after)`` each (12 values; the middle ones are used)."""
    out = []
    differences = cell_differences(hm, h0, hp, um, u0, up, tm, t0, tp, bm, b0, bp)
    for k, (a, b) in enumerate(differences):
        e = exponentials[3 * k + 1] if exponentials else None
        out += [*limiter(a, b), *thinc(a, b, beta, e)]
    return tuple(out)


def bvd_cell(*args):
    """:func:`muscl_cell` with THINC-BVD deviations (Sun, Inaba & Xiao 2016; Deng et al.
    2018), written for one cell: for each variable, of the MUSCL and the THINC candidate
    (:func:`bvd_candidates`), the one whose faces jump least against the same candidate's
    faces of the two neighbours, ``|q+_(i-1) - q-_i| + |q+_i - q-_(i+1)|`` (the boundary
    variation): MUSCL where the data are smooth, THINC's steep tanh profile across jumps.
    The same dry-cell rule, face values and predictor as :func:`muscl_cell` follow.

    Arguments, three slots (before, at, after the cell) each: ``h, u, t, b``, then the 16
    candidate deviations; then ``g, h_dry`` and optionally ``courant``.
    """
    cells, candidates, scalars = args[:12], args[12:60], args[60:]
    h, u, t, b = (cells[3 * k:3 * k + 3] for k in range(4))
    g, h_dry = scalars[:2]
    courant = scalars[2] if len(scalars) > 2 else None
    pairs = []
    for v, q in enumerate((h, u, t, tuple(x + y for x, y in zip(h, b)))):
        slot = [candidates[3 * (4 * v + j):3 * (4 * v + j) + 3] for j in range(4)]

        def variation(right, left):
            return (jnp.abs(q[0] + right[0] - (q[1] - left[1]))
                    + jnp.abs(q[1] + right[1] - (q[2] - left[2])))

        use_thinc = variation(slot[2], slot[3]) < variation(slot[0], slot[1])
        pairs.append((jnp.where(use_thinc, slot[2][1], slot[0][1]),
                      jnp.where(use_thinc, slot[3][1], slot[1][1])))
    return _faces(h[1], u[1], t[1], b[0], b[1], b[2], pairs, g, h_dry, courant)


def _faces(h0, u0, t0, bm, b0, bp, pairs, g, h_dry, courant):
    """A cell's face values from its deviations ``pairs`` (``(right, left)`` of ``h, u, t,
    eta``): the dry-cell rule, the predictor if any, then right and left ``(h, u, t, b)``."""
    e0 = h0 + b0
    right, left = (first_order_at_dry(h0, bm, b0, bp, side, h_dry) for side in zip(*pairs))
    centre = (h0, u0, t0)
    if courant is not None:
        centre, right, left = hancock_predictor(h0, u0, t0, right, left, courant=courant,
                                                g=g, h_dry=h_dry)
    (ch, cun, cut), (rh, run, rt, re), (lh, lun, lt, le) = centre, right, left
    return (ch + rh, cun + run, cut + rt, (e0 + re) - (h0 + rh),
            ch - lh, cun - lun, cut - lt, (e0 - le) - (h0 - lh))

"""Pointwise numerics shared by XLA's stage (:mod:`swe.operator`) and the TPU kernel
(:mod:`swe.tpu_stage`): functions of one cell or one interface, scalars in and out (or
arrays of any shape, elementwise), lifted over the grid by their callers.

Units throughout: depth ``h`` and bed ``b`` in m, discharges ``hu``, ``hv`` in m^2/s,
velocities in m/s, gravity ``g`` in m/s^2, time step ``dt`` in s, ``h_dry`` in m. Both
stages call these same functions in the same order, so they agree to round-off.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def safe_sqrt(x):
    """``sqrt(max(x, 0))`` whose derivative is 0, not inf, at 0.

    Dry cells have ``h = 0``; a bare ``sqrt(g h)`` there would turn reverse-mode gradients
    into NaN (0 * inf) even where the result is masked out.
    """
    pos = x > 0.0
    return jnp.where(pos, jnp.sqrt(jnp.where(pos, x, 1.0)), 0.0)


def desingularised_velocity(h, q, h_dry):
    """``q / h`` made safe in thin layers (Kurganov & Petrova 2007, eq. 2.17).

    Equals ``q / h`` wherever ``h >= h_dry`` (to round-off) and goes smoothly to zero as
    ``h -> 0``, so a vanishing layer never produces an unbounded velocity.
    """
    h2 = h * h
    h4 = h2 * h2
    eps4 = h_dry**4
    return jnp.sqrt(2.0) * h * q / jnp.sqrt(h4 + jnp.maximum(h4, eps4))


def hydrostatic_reconstruction(hL, bL, hR, bR):
    """Audusse et al. (2004, SIAM J. Sci. Comput. 25:2050) interface depths.

    With ``b* = max(bL, bR)``, each side keeps the part of its water column above ``b*``:
    ``h*_{L,R} = max(0, h_{L,R} + b_{L,R} - b*)``. A lake at rest gives ``h*_L = h*_R`` and
    the flux difference cancels the bed-slope source exactly; a dry side blocks flow onto
    higher ground. Written for one interface (scalars in).
    """
    b_star = jnp.maximum(bL, bR)
    hL_star = jnp.maximum(0.0, hL + bL - b_star)
    hR_star = jnp.maximum(0.0, hR + bR - b_star)
    return hL_star, hR_star


def interface(hL, uL, vL, bL, hR, uR, vR, bR, g, riemann):
    """Flux through one interface and the hydrostatic pressure corrections of its sides.

    The sides' depths (m), normal and tangential velocities (m/s) and beds (m), then
    gravity (m/s^2) and a Riemann solver of :data:`swe.riemann.RIEMANN_SOLVERS`. The
    Riemann flux ``(F_h, F_hun, F_hut)`` (m^2/s, m^3/s^2, m^3/s^2) is that of the
    hydrostatically reconstructed depths (:func:`hydrostatic_reconstruction`; Audusse et
    al. 2004), and ``g/2 (h^2 - h*^2)`` on each side (m^3/s^2) the pressure correction
    that keeps a lake at rest still.
    """
    hL_star, hR_star = hydrostatic_reconstruction(hL, bL, hR, bR)
    f_h, f_hu, f_hv = riemann(hL_star, uL, vL, hR_star, uR, vR, g)
    corr_left = 0.5 * g * (hL * hL - hL_star * hL_star)
    corr_right = 0.5 * g * (hR * hR - hR_star * hR_star)
    return f_h, f_hu, f_hv, corr_left, corr_right


def first_order_interface(h0, hp, u0, up, t0, tp, b0, bp, g, *, riemann):
    """:func:`interface` between two cells of the stencil ``(0, p)`` (piecewise constant)."""
    return interface(h0, u0, t0, b0, hp, up, tp, bp, g, riemann)


def centred_bed_slope(faces, g):
    """``g/2 (h_- + h_+)(b_+ - b_-)`` of a cell from its face values, as
    :func:`swe.reconstruction.muscl_cell` returns them (right face, then left face):
    the bed-slope source (m^3/s^2) that, with :func:`interface`'s pressure corrections,
    balances a lake at rest over a sloping bed inside a MUSCL cell (Audusse et al. 2004,
    sec. 3)."""
    return 0.5 * g * (faces[4] + faces[0]) * (faces[3] - faces[7])


def friction_decay_rate(friction, depth, h, hu, hv, g, h_dry):
    """The friction law's rate ``k`` (1/s, :meth:`swe.sources.AbstractFriction.decay_rate`)
    at ``depth`` (m) with the speed (m/s) of ``(h, hu, hv)`` (desingularised); pointwise."""
    u = desingularised_velocity(h, hu, h_dry)
    v = desingularised_velocity(h, hv, h_dry)
    return friction.decay_rate(depth, safe_sqrt(u * u + v * v), g, h_dry)


def damped(h, hu, hv, h_new, hu_new, hv_new, dt, friction, g, h_dry):
    """The end of an update of one cell from ``(h, hu, hv)``: semi-implicit friction over
    ``dt`` (the old velocities, the new depth), then the momentum of a dry cell zeroed.

    ``(hu, hv) <- (hu, hv) / (1 + dt k)``, ``k`` the friction law's rate
    (:func:`friction_decay_rate`): unconditionally stable however thin the layer, where
    an explicit ``-dt k (hu, hv)`` reverses the flow once ``dt k > 1``.
    """
    if friction is not None:
        k = friction_decay_rate(friction, h_new, h, hu, hv, g, h_dry)
        damping = 1.0 / (1.0 + dt * k)
        hu_new, hv_new = hu_new * damping, hv_new * damping
    dry = h_new <= 0.0
    return h_new, jnp.where(dry, 0.0, hu_new), jnp.where(dry, 0.0, hv_new)


def euler_update(h, hu, hv, dh, dhu, dhv, dt, friction, g, h_dry):
    """The forward Euler update of one cell by its tendencies (``dh`` in m/s, ``dhu``,
    ``dhv`` in m^2/s^2) over ``dt``, then the friction and the dry-cell rule of
    :func:`damped`; pointwise."""
    # Round-off (or evaporation) may leave -1e-17 where a cell drained exactly.
    h_new = jnp.maximum(h + dt * dh, 0.0)
    return damped(h, hu, hv, h_new, hu + dt * dhu, hv + dt * dhv, dt, friction, g, h_dry)


def source_update(h, hu, hv, forcing, f, dt, friction, g, h_dry):
    """:func:`swe.steps.source_step` of one cell; pointwise. ``forcing``: the rates
    ``(dh, dhu, dhv)`` of the forcings but friction and Coriolis (m/s, m^2/s^2; None where absent),
    taken explicitly; ``f``: the Coriolis parameter (1/s; None without), applied as the
    exact rotation of ``(hu, hv)`` by ``f dt``; then :func:`damped`."""
    sh, shu, shv = forcing
    h_new = h if sh is None else jnp.maximum(h + dt * sh, 0.0)
    hu_new = hu if shu is None else hu + dt * shu
    hv_new = hv if shv is None else hv + dt * shv
    if f is not None:
        c, s = jnp.cos(dt * f), jnp.sin(dt * f)
        hu_new, hv_new = c * hu_new + s * hv_new, c * hv_new - s * hu_new
    return damped(h, hu, hv, h_new, hu_new, hv_new, dt, friction, g, h_dry)


def blended(alpha, base, new):
    """``alpha * base + (1 - alpha) * new``, leaf by leaf: a stage of an SSP Runge-Kutta
    scheme in Shu-Osher form (``alpha`` a Python float)."""
    return jax.tree.map(lambda a, b: alpha * a + (1.0 - alpha) * b, base, new)


def shu_osher(stage, t, state, dt, stages):
    """A step of an SSP Runge-Kutta scheme in Shu-Osher form (Shu & Osher 1988):
    ``stage(t, y, blend)`` is a forward Euler stage from ``y`` at ``t`` (``blend=(alpha,
    state)``: returned as :func:`blended` ``(alpha, state, stage)``); the first from
    ``state`` at ``t``, then one per ``(alpha, c)`` in ``stages`` at ``t + c dt`` from the
    one before."""
    y = stage(t, state, None)
    for alpha, c in stages:
        y = stage(t + c * dt, y, (alpha, state))
    return y

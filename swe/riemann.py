"""Approximate Riemann solvers for one interface.

Each flux takes the left and right states of one interface as scalars, in primitive form
``(h, un, ut)`` (depth, normal and tangential velocity), plus gravity ``g``, and returns the
numerical flux ``(F_h, F_hun, F_hut)`` across it in the direction of the normal. The same
kernel serves x faces (``un=u``) and y faces (``un=v``); it is lifted over the grid with
``jax.vmap`` by the model.

All three handle dry states (``h = 0``) with the dry-bed wave speeds of Toro (2001,
*Shock-capturing methods for free-surface shallow flows*, §10.5), which keeps the
hydrostatically reconstructed scheme positive.
"""

from __future__ import annotations

import jax.numpy as jnp

from .state import safe_sqrt


def physical_flux(h, un, ut, g):
    """Exact normal flux ``(h un, h un^2 + g h^2 / 2, h un ut)``."""
    hun = h * un
    return hun, hun * un + 0.5 * g * h * h, hun * ut


def wave_speeds(hL, uL, hR, uR, g):
    """Lower and upper signal-speed bounds ``(sL, sR)`` (Toro 2001, eqs. 10.22-10.24).

    Two-rarefaction estimates for wet-wet states and the exact dry-front speeds
    ``u -+ 2c`` when one side is dry. Both zero when both sides are dry.
    """
    cL = safe_sqrt(g * hL)
    cR = safe_sqrt(g * hR)
    u_star = 0.5 * (uL + uR) + cL - cR
    c_star = 0.5 * (cL + cR) + 0.25 * (uL - uR)
    left_dry = hL <= 0.0
    right_dry = hR <= 0.0
    sL = jnp.where(left_dry, uR - 2.0 * cR, jnp.minimum(uL - cL, u_star - c_star))
    sR = jnp.where(right_dry, uL + 2.0 * cL, jnp.maximum(uR + cR, u_star + c_star))
    both_dry = left_dry & right_dry
    return jnp.where(both_dry, 0.0, sL), jnp.where(both_dry, 0.0, sR)


def _hll_weights(sL, sR):
    """Coefficients ``(a, b, c)`` of the HLL average ``a fL + b fR + c (qR - qL)``.

    One division per interface, shared by all components (a division costs several
    multiplications, more so in float64). Written without branches: the upwind flux when
    both speeds share a sign; zero when both sides are dry.
    """
    sLm = jnp.minimum(sL, 0.0)
    sRp = jnp.maximum(sR, 0.0)
    span = sRp - sLm
    inv = jnp.where(span > 0.0, 1.0 / jnp.where(span > 0.0, span, 1.0), 0.0)
    return sRp * inv, -sLm * inv, sLm * sRp * inv


def _hll_combine(fL, fR, qL, qR, weights):
    a, b, c = weights
    return a * fL + b * fR + c * (qR - qL)


def rusanov(hL, uL, vL, hR, uR, vR, g):
    """Local Lax-Friedrichs flux (Rusanov 1961) with the dry-aware speed bound."""
    fL = physical_flux(hL, uL, vL, g)
    fR = physical_flux(hR, uR, vR, g)
    sL, sR = wave_speeds(hL, uL, hR, uR, g)
    s = jnp.maximum(jnp.abs(sL), jnp.abs(sR))
    qL = (hL, hL * uL, hL * vL)
    qR = (hR, hR * uR, hR * vR)
    return tuple(0.5 * (a + b) - 0.5 * s * (r - l) for a, b, l, r in zip(fL, fR, qL, qR))


def hll(hL, uL, vL, hR, uR, vR, g):
    """Harten-Lax-van Leer flux (Harten, Lax & van Leer 1983)."""
    fL = physical_flux(hL, uL, vL, g)
    fR = physical_flux(hR, uR, vR, g)
    sL, sR = wave_speeds(hL, uL, hR, uR, g)
    qL = (hL, hL * uL, hL * vL)
    qR = (hR, hR * uR, hR * vR)
    w = _hll_weights(sL, sR)
    return tuple(_hll_combine(a, b, l, r, w) for a, b, l, r in zip(fL, fR, qL, qR))


def hllc(hL, uL, vL, hR, uR, vR, g):
    """HLLC flux for the shallow-water equations (Toro, Spruce & Speares 1994).

    Mass and normal momentum are the HLL fluxes; the tangential momentum is carried by the
    contact wave ``s*`` (Toro 2001, eq. 10.26), so shear layers are not smeared as in HLL.
    """
    sL, sR = wave_speeds(hL, uL, hR, uR, g)
    fL = physical_flux(hL, uL, vL, g)
    fR = physical_flux(hR, uR, vR, g)
    w = _hll_weights(sL, sR)
    f_h = _hll_combine(fL[0], fR[0], hL, hR, w)
    f_hu = _hll_combine(fL[1], fR[1], hL * uL, hR * uR, w)
    den = hR * (uR - sR) - hL * (uL - sL)
    safe = jnp.where(den != 0.0, den, 1.0)
    s_star = jnp.where(den != 0.0, (sL * hR * (uR - sR) - sR * hL * (uL - sL)) / safe, 0.0)
    f_hv = jnp.where(s_star >= 0.0, f_h * vL, f_h * vR)
    return f_h, f_hu, f_hv


RIEMANN_SOLVERS = {"rusanov": rusanov, "hll": hll, "hllc": hllc}

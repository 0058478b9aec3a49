"""XLA's forward-Euler stage and the SSP Runge-Kutta step made of it: the finite-volume
operator of :mod:`swe.operator`, the forcings' rates, and the pointwise update with
semi-implicit friction. :mod:`swe.tpu_stage` computes the same stage as one Pallas kernel
and differentiates this one; :mod:`swe.steps` chooses between them.
"""

from __future__ import annotations

from .fusion import materialised
from .operator import all_fluxes, flux_divergence, positivity_scale
from .pointwise import blended, euler_update, shu_osher
from .state import State


def ssp_step(model, t, state: State, dt, beds, stages=()) -> State:
    """A step of an SSP Runge-Kutta scheme in Shu-Osher form (:func:`swe.pointwise.shu_osher`)
    over XLA's :func:`euler_step` stages, ``stages`` its ``(alpha, c)`` after the first."""
    return shu_osher(lambda t_, y, blend: euler_step(model, t_, y, dt, beds, blend=blend),
                     t, state, dt, stages)


def euler_step(model, t, state: State, dt, beds, *, predictor=False, sources=True,
               blend=None) -> State:
    """One positivity-preserving forward Euler step through XLA (:func:`swe.steps.euler_step`
    says what it computes)."""
    fluxes = all_fluxes(model, t, state, beds, dt if predictor else None)
    scale = positivity_scale(model, fluxes, state.h, dt)
    dh, dhu, dhv = flux_divergence(fluxes, state, scale)
    sh, shu, shv = model.explicit_rates(t, state) if sources else (None, None, None)
    dh = dh if sh is None else dh + sh
    dhu = dhu if shu is None else dhu + shu
    dhv = dhv if shv is None else dhv + shv
    friction = model.friction if sources else None
    # Pointwise, so one loop forward and one loop for its VJP (materialised); XLA
    # fuses the divergence of the limited fluxes into that one loop (the draining
    # factors keep a loop of their own). Against a loop of their own for the depth and
    # each momentum, each recomputing the scaled fluxes (and the friction factor, if
    # any), with autodiff writing each intermediate cotangent in a loop of its own,
    # in-process A/Bs: the benchmark problem
    # (no friction) at N = 512 in 2.83 s against 3.73 s (first order: 1.98 against
    # 2.71 s), at N = 1024 in 24.5 s against 33.6 s; the 300-step gradient benchmark
    # at 128^2 (Manning) forward 0.211 s against 0.275 s, gradient 1.49 s against
    # 1.80 s. The divergence and the draining factors made pointwise kernels of their
    # own (their faces sliced out of the interface arrays) are slower: gradient 1.60 s.
    h, hu, hv = materialised(euler_update)(state.h, state.hu, state.hv, dh, dhu, dhv, dt,
                                           friction, model.g, model.h_dry)
    new = State(h=h, hu=hu, hv=hv)
    return new if blend is None else blended(*blend, new)

"""The steps: a positivity-preserving forward-Euler stage, the SSP Runge-Kutta steps made
of such stages, and the dimensionally split MUSCL-Hancock step with its source step.

Each is a function of the model (:class:`swe.ShallowWater`, which holds the configuration
and answers the tendency and the stable time step), the time, the state, the step and the
padded beds (:meth:`swe.ShallowWater.padded_beds`). A stage runs through XLA
(:func:`swe.xla_stage.euler_step`, over :mod:`swe.operator`) or through the TPU kernel of
:mod:`swe.tpu_stage`, as :func:`swe.stages.stage_kernel` chooses.
"""

from __future__ import annotations

from . import xla_stage
from .fusion import materialised
from .pointwise import source_update
from .stages import stage_kernel
from .state import State
from .tpu_stage import BlockLayout
from .tpu_stage import euler_step as tpu_euler_step
from .tpu_stage import ssp_step as tpu_ssp_step


def euler_step(model, t, state: State, dt, beds, *, predictor=False, sources=True,
               blend=None) -> State:
    """One positivity-preserving forward Euler step, the stage of every SSP-RK scheme.

    Explicit fluxes (draining-time limited) and sources, then semi-implicit friction.
    Only the directions in ``beds`` are swept. ``predictor``: MUSCL-Hancock face values
    (a sweep of :func:`split_step`); ``sources=False`` leaves out the forcing and the
    friction. ``blend=(alpha, base)`` returns :func:`swe.pointwise.blended`
    ``(alpha, base, step)``, a stage of an SSP Runge-Kutta scheme in Shu-Osher form.
    Computed by :func:`swe.xla_stage.euler_step` or by the Pallas kernel of
    :mod:`swe.tpu_stage` (the blend included), as ``scheme.kernel`` chooses
    (:func:`swe.stages.stage_kernel`).
    """
    kernel = stage_kernel(model, beds, predictor=predictor)
    if kernel != "xla":
        return tpu_euler_step(model, t, state, dt, beds, sources=sources, blend=blend,
                              interpret=kernel == "pallas-interpret")
    return xla_stage.euler_step(model, t, state, dt, beds, predictor=predictor, sources=sources,
                          blend=blend)


def ssp_step(model, t, state: State, dt, beds, stages=()) -> State:
    """A step of an SSP Runge-Kutta scheme in Shu-Osher form
    (:func:`swe.pointwise.shu_osher`) over :func:`euler_step` stages, ``stages`` its
    ``(alpha, c)`` after the first. Through the Pallas kernel
    (:func:`swe.tpu_stage.ssp_step`, its stages chained in the kernel's layout) where
    ``scheme.kernel`` takes it, else :func:`swe.xla_stage.ssp_step`. A
    :class:`swe.tpu_stage.BlockLayout` state (a run's carry in the kernel's layout)
    gives one."""
    kernel = stage_kernel(model, beds)
    if kernel != "xla" or isinstance(state, BlockLayout):
        return tpu_ssp_step(model, t, state, dt, beds, stages,
                            interpret=kernel == "pallas-interpret")
    return xla_stage.ssp_step(model, t, state, dt, beds, stages)


def split_step(model, t, state: State, dt, beds, strang: bool = False) -> State:
    """One step of dimensional splitting: a sweep along x over the whole step, then one
    along y from its result (Godunov splitting, first order), or with ``strang`` x over
    half the step, y over the whole step, x over the other half (Strang splitting,
    second order; three sweeps). Each sweep is a positivity-limited Euler update whose
    MUSCL face values are advanced by half its step first (MUSCL-Hancock; first order
    without MUSCL). The pointwise sources take half a step before the sweeps and half
    after (:func:`source_step`; on the geostrophic validation case at 128^2, L1(h)
    0.084 against 0.140 with one full source step after the sweeps). Each sweep is
    stable up to a Courant number of 1 in its own direction, so ``cfl = 0.9`` (as
    PyClaw's split scheme) is twice the unsplit schemes' step.
    """
    state = source_step(model, t, state, 0.5 * dt)

    def sweep(axis, state, span):
        return euler_step(model, t, state, span, {axis: beds[axis]}, predictor=True,
                          sources=False)

    # x before y (beds, a dict, comes back from a jit boundary with its keys sorted).
    axes = tuple(axis for axis in model.swept_axes() if axis in beds)
    if strang and len(axes) == 2:
        state = sweep(axes[0], state, 0.5 * dt)
        state = sweep(axes[1], state, dt)
        state = sweep(axes[0], state, 0.5 * dt)
    else:
        for axis in axes:
            state = sweep(axis, state, dt)
    return source_step(model, t + 0.5 * dt, state, 0.5 * dt)


def source_step(model, t, state: State, dt) -> State:
    """The pointwise sources over ``dt`` (half a split step's, before its sweeps and
    again after them): the forcings' rates explicitly, the Coriolis force as
    the exact rotation of ``(hu, hv)`` by ``f dt`` (a forward Euler step of it grows
    the kinetic energy by ``1 + (f dt)^2`` per step: the geostrophic validation case
    blew up after 2374 steps that way), then the friction semi-implicitly. The
    identity when the model has none of them."""
    if not model.forcings:
        return state
    forcing = model.explicit_rates(t, state, rotation=False)
    f = (None if model.coriolis is None
         else model.coriolis.parameter(model.grid).astype(state.h.dtype))
    # One pointwise kernel, as the Euler update (materialised).
    h, hu, hv = materialised(source_update)(state.h, state.hu, state.hv, forcing, f, dt,
                                            model.friction, model.g, model.h_dry)
    return State(h=h, hu=hu, hv=hv)

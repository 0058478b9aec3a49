"""Which computation runs a forward-Euler stage: XLA's program
(:mod:`swe.xla_stage`) or the Pallas kernel of :mod:`swe.tpu_stage`.

:class:`swe.FiniteVolume`'s ``kernel`` chooses: ``"auto"`` (the default) takes the kernel
on a TPU for grids of at least :data:`AUTO_MIN_CELLS` cells whose model it covers
(:func:`unsupported`), and XLA otherwise (on a TPU v5e, whole runs of scenarios with zoned
Manning friction and an inflow, with Coriolis and periodic sides, and with a moving
shoreline ended with the two kernels' depths equal or within 4e-8 in relative L1:
``scripts/check_stage_kernels.py``); ``"xla"`` never takes it; ``"pallas"`` always does,
and refuses (ValueError) a model it does not cover or a backend that is not a TPU;
``"pallas-interpret"`` runs the kernel in Pallas's interpret mode on any backend (slow;
for tests). A vmapped ensemble counts its members' cells together
(:func:`batch_kernel`).
"""

from __future__ import annotations

import jax

from .reconstruction import BVD

KERNELS = ("auto", "xla", "pallas", "pallas-interpret")
# "auto" takes the kernel on a TPU from this many cells up. Whole runs of the benchmark on a
# TPU v5e (float32): at N = 1024 XLA's stage was quicker (1.34 against 1.19
# Gcell/s), at 1536 the kernel (1.21 against 0.75), at 2048 2.45x, at 4096 2.57x.
AUTO_MIN_CELLS = 1536 * 1536
# "auto" takes the kernel for a vmapped batch (an ensemble) whose members' cells together
# reach this many (:func:`batch_kernel`). On a TPU v5e (float32, members to t = 1,
# throughput against the members run one by one, same call): 16 members of 128^2 1.92x
# with the kernel, 1.91x with XLA's stage; 16 of 256^2 1.54x against 1.21x; 64 of 256^2
# 1.53x against 0.62x.
BATCH_MIN_CELLS = 1024 * 1024
# The integrators of swe.stepping.INTEGRATORS whose steps are dimensionally split
# MUSCL-Hancock sweeps (swe.stepping.SplitHancock): always XLA's stage.
SPLIT_INTEGRATORS = frozenset({"split", "strang"})


def unsupported(model, beds) -> str | None:
    """Why :func:`swe.tpu_stage.euler_step` cannot run ``model``'s stage, or None if it
    can."""
    if model.decomposition.on_mesh:
        return "a model on a device mesh (swe.parallel)"
    if set(beds) != {0, 1}:
        return "a model with one swept direction (a 1-D channel)"
    if isinstance(model.scheme.limiter_fn, BVD):
        return f"limiter={model.scheme.limiter!r} (five-cell stencils)"
    return None


def stage_kernel(model, beds, *, predictor=False) -> str:
    """``"xla"``, ``"pallas"`` or ``"pallas-interpret"``: the stage ``model.scheme.kernel``
    selects for this model on this backend; ValueError where ``"pallas"`` cannot run."""
    kernel = model.scheme.kernel.lower()
    if kernel == "xla" or predictor:
        return "xla"
    backend = jax.default_backend()
    if kernel == "auto":
        if backend != "tpu" or model.grid.nx * model.grid.ny < AUTO_MIN_CELLS:
            return "xla"
        return "pallas" if unsupported(model, beds) is None else "xla"
    why = unsupported(model, beds)
    if why is not None:
        raise ValueError(f"kernel={model.scheme.kernel!r} cannot run {why}; use "
                         "kernel='auto' or 'xla'")
    if kernel == "pallas" and backend != "tpu":
        raise ValueError(f"kernel='pallas' needs a TPU (the backend is {backend!r}); use "
                         "'auto' or 'xla', or 'pallas-interpret' to run the kernel slowly "
                         "in interpret mode")
    return kernel


def batch_kernel(model, members: int) -> str:
    """The ``kernel`` a vmapped batch of ``members`` runs of ``model`` takes (an ensemble,
    :func:`swe.simulate_ensemble`): ``"auto"`` becomes ``"pallas"`` on a TPU where the
    batch of two or more members' cells together reach :data:`BATCH_MIN_CELLS` and the
    kernel covers the model (the vmapped kernel runs the members' blocks as one grid, so
    the batch's size is what counts); otherwise ``model.scheme.kernel``, which each
    member's stage then resolves as a single run would."""
    kernel = model.scheme.kernel
    if (kernel.lower() != "auto" or members < 2 or jax.default_backend() != "tpu"
            or members * model.grid.nx * model.grid.ny < BATCH_MIN_CELLS
            or unsupported(model, dict.fromkeys(model.swept_axes())) is not None):
        return kernel
    return "pallas"


def stage_kernel_for_run(model, integrator="ssprk2") -> str:
    """The stage kernel a run of ``model`` with ``integrator`` takes on this backend: that
    of :func:`stage_kernel`, except that the split integrators' MUSCL-Hancock sweeps
    (:data:`SPLIT_INTEGRATORS`) are always XLA's; ``model.scheme.kernel`` itself where the
    run would refuse it."""
    if str(integrator).lower() in SPLIT_INTEGRATORS:
        return "xla"
    try:
        return stage_kernel(model, model.padded_beds())
    except ValueError:
        return model.scheme.kernel

"""Plumbing that steers XLA's fusion of the stage's pointwise and stencil kernels, and
keeps their traces for reuse; the numerics are those of the kernels it is handed.

XLA:CPU makes no multi-output fusions: a kernel with several outputs (a Riemann flux and
its pressure corrections) becomes one loop per output, each recomputing the shared work,
and plain autodiff writes every intermediate of its VJP in a loop of its own.
:func:`in_one_loop`, :func:`materialised` and :func:`stencil` compute all outputs of a
kernel (and of its VJP) in one loop; :func:`written_once` keeps XLA from rewriting the
padded fields' slices; :func:`reused` builds each lifted kernel once, so that the many
traces of a step in a gradient reuse its compiled form. :func:`fusion_hints` switches the
loop-shaping off (``SWE_FUSION_HINTS=off``).
"""

from __future__ import annotations

import functools
import os

import jax
import jax.numpy as jnp

from .errors import is_concrete


_BUILT: dict = {}  # (builder, key) -> function, for :func:`reused`
# Stable keys themselves: the functions in _BUILT, and those registered with
# :func:`register_stable` (the limiters and Riemann solvers: some limiters are closures,
# built once at import).
_STABLE_IDS: set = set()


def register_stable(*fns):
    """Makes ``fns`` (functions built once, at import: closures among them) stable keys of
    :func:`reused`, each standing for itself."""
    _STABLE_IDS.update(id(f) for f in fns)


def _stable_key(fn):
    """A key equal across traces for ``fn``: the function itself if it is a module-level
    function without a closure, one of the registered limiters and Riemann solvers (built
    once, at import) or built by :func:`reused`; a ``functools.partial`` of one by its
    parts (values with their types: ``1 == 1.0 == True``). TypeError for closures,
    lambdas and callable objects (new objects each trace: built every time)."""
    def part(v):
        return _stable_key(v) if callable(v) else (type(v), v)

    if isinstance(fn, functools.partial):
        return ("partial", _stable_key(fn.func), tuple(part(a) for a in fn.args),
                tuple(sorted((k, part(v)) for k, v in fn.keywords.items())))
    if id(fn) in _STABLE_IDS:
        return fn
    if (callable(fn) and "<" not in getattr(fn, "__qualname__", "<")
            and getattr(fn, "__closure__", None) is None):
        return fn
    raise TypeError(f"no stable key for {fn!r}")


def reused(jitted: bool):
    """Builds a kernel function once per kernel and settings (and :func:`fusion_hints`
    mode), jitted if ``jitted``, and hands out the same function on every later call.

    A gradient through a run traces each step's kernels many times (diffrax's checkpointed
    loop and equinox's resolution of which values it differentiates trace the step again
    and again, and each custom VJP's backward function with it). A function rebuilt on
    every trace is traced anew each time; the same jitted function is traced once per
    input shape and taken from JAX's cache after that, and so are its derivatives. XLA
    inlines the nested calls. The gradient of the benchmark's loss (scripts/bench_gradient.py)
    at 64^2, 200 steps, float64, on a 2-core x86-64 CPU: traced in 3.9 s against 6.2 s
    without the reuse, its optimized HLO the same instruction for instruction (a while
    loop's carry in another order; the forward run's identical); at 128^2, 1000 steps,
    compiled with its tracing in 11.5-11.9 s against 14.1-15.7 s. Closures and lambdas (no
    stable key) are built on every trace. A kernel must be a pure function of its arguments
    and its key: one that read a module constant while traced would keep the value of its
    first trace (``_BUILT.clear()`` and ``jax.clear_caches()`` forget them).
    """
    def decorate(builder):
        @functools.wraps(builder)
        def build(kernel, *args, **kwargs):
            try:
                key = (builder, _stable_key(kernel), args, tuple(sorted(kwargs.items())),
                       fusion_hints())
                hash(key)
            except TypeError:
                return builder(kernel, *args, **kwargs)
            if key not in _BUILT:
                fn = builder(kernel, *args, **kwargs)
                _BUILT[key] = _traced_jitted(fn) if jitted else fn
                _STABLE_IDS.add(id(_BUILT[key]))
            return _BUILT[key]
        return build
    return decorate


def _traced_jitted(fn):
    """``fn`` through ``jax.jit`` when called with traced arguments (inside a traced
    function, where XLA inlines it), and as it is when called eagerly, so that an eager
    call computes exactly what it did (compiled on its own, XLA may contract a
    multiply-add that the eager call rounds twice)."""
    jitted = jax.jit(fn)

    @functools.wraps(fn)
    def call(*args):
        traced = not all(is_concrete(x) for x in jax.tree.leaves(args))
        return (jitted if traced else fn)(*args)

    return call


@reused(jitted=False)
def over_grid(kernel, n_args, n_scalars=1):
    """Lifts a scalar kernel over a 2-D array of interfaces (or cells) with two nested
    ``vmap``s: ``n_args`` grid arguments, then ``n_scalars`` scalars."""
    axes = (0,) * n_args + (None,) * n_scalars
    return jax.vmap(jax.vmap(kernel, in_axes=axes), in_axes=axes)


def _transparent(fn):
    """``fn``, an identity on values that only guides XLA, made the identity for
    derivatives too: tangents pass straight through, so cotangents do as well (the
    transpose of a barrier would be a barrier on the cotangents)."""
    wrapped = jax.custom_jvp(fn)
    wrapped.defjvp(lambda primals, tangents: (wrapped(*primals), tuple(tangents)))
    return wrapped


def fusion_hints() -> bool:
    """Whether :func:`in_one_loop` and :func:`written_once` steer XLA (read when a function
    is traced): on unless the environment variable ``SWE_FUSION_HINTS`` is ``off``.

    They were written for XLA:CPU, which makes no multi-output fusions (there, off is
    about 100x slower). XLA on a TPU does fuse shared work, yet the hints still paid off
    on the default scheme: TPU v5e, float32, benchmark problem at N = 1024, one process
    each: 1.33 Gcell-updates/s with them, 1.11 without; at N = 2048 0.49 against
    0.43 (separate calls). First order and the split scheme may run faster without them
    there (2.0 against 1.16, 0.73 against 0.61 Gcell/s at N = 4096, separate calls and
    run lengths): not settled, hence the switch.
    """
    mode = os.environ.get("SWE_FUSION_HINTS", "on").lower()
    if mode not in ("on", "off"):
        raise ValueError(f"SWE_FUSION_HINTS={mode!r} is invalid; expected on or off")
    return mode == "on"


def in_one_loop(*arrays):
    """The identity on same-shaped arrays, computed in one loop over the grid where
    :func:`fusion_hints` are on (:func:`_in_one_loop`); returns a tuple."""
    return _in_one_loop(*arrays) if fusion_hints() else tuple(arrays)


def written_once(*arrays):
    """The identity, each array written to memory once where :func:`fusion_hints` are on
    (:func:`_written_once`); returns a tuple."""
    return _written_once(*arrays) if fusion_hints() else tuple(arrays)


@_transparent
def _in_one_loop(*arrays):
    """The identity on same-shaped arrays, computed by XLA in a single loop over the grid.

    XLA:CPU makes no multi-output fusions: when several results share a pointwise
    expression (the outputs of a Riemann kernel, the input cotangents of its VJP), each one
    is a separate loop that recomputes the shared part. Here they become the operands of one
    variadic reduction over a trailing axis of length 2 (the value, then a zero), which XLA
    emits as one fused loop computing every operand per point, so that the shared
    subexpressions are evaluated once. ``0 + x + 0`` is exactly ``x``. Interface kernel
    of one sweep, float64, N = 512 (HLL / HLLC): 0.72 / 1.23 ms against 1.91 / 2.68 ms for
    the same outputs stacked into one buffer. The results sit behind an optimization barrier
    so that XLA does not fuse (recompute) them into their consumers.
    """
    pairs = [jnp.stack([a, jnp.zeros_like(a)], axis=-1) for a in arrays]
    zeros = [jnp.zeros((), a.dtype) for a in arrays]
    out = jax.lax.reduce(pairs, zeros, lambda xs, ys: tuple(x + y for x, y in zip(xs, ys)),
                         (arrays[0].ndim,))
    return jax.lax.optimization_barrier(tuple(out))


@_transparent
def _written_once(*arrays):
    """The identity, each array written to memory once, behind an optimization barrier.

    For the padded fields: otherwise XLA rewrites every shifted slice of a ghost-cell
    concatenation into a concatenation of its own, one more pass over the grid each.
    Euler stage at N = 512 (timed with a constant bed): first order about 15% faster,
    MUSCL 6.8 -> 4.8 ms. The barrier is
    in the forward pass only; its transpose, a barrier on the cotangents, made the gradient
    of 100 MUSCL steps at 128^2 1.36 s against 1.11 s.
    """
    return jax.lax.optimization_barrier(arrays)


@reused(jitted=True)
def materialised(fn):
    """``fn(*args)`` for a pointwise kernel over the grid (pytrees of grid-shaped arrays and
    scalars in, grid-shaped arrays out), all outputs computed in one loop
    (:func:`in_one_loop`).

    Its VJP saves only the kernel's inputs, and recomputes the kernel and its VJP in the
    reverse pass, again with all the grid-shaped input cotangents in one loop. Plain
    autodiff instead stores the kernel's intermediates, each written by its own pass over
    the grid (XLA:CPU makes no multi-output fusions). Gradient of 100 steps at 128^2,
    measured in alternating runs: MUSCL-HLLC 1.1 s (2.3 s with a loop per input
    cotangent); first-order HLLC 1.06 s against 1.55 s with plain autodiff. Forward-mode
    autodiff loses nothing: diffrax's checkpointed adjoint is reverse-mode only anyway.
    """
    def together(*args):
        return in_one_loop(*fn(*args))

    run = jax.custom_vjp(together)

    def run_fwd(*args):
        return together(*args), args

    def run_bwd(args, ct):
        # The output cotangents first, in one loop of their own: fused into the kernel's
        # VJP, their producers (the divergence's transposes) were recomputed per use.
        ct = in_one_loop(*ct)
        leaves, tree = jax.tree.flatten(jax.vjp(fn, *args)[1](tuple(ct)))
        shape = ct[0].shape  # the grid's; the rest (gravity, a scalar Manning n) are scalars
        fused = iter(in_one_loop(*(c for c in leaves if c.shape == shape)))
        return jax.tree.unflatten(tree, [next(fused) if c.shape == shape else c
                                         for c in leaves])

    run.defvjp(run_fwd, run_bwd)
    return run


@reused(jitted=True)
def stencil(kernel, *, axis: int, size: int, width: int, n_scalars: int, n_fields: int = 4):
    """A kernel of ``width`` consecutive cells along ``axis``, written for one point
    (scalars in: ``width`` values of each of ``n_fields`` fields, then ``n_scalars``
    scalars), lifted
    over the ``size`` points whose stencils start at padded cells ``0 .. size - 1``:
    ``run(*padded_fields, *scalars)``.

    Every output is computed in one loop over the grid (:func:`in_one_loop`). The VJP saves
    only the padded fields (already in memory), and the reverse pass computes each field's
    cotangent per cell in one loop, recomputing the kernel and its VJP at the ``width``
    stencils that hold the cell. (Computing the ``4 * width`` stencil cotangents in one
    loop and adding them by shifting takes 1.1x the benchmark gradient's time.)
    Plain autodiff instead stores the kernel's inputs
    (the face values, each written by its own loop that recomputes the limiters) and its
    intermediates, and transposes them one loop each (XLA:CPU makes no multi-output
    fusions). Forward-mode autodiff is not needed: diffrax's checkpointed adjoint is
    reverse-mode only.
    """
    lifted = over_grid(kernel, n_fields * width, n_scalars)

    def points(fields, start=0, length=size):
        """Each field's ``width`` slot values at the ``length`` stencils from ``start``."""
        return [jax.lax.slice_in_dim(f, start + k, start + k + length, axis=axis)
                for f in fields for k in range(width)]

    def apply(*args):
        return in_one_loop(*lifted(*points(args[:n_fields]), *args[n_fields:]))

    run = jax.custom_vjp(apply)

    def run_fwd(*args):
        return apply(*args), args

    def run_bwd(args, ct):
        fields, scalars = args[:n_fields], args[n_fields:]
        length = fields[0].shape[axis]
        pad = [(0, 0), (0, 0)]
        pad[axis] = (width - 1, width - 1)
        # Gathered per cell: cell c is slot k of the stencil starting at c - k, so its
        # cotangent is the sum over k of that stencil's slot-k cotangent, all in one loop
        # (the kernel's VJP evaluated ``width`` times per cell). Edge values keep the
        # kernel finite at the stencils outside the grid, whose cotangents are zero.
        ext = [jnp.pad(f, pad, mode="edge") for f in fields]
        ct_ext = [jnp.pad(c, pad) for c in ct]
        totals = [0.0] * n_fields
        for k in range(width):
            start = width - 1 - k
            cs = tuple(jax.lax.slice_in_dim(c, start, start + length, axis=axis)
                       for c in ct_ext)
            cts = jax.vjp(lifted, *points(ext, start, length), *scalars)[1](cs)
            totals = [t + cts[width * f + k] for f, t in enumerate(totals)]
            if k == 0:
                # Every stencil that exists is among these (the rest have zero
                # cotangents), so these are the scalars' whole cotangents.
                scalar_cts = cts[n_fields * width:]
        return (*in_one_loop(*totals), *scalar_cts)

    run.defvjp(run_fwd, run_bwd)
    return run

"""STREAM-triad memory-bandwidth measurement, the roofline for the solver benchmarks.

Measures ``a[:] = b + s * c`` over arrays far larger than the caches (default ``2**25``
float64 elements, 256 MiB each) and reports the sustained bandwidth in GB/s (1e9 B/s).

Bytes are counted as STREAM counts them: three arrays of ``8 n`` bytes per iteration (read
``b``, read ``c``, write ``a``). A cache with write-allocate also reads ``a`` before
writing it, so the real traffic can be four arrays; ``bytes_per_iter_write_allocate`` gives
that figure for anyone who wants to rescale.

Two implementations:

* NumPy, in place and without temporaries: ``np.multiply(c, s, out=a); np.add(a, b,
  out=a)``. NumPy cannot fuse the two ufuncs, so this makes two passes over memory (about
  five arrays of traffic), and it is single-threaded: its STREAM-counted figure is a lower
  bound on the hardware's bandwidth, and what a NumPy code can actually get. A one-pass
  NumPy copy (``np.copyto(a, b)``, two arrays counted) is reported alongside as a check.
* JAX (optional), on the default device, timed with ``block_until_ready``; XLA fuses the
  triad into one pass and may use several threads on a CPU. Two figures:

  - ``triad_GBs_jax_percall_*``: the plain ``jax.jit(lambda b, c: b + s * c)``. Every call
    allocates its output; on a CPU a buffer this large is freshly mmap'd and page-faulted
    in, which costs more than the triad itself, so this understates bandwidth badly.
  - ``triad_GBs_jax_*`` (the roofline figure): ``a <- b + s * a`` repeated inside one
    jitted ``lax.fori_loop``, where XLA updates the buffer in place, as in a solver's time
    loop. Loops of 1 and ``1 + inner`` iterations are timed and the per-iteration time is
    their difference over ``inner``, which cancels the per-call cost.

Each kernel is run once untimed (page faults, compilation), then ``repeat`` times; the
best and median are reported (for the loop: from the best and the median loop times).
Peak memory is about four arrays (1 GiB at the default size): the NumPy arrays are freed
before the JAX ones are made.

Usage::

    python scripts/stream_triad.py [--n 33554432] [--repeat 10] [--no-jax]
    JAX_PLATFORMS=cpu python scripts/stream_triad.py   # force the CPU where there is no GPU

Other scripts import it with ``sys.path.insert(0, <scripts dir>)`` and call
:func:`measure`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Callable

import numpy as np

SCALAR = 3.0  # STREAM's scalar


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _once(fn: Callable[[], object]) -> float:
    """Wall time of one call of ``fn``."""
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _time(fn: Callable[[], object], repeat: int) -> list[float]:
    """Wall times of ``repeat`` calls of ``fn`` after one untimed warm-up call."""
    fn()
    return [_once(fn) for _ in range(repeat)]


def _gbs(nbytes: int, times: list[float]) -> tuple[float, float]:
    """(best, median) bandwidth in GB/s for ``nbytes`` moved per call."""
    return nbytes / min(times) / 1e9, nbytes / statistics.median(times) / 1e9


def _numpy(n: int, repeat: int) -> dict:
    b = np.full(n, 1.0)
    c = np.full(n, 2.0)
    a = np.empty(n)

    def triad() -> None:
        np.multiply(c, SCALAR, out=a)
        np.add(a, b, out=a)

    triad_best, triad_med = _gbs(3 * 8 * n, _time(triad, repeat))
    assert a[0] == 1.0 + SCALAR * 2.0 and a[-1] == a[0]
    copy_best, copy_med = _gbs(2 * 8 * n, _time(lambda: np.copyto(a, b), repeat))
    return {"triad_GBs_numpy_best": triad_best, "triad_GBs_numpy_median": triad_med,
            "copy_GBs_numpy_best": copy_best, "copy_GBs_numpy_median": copy_med}


def _jax(n: int, repeat: int, inner: int = 10) -> dict:
    import jax
    import jax.numpy as jnp
    from jax import lax

    dtype = jnp.float64 if jax.config.jax_enable_x64 else jnp.float32
    nbytes = 3 * jnp.dtype(dtype).itemsize * n
    b = jnp.full(n, 1.0, dtype)
    c = jnp.full(n, 2.0, dtype)

    # (1) The plain call. Each call allocates a fresh output, and on a CPU a buffer this big
    # is mmap'd anew and page-faulted in on first write, which costs more than the triad.
    triad = jax.jit(lambda b, c: b + SCALAR * c)
    assert float(triad(b, c)[0]) == 1.0 + SCALAR * 2.0
    call_best, call_med = _gbs(nbytes, _time(lambda: triad(b, c).block_until_ready(), repeat))

    # (2) The bandwidth a jitted loop sees: a <- b + s * a inside lax.fori_loop reuses its
    # buffer in place (read b, read a, write a: the STREAM count). Timing k = 1 and
    # k = 1 + inner iterations and taking the difference removes the per-call cost
    # (dispatch, allocating and faulting in the output).
    def loop(k: int):
        return jax.jit(lambda b, c: lax.fori_loop(0, k, lambda i, a: b + SCALAR * a, c))

    lo, hi = loop(1), loop(1 + inner)
    lo(b, c).block_until_ready()
    hi(b, c).block_until_ready()
    t_lo, t_hi = [], []
    for _ in range(repeat):
        t_lo.append(_once(lambda: lo(b, c).block_until_ready()))
        t_hi.append(_once(lambda: hi(b, c).block_until_ready()))

    def per_iter(f) -> float:
        d = (f(t_hi) - f(t_lo)) / inner
        return d if d > 0.0 else f(t_hi) / (1 + inner)  # noise swamped the difference

    dev = jax.devices()[0]
    return {"triad_GBs_jax_best": nbytes / per_iter(min) / 1e9,
            "triad_GBs_jax_median": nbytes / per_iter(statistics.median) / 1e9,
            "triad_GBs_jax_percall_best": call_best,
            "triad_GBs_jax_percall_median": call_med,
            "jax_dtype": jnp.dtype(dtype).name,
            "device": f"{dev.platform}:{getattr(dev, 'device_kind', '')}".rstrip(":")}


def measure(n: int = 2**25, repeat: int = 10, use_jax: bool = True) -> dict:
    """STREAM-triad bandwidth of NumPy (and of jitted JAX when ``use_jax``), in GB/s.

    Keys: ``triad_GBs_numpy_best/median``, ``copy_GBs_numpy_best/median``, and with JAX
    ``triad_GBs_jax_best/median``, ``jax_dtype``, ``device``; plus ``n``, ``repeat``,
    ``bytes_per_iter`` (STREAM count, ``24 n``), ``bytes_per_iter_write_allocate``
    (``32 n``), ``threads`` (CPUs available; NumPy uses one) and ``numpy_threads`` (1).
    JAX is skipped (``device`` None) if it cannot be imported. The JAX arrays are float64
    only when ``jax_enable_x64`` is on (then the STREAM count is 24 n bytes too); otherwise
    float32 and the count is 12 n.
    """
    res: dict = {"n": n, "repeat": repeat, "bytes_per_iter": 3 * 8 * n,
                 "bytes_per_iter_write_allocate": 4 * 8 * n,
                 "threads": _cpus(), "numpy_threads": 1}
    res.update(_numpy(n, repeat))
    res["device"] = "cpu (numpy)"
    if use_jax:
        try:
            import jax  # noqa: F401
        except ImportError:
            res["device"] = None
        else:
            res.update(_jax(n, repeat))
    return res


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=2**25, help="elements per array (default 2**25)")
    ap.add_argument("--repeat", type=int, default=10, help="timed iterations (default 10)")
    ap.add_argument("--jax", dest="use_jax", action=argparse.BooleanOptionalAction,
                    default=True, help="also time a jitted JAX triad (default: on)")
    ap.add_argument("--x64", action=argparse.BooleanOptionalAction, default=True,
                    help="enable jax_enable_x64 so the JAX triad is float64 like NumPy's "
                         "(default: on; --no-x64 times float32)")
    args = ap.parse_args(argv)
    if args.x64 and args.use_jax:
        try:
            import jax
            jax.config.update("jax_enable_x64", True)
        except ImportError:
            pass
    print(json.dumps(measure(args.n, args.repeat, args.use_jax)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])

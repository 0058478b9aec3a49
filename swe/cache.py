"""JAX's persistent compilation cache, for the command line and for library users.

A compiled program (a run, a gradient through a run) is written to a directory keyed by
its computation and backend, and a later process that compiles the same program reads it
back instead. Tracing still happens in every process; XLA's compile, which dominates for
gradients (the gradient of scripts/bench_gradient.py's loss at 64^2: 7.9 s of XLA compile
against 3.9 s of tracing on a 2-core x86-64 CPU; at 128^2 55 s in all on a TPU v5e), does
not.
"""

from __future__ import annotations

import os
from pathlib import Path

# Programs that compile in less time than this are not written (JAX's option; the cache
# read costs about as much for them).
MIN_COMPILE_TIME_S = 0.5


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/swe/jax``, or ``~/.cache/swe/jax``."""
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "swe" / "jax"


def enable_compilation_cache(path: str | os.PathLike | None = None) -> Path | None:
    """Turns on JAX's persistent compilation cache and returns its directory.

    ``path`` names the directory; without it, the environment variable ``SWE_CACHE_DIR``
    does (empty: the cache stays off, and None is returned), else
    :func:`default_cache_dir`. ``swe run`` calls this; scripts and notebooks call it once,
    before their first compile, so that a later process (a restarted kernel, the next
    job of a calibration) takes its compiled runs and gradients from the directory.
    Only programs without host callbacks are stored: see ``throw`` of
    :func:`swe.simulate`. A ``path`` that cannot be created raises ``ValueError``; the
    environment's or the default directory then leaves the cache off (None).
    """
    import jax

    explicit = path is not None
    if not explicit:
        env = os.environ.get("SWE_CACHE_DIR")
        if env == "":
            return None
        path = env if env is not None else default_cache_dir()
    elif str(path) == "":
        raise ValueError("path='' is invalid; expected a directory, or None for "
                         "SWE_CACHE_DIR or the default")
    directory = Path(path).expanduser()
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        if explicit:
            raise ValueError(f"path={str(path)!r} cannot be created ({e.strerror}); "
                             "expected a writable directory") from None
        return None
    jax.config.update("jax_compilation_cache_dir", str(directory))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_TIME_S)
    return directory

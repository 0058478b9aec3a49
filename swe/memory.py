"""How much memory a run and its output take, told before the run starts.

:func:`run_bytes` estimates the device memory of a compiled run from the grid, the
precision, the scheme and the number of frames the run holds on the device at once;
:func:`output_bytes` the size of its output file. :func:`check_fits` compares them with
the memory and disk space available and refuses a run that cannot fit, in one line that
says what would: a smaller grid, float32, fewer saved frames, or a device mesh.

The per-cell figures (:data:`VALUES_PER_CELL`) are XLA's own memory analysis of the
compiled solve of one output interval (arguments, outputs and temporaries, less what the
outputs reuse), measured as the slope between 64^2 and 128^2 grids; a test checks them
against that analysis.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np

from .reconstruction import BVD
from .stages import SPLIT_INTEGRATORS

# Values (of the run's precision) a compiled output interval holds per cell: the state and
# its envelopes in and out, the padded fields and the stage's intermediates, by
# reconstruction and integrator. XLA's memory analysis of swe.run.solve on a CPU (Manning
# friction and an inflow; SSP-RK2 and SSP-RK3 alike), slope between 64^2 and 128^2 cells
# (35.1, 28.1, 44.6, 33.2, 56.9, 47.8), rounded up.
VALUES_PER_CELL = {
    ("first_order", "unsplit"): 36, ("first_order", "split"): 29,
    ("muscl", "unsplit"): 45, ("muscl", "split"): 34,
    ("thinc-bvd", "unsplit"): 57, ("thinc-bvd", "split"): 48,
}
# Values per cell for each more frame the run keeps on the device (h, hu, hv).
FRAME_VALUES = 3
# What a run may use of the memory available: the rest is for XLA's own buffers, the
# Python process, and the host copies of each frame while it is written.
USABLE_FRACTION = 0.8
# Values per cell of each output frame (h, u, v, eta) and of the file's fixed part (bed
# and the three envelopes).
OUTPUT_FRAME_VALUES = 4
OUTPUT_FIXED_VALUES = 4


def _kind(model, integrator) -> tuple[str, str]:
    limiter = model.scheme.limiter_fn
    reconstruction = ("first_order" if limiter is None else
                      "thinc-bvd" if isinstance(limiter, BVD) else "muscl")
    split = "split" if str(integrator).lower() in SPLIT_INTEGRATORS else "unsplit"
    return reconstruction, split


def run_bytes(model, dtype, integrator="ssprk2", frames=1, members=1, devices=1) -> int:
    """Device memory (bytes, per device) of a run of ``model`` in ``dtype`` holding
    ``frames`` saved frames at once (:func:`swe.iterate` and ``swe run``: 1;
    :func:`swe.simulate`: every output time), for ``members`` ensemble members, its grid
    split over ``devices``."""
    itemsize = np.dtype(dtype).itemsize
    cells = model.grid.nx * model.grid.ny / devices
    values = VALUES_PER_CELL[_kind(model, integrator)] + FRAME_VALUES * max(frames - 1, 0)
    return int(members * cells * values * itemsize)


def output_bytes(model, dtype, frames, members=1) -> int:
    """The size (bytes) of a netCDF output of ``frames`` frames, uncompressed."""
    itemsize = np.dtype(dtype).itemsize
    cells = model.grid.nx * model.grid.ny
    return int(members * cells * itemsize * (OUTPUT_FRAME_VALUES * frames
                                             + OUTPUT_FIXED_VALUES))


def available_memory() -> tuple[int | None, str]:
    """``(bytes, where)``: the memory free for a run on the default device (an
    accelerator's limit less what is in use; on a CPU the host's available memory, within
    a container's limit), or ``(None, where)`` where it cannot be told."""
    import jax

    device = jax.devices()[0]
    if device.platform != "cpu":
        try:
            stats = device.memory_stats() or {}
        except Exception:  # a backend without memory statistics
            stats = {}
        limit = stats.get("bytes_limit")
        if limit:
            return int(limit - stats.get("bytes_in_use", 0)), f"{device.device_kind} memory"
        return None, f"{device.device_kind} memory"
    free = []
    try:
        free.append(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    free.append(int(line.split()[1]) * 1024)
    except (OSError, ValueError, AttributeError):
        pass
    for limit_file, used_file in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                                  ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                                   "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        try:
            limit = Path(limit_file).read_text().strip()
            if limit != "max" and int(limit) < 1 << 60:
                free.append(int(limit) - int(Path(used_file).read_text().strip()))
            break
        except (OSError, ValueError):
            continue
    # MemAvailable counts reclaimable caches; the free pages alone undercount them.
    candidates = free[1:] if len(free) > 1 else free
    return (max(min(candidates), 0) if candidates else None), "host memory"


def _gb(n) -> str:
    return f"{n / 1e9:.3g} GB"


def check_fits(model, dtype, integrator="ssprk2", *, frames_on_device=1, output_frames=0,
               output=None, members=1, devices=1, memory=None, disk=None) -> dict:
    """The estimates ``{"run_bytes", "output_bytes"}``; ValueError, in one line saying what
    would fit, where the run needs more than :data:`USABLE_FRACTION` of the memory
    available (``memory``, bytes; default :func:`available_memory`) or its output more
    than the free space of ``output``'s folder (``disk``, bytes; default: measured)."""
    need = run_bytes(model, dtype, integrator, frames_on_device, members, devices)
    size = output_bytes(model, dtype, output_frames, members) if output_frames else 0
    where = "memory"
    if memory is None:
        memory, where = available_memory()
    cells = model.grid.nx * model.grid.ny
    if memory is not None and need > USABLE_FRACTION * memory:
        fit = USABLE_FRACTION * memory / need
        n_fit = int(np.sqrt(cells * fit))
        ways = [f"a grid of at most about {cells * fit:.3g} cells (e.g. {n_fit}x{n_fit})"]
        if np.dtype(dtype).itemsize > 4:
            ways.append("--precision float32 (half the memory)")
        if frames_on_device > 1:
            ways.append("fewer saved frames (swe.iterate holds one at a time)")
        ways.append("a device mesh over more devices (--devices N)")
        raise ValueError(
            f"the run needs about {_gb(need)} of {where} and {_gb(memory)} is free "
            f"({model.grid.nx}x{model.grid.ny} cells, {np.dtype(dtype).name}"
            + (f", {members} members" if members > 1 else "") + "); use "
            + ", or ".join(ways))
    if output is not None and size:
        folder = Path(output).resolve().parent
        while not folder.exists():
            folder = folder.parent
        if disk is None:
            disk = shutil.disk_usage(folder).free
        if size > disk:
            raise ValueError(
                f"the output {str(output)!r} would take about {_gb(size)} and {folder} has "
                f"{_gb(disk)} free; save fewer frames (a longer save interval), write "
                "--compress, use --precision float32, or write elsewhere (-o)")
    return {"run_bytes": need, "output_bytes": size}

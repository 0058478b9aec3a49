"""Two processes on 127.0.0.1, each with 4 CPU devices (gloo collectives), run one sharded
simulation through `swe run --coordinator ...`; process 0 writes the file, which equals a
single-process run."""

import os
import socket
import subprocess
import sys

import numpy as np
import xarray as xr

ARGS = ["run", "radial_dam_break", "--set", "n=32", "--set", "t_end=3", "--quiet"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_processes_equal_one(tmp_path):
    env = {**os.environ, "SWE_CACHE_DIR": "", "JAX_PLATFORMS": "cpu",
           "XLA_FLAGS": "--xla_force_host_platform_device_count=4"}
    out = tmp_path / "multi.nc"
    port = _free_port()
    procs = [subprocess.Popen(
        [sys.executable, "-m", "swe", *ARGS, "--mesh", "2x4", "-o", str(out),
         "--coordinator", f"127.0.0.1:{port}", "--num-processes", "2", "--process-id", str(i)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
        for i in range(2)]
    for p in procs:
        stdout, stderr = p.communicate(timeout=600)
        assert p.returncode == 0, stderr[-2000:]
    ref = tmp_path / "single.nc"
    p = subprocess.run([sys.executable, "-m", "swe", *ARGS, "-o", str(ref)], env=env,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    assert sorted(f.name for f in tmp_path.iterdir()) == ["multi.nc", "single.nc"]
    a, b = xr.open_dataset(out), xr.open_dataset(ref)
    assert a.attrs["mesh"] == "2x4" and a.sizes == b.sizes
    for name in ("h", "u", "v", "max_depth", "arrival_time"):
        np.testing.assert_allclose(a[name].values, b[name].values, rtol=1e-13, atol=1e-13)

"""The flood study of docs/user-guide/flood-study.md, run as the page gives it (shorter:
t_end 600 s becomes 20 s): DEM in, a friction ensemble, a max-depth map and the gauges'
hydrographs out, then the page's notebook code."""

import os
import pathlib
import re
import shlex
import subprocess
import sys

import numpy as np
import xarray as xr

PAGE = pathlib.Path(__file__).parents[1] / "docs" / "user-guide" / "flood-study.md"
ENV = {**os.environ, "SWE_CACHE_DIR": ""}


def _blocks(language):
    return re.findall(rf"```{language}\n(.*?)```", PAGE.read_text(), re.S)


def test_the_flood_study_runs_as_written(tmp_path):
    commands = [line for line in _blocks("bash")[0].splitlines() if line.strip()]
    assert [c.split()[0] for c in commands] == ["python"] + ["swe"] * 6
    for command in commands:
        args = shlex.split(command.replace("t_end=600", "t_end=20"))
        args = [sys.executable, *args[1:]] if args[0] == "python" else [
            sys.executable, "-m", "swe", *args[1:]]
        p = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, env=ENV,
                           timeout=300)
        assert p.returncode == 0, (command, p.stderr)
        if "info" in args:
            assert "manning" in p.stdout and "netCDF" in p.stdout
    for name in ("max_depth.png", "gauges.png", "arrival.png"):
        assert (tmp_path / name).stat().st_size > 10_000
    ens = xr.open_dataset(tmp_path / "flood_ensemble.nc")
    assert ens.sizes["ensemble"] == 3 and ens["h"].encoding["zlib"]
    np.testing.assert_allclose(ens.ensemble.values, [0.03, 0.05, 0.08])
    assert float(abs(ens.max_depth.isel(ensemble=0) - ens.max_depth.isel(ensemble=2)).max()) > 1e-3
    single = xr.open_dataset(tmp_path / "flood.nc")
    assert np.nanmax(single.max_depth.values) > 1.0
    cwd = os.getcwd()
    try:
        os.chdir(tmp_path)
        exec(_blocks("python")[0], {})
    finally:
        os.chdir(cwd)
    assert (tmp_path / "max_depth_n003.png").stat().st_size > 10_000

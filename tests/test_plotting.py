"""``swe plot`` and :mod:`swe.plotting`: every kind of figure a flood modeller looks at
first writes an image, dry cells stay out of water maps, arrows carry a scale key, 1-D
plots honour --time, and projected coordinates show without an offset."""

import os
import subprocess
import sys

import matplotlib
import numpy as np
import pytest

import swe
from swe import cli, plotting

matplotlib.use("Agg")
ENV = {**os.environ, "SWE_CACHE_DIR": ""}


@pytest.fixture(scope="module")
def flood(tmp_path_factory):
    """A short river flood with gauges, written by swe run; its x shifted to UTM-like
    eastings."""
    folder = tmp_path_factory.mktemp("plots")
    sc = swe.scenario.build("river_flood", {"nx": 40, "ny": 16, "t_end": 1800.0})
    r = swe.simulate(sc.model, sc.state0, sc.t_end, sc.save_at, gauges=sc.gauges)
    ds = r.to_xarray(attrs={"title": "River flood"})
    ds = ds.assign_coords(x=ds.x + 500_000.0)
    path = folder / "flood.nc"
    ds.to_netcdf(path)
    return path, ds


@pytest.mark.parametrize("args", [["--var", "eta"], ["--var", "h", "--time", "600"],
                                  ["--var", "max_depth"], ["--var", "max_speed"],
                                  ["--var", "arrival_time"], ["--var", "bed"],
                                  ["--gauge", "town", "--gauge", "upstream"],
                                  ["--gauge", "all"]])
def test_each_kind_of_plot_writes_an_image(flood, args, tmp_path):
    path, _ = flood
    out = tmp_path / "figure.png"
    assert cli.main(["plot", str(path), *args, "-o", str(out)]) == 0
    assert out.stat().st_size > 10_000


def test_bad_choices_are_one_line(flood):
    path, _ = flood
    for args, needle in ((["--var", "nope"], "is not in the file; choose one of h, u, v, "
                                             "eta"),
                         (["--gauge", "nope"], "gauge 'nope' is not in the file; its gauges "
                                               "are upstream")):
        p = subprocess.run([sys.executable, "-m", "swe", "plot", str(path), *args],
                           capture_output=True, text=True, env=ENV, timeout=120)
        assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
        assert needle in p.stderr


def test_maps_leave_dry_cells_out_and_key_their_arrows(flood):
    _, ds = flood
    fig = plotting.figure(ds, "eta", time=900.0)
    ax = fig.axes[0]
    water = next(c for c in ax.collections if isinstance(c, matplotlib.collections.QuadMesh))
    k = plotting.frame_index(ds, 900.0)
    dry = ~(np.asarray(ds.h.isel(time=k)) > plotting.DRY_DEPTH)
    assert 0 < dry.sum() < dry.size  # a valley half flooded
    np.testing.assert_array_equal(np.ma.getmaskarray(water.get_array()).reshape(dry.shape), dry)
    assert any(isinstance(a, matplotlib.quiver.QuiverKey) for a in ax.artists + ax.texts
               + list(ax.get_children()))
    assert ax.xaxis.get_major_formatter().get_offset() == ""  # eastings, not 1e6 + ...
    title = ax.get_title()
    assert f"t = {plotting.seconds(ds)[k]:g} s" in title and "2000" not in title
    envelope = plotting.figure(ds, "max_depth").axes[0]
    assert "over the run" in envelope.get_title()


def test_a_one_dimensional_plot_honours_time(tmp_path):
    sc = swe.scenario.build("dam_break", {"nx": 100})
    ds = swe.simulate(sc.model, sc.state0, sc.t_end, sc.save_at).to_xarray()
    one = plotting.figure(ds, "eta", time=10.0).axes[0]
    assert len(one.lines) == 2 and "t = 10 s" in one.get_title()  # the frame and the bed
    many = plotting.figure(ds, "eta").axes[0]
    assert len(many.lines) == min(len(ds.time), 6) + 1

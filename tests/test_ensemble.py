"""Ensembles: one vmapped call equals a loop of single runs, in Python and on the CLI."""

import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import xarray as xr

import swe
from swe import bench


def test_ensemble_equals_a_loop_of_single_runs():
    model, s0 = bench.problem(24)
    values = (0.0, 0.02, 0.05)
    models = [swe.ShallowWater(model.grid, g=1.0, friction=swe.Manning(n)) for n in values]
    ens = swe.simulate_ensemble(models, s0, 0.5, save_at=0.25, members=values,
                                member_name="manning_n")
    assert len(ens) == 3
    for m, r in zip(models, ens.results):
        ref = swe.simulate(m, s0, 0.5, save_at=0.25)
        assert int(r.num_steps) == int(ref.num_steps)
        np.testing.assert_array_equal(np.asarray(r.states.h), np.asarray(ref.states.h))
        np.testing.assert_array_equal(np.asarray(r.envelopes.max_speed),
                                      np.asarray(ref.envelopes.max_speed))
    ds = ens.to_xarray()
    assert ds.h.dims == ("ensemble", "time", "y", "x")
    assert list(ds.ensemble.values) == list(values) and ds.bed.dims == ("y", "x")
    assert ds.attrs["Conventions"] == "CF-1.10"


def test_auto_kernel_counts_a_vmapped_batchs_cells(monkeypatch):
    """On a TPU "auto" takes the Pallas stage for a batch of two or more members whose
    cells together reach BATCH_MIN_CELLS (each grid alone below AUTO_MIN_CELLS), counted
    per device; an ensemble passes that choice to its vmapped solve (not to a mapped one)
    and records it in its results' settings."""
    from swe import stages

    model, s0 = bench.problem(16)
    monkeypatch.setattr(stages, "BATCH_MIN_CELLS", 4 * 16 * 16)
    assert stages.batch_kernel(model, 8) == "auto"  # off a TPU: unchanged
    monkeypatch.setattr(stages.jax, "default_backend", lambda: "tpu")
    assert stages.batch_kernel(model, 3) == "auto"
    assert stages.batch_kernel(model, 4) == "pallas"
    big = swe.ShallowWater(swe.Grid(64, 64))
    assert stages.batch_kernel(big, 1) == "auto"  # one member: a single run's choice
    assert swe.ensemble.stage_kernel(model, 4) == "pallas"  # what the outputs record
    assert swe.ensemble.stage_kernel(model, 3) == "xla"
    assert swe.ensemble.stage_kernel(model, 4, devices=2) == "xla"  # 2 a device
    assert swe.ensemble.stage_kernel(model, 4, batching="map") == "xla"
    xla = swe.ShallowWater(model.grid, g=1.0, scheme=swe.FiniteVolume(kernel="xla"))
    assert stages.batch_kernel(xla, 64) == "xla"
    bvd = swe.ShallowWater(model.grid, g=1.0, scheme=swe.FiniteVolume(limiter="thinc-bvd"))
    assert stages.batch_kernel(bvd, 64) == "auto"  # a model the kernel does not cover

    class Stop(Exception):
        pass

    seen = []

    def solve_batch(model, *args):
        seen.append(model.scheme.kernel)
        raise Stop

    models = [swe.ShallowWater(model.grid, g=1.0, friction=swe.Manning(n))
              for n in (0.0, 0.01, 0.02, 0.03)]
    with monkeypatch.context() as patch:
        patch.setattr(swe.ensemble, "_solve_batch", solve_batch)
        for batching, count, devices in (("vmap", 4, None), ("vmap", 3, None),
                                         ("map", 4, None), ("vmap", 4, 2), ("vmap", 4, 1)):
            with pytest.raises(Stop):
                swe.simulate_ensemble(models[:count], s0, 0.1, batching=batching,
                                      devices=devices)
        # Members whose schemes differ are refused, not run with the first one's.
        mixed = [models[0], swe.ShallowWater(model.grid, g=1.0,
                                             scheme=swe.FiniteVolume(limiter="minmod"))]
        mixed += mixed
        with pytest.raises(ValueError, match="same structure"):
            swe.simulate_ensemble(mixed, s0, 0.1)
    assert seen == ["pallas", "auto", "auto", "auto", "pallas"]
    # A batch runs with the kernel it was given (its vmap axes match the replaced scheme;
    # on a CPU "xla" computes what "auto" does, which the test above compares with single
    # runs); the members' own models keep theirs.
    monkeypatch.undo()
    monkeypatch.setattr(swe.ensemble, "batch_kernel", lambda m, k: "xla")
    ens = swe.simulate_ensemble(models[:2], s0, 0.05, envelopes=False)
    for r in ens.results:
        assert int(r.num_steps) > 0 and np.isfinite(np.asarray(r.states.h)).all()
        assert r.model.scheme.kernel == "auto" and r.settings["stage_kernel"] == "xla"


def test_a_shared_initial_state_is_checked_once(monkeypatch):
    """Checking a state is a pass over its fields; members sharing one pay it once."""
    run_module = sys.modules["swe.run"]

    calls = []
    real = run_module._check_state
    monkeypatch.setattr(run_module, "_check_state",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    model, s0 = bench.problem(16)
    models = [swe.ShallowWater(model.grid, g=1.0, friction=swe.Manning(n))
              for n in (0.01, 0.02, 0.03, 0.04)]
    ens = swe.simulate_ensemble(models, s0, 0.2, envelopes=False)
    assert len(calls) == 1 and len(ens) == 4
    calls.clear()
    other = swe.State(s0.h * 1.1, s0.hu, s0.hv)
    swe.simulate_ensemble(models[0], [s0, other, s0], 0.2)
    assert len(calls) == 2


def test_ensemble_of_initial_states_and_member_count_checks():
    model, s0 = bench.problem(16)
    states = [swe.State(h=s0.h * a, hu=s0.hu, hv=s0.hv) for a in (1.0, 1.5)]
    ens = swe.simulate_ensemble(model, states, 0.3)
    for s, r in zip(states, ens.results):
        ref = swe.simulate(model, s, 0.3)
        np.testing.assert_array_equal(np.asarray(r.final.h), np.asarray(ref.final.h))
    with pytest.raises(ValueError, match="models has 2 members; expected 1 or 3"):
        swe.simulate_ensemble([model, model], states + [states[0]], 0.3)
    other = swe.ShallowWater(model.grid, g=1.0, friction=swe.Manning(0.03))
    with pytest.raises(ValueError, match="same structure"):
        swe.simulate_ensemble([model, other], s0, 0.3)


def test_cli_ensemble_writes_one_file_with_an_ensemble_dimension(tmp_path):
    env = {**os.environ, "SWE_CACHE_DIR": ""}
    out = tmp_path / "ens.nc"
    cmd = [sys.executable, "-m", "swe", "run", "dam_break", "--set", "nx=80", "--set",
           "t_end=5", "--ensemble", "h_left=5:10:3", "-o", str(out)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    ds = xr.open_dataset(out)
    assert ds.h.dims == ("ensemble", "time", "y", "x") and ds.sizes["ensemble"] == 3
    np.testing.assert_allclose(ds.ensemble.values, [5.0, 7.5, 10.0])
    single = swe.scenario.build("dam_break", {"nx": 80, "t_end": 5, "h_left": 7.5})
    ref = swe.simulate(single.model, single.state0, single.t_end, single.save_at)
    np.testing.assert_allclose(ds.h.isel(ensemble=1).values, np.asarray(ref.states.h),
                               rtol=1e-13, atol=0)
    figure = tmp_path / "member.png"  # swe plot takes one member of such a file
    p = subprocess.run([sys.executable, "-m", "swe", "plot", str(out), "--member", "2", "-o",
                        str(figure)], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0 and figure.stat().st_size > 10_000, p.stderr
    bad = subprocess.run(cmd[:-4] + ["--ensemble", "h_left=a,b"], capture_output=True,
                         text=True, env=env, timeout=120)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "--ensemble" in bad.stderr
    # Members that would need different run lengths cannot share one compiled run.
    mixed = subprocess.run(cmd[:7] + ["--ensemble", "t_end=4,5", "-o", str(tmp_path / "m.nc")],
                           capture_output=True, text=True, env=env, timeout=120)
    assert mixed.returncode == 2 and len(mixed.stderr.strip().splitlines()) == 1
    assert "changes the run length" in mixed.stderr and not (tmp_path / "m.nc").exists()


@pytest.mark.parametrize("batching", ["vmap", "map"])
def test_members_split_over_devices_equal_single_runs(batching):
    # 5 members on 4 devices: padded to 8, the copies dropped.
    model, s0 = bench.problem(16)
    values = (0.0, 0.01, 0.02, 0.03, 0.05)
    models = [swe.ShallowWater(model.grid, g=1.0, friction=swe.Manning(n)) for n in values]
    ens = swe.simulate_ensemble(models, s0, 0.3, save_at=0.15, devices=4, batching=batching)
    assert len(ens) == len(values)
    for m, r in zip(models, ens.results):
        ref = swe.simulate(m, s0, 0.3, save_at=0.15)
        assert int(r.num_steps) == int(ref.num_steps)
        scale = float(np.abs(np.asarray(ref.states.h)).max())
        np.testing.assert_allclose(np.asarray(r.states.h), np.asarray(ref.states.h),
                                   rtol=0, atol=1e-13 * scale)
        np.testing.assert_allclose(np.asarray(r.envelopes.max_speed),
                                   np.asarray(ref.envelopes.max_speed), rtol=0, atol=1e-13)
    with pytest.raises(ValueError, match="devices=99 is invalid; expected an integer in 1.."):
        swe.simulate_ensemble(models, s0, 0.3, devices=99)
    with pytest.raises(ValueError, match="batching='scan' is not supported"):
        swe.simulate_ensemble(models, s0, 0.3, batching="scan")


def test_cli_ensemble_over_devices(tmp_path):
    env = {**os.environ, "SWE_CACHE_DIR": "", "XLA_FLAGS": ""}  # the CLI makes the devices
    out = tmp_path / "ens.nc"
    cmd = [sys.executable, "-m", "swe", "run", "dam_break", "--set", "nx=60", "--set",
           "t_end=3", "--ensemble", "h_left=5,7,9", "--devices", "2", "--batching", "map",
           "-o", str(out)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    ds = xr.open_dataset(out)
    assert ds.sizes["ensemble"] == 3
    single = swe.scenario.build("dam_break", {"nx": 60, "t_end": 3, "h_left": 9.0})
    ref = swe.simulate(single.model, single.state0, single.t_end, single.save_at)
    np.testing.assert_allclose(ds.h.isel(ensemble=2).values, np.asarray(ref.states.h),
                               rtol=1e-13, atol=1e-13)
    bad = subprocess.run(cmd[:-2] + ["--mesh", "1x2", "-o", str(out)], capture_output=True,
                         text=True, env=env, timeout=120)
    assert bad.returncode == 2 and "use --devices N instead of --mesh" in bad.stderr


def test_iterated_ensemble_written_frame_by_frame_equals_simulate_ensemble(tmp_path):
    from swe.output import NetCDFWriter

    model, s0 = bench.problem(16)
    values = (0.0, 0.03)
    models = [swe.ShallowWater(model.grid, g=1.0, friction=swe.Manning(n)) for n in values]
    gauges = [swe.Gauge("centre", 0.0, 0.0), swe.Gauge("edge", 2.0, -1.0)]
    ens = swe.simulate_ensemble(models, s0, 0.4, save_at=0.2, members=values, gauges=gauges,
                                member_name="manning_n")
    writer = NetCDFWriter(tmp_path / "ens.nc", models[0], gauges=gauges, members=values,
                          member_name="manning_n")
    frames = list(swe.iterate_ensemble(models, s0, 0.4, save_at=0.2, members=values))
    assert [f.time for f in frames] == [0.0, 0.2, 0.4]
    for frame in frames:
        writer.write(frame)
        assert (tmp_path / "ens.nc.partial").exists()  # readable while the run goes on
    writer.close()
    np.testing.assert_array_equal(frames[-1].num_steps, ens.num_steps)
    ds, ref = xr.open_dataset(tmp_path / "ens.nc"), ens.to_xarray()
    assert ds.h.dims == ("ensemble", "time", "y", "x") and ds.sizes["time"] == 3
    assert ds.gauge_h.dims == ("ensemble", "gauge", "time")
    for name in ("h", "u", "eta", "gauge_h", "max_speed", "arrival_time", "bed"):
        np.testing.assert_array_equal(ds[name].values, ref[name].values, err_msg=name)
    np.testing.assert_array_equal(ds.ensemble.values, values)
    assert ds.attrs["Conventions"] == "CF-1.10"


def test_a_member_that_blows_up_is_named_and_earlier_frames_are_kept(tmp_path):
    script = tmp_path / "unstable.py"
    script.write_text(  # a fixed step: CFL 0.44 at depth 2 m, 4.4 at depth 200 m
        "import numpy as np\nimport swe\n\n"
        "def build(depth=2.0):\n"
        "    grid = swe.Grid(nx=40, ny=1, x=(0.0, 400.0))\n"
        "    model = swe.ShallowWater(grid, bed=-depth)\n"
        "    x = np.asarray(grid.xc)\n"
        "    s0 = swe.State.from_surface(model, eta=0.5 * np.exp(-((x - 200) / 30) ** 2)[None])\n"
        "    return swe.Scenario(model, s0, t_end=500.0, save_at=100.0,\n"
        "                        run_options=dict(dt=1.0))\n")
    out = tmp_path / "ens.nc"
    env = {**os.environ, "SWE_CACHE_DIR": ""}
    p = subprocess.run([sys.executable, "-m", "swe", "run", str(script), "--ensemble",
                        "depth=2,200", "-o", str(out)],
                       capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 1, p.stderr
    assert "ensemble member 200" in p.stderr and "blew up at t=" in p.stderr
    assert "frames kept in" in p.stderr and not out.exists()
    ds = xr.open_dataset(str(out) + ".partial")
    assert ds.sizes["time"] >= 1 and np.all(np.isfinite(ds.h.values))


@pytest.mark.parametrize("where", ["host", "device"])
def test_members_leaves_are_shared_where_equal_and_stacked_where_not(where, monkeypatch):
    # Equal leaves held by different arrays (device or NumPy) are shared, not stacked;
    # compared by NumPy on a CPU, where they live on a GPU or TPU (forced here).
    from swe import ensemble, errors

    calls = []
    if where == "device":
        monkeypatch.setattr(errors, "HOST_PLATFORMS", ())
        real = ensemble._device_equal
        monkeypatch.setattr(ensemble, "_device_equal",
                            lambda a, b: calls.append(1) or real(a, b))
    a = jnp.arange(6.0).reshape(2, 3)
    trees = [(a, jnp.array(a), np.asarray(a), 1.0 + a), (a + 0.0, a, np.asarray(a), 2.0 + a)]
    stacked, axes = ensemble._stack(trees)
    assert axes == (None, None, None, 0)
    assert stacked[0] is a and stacked[3].shape == (2, 2, 3)
    np.testing.assert_array_equal(stacked[3][1], 2.0 + a)
    nan = jnp.full((2, 3), jnp.nan)  # NaN is not equal to itself: stacked
    assert ensemble._stack([(nan,), (jnp.array(nan),)])[1] == (0,)
    ints = jnp.arange(6).reshape(2, 3)  # equal values of another dtype: not shared
    assert ensemble._stack([(a,), (ints,)])[1] == (0,)
    assert (len(calls) > 0) == (where == "device")


def test_gradient_and_jit_through_an_ensemble_equal_single_runs():
    """``jax.grad`` and ``jax.jit`` through ``simulate_ensemble`` (traced members are
    stacked, not compared; a failure under jit is checked at run time): the same loss and
    gradient as the members run one by one."""
    grid = swe.Grid(16, 1, x=(0.0, 16.0))
    state = swe.State(h=np.where(np.arange(16) < 8, 2.0, 1.0)[None], hu=0.0, hv=0.0)

    scheme = swe.FiniteVolume(reconstruction="first_order", riemann="hll")  # quick to compile

    def models(ns):
        return [swe.ShallowWater(grid, friction=swe.Manning(ns[i]), scheme=scheme)
                for i in range(2)]

    def ensemble_loss(ns):
        e = swe.simulate_ensemble(models(ns), state, 1.0, envelopes=False)
        return sum(jnp.sum(r.final.h ** 2) for r in e.results)

    def single_loss(ns):
        return sum(jnp.sum(swe.simulate(m, state, 1.0, envelopes=False).final.h ** 2)
                   for m in models(ns))

    ns = jnp.array([0.02, 0.05])
    np.testing.assert_allclose(jax.grad(ensemble_loss)(ns), jax.grad(single_loss)(ns),
                               rtol=1e-12, atol=0)
    assert float(jax.jit(ensemble_loss)(ns)) == pytest.approx(float(single_loss(ns)),
                                                               rel=1e-13)


def test_members_whose_closures_differ_only_in_numbers_run_as_one_ensemble(tmp_path):
    """A scenario's build() makes a new hydrograph closure for every member: members that
    differ in the channel's Manning n (the same closures by value) or in the hydrograph's peak (a
    number inside a closure inside a closure) run as one ensemble, each member equal to
    its own run; members whose functions differ in code still get one clear error."""
    from swe.scenarios import river_flood

    for key, values in (("n_channel", (0.03, 0.06)), ("peak_discharge", (300.0, 900.0))):
        scenarios = [river_flood.build(nx=32, ny=12, **{key: v}) for v in values]
        r = swe.simulate_ensemble([s.model for s in scenarios], [s.state0 for s in scenarios],
                                  600.0, save_at=300.0)
        finals = []
        for k, s in enumerate(scenarios):
            one = swe.simulate(s.model, s.state0, 600.0, save_at=300.0)
            assert int(r.num_steps[k]) == int(one.num_steps)
            np.testing.assert_array_equal(np.asarray(r.member(k).states.h),
                                          np.asarray(one.states.h))
            finals.append(np.asarray(one.final.h))
        assert np.abs(finals[1] - finals[0]).max() > 1e-3, key  # the members do differ
    # Through the CLI, over the built-in scenario.
    out = tmp_path / "river.nc"
    env = {**os.environ, "SWE_CACHE_DIR": ""}
    p = subprocess.run([sys.executable, "-m", "swe", "run", "river_flood", "--set", "nx=32",
                        "--set", "ny=12", "--set", "t_end=300", "--ensemble",
                        "n_floodplain=0.04,0.08", "-o", str(out)],
                       capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    assert xr.open_dataset(out).sizes["ensemble"] == 2
    grid = swe.Grid(nx=8, ny=8, x=(0.0, 80.0))

    def model(rain):
        return swe.ShallowWater(grid, bed=-1.0, sources=[swe.Rain(rain)])

    def per_hour(mm):
        return lambda t: mm / 3.6e6

    def doubled(mm):
        return lambda t: 2 * mm / 3.6e6

    state = swe.State.from_surface(model(1e-6), eta=0.0)
    r = swe.simulate_ensemble([model(per_hour(5.0)), model(per_hour(10.0))], state, 60.0)
    np.testing.assert_allclose(np.asarray(r.member(1).final.h).mean() - 1.0,
                               2 * (np.asarray(r.member(0).final.h).mean() - 1.0), rtol=1e-9)
    with pytest.raises(ValueError, match="differ in a function .* by more than the numbers"):
        swe.simulate_ensemble([model(per_hour(5.0)), model(doubled(5.0))], state, 60.0)

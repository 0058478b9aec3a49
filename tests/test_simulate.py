"""simulate(): output times, step control, failures, precision, no recompilation."""

import jax
import jax.monitoring
import jax.numpy as jnp
import numpy as np
import pytest

import swe

GRID = swe.Grid(nx=30, ny=20, x=(0.0, 300.0), y=(0.0, 200.0))
X, Y = (np.asarray(a) for a in GRID.cell_centers())


def _model(**kw):
    return swe.ShallowWater(GRID, bed=-2.0 + 0.002 * X, **kw)


def _bump(model, amplitude=0.3):
    return swe.State.from_surface(model, eta=amplitude * np.exp(-((X - 150) ** 2 + (Y - 100) ** 2) / 40.0**2))


def test_output_times_are_hit_exactly():
    model = _model()
    r = swe.simulate(model, _bump(model), t_end=10.0, save_at=[0.0, 0.7, 3.3, 9.99, 10.0])
    np.testing.assert_array_equal(np.asarray(r.times), [0.0, 0.7, 3.3, 9.99, 10.0])
    np.testing.assert_array_equal(np.asarray(r.frame(0).h), np.asarray(_bump(model).h))
    r2 = swe.simulate(model, _bump(model), t_end=10.0, save_at=2.5)
    np.testing.assert_array_equal(np.asarray(r2.times), [0.0, 2.5, 5.0, 7.5, 10.0])
    # Landing on an output time does not change what is computed at t_end beyond a step's
    # truncation error: the two runs agree closely.
    np.testing.assert_allclose(np.asarray(r2.final.h), np.asarray(r.final.h), atol=2e-3)


def test_fixed_dt_takes_the_expected_number_of_steps():
    model = _model()
    r = swe.simulate(model, _bump(model), t_end=10.0, dt=0.5, save_at=[0.0, 10.0])
    assert int(r.num_steps) == 20
    r = swe.simulate(model, _bump(model), t_end=10.0, dt=0.5, save_at=[0.0, 2.25, 10.0])
    assert int(r.num_steps) == 21  # one step split to land on 2.25


def test_cfl_number_sets_the_step():
    model = _model()
    s0 = _bump(model)
    n1 = int(swe.simulate(model, s0, t_end=10.0, cfl=0.45).num_steps)
    n2 = int(swe.simulate(model, s0, t_end=10.0, cfl=0.225).num_steps)
    c = np.sqrt(9.81 * float(s0.h.max()))
    assert n1 >= 10.0 * c / (0.45 * GRID.dx) * 0.95
    assert abs(n2 / n1 - 2.0) < 0.1


def test_default_cfl_follows_the_integrator():
    """0.45 for the SSP schemes, 0.9 for the split schemes (each sweep stable to 1)."""
    model = _model()
    s0 = _bump(model)

    def steps(**kw):
        return int(swe.simulate(model, s0, t_end=60.0, **kw).num_steps)

    assert steps() == steps(cfl=0.45)
    assert steps() > 50
    for integrator in ("split", "strang"):
        assert steps(integrator=integrator) == steps(integrator=integrator, cfl=0.9)
        assert abs(steps(integrator=integrator) / steps() - 0.5) < 0.05


def test_changing_coefficients_does_not_recompile():
    compiles = []

    def listener(event, duration, **kwargs):
        if event == "/jax/core/compile/backend_compile_duration":
            compiles.append(event)

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        model = _model(friction=swe.Manning(0.03), coriolis=swe.BetaPlane(1e-4, 1e-11))
        s0 = _bump(model)
        swe.simulate(model, s0, t_end=5.0, save_at=1.0, cfl=0.4)
        first = len(compiles)
        assert first >= 1
        for n, f0, cfl, amp in ((0.05, 2e-4, 0.3, 0.2), (0.01, 0.0, 0.45, 0.4)):
            m = swe.ShallowWater(GRID, bed=-2.5 + 0.001 * X, friction=swe.Manning(n),
                                 coriolis=swe.BetaPlane(f0, 1e-11))
            swe.simulate(m, _bump(m, amp), t_end=5.0, save_at=1.0, cfl=cfl)
        assert len(compiles) == first, "a coefficient change triggered a recompilation"
    finally:
        jax.monitoring.clear_event_listeners()


def test_blow_up_reports_time_and_step():
    model = _model()
    with pytest.raises(swe.SimulationError) as info:
        # dt = 20 s is ~9 times the stable step: the state goes NaN within a few steps.
        swe.simulate(model, _bump(model), t_end=2000.0, dt=20.0, save_at=100.0)
    err = info.value
    assert err.step >= 1 and 0.0 < err.time < 2000.0
    assert err.time == pytest.approx(20.0 * err.step)
    assert f"step {err.step}" in str(err) and "t=" in str(err)


def test_fixed_dt_past_the_cfl_limit_stops():
    """A fixed dt with a Courant number above 1 stops the run (the positivity limiter alone
    keeps such runs finite: a 2 m / 1 m dam break with dt at Courant 1.8 would return 8.9 m
    depths without a word); at Courant 0.9 it runs."""
    grid = swe.Grid(50, x=(0.0, 50.0))
    model = swe.ShallowWater(grid, g=9.81)
    state = swe.State(h=np.where(np.arange(50) < 25, 2.0, 1.0)[None, :], hu=0.0, hv=0.0)
    c = float(np.sqrt(9.81 * 2.0))  # the largest wave speed at rest; dx = 1 m
    with pytest.raises(swe.SimulationError, match="fixed dt passed the CFL limit") as info:
        swe.simulate(model, state, t_end=10.0, dt=1.8 / c)
    assert info.value.step == 1
    r = swe.simulate(model, state, t_end=10.0, dt=0.3 / c)
    assert float(np.max(np.asarray(r.final.h))) < 2.0


def test_nan_state_under_the_cfl_step_raises():
    """A forcing that makes the state NaN, with the CFL controller (no fixed dt): a NaN
    wave speed once read as a dry domain (an infinite step), so the run went on with NaN
    frames and ``failed`` False. It raises, and with throw=False says it failed."""
    grid = swe.Grid(10, 4, x=(0.0, 100.0), y=(0.0, 40.0))
    model = swe.ShallowWater(grid, bed=0.0, sources=[swe.PointSource(50.0, 20.0, 1e306)])
    state = swe.State.from_surface(model, eta=0.1)
    with pytest.raises(swe.SimulationError, match="NaN or inf appeared in the state"):
        swe.simulate(model, state, t_end=10.0, save_at=2.0)
    assert bool(swe.simulate(model, state, t_end=10.0, save_at=2.0, throw=False).failed)
    speed = model.max_wave_speed(swe.State(h=jnp.full(grid.shape, jnp.nan), hu=0.0, hv=0.0))
    assert np.isnan(float(speed))
    assert np.isnan(float(model.stable_time_step(
        swe.State(h=jnp.full(grid.shape, jnp.nan), hu=0.0, hv=0.0), 0.45)))
    assert np.isinf(float(model.stable_time_step(
        swe.State(h=jnp.zeros(grid.shape), hu=0.0, hv=0.0), 0.45)))  # dry: no bound


def test_failure_under_eager_grad_is_a_simulation_error():
    """``jax.grad`` outside jit: the failure is known while tracing, and is raised as a
    SimulationError with its time and step (once a TracerArrayConversionError)."""
    grid = swe.Grid(12)

    def loss(n):
        m = swe.ShallowWater(grid, bed=0.0, friction=swe.Manning(n))
        s = swe.State.from_surface(m, eta=jnp.where(jnp.arange(12) < 6, 1.0, 0.5)[None, :])
        return swe.simulate(m, s, t_end=5.0, max_steps=2).final.h.sum()

    with pytest.raises(swe.SimulationError, match="max_steps=2") as info:
        jax.grad(loss)(0.03)
    assert info.value.step == 2 and info.value.time > 0


def test_throw_false_returns_the_failure_instead_of_raising():
    """``throw=False``: a run that blows up returns, ``failed`` set, its frames finite up to
    the failure and not after; under jit a loss of it is not finite, and nothing raises."""
    model = _model()
    r = swe.simulate(model, _bump(model), t_end=2000.0, dt=20.0, save_at=100.0, throw=False)
    finite = np.isfinite(np.asarray(r.states.h)).all(axis=(1, 2))
    assert bool(r.failed) and finite[0] and not finite[-1]
    assert list(finite) == sorted(finite, reverse=True)  # finite, then not
    loss = jax.jit(lambda s: swe.simulate(model, s, t_end=2000.0, dt=20.0,
                                          throw=False).final.h.sum())
    assert not np.isfinite(float(loss(_bump(model))))
    # Stopped by max_steps or a collapsed step, the state is finite: the frames not
    # reached are NaN all the same (at their requested times), and the envelopes.
    for stop in (dict(max_steps=5), dict(dt_min=5.0)):
        for save_at in ([10.0], 2.0):
            r = swe.simulate(model, _bump(model), t_end=10.0, save_at=save_at, throw=False,
                             **stop)
            h = np.asarray(r.states.h)
            assert bool(r.failed) and np.isnan(h[-1]).all(), (stop, save_at)
            assert np.isnan(np.asarray(r.envelopes.max_depth)).all()
            np.testing.assert_array_equal(np.asarray(r.times),
                                          [10.0] if save_at == [10.0] else np.arange(0, 11, 2.0))
            assert r.to_xarray().attrs["failed"] == 1
    assert np.isfinite(h[0]).all()  # t = 0, before the failure
    ok = swe.simulate(model, _bump(model), t_end=20.0, save_at=10.0, throw=False)
    assert not bool(ok.failed) and np.isfinite(np.asarray(ok.states.h)).all()
    assert "failed" not in ok.to_xarray().attrs
    with pytest.raises(ValueError, match="throw='no' is invalid; expected True or False"):
        swe.simulate(model, _bump(model), t_end=20.0, throw="no")


def _callbacks(closed_jaxpr):
    """The host callbacks (equinox's run-time errors among them) anywhere in a jaxpr."""
    found = []

    def walk(jaxpr):
        for eqn in jaxpr.eqns:
            if "callback" in eqn.primitive.name:
                found.append(eqn.primitive.name)
            for p in eqn.params.values():
                for sub in p if isinstance(p, (tuple, list)) else (p,):
                    inner = getattr(sub, "jaxpr", sub)
                    if hasattr(inner, "eqns"):
                        walk(inner)

    walk(closed_jaxpr.jaxpr)
    return found


def test_gradient_with_throw_false_holds_no_host_callback():
    """A gradient through ``simulate(..., throw=False)`` saving ``t_end`` only has no host
    callback, so JAX's persistent cache can keep it; with ``throw=True`` (the run-time
    error) or several save times (diffrax's checks of them) it has."""
    model = _model(friction=swe.Manning(0.03))

    def loss(n, throw=False, save_at=(5.0,)):
        m = swe.ShallowWater(GRID, bed=model.bed, friction=swe.Manning(n))
        r = swe.simulate(m, _bump(m), t_end=5.0, save_at=save_at, envelopes=False,
                         throw=throw)
        return r.states.h[:, 10, 15].sum()

    assert _callbacks(jax.make_jaxpr(jax.grad(loss))(0.03)) == []
    assert _callbacks(jax.make_jaxpr(jax.grad(lambda n: loss(n, throw=True)))(0.03))
    assert _callbacks(jax.make_jaxpr(jax.grad(lambda n: loss(n, save_at=(2.5, 5.0))))(0.03))


_CACHED_GRADIENT = """
import sys
import jax
import numpy as np
import swe
from swe.bench import CompileClock

assert swe.enable_compilation_cache(sys.argv[1]) is not None
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)  # store it however quick
grid = swe.Grid(nx=16, ny=12, x=(0.0, 160.0), y=(0.0, 120.0))
x, y = (np.asarray(a) for a in grid.cell_centers())
bed = -2.0 + 0.002 * x
eta = 0.3 * np.exp(-((x - 80) ** 2 + (y - 60) ** 2) / 30.0**2)

def loss(n):
    scheme = swe.FiniteVolume(reconstruction="first_order", riemann="hll")
    m = swe.ShallowWater(grid, bed=bed, friction=swe.Manning(n), scheme=scheme)
    r = swe.simulate(m, swe.State.from_surface(m, eta=eta), t_end=20.0, save_at=[20.0],
                     envelopes=False, throw=False)
    return r.final.h[6, 8]

clock = CompileClock()
with clock:
    g = jax.jit(jax.grad(loss))(0.03)
print(clock.cache_hits, float(g))
"""


def test_a_gradient_is_read_back_from_the_persistent_cache(tmp_path):
    """``swe.enable_compilation_cache``: a jitted gradient through ``simulate(...,
    throw=False)`` compiled by one process is read back by the next (the same value)."""
    import subprocess
    import sys

    script, cache = tmp_path / "grad.py", tmp_path / "cache"
    script.write_text(_CACHED_GRADIENT)

    def run():
        p = subprocess.run([sys.executable, str(script), str(cache)], capture_output=True,
                           text=True, timeout=600)
        assert p.returncode == 0, p.stderr
        hits, value = p.stdout.split()
        return int(hits), float(value)

    first = run()
    assert first[0] == 0 and any(cache.iterdir())
    second = run()
    assert second[0] >= 1 and second[1] == first[1] and np.isfinite(first[1])


def test_enable_compilation_cache_takes_a_path_or_the_environment(tmp_path, monkeypatch):
    from swe import cache

    saved = (jax.config.jax_compilation_cache_dir,
             jax.config.jax_persistent_cache_min_compile_time_secs)
    try:
        monkeypatch.setenv("SWE_CACHE_DIR", "")
        assert swe.enable_compilation_cache() is None
        monkeypatch.setenv("SWE_CACHE_DIR", str(tmp_path / "env"))
        assert swe.enable_compilation_cache() == tmp_path / "env"
        assert jax.config.jax_compilation_cache_dir == str(tmp_path / "env")
        assert swe.enable_compilation_cache(tmp_path / "arg") == tmp_path / "arg"
        assert (tmp_path / "arg").is_dir()
        monkeypatch.delenv("SWE_CACHE_DIR")
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
        assert cache.default_cache_dir() == tmp_path / "xdg" / "swe" / "jax"
        with pytest.raises(ValueError, match="path='' is invalid"):
            swe.enable_compilation_cache("")
        blocker = tmp_path / "file"
        blocker.write_text("")
        with pytest.raises(ValueError, match="cannot be created .*expected a writable"):
            swe.enable_compilation_cache(blocker / "cache")
    finally:
        jax.config.update("jax_compilation_cache_dir", saved[0])
        jax.config.update("jax_persistent_cache_min_compile_time_secs", saved[1])


def test_max_steps_is_an_error_not_a_silent_stop():
    model = _model()
    with pytest.raises(swe.SimulationError, match="max_steps=5"):
        swe.simulate(model, _bump(model), t_end=10.0, max_steps=5)


def test_float32_runs_and_agrees_with_float64():
    model = _model()
    s0 = _bump(model)
    r64 = swe.simulate(model, s0, t_end=5.0)
    r32 = swe.simulate(model, s0, t_end=5.0, dtype="float32")
    assert r32.states.h.dtype == np.float32 and r64.states.h.dtype == np.float64
    np.testing.assert_allclose(np.asarray(r32.final.h), np.asarray(r64.final.h), atol=1e-4)
    m = np.asarray(r32.mass())
    assert abs(m[-1] - m[0]) / m[0] < 1e-6


def test_result_is_independent_of_integrator_to_truncation_error():
    model = _model()
    s0 = _bump(model)
    h2 = np.asarray(swe.simulate(model, s0, t_end=5.0, integrator="ssprk2").final.h)
    h3 = np.asarray(swe.simulate(model, s0, t_end=5.0, integrator="ssprk3").final.h)
    assert 0 < np.abs(h2 - h3).max() < 1e-2  # 3% of the wave amplitude

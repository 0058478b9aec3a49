"""Bad input: a ValueError naming the argument, the bad value and what is accepted."""

import jax
import numpy as np
import pytest

import swe

GRID = swe.Grid(nx=8, ny=6, x=(0.0, 8.0), y=(0.0, 6.0))


def _model(**kw):
    return swe.ShallowWater(GRID, **kw)


def _state():
    return swe.State(h=np.ones((6, 8)), hu=0.0, hv=0.0)


@pytest.mark.parametrize(
    "build,match",
    [
        (lambda: swe.State(h=-np.ones((6, 8)), hu=0.0, hv=0.0), r"h has a negative value -1\.0.*>= 0"),
        (lambda: swe.simulate(_model(), swe.State(h=np.full((6, 8), np.nan), hu=0.0, hv=0.0), 1.0),
         r"h contains NaN or inf"),
        (lambda: swe.simulate(_model(), swe.State(h=np.ones((6, 8)), hu=np.inf, hv=0.0), 1.0),
         r"hu contains NaN or inf"),
        (lambda: _model(bed=np.full((6, 8), np.inf)), r"bed contains NaN or inf"),
        (lambda: _model(g=np.nan), r"g=nan is invalid; expected a finite number in \(0.0, inf\)"),
        (lambda: _model(friction=swe.Manning(np.nan)), r"n contains NaN or inf"),
        (lambda: _model(bed=np.zeros((8, 6))), r"bed has shape \(8, 6\); expected a scalar or shape \(6, 8\)"),
        (lambda: swe.simulate(_model(), swe.State(h=np.ones((5, 8)), hu=0.0, hv=0.0), 1.0),
         r"h has shape \(5, 8\); expected .* \(6, 8\)"),
        (lambda: _model(friction=swe.Manning(np.ones((3, 3)))), r"n has shape \(3, 3\)"),
        (lambda: swe.Grid(nx=0, ny=4, x=(0, 1)), r"nx=0 is invalid; expected an integer >= 1"),
        (lambda: swe.Grid(nx=4, ny=-1, x=(0, 1)), r"ny=-1 is invalid"),
        (lambda: swe.Grid(nx=2.5, x=(0, 1)), r"nx=2.5 is invalid"),
        (lambda: swe.Grid(nx=4, x=(1.0, 0.0)), r"x=\(1.0, 0.0\) is invalid"),
        (lambda: swe.simulate(_model(), _state(), 1.0, cfl=0.0), r"cfl=0.0 is invalid; expected a finite number in \(0.0, 1.0\]"),
        (lambda: swe.simulate(_model(), _state(), 1.0, cfl=1.5), r"cfl=1.5 is invalid"),
        (lambda: swe.FiniteVolume(riemann="exact"), r"riemann='exact' is not supported; choose one of 'rusanov', 'hll', 'hllc', 'roe'"),
        (lambda: swe.FiniteVolume(limiter="superbee"), r"limiter='superbee' is not supported; choose one of 'minmod', 'mc', 'vanleer'"),
        (lambda: swe.FiniteVolume(reconstruction="weno"), r"reconstruction='weno' is not supported"),
        (lambda: swe.simulate(_model(), _state(), 1.0, integrator="rk4"), r"integrator='rk4' is not supported; choose one of 'euler', 'ssprk2', 'ssprk3', 'split'"),
        (lambda: swe.Boundaries(west=swe.Periodic()), r"west=Periodic\(\) needs east=Periodic\(\) as well.*got east=Wall\(\)"),
        (lambda: swe.Boundaries(north=swe.Periodic(), south=swe.Outflow()), r"north=Periodic\(\) needs south=Periodic\(\)"),
        (lambda: swe.Boundaries(west="wall"), r"west='wall' is not a boundary condition"),
        (lambda: swe.simulate(_model(), _state(), 10.0, save_at=[0.0, 11.0]), r"save_at contains 11.0, outside \[t0, t_end\] = \[0.0, 10.0\]"),
        (lambda: swe.simulate(_model(), _state(), 10.0, save_at=[-1.0]), r"save_at contains -1.0"),
        (lambda: swe.simulate(_model(), _state(), 10.0, save_at=-2.0), r"save_at=-2.0 is invalid; expected a positive interval"),
        (lambda: swe.simulate(_model(), _state(), -1.0), r"t_end=-1.0 is invalid"),
        (lambda: swe.simulate(_model(), _state(), 1.0, dt=0.0), r"dt=0.0 is invalid"),
        (lambda: _model(boundaries=swe.Boundaries(west=swe.Inflow(np.ones(4)))), r"west boundary discharge has length 4; expected a number or 6 values"),
        (lambda: swe.Inflow(np.nan), r"discharge=nan contains NaN or inf"),
        (lambda: swe.Chezy(0.0), r"Chezy coefficients must be > 0"),
        (lambda: swe.Manning(-0.01), r"n has a negative value -0.01"),
        (lambda: swe.PointSource(100.0, 1.0, 1.0).checked(GRID), r"point \(100.0, 1.0\) is outside the grid"),
        (lambda: _model(friction="manning"), r"friction='manning' is invalid; expected None, swe.Manning"),
        (lambda: swe.simulate(_model(), _state(), 1.0, dtype="float16"), r"dtype='float16' is not supported"),
        (lambda: swe.Inflow(-0.5), r"discharge=-0.5 has a negative value -0.5; an inflow"),
        (lambda: swe.Inflow([0.1, -0.2]), r"has a negative value -0.2"),
        (lambda: swe.simulate(_model(), _state(), 1.0, arrival_threshold=-1.0),
         r"arrival_threshold=-1.0 is invalid"),
        (lambda: swe.simulate(_model(), _state(), 1.0, arrival_threshold="x"),
         r"arrival_threshold='x' is invalid; expected a finite real number"),
        (lambda: swe.simulate(_model(), _state(), 1.0, save_at=1e-9),
         r"save_at=1e-09 gives 1e\+09 output times over \[0.0, 1.0\]; at most 1,000,000"),
        (lambda: swe.simulate(_model(), _state(), 1.0, save_at="0.5"),
         r"save_at='0.5' is invalid; expected a positive interval"),
        (lambda: swe.simulate(_model(), _state(), 1e6 + 3.0, t0=1e6, dtype="float32"),
         r"t0=1000000.0, t_end=1000003.0 in float32: times there are 0.0625 s apart, too "
         r"coarse for a run 3 s long"),
        # A forcing function's result is checked while tracing (once raw JAX shape errors).
        (lambda: swe.simulate(_model(sources=[swe.Rain(lambda t: np.ones((3, 3)))]),
                              _state(), 1.0),
         r"intensity\(t\) returned an array of shape \(3, 3\); expected a number or an "
         r"array of the grid's shape \(6, 8\)"),
        (lambda: swe.simulate(_model(boundaries=swe.Boundaries(
            west=swe.Inflow(lambda t: np.ones(7)))), _state(), 1.0),
         r"discharge\(t\) returned an array of shape \(7,\); expected a number or a 1-D "
         r"array along the edge \(6 cells\)"),
        (lambda: swe.simulate(_model(sources=[swe.PointSource(4.0, 3.0, lambda t: "x")]),
                              _state(), 1.0), r"discharge\(t\) returned 'x'; expected a number"),
        (lambda: swe.simulate_ensemble(
            [_model(sources=[swe.Rain(lambda t: 1e-5)]),
             _model(sources=[swe.Rain(lambda t: 2e-5)])], _state(), 1.0),
         r"ensemble members differ in a function"),
        (lambda: swe.simulate(_model(), _state(), 1.0, gauges=("a", 1.0, 1.0)),
         r"gauges contains 'a'; expected swe.Gauge\(name, x, y\) or \(name, x, y\)"),
        (lambda: swe.State.from_surface(GRID, eta=1.0), r"model=Grid\(.*\) is invalid; "
                                                        r"expected a swe.ShallowWater"),
        (lambda: swe.simulate(_model(), _state(), 1.0).to_xarray(start_time="yesterday"),
         r"start_time='yesterday' is invalid; expected an ISO 8601 date"),
        (lambda: jax.jit(lambda t_end: swe.simulate(_model(), _state(), t_end).final.h)(1.0),
         r"t_end is traced \(an argument of jit or grad\); it must be a concrete number"),
        (lambda: _model(sources=5), r"sources=5 is invalid; expected a sequence of swe.Rain"),
        # A direction that carries fluxes needs the scheme's ghost cells (once a slicing
        # TypeError deep inside the boundary fill).
        (lambda: swe.ShallowWater(swe.Grid(8, 2), scheme=swe.FiniteVolume(limiter="thinc-bvd")),
         r"ny=2 is too small for the scheme \(reconstruction='muscl', limiter='thinc-bvd'\): "
         r"a direction that carries fluxes needs at least 3 cells"),
        (lambda: swe.ShallowWater(swe.Grid(1, 4), boundaries=swe.Boundaries(
            west=swe.Inflow(0.1), east=swe.Outflow())), r"nx=1 is too small .* at least 2 cells"),
        (lambda: swe.ShallowWater(swe.Grid(8, 1), boundaries=swe.Boundaries(
            south=swe.Stage(1.0))), r"ny=1 is too small"),
    ],
)
def test_bad_input_names_argument_value_and_what_is_accepted(build, match):
    with pytest.raises(ValueError, match=match):
        build()


@pytest.fixture(params=["host", "device"])
def checked_where(request, monkeypatch):
    """Checks by NumPy (this CPU's default) or reduced where the arrays live (a GPU's or
    TPU's default, forced here); yields the count of device reductions made."""
    from swe import errors

    calls = []
    if request.param == "device":
        monkeypatch.setattr(errors, "HOST_PLATFORMS", ())
        real = errors._summary
        monkeypatch.setattr(errors, "_summary", lambda x: calls.append(1) or real(x))
    yield request.param, calls


def test_values_are_checked_on_the_host_or_where_they_live(checked_where):
    import jax
    import jax.numpy as jnp

    from swe.errors import check_field, finite_and_min, value_summary
    where, calls = checked_where
    assert finite_and_min(jnp.asarray([[1.0, -2.0], [3.0, 0.5]])) == (True, -2.0)
    assert value_summary(jnp.asarray([[1.0, -2.0], [jnp.inf, 0.5]]))[2:] == ((1, 0), (0, 1))
    assert finite_and_min(np.asarray([1.0, 4.0])) == (True, 1.0)
    assert finite_and_min(2.5) == (True, 2.5)
    assert finite_and_min([[1.0, 3.0]]) == (True, 1.0)
    swe.State(h=[[1.0, 2.0]], hu=0.0, hv=0.0)  # nested lists are accepted
    assert not finite_and_min(jnp.asarray([1.0, jnp.inf]))[0]
    h = jnp.ones((6, 8)).at[2, 3].set(-0.5)
    with pytest.raises(ValueError, match=r"h has a negative value -0.5"):
        swe.State(h=h, hu=0.0, hv=0.0)
    with pytest.raises(ValueError, match=r"h has a negative value -0.5 at index \(2, 3\)"):
        check_field("h", h, (6, 8), nonnegative=True)
    with pytest.raises(ValueError, match=r"hu contains NaN or inf at index \(4, 1\)"):
        swe.simulate(_model(), swe.State(h=jnp.ones((6, 8)),
                                         hu=jnp.zeros((6, 8)).at[4, 1].set(jnp.nan), hv=0.0),
                     1.0)
    # A blown-up (non-finite) state may be built: only finite negative depths are refused.
    swe.State(h=jnp.ones((6, 8)).at[0, 0].set(jnp.nan), hu=0.0, hv=0.0)
    # Arrays made outside a traced function are checked inside it too.
    c = jnp.ones((6, 8))
    out = jax.jit(lambda x: swe.State(h=c, hu=x, hv=x).hu)(jnp.zeros((6, 8)))
    assert out.shape == (6, 8)
    with pytest.raises(ValueError, match=r"h has a negative value -0.5 at index \(2, 3\)"):
        jax.jit(lambda x: check_field("h", h, (6, 8), nonnegative=True) + x)(1.0)
    # NumPy and integer values too, converted as values inside the traced function.
    ints = jnp.array([[-2, 1]])
    with pytest.raises(ValueError, match=r"h has a negative value -1.0 at index \(0, 1\)"):
        jax.jit(lambda x: check_field("h", np.array([[0.0, -1.0]]), (1, 2),
                                      nonnegative=True) + x)(1.0)
    with pytest.raises(ValueError, match=r"h has a negative value -2.0 at index \(0, 0\)"):
        jax.jit(lambda x: check_field("h", ints, (1, 2), nonnegative=True) + x)(1.0)
    # Indices past 2^31 values (a (ny, nx) view of rows): found as row and column.
    from swe.errors import _index
    assert _index(50000, 3, (50001, 50000)) == (50000, 3)
    assert (len(calls) > 0) == (where == "device")


def test_small_grids_that_the_scheme_can_take_run():
    """One cell across with walls (no fluxes that way), two for MUSCL, one for first
    order even with a stage on that side; no sources given as None."""
    cases = [(swe.Grid(1, 4), {}),
             (swe.Grid(8, 1), dict(boundaries=swe.Boundaries(south=swe.Stage(1.0)),
                                   scheme=swe.FiniteVolume(reconstruction="first_order"))),
             (swe.Grid(3, 3), dict(scheme=swe.FiniteVolume(limiter="thinc-bvd"),
                                   sources=None))]
    for grid, kw in cases:
        model = swe.ShallowWater(grid, **kw)
        r = swe.simulate(model, swe.State.from_surface(model, eta=1.0), t_end=0.2,
                         envelopes=False)
        assert np.isfinite(np.asarray(r.final.h)).all(), (grid, kw)


def test_frame_index_out_of_range():
    r = swe.simulate(_model(), _state(), 1.0, save_at=0.5)
    assert np.asarray(r.frame(-3).h).shape == (6, 8)
    for index in (3, -4):
        with pytest.raises(IndexError, match=f"index={index} is out of range for 3 output"):
            r.frame(index)

"""The memory a run needs, told before it starts: the estimate against XLA's own memory
analysis, and runs that cannot fit refused in one line before any computing."""

import jax.numpy as jnp
import pytest

import swe
from swe import memory
from swe.run import prepare, solve
from swe.stepping import Tracked, start_envelopes


def _model(n, **scheme):
    grid = swe.Grid(nx=n, ny=n, x=(0.0, 1000.0), y=(0.0, 1000.0))
    return swe.ShallowWater(grid, bed=0.0, friction=swe.Manning(0.03),
                            scheme=swe.FiniteVolume(**scheme),
                            boundaries=swe.Boundaries(west=swe.Inflow(1.0), east=swe.Outflow()))


def _analysed_bytes(model, integrator):
    run = prepare(model, swe.State.from_surface(model, eta=1.0), 1.0, None, 0.0, None, None,
                  integrator, "float64", None, None, None)
    y = Tracked(run.state0, start_envelopes(run.t0, run.state0, 0.01, run.model.h_dry))
    tb = jnp.asarray(1.0, run.dtype)
    compiled = solve.lower(run.model, y, jnp.asarray(0.0, run.dtype), tb, tb[None], None,
                           run.controls, run.integrator, None, 1).compile().compiled
    ma = compiled.memory_analysis()
    return (ma.argument_size_in_bytes + ma.output_size_in_bytes + ma.temp_size_in_bytes
            - ma.alias_size_in_bytes)


@pytest.mark.parametrize("scheme,integrator", [
    (dict(reconstruction="first_order"), "ssprk2"), (dict(), "ssprk2")])
def test_values_per_cell_match_xlas_memory_analysis(scheme, integrator):
    """The table's values per cell are XLA's analysed bytes per cell (the slope between
    64^2 and 128^2), rounded up: never below, at most 10% above."""
    small, large = (_analysed_bytes(_model(n, **scheme), integrator) for n in (64, 128))
    measured = (large - small) / (128**2 - 64**2) / 8
    table = memory.run_bytes(_model(8, **scheme), "float64", integrator) / (8 * 64)
    assert measured <= table <= 1.1 * measured, (measured, table)


def test_a_run_that_cannot_fit_is_refused_saying_what_would():
    model = _model(1000)
    need = memory.run_bytes(model, "float64")
    assert need == 45 * 8 * 10**6
    assert memory.run_bytes(model, "float32") == need // 2
    assert memory.run_bytes(model, "float64", frames=11) == need + 10 * 3 * 8 * 10**6
    assert memory.run_bytes(model, "float64", devices=4) == need // 4
    assert memory.check_fits(model, "float64", memory=10 * need)["run_bytes"] == need
    with pytest.raises(ValueError) as e:
        memory.check_fits(model, "float64", frames_on_device=5, memory=need)
    message = str(e.value)
    assert "\n" not in message and "needs about" in message
    for way in ("a grid of at most", "float32", "fewer saved frames", "--devices N"):
        assert way in message
    with pytest.raises(ValueError, match="would take about 0.192 GB .* free; save fewer frames"):
        memory.check_fits(model, "float64", output_frames=5, output="out.nc",
                          memory=10 * need, disk=10**6)


def test_simulate_and_the_cli_refuse_before_computing(monkeypatch, tmp_path, capsys):
    from swe import cli

    monkeypatch.setattr(memory, "available_memory", lambda: (10**6, "host memory"))
    model = _model(64)
    with pytest.raises(ValueError, match="needs about .* of host memory and 0.001 GB is free"):
        swe.simulate(model, swe.State.from_surface(model, eta=1.0), 1.0)
    out = tmp_path / "big.nc"
    code = cli.main(["run", "radial_dam_break", "--set", "n=100", "-o", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "needs about" in err[0] and "float32" in err[0]
    assert not list(tmp_path.iterdir())  # no file, no .partial


def test_available_memory_is_a_positive_number_here():
    free, where = memory.available_memory()
    assert where == "host memory" and free is not None and 0 < free < 1 << 50

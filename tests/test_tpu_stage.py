"""The Pallas stage (swe.tpu_stage): in interpret mode on the CPU it gives XLA's stage to
round-off for every model it covers, whole runs and gradients agree, the kernel choice is
validated, and the kernel lowers for a TPU. Its speed is measured by
scripts/bench_stage_kernels.py on a TPU, not here."""

import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import swe
from swe import bench, steps, tpu_stage, xla_stage
from swe.simulate import iterate
from swe.stages import AUTO_MIN_CELLS, SPLIT_INTEGRATORS, stage_kernel, stage_kernel_for_run
from swe.stepping import INTEGRATORS, SplitHancock


def _max_diff(a, b):
    return max(float(jnp.max(jnp.abs(x - y))) for x, y in zip(jax.tree.leaves(a),
                                                              jax.tree.leaves(b)))


def _bump(**kwargs):
    """A wet/dry bump on a 20 x 16 grid with flow against walls and an outflow."""
    grid = swe.Grid(nx=20, ny=16, x=(0.0, 2.0), y=(0.0, 1.6))
    x, y = grid.cell_centers()
    bed = 0.4 * jnp.exp(-((x - 1.0) ** 2 + (y - 0.8) ** 2) / 0.1)
    h = jnp.maximum(0.3 + 0.1 * (x < 0.5) - bed, 0.0)
    kwargs.setdefault("boundaries", swe.Boundaries(east=swe.Outflow()))
    model = swe.ShallowWater(grid, bed=bed, g=9.81, **kwargs)
    return model, swe.State(h=h, hu=0.2 * h, hv=-0.1 * h * (y > 0.8))


def _cases():
    """``(name, model, state, dt)``."""
    model, state = bench.problem(24)
    yield "benchmark dam break, N = 24", model, state, 0.02
    model, state = bench.problem(136)  # two column blocks of 128: data across the seam
    x, y = model.grid.cell_centers()
    h = state.h + 0.1 * jnp.sin(3.0 * x + 1.0) * jnp.cos(2.0 * y)
    yield "waves on the dam break, N = 136", model, swe.State(
        h=h, hu=0.1 * jnp.sin(2.0 * y) * h, hv=0.1 * jnp.cos(x) * h), 0.005
    for limiter in ("koren", "mc", None):
        scheme = (swe.FiniteVolume(reconstruction="first_order") if limiter is None
                  else swe.FiniteVolume(limiter=limiter))
        yield f"wet/dry bump, {limiter or 'first order'}", *_bump(scheme=scheme), 0.01
    for riemann in ("hll", "roe"):
        yield f"wet/dry bump, {riemann}", *_bump(scheme=swe.FiniteVolume(riemann=riemann)), 0.01
    grid = swe.Grid(nx=20, ny=16, x=(0.0, 2.0), y=(0.0, 1.6))
    x, y = grid.cell_centers()
    yield "every source: Manning field, beta plane, wind, rain, a point source", *_bump(
        friction=swe.Manning(0.03 + 0.01 * x), coriolis=swe.BetaPlane(1e-2, 1e-3),
        wind=swe.WindStress(0.1, -0.05),
        sources=(swe.Rain(1e-3), swe.PointSource(x=1.5, y=0.4, discharge=0.02))), 0.01
    yield "Chezy friction, periodic x, a stage on the north side", *_bump(
        friction=swe.Chezy(40.0), boundaries=swe.Boundaries(
            west=swe.Periodic(), east=swe.Periodic(), north=swe.Stage(0.35))), 0.01
    yield "inflows: a profile on the west side, a hydrograph on the south", *_bump(
        boundaries=swe.Boundaries(west=swe.Inflow(0.05 + 0.02 * jnp.sin(jnp.arange(16.0))),
                                  south=swe.Inflow(lambda t: 0.03 + 0.1 * t),
                                  east=swe.Outflow())), 0.01
    yield "an inflow on the east side, its mass flux into the domain", *_bump(
        boundaries=swe.Boundaries(east=swe.Inflow(0.08), north=swe.Outflow())), 0.01
    # A thin, fast film: the draining-time limiter scales the outgoing fluxes.
    film = 0.01 + 0.3 * (x < 0.3)
    model = swe.ShallowWater(grid, g=9.81, friction=swe.LinearDrag(1e-3),
                             boundaries=swe.Boundaries(east=swe.Outflow()))
    yield "draining film with linear drag", model, swe.State(
        h=film, hu=jnp.full_like(film, 0.2), hv=0.1 * jnp.sin(3.0 * y)), 0.02


@pytest.mark.parametrize("case", list(_cases()), ids=lambda c: c[0])
def test_pallas_stage_equals_the_xla_stage(case, monkeypatch):
    """Full-width rows (blocks of 8 rows with 8 halo rows and with 4; the default block
    rows with the neighbour's faces recomputed instead of rolled) and column blocks of 128,
    float64, interpret mode: every field to round-off (measured: 0 to 1.7e-16 of values
    ~1). Two of them blend the stage with another state in the kernel (the second
    stage of SSP-RK2 and RK3's third, ``blend``), as XLA's :func:`swe.pointwise.blended`."""
    _, model, state, dt = case
    beds = model.padded_beds()
    want = jax.jit(lambda s: xla_stage.euler_step(model, 0.0, s, dt, beds))(state)
    scale = max(float(jnp.max(jnp.abs(a))) for a in jax.tree.leaves(want))
    assert _max_diff(want, state) > 1e-4 * scale  # the stage moves the state: not two no-ops
    base = jax.tree.map(lambda a: 0.5 * a + 0.1, state)
    for rows, cols, halo, recompute, alpha in ((8, None, 8, False, None),
                                               (8, 128, 8, False, 0.5),
                                               (8, None, 4, False, 1.0 / 3.0),
                                               (None, None, 4, True, None)):
        monkeypatch.setattr(tpu_stage, "RECOMPUTE_NEIGHBOUR_FACES", recompute)
        got = jax.jit(lambda s, b: tpu_stage.euler_step(
            model, 0.0, s, dt, beds, blend=None if alpha is None else (alpha, b),
            block_rows=rows, block_cols=cols, halo=halo, interpret=True))(state, base)
        expected = want if alpha is None else swe.pointwise.blended(alpha, base, want)
        assert _max_diff(got, expected) <= 1e-14 * scale, (rows, cols, halo, recompute)


@pytest.mark.parametrize("case", [c for k, c in enumerate(_cases()) if k in (4, 7, 8, 9, 11)],
                         ids=lambda c: c[0])
def test_chained_ssp_stages_equal_the_xla_step(case):
    """An SSP-RK3 step by :func:`swe.tpu_stage.ssp_step` (stages chained in the kernel's
    layout: the second written there blended, its ghost cells refilled at its own time,
    the third blended into a state) equals XLA's step to round-off (float64, interpret
    mode, blocks of 8 rows so that there are several) on five cases: first order, every
    source, periodic sides with a stage boundary, time-dependent inflows (one on the low x
    side, whose ghost columns wrap to the end of the layout's rows), linear drag.

    The same step from the state carried in the kernel's layout (:class:`swe.tpu_stage.BlockLayout`,
    as runs take it) gives the same state, and the layout it ends in (refilled by the
    kernel's step) is exactly what :func:`swe.tpu_stage.padded_fields` makes of that state at
    the step's end (to round-off): the ghost cells of ``t + dt`` and zeros elsewhere."""
    _, model, state, dt = case
    beds = model.padded_beds()
    stages = swe.stepping.SSPRK3.stages
    want = jax.jit(lambda s: steps.ssp_step(model, 0.1, s, dt, beds, stages))(state)
    got = jax.jit(lambda s: tpu_stage.ssp_step(model, 0.1, s, dt, beds, stages,
                                            interpret=True, block_rows=8))(state)
    scale = max(float(jnp.max(jnp.abs(a))) for a in jax.tree.leaves(want))
    assert _max_diff(got, want) <= 1e-14 * scale
    halo = tpu_stage.CHAINED_HALO
    carry = tpu_stage.BlockLayout(*tpu_stage.padded_fields(model, 0.1, state, beds, 8, None, halo),
                       shape=state.h.shape, block_rows=8, halo=halo)
    new = jax.jit(lambda y: tpu_stage.ssp_step(model, 0.1, y, dt, beds, stages,
                                            interpret=True))(carry)
    assert isinstance(new, tpu_stage.BlockLayout) and new.block_rows == 8
    assert _max_diff(new.interior, want) <= 1e-14 * scale
    again = tpu_stage.padded_fields(model, 0.1 + dt, new.interior, beds, 8, None, halo)
    assert _max_diff((new.h, new.hu, new.hv, new.bed), again) <= 1e-14 * scale


def test_stage_vjp_is_the_xla_stage_vjp():
    """Reverse mode through the kernel's stage differentiates XLA's stage: the two VJPs
    (state, beds, friction coefficient) are identical."""
    model, state = _bump(friction=swe.Manning(0.03),
                         scheme=swe.FiniteVolume(kernel="pallas-interpret"))
    beds = model.padded_beds()
    cotangent = jax.tree.map(lambda a: jnp.cos(a + 1.0), state)

    def vjp(stage):
        return jax.jit(lambda m, s, b, c: jax.vjp(
            lambda m, s, b: stage(m, 0.0, s, 0.01, b), m, s, b)[1](c))(
                model, state, beds, cotangent)

    got, want = vjp(steps.euler_step), vjp(xla_stage.euler_step)
    assert float(jnp.max(jnp.abs(want[1].h))) > 0.1
    assert float(jnp.max(jnp.abs(want[0].friction.n))) > 1e-3
    assert _max_diff(got, want) == 0.0


def test_whole_runs_and_gradients_agree_with_the_xla_stage():
    """A whole SSP-RK2 run with Manning friction over a bump (CFL steps, 23 of them) and
    the gradient of a loss after it with respect to n and the bed: the kernel's run equals
    XLA's to round-off, and so does the gradient with respect to n. The gradient with
    respect to the bed is only as well defined as the scheme is smooth: the limiter and the
    Riemann solver have kinks, and which side of a kink a value falls on changes with its
    last bits. Measured: XLA's own bed gradient moves by 7.5e-3 (of 0.75) when the bed is
    perturbed by 1e-15, the kernel's differs from XLA's by 2.6e-4; the test asks for no more
    than XLA's own round-off sensitivity."""
    grid = swe.Grid(nx=20, ny=16, x=(0.0, 2.0), y=(0.0, 1.6))
    x, y = grid.cell_centers()
    bump = 0.2 * jnp.exp(-((x - 1.0) ** 2 + (y - 0.8) ** 2) / 0.1)

    def run(n, bed, kernel):
        h = 0.3 + 0.1 * jnp.exp(-((x - 0.5) ** 2 + (y - 0.6) ** 2) / 0.05) - bed
        model = swe.ShallowWater(grid, bed=bed, friction=swe.Manning(n),
                                 boundaries=swe.Boundaries(east=swe.Outflow()),
                                 scheme=swe.FiniteVolume(kernel=kernel))
        state = swe.State(h=h, hu=0.2 * h, hv=0.05 * h * (1.5 + jnp.sin(3.0 * x)))
        return swe.simulate(model, state, 0.5, envelopes=False)

    def loss(n, bed, kernel):
        final = run(n, bed, kernel).final
        return jnp.sum(final.h**2) + jnp.sum(final.hu**2)

    xla, kernel = (run(0.03, bump, k) for k in ("xla", "pallas-interpret"))
    assert int(xla.num_steps) == int(kernel.num_steps) > 20
    assert _max_diff(xla.final, kernel.final) < 1e-13
    grad = jax.jit(jax.grad(loss, argnums=(0, 1)), static_argnums=2)
    g_xla, g_kernel = grad(0.03, bump, "xla"), grad(0.03, bump, "pallas-interpret")
    g_nudged = grad(0.03, bump + 1e-15 * jnp.sin(7.0 * x), "xla")
    assert abs(float(g_xla[0])) > 0.1
    np.testing.assert_allclose(g_kernel[0], g_xla[0], rtol=1e-10)
    sensitivity = float(jnp.max(jnp.abs(g_nudged[1] - g_xla[1])))
    assert float(jnp.max(jnp.abs(g_kernel[1] - g_xla[1]))) <= sensitivity < 0.05


def test_runs_carry_their_state_in_the_kernels_layout():
    """A run that takes the kernel carries its state as :class:`swe.tpu_stage.BlockLayout` (padded
    once, inside the compiled solve) and gives XLA's run: forward Euler (one stage from
    and to the layout; SSP-RK2 and RK3 runs: the gradient test and the chained stages'
    test) with a time-dependent inflow, on 12 rows (one block of 16: the band below the
    interior is wider than its ghost rows), frames saved at three times as plain states,
    envelopes tracked, also run frame by frame (``iterate`` from ``swe.simulate``), and
    an ensemble of two members (vmapped; a steady inflow). The term's vector field on such
    a carry is the state's tendency in the carry's structure."""
    grid = swe.Grid(nx=14, ny=12, x=(0.0, 1.4), y=(0.0, 1.2))
    x, y = grid.cell_centers()
    h = 0.3 + 0.1 * jnp.exp(-((x - 0.5) ** 2 + (y - 0.6) ** 2) / 0.05)

    def model(kernel, n=0.03, inflow=lambda t: 0.05 + 0.2 * t):
        return swe.ShallowWater(grid, friction=swe.Manning(n), boundaries=swe.Boundaries(
            west=swe.Inflow(inflow), east=swe.Outflow()),
            scheme=swe.FiniteVolume(kernel=kernel))

    state = swe.State(h=h, hu=0.1 * h, hv=0.05 * h * jnp.sin(3.0 * x))
    carry = tpu_stage.to_block_layout(model("pallas-interpret"), 0.0, state, model("xla").padded_beds())
    assert carry.block_rows == 16 and carry.h.shape == (2 * tpu_stage.CHAINED_HALO + 16, 128)
    xla, kernel = (swe.simulate(model(k), state, 0.1, save_at=[0.03, 0.06, 0.1],
                                integrator="euler") for k in ("xla", "pallas-interpret"))
    assert int(xla.num_steps) == int(kernel.num_steps) > 3
    assert kernel.states.h.shape == (3, 12, 14)
    assert _max_diff((xla.states, xla.envelopes), (kernel.states, kernel.envelopes)) < 1e-13
    frames = list(iterate(model("pallas-interpret"), state, 0.1, save_at=[0.03, 0.06, 0.1],
                          integrator="euler"))
    assert _max_diff(frames[-1].state, kernel.final) < 1e-13
    members = [model(k, n, 0.05) for k in ("xla", "pallas-interpret") for n in (0.02, 0.04)]
    runs = [swe.simulate_ensemble(members[i:i + 2], state, 0.03, envelopes=False).results
            for i in (0, 2)]
    assert _max_diff([r.final for r in runs[0]], [r.final for r in runs[1]]) < 1e-13
    m = model("pallas-interpret")
    d = jax.jit(lambda y: swe.stepping.ShallowWaterTerm(m).vf(0.1, y, m.padded_beds()))(carry)
    want = jax.jit(lambda s: m.tendency(0.1, s, m.padded_beds()))(state)
    assert isinstance(d, tpu_stage.BlockLayout) and float(jnp.max(jnp.abs(d.bed))) == 0.0
    # Its interior is a State of rates, not refused for a negative dh/dt outside jit.
    assert _max_diff(d.interior, want) < 1e-14 and float(jnp.min(d.interior.h)) < 0.0
    assert float(jnp.max(jnp.abs(want.h))) > 0.0


def test_the_kernel_choice(monkeypatch):
    """``kernel`` is validated; "auto" and "xla" stay with XLA on a CPU, and "auto" on a TPU
    below :data:`swe.stages.AUTO_MIN_CELLS`; "pallas" refuses a CPU backend and a model it
    does not cover, naming why. The backend the choice sees is set here, so the test means
    the same on a CPU, GPU or TPU runner."""
    with pytest.raises(ValueError, match=r"kernel='cuda' is not supported.*'auto'"):
        swe.FiniteVolume(kernel="cuda")
    model, state = bench.problem(16)
    beds = model.padded_beds()
    monkeypatch.setattr(jax, "default_backend", lambda: "tpu")
    assert stage_kernel(model, beds) == "xla"  # 16^2 cells
    monkeypatch.setattr(jax, "default_backend", lambda: "cpu")
    assert stage_kernel(model, beds) == "xla"
    for kernel, want in (("xla", "xla"), ("auto", "xla"),
                         ("pallas-interpret", "pallas-interpret")):
        m = swe.ShallowWater(model.grid, scheme=swe.FiniteVolume(kernel=kernel))
        assert stage_kernel(m, beds) == want
        assert stage_kernel(m, beds, predictor=True) == "xla"  # MUSCL-Hancock sweeps
        jaxpr = str(jax.make_jaxpr(lambda s: steps.euler_step(m, 0.0, s, 0.01, beds))(state))
        assert ("pallas_call" in jaxpr) == (want != "xla")
    m = swe.ShallowWater(model.grid, scheme=swe.FiniteVolume(kernel="pallas"))
    with pytest.raises(ValueError, match=r"kernel='pallas' needs a TPU \(the backend is 'cpu'\)"):
        steps.euler_step(m, 0.0, state, 0.01, beds)
    refused = [
        (swe.FiniteVolume(kernel="pallas-interpret", limiter="thinc-bvd"), {}, "thinc-bvd"),
    ]
    for scheme, kwargs, why in refused:
        m = swe.ShallowWater(model.grid, scheme=scheme, **kwargs)
        with pytest.raises(ValueError, match=f"kernel='pallas-interpret' cannot run .*{why}"):
            steps.euler_step(m, 0.0, state, 0.01, m.padded_beds())
    channel = swe.ShallowWater(swe.Grid(nx=16, ny=1, x=(0.0, 1.0), y=(0.0, 0.1)),
                               scheme=swe.FiniteVolume(kernel="pallas-interpret"))
    with pytest.raises(ValueError, match="one swept direction"):
        steps.euler_step(channel, 0.0, swe.State(h=jnp.ones((1, 16)), hu=jnp.zeros((1, 16)),
                                          hv=jnp.zeros((1, 16))), 0.01, channel.padded_beds())
    with pytest.raises(ValueError, match="block_rows=12 is invalid"):
        tpu_stage.euler_step(model, 0.0, state, 0.01, beds, block_rows=12, interpret=True)
    with pytest.raises(ValueError, match="halo=2 is invalid; expected a multiple of 4"):
        tpu_stage.euler_step(model, 0.0, state, 0.01, beds, halo=2, interpret=True)
    stages = swe.stepping.SSPRK2.stages
    with pytest.raises(ValueError, match="halo=4 is invalid; expected a multiple of 8"):
        tpu_stage.ssp_step(model, 0.0, state, 0.01, beds, stages, halo=4, interpret=True)
    with pytest.raises(ValueError, match="block_rows=12 is invalid"):
        tpu_stage.ssp_step(model, 0.0, state, 0.01, beds, stages, block_rows=12, interpret=True)


def test_block_rows_fit_the_window_budget_and_the_grid():
    for ny, width, itemsize in ((2048, 2176, 4), (4096, 4224, 4), (1024, 1152, 8),
                                (40, 1152, 4), (5, 256, 4), (8192, 1280, 4), (56, 256, 4),
                                (100, 256, 4), (1536, 1664, 4)):
        rows = tpu_stage.block_rows_for(ny, width, itemsize)
        assert rows in tpu_stage.BLOCK_ROWS_CHOICES
        assert rows == 8 or (rows + 2 * tpu_stage.HALO) * width * itemsize <= tpu_stage.WINDOW_BYTES
        assert rows == 8 or rows <= -(-ny // 8) * 8
        fits = [c for c in tpu_stage.BLOCK_ROWS_CHOICES
                if (c + 2 * tpu_stage.HALO) * width * itemsize <= tpu_stage.WINDOW_BYTES
                and c <= -(-ny // 8) * 8]

        def computed(c):  # rows computed in all: blocks times their windows' rows
            return -(-ny // c) * (c + 2 * tpu_stage.HALO)
        assert not fits or computed(rows) == min(computed(c) for c in fits)
    # The shapes measured best on a TPU v5e: 128 rows at N = 2048, 48 at 4096.
    assert tpu_stage.block_rows_for(2048, 2176, 4) == 128
    assert tpu_stage.block_rows_for(4096, 4224, 4) == 48
    # 24 full-width rows at 8192 (quicker than column blocks); column blocks from 8313
    # cells (the full-width layout would be 8448 wide).
    assert tpu_stage.block_shape(8192, 8192, 4) == (24, None)
    assert tpu_stage.block_shape(64, 8312, 4)[1] is None
    assert tpu_stage.block_shape(64, 8313, 4)[1] == tpu_stage.BLOCK_COLS
    # Not the tallest block that fits where it pads the grid (56 rows: 48-row blocks
    # would compute 112 rows, 32-row blocks 80).
    assert tpu_stage.block_rows_for(56, 256, 4) == 32
    assert tpu_stage.block_rows_for(100, 256, 4) == 64


def _assert_kernel_printed_without_64_bit_values(capsys):
    """What the kernels printed since the last read (``pallas_call(debug=True)``: their
    jaxprs and Mosaic modules) holds a kernel and no 64-bit value."""
    printed = capsys.readouterr().out
    assert "func.func @_kernel" in printed
    assert "f64" not in printed and not re.search(r"arith\.\w+ .*: i64", printed)


def test_the_kernel_lowers_for_a_tpu(monkeypatch, capsys):
    """Pallas to Mosaic for a TPU (``jax.export``, no chip needed), float32, full-width rows
    (8 and 4 halo rows) and column blocks, with and without friction, forcing and
    inflows; with x64 on (as here), the kernels' Mosaic modules hold no 64-bit value (on a
    TPU v5e the kernel compiler aborts the process on float64 constants, which Python
    numbers become with x64 on)."""
    monkeypatch.setattr(tpu_stage.pl, "pallas_call",
                        functools.partial(tpu_stage.pl.pallas_call, debug=True))
    model, state = bench.problem(64)
    busy_model = swe.ShallowWater(
        model.grid, bed=model.bed, friction=swe.Manning(jnp.full((64, 64), 0.03)),
        coriolis=swe.BetaPlane(1e-4), sources=(swe.Rain(1e-5),),
        boundaries=swe.Boundaries(west=swe.Inflow(0.1), north=swe.Inflow(lambda t: 0.1 * t)))
    state32 = jax.tree.map(lambda a: a.astype(jnp.float32), state)
    for m, cols, halo in ((model, None, 8), (model, 128, 8), (model, None, 4),
                          (busy_model, None, 8), (busy_model, 128, 8)):
        beds32 = jax.tree.map(lambda a: a.astype(jnp.float32), m.padded_beds())
        stage = jax.jit(lambda s: tpu_stage.euler_step(
            m, 0.0, s, jnp.float32(1e-3), beds32, block_cols=cols, halo=halo))
        lowered = jax.export.export(stage, platforms=["tpu"])(state32).mlir_module()
        assert "tpu_custom_call" in lowered
        _assert_kernel_printed_without_64_bit_values(capsys)


def test_vmapped_kernel_equals_vmapped_xla_and_lowers_for_a_tpu(monkeypatch, capsys):
    """Ensembles: an SSP-RK2 step (chained stages, from and to the kernel's layout as runs
    take it) vmapped over Manning's n (a batched SMEM scalar) and over the state equals
    XLA's vmapped the same way (interpret mode), and lowers for a TPU (the scalars are one
    row so that a batched block still spans the array's last two dimensions, as Mosaic
    requires)."""
    model, state = _bump(friction=swe.Manning(0.03))
    beds = model.padded_beds()
    ns = jnp.array([0.01, 0.03, 0.05])
    states = jax.tree.map(lambda a: jnp.stack([a, 1.01 * a, 0.99 * a]), state)

    def stage(n, s, kernel, dtype=jnp.float64):
        m = swe.ShallowWater(model.grid, bed=model.bed.astype(dtype), friction=swe.Manning(n),
                             boundaries=model.boundaries,
                             scheme=swe.FiniteVolume(kernel=kernel))
        b = jax.tree.map(lambda a: a.astype(dtype), beds)
        stages = swe.stepping.SSPRK2.stages
        if kernel == "xla":
            return steps.ssp_step(m, 0.0, s, dtype(0.01), b, stages)
        carry = tpu_stage.to_block_layout(m, 0.0, s, b)  # as a run carries it
        return tpu_stage.ssp_step(m, 0.0, carry, dtype(0.01), b, stages,
                               interpret=kernel != "pallas").interior

    want = jax.vmap(functools.partial(stage, kernel="xla"))(ns, states)
    got = jax.vmap(functools.partial(stage, kernel="pallas-interpret"))(ns, states)
    assert _max_diff(got, want) < 1e-14
    monkeypatch.setattr(tpu_stage.pl, "pallas_call",
                        functools.partial(tpu_stage.pl.pallas_call, debug=True))
    capsys.readouterr()
    lowered = jax.export.export(
        jax.jit(jax.vmap(functools.partial(stage, kernel="pallas", dtype=jnp.float32))),
        platforms=["tpu"])(ns.astype(jnp.float32),
                           jax.tree.map(lambda a: a.astype(jnp.float32), states))
    assert "tpu_custom_call" in lowered.mlir_module()
    _assert_kernel_printed_without_64_bit_values(capsys)


def test_split_integrators_always_take_xlas_stage():
    """:data:`swe.stages.SPLIT_INTEGRATORS` names exactly the split integrators of
    :data:`swe.stepping.INTEGRATORS`, and a run with one of them takes XLA's stage (its
    MUSCL-Hancock sweeps) whatever ``kernel`` says; the others take the kernel's."""
    split = {name for name, solver in INTEGRATORS.items() if issubclass(solver, SplitHancock)}
    assert split == SPLIT_INTEGRATORS == {"split", "strang"}
    model = swe.ShallowWater(swe.Grid(nx=16, ny=16, x=(0.0, 1.0), y=(0.0, 1.0)),
                             scheme=swe.FiniteVolume(kernel="pallas-interpret"))
    for name in INTEGRATORS:
        want = "xla" if name in split else "pallas-interpret"
        assert stage_kernel_for_run(model, name) == want
        assert stage_kernel_for_run(model, name.upper()) == want


def test_auto_takes_the_kernel_for_models_it_covers_on_large_grids(monkeypatch):
    """On a TPU (the backend faked) ``kernel="auto"`` takes the kernel from 1536^2 cells for
    every model it covers (friction, forcing and inflows too), and XLA's stage below that
    size, for THINC-BVD and for 1-D channels."""
    monkeypatch.setattr(jax, "default_backend", lambda: "tpu")
    grid = swe.Grid(nx=1536, ny=1536, x=(0.0, 1.0), y=(0.0, 1.0))
    small = swe.Grid(nx=1024, ny=1024, x=(0.0, 1.0), y=(0.0, 1.0))
    assert AUTO_MIN_CELLS == 1536 * 1536

    def choice(grid=grid, **kwargs):
        model = swe.ShallowWater(grid, **kwargs)
        return stage_kernel(model, model.padded_beds())

    assert choice() == "pallas"
    assert choice(boundaries=swe.Boundaries(east=swe.Outflow(), north=swe.Stage(1.0))) == "pallas"
    assert choice(small) == "xla"
    for kwargs in (dict(friction=swe.Manning(0.03)), dict(coriolis=swe.BetaPlane(1e-4)),
                   dict(wind=swe.WindStress(0.1, 0.0)), dict(sources=(swe.Rain(1e-6),)),
                   dict(boundaries=swe.Boundaries(west=swe.Inflow(1.0)))):
        assert choice(**kwargs) == "pallas", kwargs
        assert choice(small, **kwargs) == "xla", kwargs
    assert choice(scheme=swe.FiniteVolume(limiter="thinc-bvd")) == "xla"
    channel = swe.Grid(nx=1536 * 1536, ny=1, x=(0.0, 1.0), y=(0.0, 1.0))
    assert choice(channel) == "xla"


def test_check_stage_kernels_script_compares_scenarios(capsys):
    """scripts/check_stage_kernels.py (run by gpu_bench.sh on a TPU) on small grids in
    interpret mode: the river flood (Manning zones, an inflow profile), geostrophic
    adjustment (Coriolis) and Thacker's bowl take the same steps with both kernels and
    end within round-off of each other (measured: relative L1 of h below 2e-16)."""
    import json
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    import check_stage_kernels

    assert check_stage_kernels.main(["--interpret", "--scale", "0.03", "--t-fraction",
                                     "0.05", "--precision", "float64"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["scenario"] for r in records] == ["river_flood", "geostrophic_adjustment",
                                                 "thacker_bowl"]
    for r in records:
        assert r["steps_xla"] == r["steps_pallas"] > 5, r
        # Round-off of depths up to 1e3 m (measured: at most 4.5e-13 m).
        assert r["rel_l1_diff_h"] < 1e-13 and r["max_abs_diff_h"] < 1e-11, r
        assert r["mass_pallas"] == pytest.approx(r["mass_xla"], rel=1e-13)

"""The worked examples of docs/extending.md, run from the page itself so that they cannot
drift: each section's ``python`` blocks are executed in order, a block with a title
(``title="storm.py"``) as the module of that name a user's script imports, a block without
one as that script (one namespace per section), and what a block prints must be what the
page says it prints. Blocks titled with a path of the package (``swe/...``) show an edit
to the package and are not run. The tests then check the classes the page defines: a flux
passed to the scheme directly, a forcing and a boundary condition, on one device and on a
mesh of the fake CPU devices conftest makes."""

import contextlib
import io
import re
import sys
import types
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import swe

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "extending.md"
FENCE = re.compile(r'^```(\w+)(?: title="([^"]+)")?\n(.*?)^```$', re.S | re.M)
INLINE = re.compile(r"`([^`\n]+)`")


def _sections() -> dict[str, str]:
    parts = re.split(r"^## ", PAGE.read_text(encoding="utf-8"), flags=re.M)
    return {part.split("\n", 1)[0].strip(): part for part in parts[1:]}


class Section:
    """A section of the page, run: ``modules`` (its titled blocks, by module name),
    ``runs`` (per untitled block: what it printed, the page's text up to the next python
    block, and its namespace afterwards) and ``namespace`` (the script's, at the end)."""

    def __init__(self, title: str):
        text = _sections()[title]
        blocks = [m for m in FENCE.finditer(text) if m.group(1) == "python"]
        assert blocks, f"no python blocks under '## {title}'"
        self.modules, self.runs, self.namespace = {}, [], {"__name__": "__main__"}
        saved = {}
        sys.path.insert(0, str(ROOT))  # `from validation.stoker import ...`, as from the root
        try:
            for k, block in enumerate(blocks):
                _, file, code = block.groups()
                if file and file.startswith("swe/"):
                    continue
                if file:
                    name = Path(file).stem
                    saved.setdefault(name, sys.modules.get(name))
                    module = sys.modules[name] = types.ModuleType(name)
                    exec(compile(code, file, "exec"), module.__dict__)
                    self.modules[name] = module
                    continue
                out = io.StringIO()
                with contextlib.redirect_stdout(out):
                    exec(compile(code, f"{PAGE.name} ({title}, block {k})", "exec"),
                         self.namespace)
                end = blocks[k + 1].start() if k + 1 < len(blocks) else len(text)
                self.runs.append((out.getvalue(), text[block.end():end], dict(self.namespace)))
        finally:
            sys.path.remove(str(ROOT))
            for name, module in saved.items():
                if module is None:
                    sys.modules.pop(name, None)
                else:
                    sys.modules[name] = module

    def check_prints(self):
        """Each block that prints: its output is the ``text`` block after it, or (one line)
        an inline code span there."""
        printed = [(out, after) for out, after, _ in self.runs if out]
        assert printed
        for out, after in printed:
            quoted = [m.group(3).strip() for m in FENCE.finditer(after) if m.group(1) == "text"]
            quoted += INLINE.findall(after)
            assert out.strip() in quoted, (
                f"the page says it prints one of {quoted}; it printed:\n{out}")


@pytest.fixture(scope="module")
def riemann():
    return Section("A Riemann solver")


@pytest.fixture(scope="module")
def forcing():
    return Section("A forcing")


@pytest.fixture(scope="module")
def boundary():
    return Section("A boundary condition")


def _max_rel_diff(a, b):
    return max(float(np.abs(np.asarray(x) - np.asarray(y)).max() / max(np.abs(x).max(), 1e-300))
               for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))


def _assert_mesh_equals_single(model, state0, t_end, mesh):
    ref = swe.simulate(model, state0, t_end, save_at=t_end / 2)
    r = swe.simulate(model, state0, t_end, save_at=t_end / 2, mesh=mesh)
    assert int(r.num_steps) == int(ref.num_steps)
    assert _max_rel_diff(r.states, ref.states) < 1e-13
    return ref


# --- a Riemann solver ------------------------------------------------------------------


def test_riemann_example_prints_the_errors_the_page_quotes(riemann):
    riemann.check_prints()


def test_a_flux_passed_directly_is_the_schemes_and_consistent(riemann):
    flux = riemann.modules["fluxes"].central_upwind
    scheme = swe.FiniteVolume(riemann=flux)
    assert scheme.riemann_fn is flux and scheme.riemann_name == "fluxes.central_upwind"
    from swe.riemann import physical_flux

    h = jnp.array([0.0, 1e-3, 0.5, 2.0, 2.0, 7.0])
    un = jnp.array([0.0, 0.2, -1.5, 0.0, 9.0, -12.0])  # sub- and supercritical, both ways
    ut = jnp.array([0.0, -0.3, 0.7, 1.0, -2.0, 0.5])
    got = jax.vmap(flux, in_axes=(0, 0, 0, 0, 0, 0, None))(h, un, ut, h, un, ut, 9.81)
    want = physical_flux(h, un, ut, 9.81)
    for g_, w_ in zip(got, want):
        np.testing.assert_allclose(np.asarray(g_), np.asarray(w_), rtol=1e-14, atol=1e-300)
    assert all(float(f) == 0.0 for f in flux(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 9.81))  # both dry


def test_a_lake_at_rest_stays_at_rest_with_the_flux(riemann):
    grid = swe.Grid(nx=100, x=(0.0, 100.0))
    x = np.asarray(grid.xc)
    bed = (0.8 * np.exp(-((x - 50.0) / 10.0) ** 2) - 1.0)[None, :]
    scheme = swe.FiniteVolume(riemann=riemann.modules["fluxes"].central_upwind)
    model = swe.ShallowWater(grid, bed=bed, scheme=scheme)
    r = swe.simulate(model, swe.State.from_surface(model, eta=0.0), t_end=20.0)
    assert float(np.abs(np.asarray(r.final.h) + bed).max()) <= 2e-15
    assert float(np.abs(np.asarray(r.final.hu)).max()) <= 2e-15


# --- a forcing ---------------------------------------------------------------------------


def test_forcing_example_prints_the_figures_the_page_quotes(forcing):
    forcing.check_prints()


def test_the_storm_brings_its_rain_and_momentum(forcing):
    (_, _, ns), (_, _, ns_friction) = forcing.runs
    storm, grid, r = ns["storm"], ns["grid"], ns["r"]
    area_time = np.pi * storm.radius**2 * 1200.0  # the whole cell lies inside the domain
    volume = float(r.final.mass(grid) - ns["state0"].mass(grid))
    np.testing.assert_allclose(volume, float(storm.rain) * area_time, rtol=1e-5)
    momentum = float(r.final.hu.sum()) * grid.cell_area
    np.testing.assert_allclose(momentum, float(storm.tau_x) / 1000.0 * area_time, rtol=1e-5)
    assert abs(float(r.final.hv.sum())) * grid.cell_area < 1e-9 * momentum  # symmetric in y
    # With friction: the same rain, less momentum.
    rf = ns_friction["r"]
    np.testing.assert_allclose(float(rf.final.mass(grid) - ns["state0"].mass(grid)), volume,
                               rtol=1e-9)  # of a total of 2e8 m^3
    damped = float(rf.final.hu.sum()) * grid.cell_area
    assert 0.2 * momentum < damped < 0.95 * momentum


def test_the_storms_rates_at_known_cells(forcing):
    MovingStorm = forcing.modules["storm"].MovingStorm
    grid = swe.Grid(nx=16, ny=16, x=(0.0, 1600.0), y=(0.0, 1600.0))
    # The centre starts at cell (j, i) = (8, 3)'s centre and moves 2 cells east in 100 s.
    storm = MovingStorm(rain=1e-5, tau_x=0.3, tau_y=-0.4, radius=200.0, x0=350.0, y0=850.0,
                        cx=2.0, cy=0.0)
    h = np.full(grid.shape, 2.0)
    h[8, 4] = 0.0  # a dry cell 100 m from the centre at t = 0
    model = swe.ShallowWater(grid, bed=-2.0, forcings=[storm])
    state = swe.State(h=h, hu=0.0, hv=0.0)
    dh, dhu, dhv = (np.asarray(a) for a in storm.rates(0.0, state, model))
    assert dh.shape == dhu.shape == dhv.shape == grid.shape
    assert dh[8, 3] == pytest.approx(1e-5, rel=1e-14)
    assert (dhu[8, 3], dhv[8, 3]) == pytest.approx((0.3e-3, -0.4e-3), rel=1e-14)
    assert dh[8, 5] == pytest.approx(1e-5 * np.exp(-1.0), rel=1e-14)  # 200 m: one radius
    assert dh[8, 4] == pytest.approx(1e-5 * np.exp(-0.25), rel=1e-14)  # rain on a dry cell,
    assert dhu[8, 4] == dhv[8, 4] == 0.0                                # no wind stress
    dh, dhu, _ = (np.asarray(a) for a in storm.rates(100.0, state, model))
    assert dh[8, 5] == pytest.approx(1e-5, rel=1e-14) and dh.argmax() == 8 * 16 + 5
    assert dhu[8, 5] == pytest.approx(0.3e-3, rel=1e-14)


def test_the_storm_and_the_friction_law_check_their_arguments(forcing):
    MovingStorm = forcing.modules["storm"].MovingStorm
    DarcyWeisbach = forcing.namespace["DarcyWeisbach"]
    grid = swe.Grid(nx=8, ny=8, x=(0.0, 800.0), y=(0.0, 800.0))
    with pytest.raises(ValueError, match="radius=0.0 is invalid"):
        MovingStorm(1e-5, 0.1, 0.0, 0.0, 100.0, 100.0, 1.0, 0.0)
    off = MovingStorm(1e-5, 0.1, 0.0, 100.0, 900.0, 100.0, 1.0, 0.0)
    with pytest.raises(ValueError, match=r"point \(900.0, 100.0\) is outside the grid"):
        swe.ShallowWater(grid, bed=-1.0, forcings=[off])
    with pytest.raises(ValueError, match=r"f has shape \(4, 4\); expected a number or an "
                                         r"array of the grid's shape \(8, 8\)"):
        swe.ShallowWater(grid, bed=-1.0, friction=DarcyWeisbach(np.full((4, 4), 0.05)))
    with pytest.raises(ValueError, match="at most one"):
        swe.ShallowWater(grid, bed=-1.0, friction=DarcyWeisbach(0.05),
                         forcings=[swe.Manning(0.03)])


def test_the_storm_on_a_mesh_equals_the_single_device_run(forcing):
    MovingStorm = forcing.modules["storm"].MovingStorm
    DarcyWeisbach = forcing.namespace["DarcyWeisbach"]
    grid = swe.Grid(nx=16, ny=16, x=(0.0, 1600.0), y=(0.0, 1600.0))
    X, Y = (np.asarray(a) for a in grid.cell_centers())
    # The storm crosses the blocks' edges; a field coefficient is split with the grid.
    storm = MovingStorm(rain=2e-4, tau_x=0.8, tau_y=0.3, radius=250.0, x0=500.0, y0=600.0,
                        cx=4.0, cy=2.0)
    f = 0.02 + 0.06 * (X > 800.0) + 0.01 * (Y > 1200.0)
    model = swe.ShallowWater(grid, bed=-3.0 + 0.001 * X, friction=DarcyWeisbach(f),
                             forcings=[storm])
    state0 = swe.State.from_surface(model, eta=0.0)
    ref = _assert_mesh_equals_single(model, state0, 120.0, "2x2")
    assert float(ref.mass()[-1] - ref.mass()[0]) > 10.0  # it rained
    assert float(np.abs(np.asarray(ref.final.hu)).max()) > 1e-3  # and the wind pushed


# --- a boundary condition ----------------------------------------------------------------


def test_boundary_example_prints_the_figures_the_page_quotes(boundary):
    boundary.check_prints()


def test_the_open_sea_lets_the_waves_and_the_hump_out(boundary):
    out = next(out for out, _, _ in boundary.runs if out)
    line = re.compile(r"^(.+): \|eta\| <= (\S+) m, volume (\S+) m\^3$", re.M)
    figures = {name: (float(eta), float(volume)) for name, eta, volume in line.findall(out)}
    assert set(figures) == {"open sea", "stage", "wall"}
    hump = 0.1 * np.sqrt(np.pi) * 500.0 * 50.0  # m^3: dy = dx = 50 m
    eta, volume = figures["open sea"]
    assert eta < 1e-5 and volume == pytest.approx(-hump, abs=1.0)
    eta, volume = figures["stage"]
    assert eta > 0.04 and volume == pytest.approx(-2 * hump, rel=0.01)
    eta, volume = figures["wall"]
    assert eta > 0.04 and volume == 0.0


def test_a_lake_at_rest_at_the_sea_level_stays_at_rest(boundary):
    OpenSea = boundary.modules["open_sea"].OpenSea
    grid = swe.Grid(nx=16, ny=16, x=(0.0, 1600.0), y=(0.0, 1600.0))
    X, Y = (np.asarray(a) for a in grid.cell_centers())
    bed = -5.0 + 3.0 * np.exp(-((X - 900.0) ** 2 + (Y - 800.0) ** 2) / 250.0**2)
    sea = OpenSea(0.5)
    model = swe.ShallowWater(grid, bed=bed, boundaries=swe.Boundaries(sea, sea, sea, sea))
    r = swe.simulate(model, swe.State.from_surface(model, eta=0.5), t_end=60.0)
    assert float(np.abs(np.asarray(r.final.h) + bed - 0.5).max()) < 1e-13
    assert float(np.abs(np.asarray(r.final.hu)).max()) < 1e-13
    assert float(np.abs(np.asarray(r.final.hv)).max()) < 1e-13


def test_a_profile_of_the_wrong_length_is_refused_naming_the_field(boundary):
    OpenSea = boundary.modules["open_sea"].OpenSea
    grid = boundary.namespace["bay"]
    with pytest.raises(ValueError, match="west boundary level has length 5; expected a "
                                         "number or 64 values along the west edge"):
        swe.ShallowWater(grid, bed=-10.0, boundaries=swe.Boundaries(west=OpenSea(np.zeros(5))))
    with pytest.raises(ValueError, match="level="):
        OpenSea("high")
    small = swe.Grid(nx=8, ny=8, x=(0.0, 800.0), y=(0.0, 800.0))
    model = swe.ShallowWater(small, bed=-10.0, boundaries=swe.Boundaries(
        south=OpenSea(lambda t: jnp.zeros(5))))  # a function: checked while tracing
    with pytest.raises(ValueError, match=r"level\(t\) returned an array of shape \(5,\)"):
        swe.simulate(model, swe.State.from_surface(model, eta=0.0), t_end=1.0)


def test_the_pages_tide_along_the_edge_runs_on_a_mesh_as_on_one_device(boundary):
    bay, west = boundary.namespace["bay"], boundary.namespace["west"]
    model = swe.ShallowWater(bay, bed=-10.0, boundaries=swe.Boundaries(west=west))
    state0 = swe.State.from_surface(model, eta=0.0)
    ref = _assert_mesh_equals_single(model, state0, 60.0, "2x2")
    assert abs(float(ref.mass()[-1] - ref.mass()[0])) > 1e3  # the tide moved water
    # ... along the edge with its phase: the southern and northern rows differ.
    h = np.asarray(ref.final.h)
    assert abs(h[0, 0] - h[-1, 0]) > 1e-3

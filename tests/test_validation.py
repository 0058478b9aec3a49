"""The validation suite in quick mode (coarse grids): every case meets its thresholds.

The full-resolution run is `swe validate`, whose report is committed in
validation/REPORT.md.
"""

import pytest

from validation.report import CASES, run_case, write_report


# The simulation-based calibration study runs NUTS on a batch of replicates for minutes
# even in quick mode; the suite checks the sampler's calibration where the posterior is
# exact instead (test_calibration.py).
@pytest.mark.parametrize("name", [c for c in CASES if c != "calibration_sbc"])
def test_validation_case_passes_quick(name, tmp_path):
    result = run_case(name, quick=True, outdir=tmp_path)
    failed = [f"{c.name} = {c.value:.4g} ({c.bound})" for c in result.checks if not c.passed]
    assert result.checks, "a case must check something"
    assert not failed, f"{name}: {failed}\n{result.notes}"
    assert result.figures and all(f.exists() and f.stat().st_size < 300_000
                                  for f in result.figures)
    report = write_report([result], tmp_path / "REPORT.md", quick=True)
    text = report.read_text()
    assert f"## {result.title}: PASS" in text and "| check | value | threshold | result |" in text


def test_validate_with_another_scheme_writes_its_own_report(tmp_path):
    """``swe validate --integrator split --riemann roe --limiter mc``: every run of a case
    uses that scheme (the split scheme's steps differ), the report says so, and
    ``swe.simulate`` is itself again afterwards."""
    import swe
    from validation.report import validate

    original = swe.simulate
    report = tmp_path / "report.md"
    [own] = validate(["lake_at_rest"], quick=True, report=tmp_path / "own.md",
                     outdir=tmp_path, echo=lambda *a: None)
    [split] = validate(["lake_at_rest"], quick=True, report=report, outdir=tmp_path,
                       echo=lambda *a: None, integrator="split", riemann="roe", limiter="mc")
    assert swe.simulate is original
    assert own.passed and split.passed
    assert own.rows != split.rows
    text = report.read_text()
    assert "--integrator split --riemann roe --limiter mc" in text
    with pytest.raises(ValueError, match="integrator='rk4' is not supported"):
        validate(["lake_at_rest"], quick=True, report=report, integrator="rk4")


def test_only_the_whole_full_run_writes_the_committed_report(tmp_path):
    """A quick or partial ``swe validate`` (or one with another scheme) must not replace
    the committed validation/REPORT.md or its figures."""
    from validation.report import FIGURES, HERE, report_paths

    assert report_paths(CASES, False, {}) == (HERE / "REPORT.md", FIGURES)
    assert report_paths(list(reversed(CASES)), False, {}) == (HERE / "REPORT.md", FIGURES)
    assert report_paths(CASES, True, {}) == (HERE / "REPORT-quick.md", HERE / "figures-quick")
    assert report_paths(["stoker"], False, {}) == (HERE / "REPORT-partial.md",
                                                   HERE / "figures-partial")
    assert report_paths(["stoker"], True, {"limiter": "mc"}) == (
        HERE / "REPORT-mc-partial-quick.md", HERE / "figures-mc-partial-quick")
    # A report named elsewhere keeps its figures beside it, not in validation/figures/.
    assert report_paths(CASES, False, {}, tmp_path / "R.md") == (tmp_path / "R.md",
                                                                 tmp_path / "figures-R")
    assert report_paths(CASES, True, {}, HERE / "REPORT.md")[1] == HERE / "figures-quick"


def test_case_texts_name_the_forced_scheme():
    """Under a forced scheme the cases' set-up texts name it, not swe's default."""
    from validation.common import default_scheme
    from validation.report import scheme_override

    assert default_scheme() == "MUSCL-Koren, HLLC, SSP-RK2, CFL 0.45"
    with scheme_override(integrator="strang", riemann="roe", limiter="mc"):
        assert default_scheme() == "MUSCL-MC, ROE, Strang-split MUSCL-Hancock, CFL 0.9"
    assert default_scheme() == "MUSCL-Koren, HLLC, SSP-RK2, CFL 0.45"

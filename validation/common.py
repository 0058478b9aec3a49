"""Shared machinery of the validation cases: errors, fitted orders, tables, figures.

Each case is a module ``validation/<name>.py`` with

* ``TITLE`` (str) and ``run(quick: bool = False, outdir: Path = FIGURES) -> CaseResult``;
* a ``__main__`` block calling :func:`main`, so ``python validation/<name>.py [--quick]``
  prints its table, saves its figures and exits non-zero if a threshold is missed.

``swe validate`` runs them all and writes ``validation/REPORT.md`` from the results.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
FIGURES = HERE / "figures"


@dataclasses.dataclass
class Check:
    """One threshold: what is measured, its value, the bound, and whether it holds."""

    name: str
    value: float
    bound: str
    passed: bool


@dataclasses.dataclass
class CaseResult:
    """What a case reports: set-up and reference text, an error table, checks, figures."""

    name: str
    title: str
    setup: str
    reference: str
    columns: list[str]
    rows: list[list]
    checks: list[Check]
    figures: list[Path] = dataclasses.field(default_factory=list)
    notes: str = ""
    seconds: float = float("nan")

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    def table(self) -> str:
        """The error table as Markdown."""
        head = "| " + " | ".join(self.columns) + " |"
        rule = "|" + "|".join("---" for _ in self.columns) + "|"
        body = ["| " + " | ".join(_fmt(v) for v in row) + " |" for row in self.rows]
        return "\n".join([head, rule, *body])

    def checks_table(self) -> str:
        lines = ["| check | value | threshold | result |", "|---|---|---|---|"]
        for c in self.checks:
            lines.append(f"| {c.name} | {_fmt(c.value)} | {c.bound} | "
                         f"{'PASS' if c.passed else 'FAIL'} |")
        return "\n".join(lines)


def _fmt(v) -> str:
    if isinstance(v, (float, np.floating)):
        if v == 0 or np.isnan(v):
            return f"{v:g}"
        return f"{v:.3e}" if abs(v) < 1e-2 or abs(v) >= 1e4 else f"{v:.4g}"
    return str(v)


LIMITER_NAMES = {"koren": "Koren", "vanleer": "van Leer", "minmod": "minmod", "mc": "MC",
                 "thinc-bvd": "THINC-BVD"}


# The scheme every run of ``swe validate --integrator/--riemann/--limiter`` is forced to
# (set by ``validation.report.scheme_override``); empty for the cases' own schemes.
OVERRIDE: dict = {}

INTEGRATOR_NAMES = {"ssprk2": "SSP-RK2", "ssprk3": "SSP-RK3", "euler": "forward Euler",
                    "split": "split MUSCL-Hancock", "strang": "Strang-split MUSCL-Hancock"}


def muscl_name(limiter: str | None = None) -> str:
    """``"MUSCL-Koren"``: MUSCL with ``limiter``, by default swe's default limiter (or
    the one ``swe validate --limiter`` forces on every run)."""
    import swe

    limiter = limiter or OVERRIDE.get("limiter") or swe.FiniteVolume().limiter
    return f"MUSCL-{LIMITER_NAMES.get(limiter, limiter)}"


def default_scheme() -> str:
    """swe's default scheme in words, from its own defaults: ``"MUSCL-Koren, HLLC,
    SSP-RK2, CFL 0.45"``; under ``swe validate --integrator/--riemann/--limiter``, the
    scheme it forces instead."""
    import swe
    from swe.run import default_cfl

    fv = swe.FiniteVolume()
    riemann = OVERRIDE.get("riemann") or fv.riemann
    integrator = OVERRIDE.get("integrator") or "ssprk2"
    return (f"{muscl_name()}, {riemann.upper()}, "
            f"{INTEGRATOR_NAMES.get(integrator, integrator)}, "
            f"CFL {default_cfl(integrator):g}")


def rel_l1(q, exact) -> float:
    """``sum|q - q_exact| / sum|q_exact|`` over the domain."""
    q = np.asarray(q, dtype=float)
    exact = np.asarray(exact, dtype=float)
    return float(np.abs(q - exact).sum() / np.abs(exact).sum())


def fitted_order(dx, errors) -> float:
    """The slope of log(error) against log(dx), least squares over all resolutions."""
    return float(np.polyfit(np.log(np.asarray(dx, float)), np.log(np.asarray(errors, float)), 1)[0])


def check(name: str, value: float, *, below=None, above=None) -> Check:
    if below is not None:
        return Check(name, float(value), f"< {below:g}", bool(value < below))
    return Check(name, float(value), f">= {above:g}", bool(value >= above))


def convergence_figure(path: Path, dx, errors, label: str, order: float | None = None):
    """Error against dx on log axes, with a reference slope."""
    plt = pyplot()

    dx = np.asarray(dx, float)
    errors = np.asarray(errors, float)
    fig, ax = plt.subplots(figsize=(4.5, 3.5))
    ax.loglog(dx, errors, "o-", label=label)
    if order is not None:
        ref = errors[-1] * (dx / dx[-1]) ** round(order)
        ax.loglog(dx, ref, "k--", lw=0.8, label=f"slope {round(order)}")
    ax.set_xlabel("dx (m)")
    ax.set_ylabel("relative L1 error")
    ax.legend()
    ax.grid(True, which="both", lw=0.3)
    return save(fig, path)


def pyplot():
    """``matplotlib.pyplot`` on the Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_maps(fig, axes, path: Path) -> Path:
    """Label a row of x-y maps (metres), lay it out and save it."""
    for ax in axes:
        ax.set_xlabel("x (m)")
    axes[0].set_ylabel("y (m)")
    fig.tight_layout()
    return save(fig, path)


def save(fig, path: Path) -> Path:
    """Saves a small PNG (the report commits them: keep each under ~200 kB)."""
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90, bbox_inches="tight")
    plt.close(fig)
    return path


def main(run, argv=None) -> int:
    """Command-line entry of one case: print the tables, exit 1 if a check fails."""
    import jax

    jax.config.update("jax_enable_x64", True)
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true", help="coarse grids (CI)")
    args = p.parse_args(argv)
    start = time.perf_counter()
    result = run(quick=args.quick)
    result.seconds = time.perf_counter() - start
    print(f"# {result.title}\n\n{result.table()}\n\n{result.checks_table()}\n")
    print(f"{'PASS' if result.passed else 'FAIL'} in {result.seconds:.1f} s")
    return 0 if result.passed else 1


if __name__ == "__main__":
    sys.exit("run a case module, not common.py")

"""The ``swe`` command: run, calibrate, validate, bench, list, info, plot. Argument handling and error
reporting only; the numerics live elsewhere.

Bad input (an unknown scenario, key, value or file) prints one line and exits with code 2;
a run that blows up prints where it happened and exits with code 1, keeping the frames
already written in ``OUT.partial``.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shlex
import sys
import time
from pathlib import Path

from .cache import enable_compilation_cache

EXIT_BAD_INPUT = 2
EXIT_FAILED = 1


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit code 2 (no usage dump)."""

    def error(self, message):
        raise _BadInput(f"{self.prog}: {message}")


class _BadInput(Exception):
    pass


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="swe", description="Shallow-water simulations in JAX")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    r = sub.add_parser("run", help="run a scenario and write a CF netCDF (or Zarr) file")
    r.add_argument("scenario", nargs="?", default=None,
                   help="built-in scenario name or path to a .py file (default: radial_dam_break)")
    r.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a scenario parameter (a Python literal); repeatable")
    r.add_argument("-o", "--output", default=None, help="output file (default: <scenario>.nc; "
                   "a name ending in .zarr writes Zarr)")
    r.add_argument("--precision", choices=("float32", "float64"), default=None,
                   help="floating-point precision (default: float64 on CPU, float32 on GPU or TPU)")
    r.add_argument("--riemann", default=None, help="rusanov, hll, hllc or roe")
    r.add_argument("--reconstruction", default=None, help="first_order or muscl")
    r.add_argument("--limiter", default=None, help="koren (default), vanleer, mc, minmod or thinc-bvd")
    r.add_argument("--kernel", default=None,
                   help="auto (default: one Pallas kernel per stage on a TPU from 1536^2 "
                        "cells, or an ensemble's from 1024^2 cells in all), xla, pallas or "
                        "pallas-interpret")
    r.add_argument("--integrator", default=None,
                   help="ssprk2 (default), ssprk3, euler, split (split MUSCL-Hancock) or "
                        "strang (Strang-split MUSCL-Hancock)")
    r.add_argument("--cfl", type=float, default=None,
                   help="CFL number in (0, 1] (default 0.45; 0.9 with --integrator split or "
                        "strang)")
    r.add_argument("--compress", type=int, nargs="?", const=4, default=0, metavar="LEVEL",
                   help="compress the netCDF output with zlib at LEVEL, 1 (fastest) to 9 "
                        "(smallest); 4 without a level (Zarr is always compressed)")
    r.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    r.add_argument("--ensemble", default=None, metavar="KEY=V1,V2,...",
                   help="run one member per value of a scenario parameter (or "
                        "KEY=start:stop:count) in one vmapped call; one file with an "
                        "ensemble dimension")
    r.add_argument("--batching", default="vmap", choices=("vmap", "map"),
                   help="--ensemble: members vmapped (GPUs), or one after another in one "
                        "compiled loop per device (CPUs: keeps each member in cache)")
    r.add_argument("--mesh", default=None, metavar="YxX",
                   help="split the grid over a device mesh, e.g. 2x4 (2 along y, 4 along x)")
    r.add_argument("--devices", type=int, default=None, metavar="N",
                   help="split the grid over N devices (the mesh shape is chosen for you); "
                        "with --ensemble, the members. On a CPU, N host devices are made")
    r.add_argument("--coordinator", default=None, metavar="HOST:PORT",
                   help="multi-host run: the coordinator's address (process 0's host)")
    r.add_argument("--num-processes", type=int, default=None, help="multi-host run: processes")
    r.add_argument("--process-id", type=int, default=None, help="multi-host run: this process")

    v = sub.add_parser("validate", help="run the validation cases and write validation/REPORT.md")
    v.add_argument("cases", nargs="*", help="cases to run (default: all)")
    v.add_argument("--quick", action="store_true", help="coarse grids (a few minutes, as in CI)")
    v.add_argument("--report", default=None,
                   help="report path (default: validation/REPORT.md for the whole full-size "
                        "run, else validation/REPORT-<quick|partial|scheme>.md, so a quick or "
                        "partial run leaves the committed report and figures alone)")
    v.add_argument("--integrator", default=None,
                   help="run every case with this integrator (e.g. split, strang) instead of "
                        "its own")
    v.add_argument("--riemann", default=None, help="every case with this Riemann flux")
    v.add_argument("--limiter", default=None, help="every MUSCL case with this limiter")

    c = sub.add_parser("calibrate", help="sample the posterior of a model's parameters given "
                       "gauge records (NUTS with gradients through the run)")
    c.add_argument("file", help="a .py file defining forward, priors, observations (and "
                   "optionally noise), or a built-in twin experiment's name")
    c.add_argument("--chains", type=int, default=4, help="chains (default 4)")
    c.add_argument("--warmup", type=int, default=500, help="warm-up steps per chain (default 500)")
    c.add_argument("--draws", type=int, default=1000, help="draws per chain (default 1000)")
    c.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    c.add_argument("--target-accept", type=float, default=0.8,
                   help="the acceptance rate the warm-up tunes the step size for (default 0.8; "
                        "raise it to 0.9 or 0.95 if divergences remain after warm-up)")
    c.add_argument("-o", "--output", default=None,
                   help="posterior file (default: <file>_posterior.nc)")
    c.add_argument("--map-only", action="store_true",
                   help="only the MAP fit: print it and write nothing")
    c.add_argument("--precision", choices=("float32", "float64"), default=None,
                   help="floating-point precision (default: float64 on CPU, float32 on GPU or TPU)")
    c.add_argument("--devices", type=int, default=None, metavar="N",
                   help="split the chains over N devices (on a CPU, N host devices are made)")
    c.add_argument("--quiet", action="store_true", help="no progress bar")

    b = sub.add_parser("bench", help="the performance benchmark: one JSON line per timed run")
    from .bench import add_arguments

    add_arguments(b)

    sub.add_parser("list", help="list the built-in scenarios and their parameters")
    i = sub.add_parser("info", help="versions, devices and default precision; with a "
                                    "scenario, what it is and each of its parameters")
    i.add_argument("scenario", nargs="?", default=None,
                   help="a built-in scenario's name or a scenario file (.py)")

    pl = sub.add_parser("plot", help="plot a field of an output file (needs the plot extra)")
    pl.add_argument("file", help="a file written by swe run")
    pl.add_argument("--time", type=float, default=None,
                    help="seconds after the start (nearest frame; default: last)")
    pl.add_argument("--var", default="eta",
                    help="variable to map: eta (default), h, u, v at a time; max_depth, "
                         "max_speed or arrival_time over the run; bed")
    pl.add_argument("--gauge", action="append", default=None, metavar="NAME",
                    help="hydrographs of a gauge instead of a map (repeatable; 'all': "
                         "every gauge)")
    pl.add_argument("--member", type=int, default=0,
                    help="the member to plot from a file of swe run --ensemble (default: 0)")
    pl.add_argument("-o", "--output", default=None, help="figure file (default: <file>.png)")
    return p


def _default_precision() -> str:
    import jax

    return "float32" if jax.default_backend() in ("gpu", "cuda", "rocm", "tpu") else "float64"


def _start_distributed(args) -> None:
    """``jax.distributed.initialize``: explicit with ``--coordinator``, automatic under a
    SLURM job step of several tasks; nothing otherwise."""
    import jax

    explicit = (args.coordinator, args.num_processes, args.process_id)
    if any(x is not None for x in explicit):
        if any(x is None for x in explicit):
            raise _BadInput("swe run: --coordinator, --num-processes and --process-id go "
                            "together (or none, under SLURM)")
        if not 0 <= args.process_id < args.num_processes:
            raise _BadInput(f"swe run: --process-id={args.process_id} is invalid; expected "
                            f"0..{args.num_processes - 1}")
        # CPU devices talk through gloo (GPU runs use NCCL whatever this says).
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        jax.distributed.initialize(args.coordinator, args.num_processes, args.process_id)
    elif "SLURM_JOB_ID" in os.environ and int(os.environ.get("SLURM_NTASKS", "1")) > 1:
        jax.distributed.initialize()


def _host_devices(args) -> None:
    """``--devices N`` on a CPU: N host devices (one per core, say), set before JAX starts.
    Leaves an explicit ``--xla_force_host_platform_device_count`` alone; GPUs ignore it."""
    import jax

    if (args.devices or 0) > 1 and args.num_processes is None and (
            "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", "")):
        jax.config.update("jax_num_cpu_devices", args.devices)


def cmd_run(args) -> int:
    import jax

    _host_devices(args)
    _start_distributed(args)
    precision = args.precision or _default_precision()
    jax.config.update("jax_enable_x64", precision == "float64")
    enable_compilation_cache()

    import numpy as np

    from .output import check_compress, check_output_path, writer_for
    from .scenario import DEFAULT_SCENARIO, build, load_module, parse_overrides
    from .simulate import ProgressBar, iterate

    check_compress(args.compress)
    name = args.scenario or DEFAULT_SCENARIO
    module = load_module(name)
    params = parse_overrides(args.overrides, module)
    if args.ensemble is not None:
        return _run_ensemble(args, name, module, params, precision)
    scenario = build(name, params)
    model = scenario.model
    model = _with_scheme_options(model, args)
    options = _run_options(scenario.run_options, args)
    output = check_output_path(f"{Path(name).stem}.nc" if args.output is None else args.output,
                               _input_files(scenario))

    from .bench import CompileClock

    start = time.perf_counter()  # before the compile clock: the wall time holds it
    clock = CompileClock().__enter__()  # tracing + compilation (or cache retrieval)
    mesh = args.mesh
    if args.devices is not None:
        if mesh is not None:
            raise _BadInput("swe run: give --mesh or --devices, not both")
        from .parallel import auto_mesh

        mesh = auto_mesh(args.devices, model.grid)
    from .memory import check_fits
    from .parallel import make_mesh
    from .run import output_times

    # Before any computing: the run's memory (one frame at a time) and the output's size.
    check_fits(model, precision, options.get("integrator", "ssprk2"),
               output_frames=len(output_times(scenario.save_at, 0.0, scenario.t_end)),
               output=output, devices=1 if mesh is None else make_mesh(mesh, model.grid).devices.size)
    leader = jax.process_index() == 0
    progress = None if args.quiet or not leader else ProgressBar()
    frames = iterate(model, scenario.state0, scenario.t_end, scenario.save_at,
                     dtype=precision, arrival_threshold=scenario.arrival_threshold,
                     progress=progress, mesh=mesh, **options)
    if jax.process_count() > 1:
        from .parallel import gathered

        frames = gathered(frames)  # every process takes part; process 0 writes
    first = next(frames)  # validates every argument before a file is created
    settings = _settings(options, precision, scenario.t_end)
    extra = {"title": scenario.metadata.get("title", "swe shallow-water simulation"),
             "history": _history(),
             "scenario": scenario.metadata.get("scenario", Path(name).stem)}
    for key, value in scenario.metadata.get("parameters", {}).items():
        extra[f"param_{key}"] = value
    for key, value in scenario.metadata.items():
        if key not in ("parameters", "title", "scenario", "grid_mapping"):
            extra[key] = value
    if mesh is not None:
        extra["mesh"] = mesh if isinstance(mesh, str) else "x".join(map(str, mesh))
    if leader:
        writer = writer_for(output, model, gauges=scenario.gauges, settings=settings,
                            attrs=extra, dtype=precision, start_time=scenario.metadata.get(
                                "start_time", "2000-01-01T00:00:00"), compress=args.compress,
                            grid_mapping=scenario.metadata.get("grid_mapping"))
    else:
        from .output import NullWriter

        writer = NullWriter()
    code, last = _write_frames(writer, first, frames)
    if code:
        return code
    wall = time.perf_counter() - start
    clock.__exit__()
    if not args.quiet and leader:
        cells = model.grid.nx * model.grid.ny
        area = model.grid.cell_area
        v0 = float(np.sum(np.asarray(first.state.h, np.float64))) * area
        v1 = float(np.sum(np.asarray(last.state.h, np.float64))) * area
        print(f"swe run {Path(name).stem}: {model.grid.nx}x{model.grid.ny} = {cells} cells, "
              f"{last.num_steps} steps, {wall:.2f} s wall ({clock.seconds:.2f} s of it "
              f"compiling; programs from the persistent cache: {clock.cache_hits}), "
              f"{cells * last.num_steps / max(wall - clock.seconds, 1e-9):.3g} "
              "cell-updates/s after compiling, "
              f"water volume {v0:.6g} -> {v1:.6g} m^3 ({v1 - v0:+.3g}), {precision}, "
              f"wrote {output}")
        if not float(np.max(np.asarray(last.envelopes.max_depth))) > 0.0:
            print("swe run: warning: no cell held water at any time of the run (the "
                  "initial state is dry and nothing flowed in): check the scenario's "
                  "water level against its bed", file=sys.stderr)
    return 0


def _input_files(scenario) -> list[str]:
    """The files a scenario's parameters name (a DEM, say): an output must not be one."""
    return [v for v in scenario.metadata.get("parameters", {}).values()
            if isinstance(v, str) and Path(v).is_file()]


def _write_frames(writer, first, frames):
    """Write ``first`` and then every frame as it comes; ``(exit code, last frame)``.

    The file is renamed into place only when every frame is written; a run that blows up
    or is interrupted keeps ``OUT.partial`` with the frames so far (exit codes 1 and 130).
    """
    from .errors import SimulationError

    last = first
    try:
        writer.write(first)
        for frame in frames:
            writer.write(frame)
            last = frame
    except SimulationError as exc:
        print(f"swe run: {exc} ({_kept(writer)})", file=sys.stderr)
        return EXIT_FAILED, last
    except KeyboardInterrupt:
        print(f"swe run: interrupted ({_kept(writer)})", file=sys.stderr)
        return 130, last
    writer.close(complete=True)
    return 0, last


def _run_options(options, args) -> dict:
    """The scenario's run options with ``--integrator`` and ``--cfl`` applied."""
    options = dict(options)
    if args.integrator is not None:
        options["integrator"] = args.integrator
    if args.cfl is not None:
        options["cfl"] = args.cfl
    return options


def _settings(options, precision, t_end) -> dict:
    """The scheme settings recorded in the output file's global attributes."""
    from .run import default_cfl

    integrator = options.get("integrator", "ssprk2")
    return {"integrator": integrator,
            "cfl": options.get("cfl", default_cfl(integrator)) if "dt" not in options else "none",
            "dt": options.get("dt", "none"), "dtype": precision, "t0": 0.0, "t_end": t_end}


def _history() -> str:
    """The CF ``history`` attribute: when, and the command line that wrote the file."""
    return f"{time.strftime('%Y-%m-%dT%H:%M:%S')} " + shlex.join(["swe"] + sys.argv[1:])


def _kept(writer) -> str:
    """Close an unfinished file and say where its frames are."""
    path = writer.close(complete=False)
    if path is None:  # a process of a multi-host run that does not write
        return "process 0 keeps the frames written so far"
    return f"{writer.count} frames kept in {path}"


def _with_scheme_options(model, args):
    """``model`` with the ``--riemann``, ``--reconstruction``, ``--limiter`` and ``--kernel``
    given on the command line set in its scheme (checked as the scheme is built)."""
    given = {k: getattr(args, k) for k in ("riemann", "reconstruction", "limiter", "kernel")
             if getattr(args, k)}
    if not given:
        return model
    return dataclasses.replace(model, scheme=dataclasses.replace(model.scheme, **given))


def _run_ensemble(args, name, module, params, precision) -> int:
    """``swe run --ensemble``: every member advances in one compiled call per output
    interval, and each output is appended to one file with an ``ensemble`` dimension;
    ``--devices N`` splits the members over N devices."""
    import numpy as np

    from .ensemble import iterate_ensemble
    from .memory import check_fits
    from .output import NetCDFWriter, check_output_path, is_zarr
    from .scenario import build, parse_ensemble
    from .run import output_times

    if args.mesh:
        raise _BadInput("swe run: --ensemble splits members, not the grid, over devices: "
                        "use --devices N instead of --mesh")
    key, values = parse_ensemble(args.ensemble, module)
    if key in params:
        raise _BadInput(f"swe run: {key} is given by --set and by --ensemble; give it once")
    output = check_output_path(f"{Path(name).stem}_ensemble.nc" if args.output is None
                               else args.output)
    if is_zarr(output):
        raise _BadInput(f"swe run: -o {output} is invalid with --ensemble; ensembles are "
                        "written as netCDF (give a name ending in .nc)")
    scenarios = [build(name, {**params, key: v}) for v in values]
    models = [sc.model for sc in scenarios]
    models = [_with_scheme_options(m, args) for m in models]
    first = scenarios[0]
    times = output_times(first.save_at, 0.0, first.t_end)
    if any(sc.run_options != first.run_options or sc.t_end != first.t_end
           or not np.array_equal(output_times(sc.save_at, 0.0, sc.t_end), times)
           for sc in scenarios[1:]):
        raise _BadInput(f"swe run: --ensemble {key}=... changes the run length, outputs or "
                        "run options (cfl, dt, integrator) between members; members may only "
                        "differ in the model and the initial state")
    options = _run_options(first.run_options, args)
    devices = args.devices or 1
    check_fits(models[0], precision, options.get("integrator", "ssprk2"),
               members=-(-len(values) // devices), output_frames=len(times),
               output=output)
    start = time.perf_counter()
    frames = iterate_ensemble(models, [sc.state0 for sc in scenarios], first.t_end,
                              first.save_at, members=values, dtype=precision,
                              arrival_threshold=first.arrival_threshold,
                              devices=args.devices, batching=args.batching, **options)
    frame0 = next(frames)  # validates every argument before a file is created
    settings = _settings(options, precision, first.t_end)
    settings["stage_kernel"] = frame0.stage_kernel  # a batch may take another kernel
    attrs = {"title": first.metadata.get("title", "swe ensemble"),
             "scenario": Path(name).stem, "ensemble_parameter": key,
             "history": _history()}
    writer = NetCDFWriter(output, models[0], gauges=first.gauges, settings=settings,
                          attrs=attrs, dtype=precision, members=values, member_name=key,
                          start_time=first.metadata.get("start_time", "2000-01-01T00:00:00"),
                          compress=args.compress,
                          grid_mapping=first.metadata.get("grid_mapping"))
    code, last = _write_frames(writer, frame0, frames)
    if code:
        return code
    wall = time.perf_counter() - start
    if not args.quiet:
        cells = models[0].grid.nx * models[0].grid.ny
        steps = int(np.sum(last.num_steps))
        print(f"swe run {Path(name).stem}: ensemble of {len(values)} ({key} = "
              f"{', '.join(map(str, values))}), {cells} cells each, {steps} member-steps, "
              f"{wall:.2f} s wall, {precision}, wrote {output}")
    return 0


def _validation_package():
    """``validation/`` lives in the source tree (it is evidence, not library code)."""
    for root in (Path.cwd(), Path(__file__).resolve().parents[1]):
        if (root / "validation" / "report.py").is_file():
            if str(root) not in sys.path:
                sys.path.insert(0, str(root))
            return root / "validation"
    raise _BadInput("swe validate runs from a source checkout: no validation/ folder found "
                    "here or beside the installed package")


def cmd_validate(args) -> int:
    _validation_package()
    from validation.report import validate

    results = validate(args.cases, quick=args.quick, report=args.report,
                       integrator=args.integrator, riemann=args.riemann, limiter=args.limiter)
    failed = [r.name for r in results if not r.passed]
    print(f"{len(results) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


def cmd_bench(args) -> int:
    from .bench import main_from_args

    return main_from_args(args)


def cmd_list(args) -> int:
    from .scenario import DEFAULT_SCENARIO, builtin_scenarios, load_module, parameter_help

    for name in builtin_scenarios():
        module = load_module(name)
        doc = (module.__doc__ or "").strip().splitlines()
        mark = " (default)" if name == DEFAULT_SCENARIO else ""
        print(f"{name}{mark}: {doc[0] if doc else ''}")
        for key, default, units, _, meaning in parameter_help(module):
            print(f"    {key} = {default!r} [{units}]" + (f"  {meaning}" if meaning else ""))
    print("swe info SCENARIO: a scenario in full")
    return 0


def _scenario_info(name) -> int:
    import inspect

    from .scenario import DEFAULT_SCENARIO, load_module, parameter_help

    module = load_module(name)
    print(f"{name}" + (" (the default scenario of swe run)" if name == DEFAULT_SCENARIO else ""))
    print()
    print(inspect.cleandoc(module.__doc__ or "(no description)"))
    print()
    print("Parameters: swe run %s --set KEY=VALUE, or --ensemble KEY=v1,v2,... (or "
          "KEY=start:stop:count)" % name)
    rows = [("name", "default", "units", "accepts", "meaning")] + [
        (key, repr(default), units, kind, meaning)
        for key, default, units, kind, meaning in parameter_help(module)]
    widths = [max(len(r[k]) for r in rows) for k in range(4)]
    for row in rows:
        print("  " + "  ".join(c.ljust(w) for c, w in zip(row[:4], widths)) + "  " + row[4])
    return 0


def cmd_info(args) -> int:
    import importlib.metadata as md

    if args.scenario is not None:
        return _scenario_info(args.scenario)

    import jax

    from . import __version__

    print(f"swe-jax {__version__}")
    for pkg in ("jax", "jaxlib", "equinox", "diffrax", "numpy", "xarray", "netCDF4"):
        try:
            print(f"{pkg} {md.version(pkg)}")
        except md.PackageNotFoundError:
            print(f"{pkg} not installed")
    print(f"backend: {jax.default_backend()}")
    for d in jax.devices():
        print(f"device: {d}")
    print(f"default precision: {_default_precision()} (change with --precision)")
    return 0


def cmd_plot(args) -> int:
    path = Path(args.file)
    if not path.exists():
        raise _BadInput(f"swe plot: file {str(path)!r} does not exist")
    try:
        import matplotlib
    except ImportError:
        raise _BadInput("swe plot needs matplotlib: pip install 'swe-jax[plot]'")
    matplotlib.use("Agg")
    import xarray as xr

    try:
        ds = xr.open_dataset(path)
    except Exception as exc:  # any unreadable file: one line
        raise _BadInput(f"swe plot: cannot read {str(path)!r}: {exc}")
    member = ""
    if "ensemble" in ds.dims:  # a file of swe run --ensemble: one member at a time
        n = ds.sizes["ensemble"]
        if not 0 <= args.member < n:
            raise _BadInput(f"swe plot: --member {args.member} is invalid; the file has {n} "
                            f"members, 0 .. {n - 1}")
        member = f", member {args.member} ({ds.ensemble.values[args.member]})"
        ds = ds.isel(ensemble=args.member)
    from .plotting import figure

    try:
        fig = figure(ds, args.var, args.time, args.gauge, (ds.attrs.get("title", path.name)
                                                           + member))
    except ValueError as exc:
        raise _BadInput(f"swe plot: {exc}")
    out = Path(args.output or path.with_suffix(".png"))
    fig.savefig(out, dpi=110, bbox_inches="tight")
    print(f"wrote {out}")
    return 0


def cmd_calibrate(args) -> int:
    for flag, value, low in (("--chains", args.chains, 1), ("--warmup", args.warmup, 1),
                             ("--draws", args.draws, 1), ("--seed", args.seed, 0),
                             ("--devices", args.devices, 1)):
        if value is not None and value < low:
            raise _BadInput(f"swe calibrate: {flag} {value} is invalid; expected an integer "
                            f">= {low}")
    if not 0.0 < args.target_accept < 1.0:
        raise _BadInput(f"swe calibrate: --target-accept {args.target_accept} is invalid; "
                        "expected a number in (0, 1)")
    output = Path(args.output or f"{Path(args.file).stem}_posterior.nc")
    if not args.map_only:
        if output.is_dir():
            raise _BadInput(f"swe calibrate: -o {str(output)!r} is a directory; expected a "
                            "file name ending in .nc")
        if not output.parent.exists() or not os.access(output.parent, os.W_OK):
            raise _BadInput(f"swe calibrate: -o {str(output)!r}: cannot write into "
                            f"{str(output.parent)!r}")
    import jax

    if (args.devices or 0) > 1 and (
            "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", "")):
        jax.config.update("jax_num_cpu_devices", args.devices)
    precision = args.precision or _default_precision()
    jax.config.update("jax_enable_x64", precision == "float64")
    enable_compilation_cache()
    if args.devices is not None and args.devices > len(jax.devices()):
        raise _BadInput(f"swe calibrate: --devices {args.devices} is more than the "
                        f"{len(jax.devices())} available")

    from . import calibration as cal

    exp = cal.load_experiment(args.file)
    if args.map_only:
        start = time.perf_counter()
        fit = cal.map_estimate(exp.forward, exp.priors, exp.observations, noise=exp.noise,
                               base_dir=exp.base_dir)
        print(f"MAP of {exp.name} ({time.perf_counter() - start:.1f} s):")
        for name, value in fit.items():
            truth = "" if not exp.truth or name not in exp.truth else f"  (truth {exp.truth[name]:.6g})"
            print(f"  {name} = {value:.6g}{truth}")
        return 0
    devices = None if args.devices is None else jax.devices()[:args.devices]
    post = cal.sample(exp.forward, exp.priors, exp.observations, noise=exp.noise,
                      chains=args.chains, warmup=args.warmup, draws=args.draws, seed=args.seed,
                      progress=not args.quiet, devices=devices, base_dir=exp.base_dir,
                      target_accept=args.target_accept)
    if exp.truth:
        post.attrs.update({f"truth_{k}": float(v) for k, v in exp.truth.items()})
    table = cal.summary(post)
    print(table)
    attrs = post.attrs
    divergent = int(post["sample_stats"]["diverging"].sum())
    evaluations = attrs["n_forward"] + attrs["n_gradient"]
    ess = min(row["ess_bulk"] for row in table.rows.values())
    print(f"divergences after warm-up: {divergent} of {args.chains * args.draws} draws "
          f"({attrs['warmup_divergences']} during warm-up)")
    print(f"wall time {attrs['wall_time']:.1f} s (warm-up {attrs['warmup_time']:.1f} s, "
          f"sampling {attrs['sampling_time']:.1f} s); {attrs['n_forward']} forward runs, "
          f"{attrs['n_gradient']} gradients; min bulk ESS per 1000 evaluations "
          f"{1000 * ess / evaluations:.2f}")
    if exp.truth:
        inside = [n for n in exp.truth if n in table.rows
                  and table[n]["q05"] <= exp.truth[n] <= table[n]["q95"]]
        print(f"truth inside the 90% interval: {len(inside)} of {len(exp.truth)}")
    partial = output.with_name(output.name + ".partial")
    post.to_netcdf(partial)
    os.replace(partial, output)
    print(f"wrote {output}")
    return 0


COMMANDS = {"calibrate": cmd_calibrate, "run": cmd_run, "bench": cmd_bench, "list": cmd_list, "info": cmd_info, "plot": cmd_plot,
            "validate": cmd_validate}


def main(argv=None) -> int:
    try:
        args = _parser().parse_args(argv)
        return COMMANDS[args.command](args)
    except KeyboardInterrupt:  # also while importing JAX, before a run's own handler
        print("swe: interrupted", file=sys.stderr)
        return 130
    except _BadInput as exc:
        print(str(exc).splitlines()[0], file=sys.stderr)
        return EXIT_BAD_INPUT
    except (ValueError, FileNotFoundError, OSError) as exc:
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"swe: {message}", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())

"""Where a whole SSP-RK2 step of the Pallas path goes on a TPU: the step and its parts,
timed side by side on the benchmark problem (float32, a ``fori_loop`` of ``--steps`` steps
per timed call, interleaved, medians of ``--repeat``; a probe, not a benchmark).

Parts, each ms per step:

* ``step``: :func:`swe.pallas.ssp_step` from and to a state (padding, two chained kernel
  stages; the 12-07 records were taken when its last stage wrote the state directly,
  now it is laid out, stepped as ``laid`` and its interior taken);
* ``step+cfl``: the same with the next step's CFL reduction;
* ``laid``, ``laid+cfl``: the same from and to a state carried in the kernel's layout
  (:class:`swe.pallas.Laid`, as a run takes it: no padding pass);
* ``laid-thin``: ``laid`` with the refill of 12-06 (a thin write per ghost-cell strip
  and row band: six XLA operations a field, against three);
* (12-07, second session: ``laid-whole``, ``laid-reach4``, ``kernels-whole`` and
  ``kernels-reach4``, the kernel computing 4 of its window's 8 halo rows each side,
  through an option since removed; see ``validation/perf/README.md``)
* ``laid@R`` (``--block-rows R``): ``laid`` in blocks of ``R`` rows (a multiple of 8);
* ``kernels``: the two kernel stages alone, from inputs padded once outside the loop
  (no padding pass, no refill: the kernels' own cost);
* ``padding``: :func:`swe.pallas.padded_fields` alone (state and bed);
* ``cfl``: :meth:`swe.ShallowWater.stable_time_step` alone.

    python scripts/probe_step_costs.py --n 2048
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import jax
import jax.numpy as jnp

from swe import bench, pallas
from swe.state import State

STAGES = ((0.5, 1.0),)  # SSP-RK2 after its first stage


def parts(n, interpret, block_rows_list=()):
    model, state = bench.problem(n)
    state = jax.tree.map(lambda a: a.astype(jnp.float32), state)
    beds = jax.tree.map(lambda a: a.astype(jnp.float32), model.padded_beds())
    dt = jnp.asarray(0.05 * model.grid.dx, jnp.float32)
    halo = pallas.CHAINED_HALO
    block_rows, _ = pallas.block_shape(n, n, 4, None, None, pallas.HALO)

    def step(s):
        return pallas.ssp_step(model, 0.0, s, dt, beds, STAGES, interpret=interpret)

    def step_cfl(carry):
        s, dt_ = carry
        s = pallas.ssp_step(model, 0.0, s, dt_, beds, STAGES, interpret=interpret)
        return s, jnp.minimum(model.stable_time_step(s, 0.45), dt).astype(jnp.float32)

    laid = pallas.laid_out(model, 0.0, state, beds)

    def laid_step(y):
        return pallas.ssp_step(model, 0.0, y, dt, beds, STAGES, interpret=interpret)

    def laid_cfl(carry):
        y, dt_ = carry
        y = pallas.ssp_step(model, 0.0, y, dt_, beds, STAGES, interpret=interpret)
        return y, jnp.minimum(model.stable_time_step(y.interior, 0.45), dt).astype(
            jnp.float32)

    def thin_refill(m, t, fields, beds, shape, halo):
        ny, nx = shape
        view = State(*(f[halo:halo + ny, :nx] for f in fields))
        fields = [f.at[:halo].set(0.0).at[halo + ny:].set(0.0) for f in fields]
        return pallas._set_ghosts(m, t, fields, view, beds, 0, halo)

    def patched(name, value, fn):
        """``fn`` traced with ``pallas.<name>`` set to ``value``."""
        def run(y):
            real = getattr(pallas, name)
            setattr(pallas, name, value)
            try:
                return fn(y)
            finally:
                setattr(pallas, name, real)
        return run

    laid_thin = patched("_refilled", thin_refill, laid_step)

    padded = pallas.padded_fields(model, 0.0, state, beds, block_rows, None, halo)

    def kernels(y):
        first = y
        for alpha in (None, 0.5):
            y = pallas._forward(model, 0.0, state, dt, beds, True, interpret, block_rows,
                                None, halo, alpha=alpha,
                                base=None if alpha is None else first[:3],
                                padded=(*y[:3], first[3]), out_padded=True)
            y = (*y, first[3])
        return y

    def padding(s):
        fields = pallas.padded_fields(model, 0.0, s, beds, block_rows, None, halo)
        fields = jax.lax.optimization_barrier(fields)
        return State(*(f[halo:halo + n, :n] for f in fields[:3]))

    def cfl(s):
        a = jax.lax.optimization_barrier(model.stable_time_step(s, 0.45))
        return State(s.h + 0.0 * a, s.hu, s.hv)

    by_rows = {f"laid@{r}": (laid_step, pallas.laid_out(model, 0.0, state, beds, r))
               for r in block_rows_list}
    return {**by_rows, "step": (step, state), "step+cfl": (step_cfl, (state, dt)),
            "laid": (laid_step, laid), "laid+cfl": (laid_cfl, (laid, dt)),
            "laid-thin": (laid_thin, laid),
            "kernels": (kernels, padded), "padding": (padding, state), "cfl": (cfl, state)}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, nargs="+", default=[2048])
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--only", nargs="+", default=None)
    p.add_argument("--block-rows", type=int, nargs="+", default=(),
                   help="also time `laid` in blocks of these many rows (parts laid@R)")
    args = p.parse_args(argv)
    interpret = jax.default_backend() != "tpu"
    for n in args.n:
        fns = {}
        for name, (body, x0) in parts(n, interpret, args.block_rows).items():
            if args.only and name not in args.only:
                continue
            fn = jax.jit(lambda x, body=body: jax.lax.fori_loop(
                0, args.steps, lambda i, q: body(q), x))
            start = time.perf_counter()
            try:
                jax.block_until_ready(fn(x0))
            except Exception as e:  # noqa: BLE001 - report and go on
                print(json.dumps(dict(N=n, part=name, error=f"{type(e).__name__}: {e}"[:500])),
                      flush=True)
                continue
            fns[name] = (fn, x0, time.perf_counter() - start)
        times = {k: [] for k in fns}
        for _ in range(args.repeat):
            for k, (fn, x0, _) in fns.items():
                start = time.perf_counter()
                jax.block_until_ready(fn(x0))
                times[k].append(time.perf_counter() - start)
        for k, (_, _, compile_s) in fns.items():
            ms = 1e3 * statistics.median(times[k]) / args.steps
            print(json.dumps(dict(probe="step_costs", N=n, part=k, ms_per_step=ms,
                                  gcell_per_s=n * n / ms / 1e6, compile_s=compile_s,
                                  backend=jax.default_backend())), flush=True)


if __name__ == "__main__":
    main()

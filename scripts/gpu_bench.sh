#!/usr/bin/env bash
# Accelerator figures for the README, in a few minutes: device, memory bandwidth (measured
# triad), then the benchmark problem's default scheme at N = 1024..8192, two ensembles, a
# gradient and first order; then the split scheme, diagnostics and float64.
#   bash scripts/gpu_bench.sh            (from the repository root, on a GPU or TPU machine)
# Needs jax for the device (CUDA or TPU), equinox, diffrax, numpy; uses the checkout
# (PYTHONPATH=.), no install. Writes the JSON lines to ${OUT:-.}/gpu_bench.jsonl as well as
# stdout. Each step has its own time limit (STEP_TIMEOUT, default 120 s; the gradient's
# 240 s), so one slow or failing step does not stop the rest, and the whole script a
# budget (BUDGET, default 570 s, for a 10-minute device call): a step is cut to the time
# left, and steps past it are skipped with a line saying so. The README's figures come
# first (the default scheme from 1024^2 to 8192^2 cells, the ensembles, a gradient), the
# diagnostics after them. On a TPU v5e the figures take the whole of a 575 s budget (the
# gradient step about 150 s of it, nearly all compiling) and the steps after first order
# are skipped; run them in a second call.
#
# float64: GPUs run it natively (at a fraction of the float32 rate on most cards); a TPU has
# no float64 units, and on a TPU v5e (JAX 0.10.2) float64 runs do not compile; the
# script tries one, last. On a TPU the default scheme's stages from 1536^2 cells are the
# Pallas kernel (swe/tpu_stage.py); XLA's stage runs beside it at N = 2048 for the ratio.
set -uo pipefail
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
PY=${PYTHON:-python3}
LOG="${OUT:-.}/gpu_bench.jsonl"
T=${STEP_TIMEOUT:-120}
BUDGET=${BUDGET:-570}
: > "$LOG"
step() {  # STEP_LIMIT=<s> step ...: a longer limit (not below STEP_TIMEOUT) for one step
  local left=$((BUDGET - SECONDS)) limit=$T
  [ "${STEP_LIMIT:-0}" -gt "$limit" ] && limit=$STEP_LIMIT
  if [ "$left" -lt 20 ]; then echo "step skipped (budget of ${BUDGET} s spent): $*" | tee -a "$LOG"; return; fi
  [ "$left" -lt "$limit" ] && limit=$left
  timeout "$limit" "$@" | tee -a "$LOG"; local rc=${PIPESTATUS[0]}
  [ "$rc" = 0 ] || { echo "step failed or timed out (rc $rc, limit ${limit} s): $*" | tee -a "$LOG"; sleep 5; }
}
if command -v nvidia-smi > /dev/null; then
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.memory --format=csv
fi
BACKEND=$($PY -c "import sys, jax; print('jax', jax.__version__, jax.devices(), file=sys.stderr)
print(jax.default_backend())")
# Device-memory bandwidth (in-place triad inside one jitted loop, float32): the roofline.
STREAM=$(timeout "$T" $PY scripts/stream_triad.py --n 67108864 --no-x64 2>/dev/null \
  | tee -a "$LOG" | $PY -c "import json,sys; print(json.loads(sys.stdin.read())['triad_GBs_jax_median'])")
echo "measured triad: ${STREAM} GB/s (H200 device-to-device copy: about 4300 GB/s; TPU v5e HBM: 819 GB/s)"
# float32 first, then float64, so that a slow float64 (a TPU's) cannot crowd out the rest.
# The default scheme (Koren MUSCL, HLLC, SSP-RK2); on a TPU kernel="auto" (the default)
# takes the Pallas stage from 1536^2 cells.
# Large grids run shorter (t = 0.1 at 4096, 0.04 at 8192: a few hundred steps, the same
# cost per step) so that the script stays within minutes on a slower device; far fewer
# steps weigh a run's fixed costs (at 8192 on a TPU v5e, 60 steps took 3.09 s and 238
# steps 9.30 s).
step $PY scripts/bench.py --n 1024 2048 --precision float32 --repeat 3 --stream "$STREAM"
step $PY scripts/bench.py --n 4096 --precision float32 --repeat 3 --t-end 0.1 --stream "$STREAM"
step $PY scripts/bench.py --n 8192 --precision float32 --repeat 2 --t-end 0.04 --stream "$STREAM"
step $PY scripts/bench_ensemble.py --n 128 --members 16 --precision float32
step $PY scripts/bench_ensemble.py --n 256 --members 64 --precision float32
# Compiling dominates (three programs, two of them gradients): on a TPU v5e the script
# took 146 s for runs of 0.03 s (forward) and 0.27 s (gradient).
STEP_LIMIT=240 step $PY scripts/bench_gradient.py --n 128 --steps 1000 --precision float32 --repeat 3
step $PY scripts/bench.py --n 4096 --precision float32 --repeat 2 --riemann hll \
  --reconstruction first_order --integrator euler --t-end 0.25 --stream "$STREAM"
if [ "$BACKEND" = tpu ]; then
  # XLA's stage at 2048 for the ratio to the kernel's run above.
  step $PY scripts/bench.py --n 2048 --precision float32 --repeat 1 --kernel xla \
    --stream "$STREAM"
  # The split MUSCL-Hancock scheme (one stage per direction, CFL 0.9; XLA's stages on a
  # TPU v5e: 0.61 Gcell/s at 4096).
  step $PY scripts/bench.py --n 4096 --precision float32 --repeat 2 --integrator split \
    --limiter mc --t-end 0.25 --stream "$STREAM"
  # The kernel on the chip with friction, Coriolis and inflows (kernel="auto" takes it for
  # them because this agrees): scenarios with each kernel, compared.
  step $PY scripts/check_stage_kernels.py
  # A gradient (Manning friction) whose forward runs take the Pallas stage (its reverse
  # pass is XLA's), then XLA's.
  step $PY scripts/bench_gradient.py --n 1536 --steps 100 --precision float32 --kernel pallas
  step $PY scripts/bench_gradient.py --n 1536 --steps 100 --precision float32 --kernel xla
  # ms per stage, XLA's and the kernel's block shapes.
  step $PY scripts/bench_stage_kernels.py --n 1024 2048 --block-rows 32 64 \
    --block-cols 0 --halo 8 4
  # float64 does not compile on a TPU v5e (XLA:TPU rejects the float64 nextafter in
  # diffrax's time loop, JAX 0.10.2); the step shows whether that holds for this JAX.
  step $PY scripts/bench.py --n 1024 --precision float64 --repeat 1 --stream "$STREAM"
else
  step $PY scripts/bench.py --n 4096 --precision float32 --repeat 3 --integrator split \
    --limiter mc --t-end 0.25 --stream "$STREAM"
  step $PY scripts/bench.py --n 1024 2048 --precision float64 --repeat 3 --stream "$STREAM"
  step $PY scripts/bench.py --n 4096 --precision float64 --repeat 3 --t-end 0.1 \
    --stream "$STREAM"
  step $PY scripts/bench.py --n 8192 --precision float64 --repeat 2 --t-end 0.04 \
    --stream "$STREAM"
  step $PY scripts/bench.py --n 4096 --precision float64 --repeat 3 --integrator split \
    --limiter mc --t-end 0.25 --stream "$STREAM"
  STEP_LIMIT=240 step $PY scripts/bench_gradient.py --n 128 --steps 1000 --precision float64
fi

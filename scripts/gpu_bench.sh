#!/usr/bin/env bash
# GPU figures for the README, in a few minutes: device, HBM bandwidth, then the benchmark
# problem at N = 1024..8192 in float32 and float64, an ensemble and a gradient.
#   bash scripts/gpu_bench.sh            (from the repository root, on a GPU machine)
# Needs jax with CUDA, equinox, diffrax, numpy; uses the checkout (PYTHONPATH=.), no install.
# Writes the JSON lines to ${OUT:-.}/gpu_bench.jsonl as well as stdout.
set -uo pipefail
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
PY=${PYTHON:-python3}
LOG="${OUT:-.}/gpu_bench.jsonl"
: > "$LOG"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.memory --format=csv
$PY -c "import jax; print('jax', jax.__version__, jax.devices())"
# Device-memory bandwidth (in-place triad inside one jitted loop): the roofline.
STREAM=$($PY scripts/stream_triad.py --n 67108864 2>/dev/null | tee -a "$LOG" \
  | $PY -c "import json,sys; print(json.loads(sys.stdin.read())['triad_GBs_jax_median'])")
echo "measured triad: ${STREAM} GB/s (H200 device-to-device copy: about 4300 GB/s)"
for n in 1024 2048 4096; do
  $PY scripts/bench.py --n $n --precision both --repeat 3 --stream "$STREAM" | tee -a "$LOG"
done
# The largest grid: fewer repeats and a shorter run keep the script within minutes.
$PY scripts/bench.py --n 8192 --precision both --repeat 2 --t-end 0.25 --stream "$STREAM" \
  | tee -a "$LOG"
$PY scripts/bench.py --n 4096 --precision float32 --repeat 3 --riemann hll \
  --reconstruction first_order --integrator euler --stream "$STREAM" | tee -a "$LOG"
# The split MUSCL-Hancock scheme (one stage per direction, CFL 0.9).
$PY scripts/bench.py --n 4096 --precision both --repeat 3 --integrator split \
  --limiter mc --stream "$STREAM" | tee -a "$LOG"
$PY scripts/bench_ensemble.py --n 128 --members 16 --precision float32 | tee -a "$LOG"
$PY scripts/bench_ensemble.py --n 256 --members 64 --precision float32 | tee -a "$LOG"
$PY scripts/bench_gradient.py --n 128 --steps 1000 | tee -a "$LOG"

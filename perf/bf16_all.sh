#!/bin/sh
# The final run of doc/perf/bf16.md in one command, from the source tree after
# `make`: hcops-peak, the bf16 trace replay, the bf16 shape sweep and the
# HCOPS_FP32_MATH modes, each writing its CSV (and plot) under OUT (default
# doc/perf), then the elapsed time of each. --quick: each script's --quick,
# into perf-results/ (a check that everything runs, not figures).
#   sh perf/bf16_all.sh [--quick] [OUT]
set -eu
py=${PYTHON:-/usr/bin/python3}
quick=
if [ "${1:-}" = --quick ]; then
  quick=--quick
  shift
fi
out=${1:-$([ -n "$quick" ] && echo perf-results || echo doc/perf)}
mkdir -p "$out"
start=$(date +%s)
step() { # NAME COMMAND...: runs it, then says how long it took
  name=$1
  shift
  t0=$(date +%s)
  echo "== $name: $*"
  "$@"
  echo "== $name: $(($(date +%s) - t0)) s"
}
step peak build/tools/hcops-peak --csv "$out/bf16-peak.csv"
step replay "$py" perf/gemm_replay.py --precisions bf16 $quick --csv "$out/bf16-replay.csv" --png "$out/bf16-replay.png"
step sweep "$py" perf/gemm_sweep.py --precisions bf16 $quick --csv "$out/bf16-sweep.csv" --png "$out/bf16-sweep.png"
step fp32-math "$py" perf/fp32_math.py $quick --csv "$out/fp32-math.csv"
echo "== all: $(($(date +%s) - start)) s; CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-);" \
  "features: $(grep -o 'avx512_bf16\|amx_bf16\|amx_tile' /proc/cpuinfo | sort -u | tr '\n' ' ')"

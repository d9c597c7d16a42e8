#!/bin/sh
# The bf16 benchmarks' peers compute what they claim; no timing.
# hcops-dnnl-bf16 --selftest: oneDNN's dnnl_gemm_bf16bf16f32 and matmul
# primitive as perf/bf16_replay.py drives them (column-major calls mapped to
# row-major, every transposition, ld > minimal, alpha, beta, odd k) against a
# double reference from the same bf16 inputs, on 1 and 2 OpenMP threads.
set -eu
perf="${HCOPS_PERF_BUILDDIR:?set by tests/perf/perf.am}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
for t in 1 2; do
  if ! OMP_NUM_THREADS=$t "$perf/hcops-dnnl-bf16" --selftest >"$tmp/selftest.out"; then
    cat "$tmp/selftest.out"
    echo "FAIL: hcops-dnnl-bf16 --selftest on $t thread(s)"
    status=1
  fi
done
exit $status

#!/bin/sh
# test_gemm_bf16 (every bf16 combination of the engine against f64
# references) on every kernel family this CPU runs (hcops-info --families),
# forced with HCOPS_ISA, with 1 and 2 threads. The program prints which
# family served each combination and fails when the forced family serves a
# combination but another one ran; a family that serves no bf16 leaves it
# to the next row that does (generic serves them all).
set -u
. "${srcdir:-../../tests}/families.sh"
status=0
for isa in $families; do
  # A family that serves no bf16 passes them all to the next row that does,
  # which this loop runs under its own name.
  if ! ../tools/hcops-info | grep -Eq "^  $isa +.*serves ([^;]* )?bf16:"; then
    echo "== HCOPS_ISA=$isa serves no bf16 GEMM: tested under the family that does"
    continue
  fi
  for threads in 1 2; do
    echo "== HCOPS_ISA=$isa HCOPS_NUM_THREADS=$threads"
    HCOPS_ISA=$isa HCOPS_NUM_THREADS=$threads ./test_gemm_bf16 "$isa" || status=1
  done
done
exit $status

#!/bin/sh
# The bf16 GEMM ABIs (test_bf16_gemm.c) on every kernel family this CPU can
# run (hcops-info --families, forced with HCOPS_ISA), with 1 and 2 threads,
# linked with -lhcops (test_bf16_gemm) and, in a program that links no BLAS,
# with libhcops.so preloaded (test_bf16_gemm_preload). The preloaded program
# must find nothing without the preload: its weak references stay null.
set -u
. "${srcdir:-../../tests}/families.sh"
status=0
if ./test_bf16_gemm_preload >/dev/null 2>&1; then
  echo "FAIL: test_bf16_gemm_preload passes without libhcops preloaded: it cannot test the preload"
  status=1
fi
for isa in $families; do
  for threads in 1 2; do
    echo "== HCOPS_ISA=$isa HCOPS_NUM_THREADS=$threads: linked"
    HCOPS_ISA=$isa HCOPS_NUM_THREADS=$threads ./test_bf16_gemm || status=1
    echo "== HCOPS_ISA=$isa HCOPS_NUM_THREADS=$threads: LD_PRELOAD=$HCOPS_LIB"
    LD_PRELOAD=$HCOPS_LIB HCOPS_ISA=$isa HCOPS_NUM_THREADS=$threads ./test_bf16_gemm_preload || status=1
  done
done
exit $status

#!/bin/sh
# test_gemm_epilogue (the engine's epilogue with the output operations, every
# datatype combination against f64 references) on every kernel family this
# CPU runs (hcops-info --families), forced with HCOPS_ISA, with 1 and 2
# threads. The program fails when the forced family serves the datatypes
# that compute but another one ran. Then an f32 GEMM with an epilogue in
# each HCOPS_FP32_MATH mode.
set -u
. "${srcdir:-../../tests}/families.sh"
status=0
for isa in $families; do
  for threads in 1 2; do
    echo "== HCOPS_ISA=$isa HCOPS_NUM_THREADS=$threads"
    HCOPS_ISA=$isa HCOPS_NUM_THREADS=$threads ./test_gemm_epilogue "$isa" || status=1
  done
done
# An f32 GEMM in each HCOPS_FP32_MATH mode keeps its epilogue.
for mode in bf16 bf16x3; do
  echo "== HCOPS_FP32_MATH=$mode"
  HCOPS_FP32_MATH=$mode ./test_gemm_epilogue "" fp32_math || status=1
done
# A short OpenMP team: the engine plans again, the epilogue still once.
echo "== OMP_THREAD_LIMIT=1 HCOPS_NUM_THREADS=2"
OMP_THREAD_LIMIT=1 HCOPS_NUM_THREADS=2 ./test_gemm_epilogue "" short_team || status=1
exit $status

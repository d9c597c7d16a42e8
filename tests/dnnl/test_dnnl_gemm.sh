#!/bin/sh
# dnnl_sgemm and dnnl_gemm_bf16bf16f32 (test_dnnl_gemm.c) on every kernel
# family this CPU runs, against the real libdnnl and f64, and without any
# libdnnl; then what they print: one HCOPS_VERBOSE=1 line each, in the
# call's row-major terms, and none under HCOPS_DNNL=0, where they are the
# real library's (results still checked).
set -u
status=0
. "${srcdir:-../../tests}/families.sh"
for isa in $families; do
  echo "== HCOPS_ISA=$isa: against $HCOPS_TEST_DNNL"
  HCOPS_ISA=$isa ./test_dnnl_gemm || status=1
done
echo "== no libdnnl in the process, HCOPS_UNDERLYING_DNNL naming nothing"
err=$(HCOPS_UNDERLYING_DNNL=/nonexistent/libdnnl.so.2 ./test_dnnl_gemm alone 2>&1 >/dev/null) || status=1
if [ -n "$err" ]; then
  echo "FAIL: dnnl_sgemm without libdnnl printed:"; echo "$err"; status=1
fi

echo "== HCOPS_VERBOSE=1"
err=$(HCOPS_VERBOSE=1 ./test_dnnl_gemm one 2>&1 >/dev/null) || status=1
echo "$err"
for routine in dnnl_sgemm dnnl_gemm_bf16bf16f32; do
  n=$(printf '%s\n' "$err" | grep -c "^hcops_verbose,exec,$routine,N,T,5,7,3,1,3,3,0,7,[0-9]*,[0-9.]*,[0-9.]*,hcops:[a-z0-9_]*,")
  [ "$n" = 1 ] || { echo "FAIL: $n exec lines of $routine (expected 1, row-major fields)"; status=1; }
done
printf '%s\n' "$err" | grep -q '^hcops_verbose,legend,routine,transa,transb,M,N,K,alpha,lda,ldb,beta,ldc,' ||
  { echo "FAIL: no legend line of the oneDNN GEMMs"; status=1; }

echo "== HCOPS_DNNL=0 HCOPS_VERBOSE=1: handed on to the real library"
err=$(HCOPS_DNNL=0 HCOPS_VERBOSE=1 ./test_dnnl_gemm one 2>&1 >/dev/null) || status=1
if printf '%s\n' "$err" | grep -q 'exec,dnnl_'; then
  echo "FAIL: HCOps computed under HCOPS_DNNL=0:"; echo "$err"; status=1
fi
exit $status

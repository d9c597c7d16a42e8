#!/bin/sh
# libhcops.so leaves its caller's floating-point environment as it found it
# (test_fp_env.c) under every HWLOC_XMLFILE of abi/fp_env_xmls.sh, and says
# once when it cannot use the variable's file.
set -u
. "${srcdir:-..}/abi/fp_env_xmls.sh"
unset HCOPS_VERBOSE
fp_check_all ./test_fp_env
# The verbose lines time every GEMM: that bookkeeping must raise nothing either.
if HCOPS_VERBOSE=2 HWLOC_XMLFILE="$fp_tmp/this-machine.xml" ./test_fp_env >"$fp_tmp/out" 2>"$fp_tmp/err" &&
  grep -q '^hcops_verbose,exec,sgemm_' "$fp_tmp/err"; then
  echo "PASS: ./test_fp_env, HCOPS_VERBOSE=2: $(tail -n 1 "$fp_tmp/out")"
else
  echo "FAIL: ./test_fp_env, HCOPS_VERBOSE=2:"
  grep -hv '^ok: ' "$fp_tmp/out" | head -20
  fp_failed=1
fi
exit $fp_failed

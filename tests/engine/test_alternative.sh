#!/bin/sh
# HCOps registered as the system libblas.so.3: the application's GEMM runs in
# HCOps, and resolving the reference never lands on HCOps itself, even when
# told to open "libblas.so.3" (which is HCOps here): no recursion, no hang.
set -u
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "PASS: $1"; }
ko() { fail=$((fail + 1)); echo "FAIL: $1"; }
err=$(mktemp)
trap 'rm -f "$err"' EXIT
. "${srcdir:-../../tests}/time_limits.sh"
limit=$(time_limit 60)

if HCOPS_VERBOSE=1 timeout "$limit" ./alt_probe 2>"$err" >/dev/null; then ok "linked as libblas.so.3: results right"; else ko "linked as libblas.so.3: $(cat "$err")"; fi
grep -q '^hcops_verbose,exec,sgemm_' "$err" && ok "libblas.so.3 is HCOps: native GEMM ran" || ko "no HCOps GEMM ran"

if HCOPS_UNDERLYING_BLAS=libblas.so.3 timeout "$limit" ./alt_probe 2>"$err" >/dev/null; then
  ok "HCOPS_UNDERLYING_BLAS naming HCOps itself: forwarded call still right"
else
  ko "HCOPS_UNDERLYING_BLAS=libblas.so.3 (exit $?): $(cat "$err")"
fi
n=$(grep -c '^hcops: cannot use HCOPS_UNDERLYING_BLAS=libblas.so.3' "$err")
[ "$n" = 1 ] && ok "self as reference refused with one error" || ko "expected one error, got: $(cat "$err")"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]

#!/bin/sh
# With no underlying BLAS anywhere (hidden in a private mount namespace), the
# native GEMM still works and the first forwarded call prints exactly one
# error naming HCOPS_UNDERLYING_BLAS; later forwarded calls stay quiet.
set -u
# The two candidates configure found (tests/Makefile.am): the OpenBLAS and
# netlib's libblas.so.3 of the architecture built for.
hide="mount --bind /dev/null ${HCOPS_TEST_REFERENCE:?} && mount --bind /dev/null ${HCOPS_SYMS_REFERENCE:?}"
if ! unshare -m --propagation private sh -c "$hide" 2>/dev/null; then
  echo "SKIP: cannot hide the underlying BLAS here (needs unshare -m and mount as root)"
  exit 77
fi
out=$(unshare -m --propagation private sh -c "$hide && ./env_probe" 2>&1)
pass=0 fail=0
check() { if [ "$1" = 0 ]; then pass=$((pass + 1)); echo "PASS: $2"; else fail=$((fail + 1)); echo "FAIL: $2"; fi; }
echo "$out" | grep -q '^gemm: ok$'; check $? "native GEMM works without a reference"
echo "$out" | grep -q '^forwarded: WRONG$'; check $? "forwarded calls do nothing"
n=$(echo "$out" | grep -c '^hcops: no underlying BLAS.*HCOPS_UNDERLYING_BLAS')
[ "$n" = 1 ]; check $? "exactly one error naming HCOPS_UNDERLYING_BLAS (got $n)"
n=$(echo "$out" | grep -c '^hcops')
[ "$n" = 1 ]; check $? "nothing else printed (got $n hcops lines)"
[ "$fail" = 0 ] || echo "$out"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]

#!/bin/sh
# A module opened RTLD_LOCAL that defines xerbla_ must receive the error
# reports of the BLAS routines it calls when libhcops is preloaded (which
# puts HCOps's xerbla_ first in the global scope), as it does without HCOps:
# a native routine's (sgemm_) and a forwarded one's (strsm_).
#
# The module links the reference BLAS configure found, so it also runs
# without the preload: that run shows the behaviour HCOps must keep.
MODULE=./.libs/xerbla_module.so

if [ -z "$HCOPS_LIB" ] || [ ! -r "$HCOPS_LIB" ]; then
    echo "ERROR: HCOPS_LIB must name the library under test (got '${HCOPS_LIB}')"
    exit 99
fi
if [ ! -r "$MODULE" ]; then
    echo "ERROR: $MODULE not built"
    exit 99
fi

failed=0
echo "--- without HCOps"
env -u LD_PRELOAD ./test_xerbla_module "$MODULE"
rc=$?
# 99: the module's BLAS is unresolved without a preload (no reference BLAS
# at configure time); the preloaded run below is the test.
if [ "$rc" -ne 0 ] && [ "$rc" -ne 99 ]; then
    echo "FAIL: the module's own xerbla_ does not get the reports even without HCOps"
    failed=1
fi
echo "--- LD_PRELOAD=$HCOPS_LIB"
LD_PRELOAD="$HCOPS_LIB" ./test_xerbla_module "$MODULE" || failed=1
[ "$failed" -eq 0 ]

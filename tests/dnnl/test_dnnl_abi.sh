#!/bin/sh
# libhcops.so's oneDNN C ABI: it exports exactly the dnnl_* functions the
# real libdnnl.so.2 exports (oneDNN 2.6.3: 193), and under LD_PRELOAD every
# one of them resolves to libhcops and reaches a real definition of the same
# name; a program linked -ldnnl (test_dnnl_forwarded) gives the same output
# with and without the preload, and went through libhcops with it.
set -u
status=0
real=$HCOPS_TEST_DNNL
exports() { nm -D --defined-only "$1" | awk '$3 ~ /^dnnl_/ { sub(/@.*/, "", $3); print $3 }' | sort -u; }
exports "$real" > dnnl_abi_real.syms
exports "$HCOPS_LIB" > dnnl_abi_hcops.syms
n=$(wc -l < dnnl_abi_real.syms)
echo "== $n dnnl_* functions in $real"
[ "$n" -gt 150 ] || { echo "FAIL: too few to be oneDNN 2.x"; status=1; }
# Until shim/dnnl/primitive.cpp defines them (a part built apart), the
# three primitive calls are not libhcops's: the real library answers them.
if [ -f "$srcdir/../shim/dnnl/primitive.cpp" ]; then
  pending=
else
  pending='dnnl_primitive_create dnnl_primitive_destroy dnnl_primitive_execute'
  echo "(shim/dnnl/primitive.cpp not there yet: $pending are the real library's)"
fi
printf '%s\n' $pending > dnnl_abi_pending.syms
grep -vxF -f dnnl_abi_pending.syms dnnl_abi_real.syms > dnnl_abi_expected.syms
if ! diff dnnl_abi_expected.syms dnnl_abi_hcops.syms; then
  echo "FAIL: the dnnl_* exports of $HCOPS_LIB differ from $real's (< only there, > only here)"
  status=1
fi

echo "== every one resolves to libhcops under LD_PRELOAD, and to the real one behind it"
LD_PRELOAD=$HCOPS_LIB ./test_dnnl_forwarded names dnnl_abi_expected.syms || status=1

echo "== a sample of calls, with and without the preload"
./test_dnnl_forwarded > dnnl_abi_plain.out 2> dnnl_abi_plain.err || status=1
LD_PRELOAD=$HCOPS_LIB ./test_dnnl_forwarded > dnnl_abi_preload.out 2> dnnl_abi_preload.err || status=1
cat dnnl_abi_preload.out
if ! diff dnnl_abi_plain.out dnnl_abi_preload.out; then
  echo "FAIL: the calls answer differently under the preload"
  status=1
fi
grep -q '^dnnl_engine_create in .*libdnnl' dnnl_abi_plain.err || { echo "FAIL: plain run:"; cat dnnl_abi_plain.err; status=1; }
grep -q '^dnnl_engine_create in .*libhcops' dnnl_abi_preload.err ||
  { echo "FAIL: the preloaded run did not go through libhcops:"; cat dnnl_abi_preload.err; status=1; }
[ "$(wc -l < dnnl_abi_preload.err)" = 1 ] || { echo "FAIL: the preloaded run printed:"; cat dnnl_abi_preload.err; status=1; }
exit $status

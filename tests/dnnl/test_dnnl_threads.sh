#!/bin/sh
# test_dnnl_threads (create/execute/destroy cycles with address reuse,
# concurrent creation and execution from threads, fork after use; every
# result against its f64 reference) stock, under LD_PRELOAD=libhcops.so
# with HCOPS_DNNL=0 (no hcops line at all) and with the takeover on
# (HCOPS_VERBOSE=1: a line per claimed execution, none for the others), 1
# and 2 OpenMP threads; each run bounded by a timeout (a hang fails).
set -u
lib=${HCOPS_LIB:?HCOPS_LIB names the libhcops.so under test}
. "${srcdir:-../../tests}/time_limits.sh"
limit=$(time_limit 180)
status=0
run() {
  label=$1 expect=$2
  shift 2
  echo "== $label: $*"
  timeout "$limit" env "$@" ./test_dnnl_threads --expect="$expect"
  rc=$?
  if [ $rc != 0 ]; then
    [ $rc = 124 ] && rc="124 (timed out)"
    echo "FAIL ($label): exit status $rc"
    status=1
  fi
}
for threads in 1 2; do
  run stock.t$threads none OMP_NUM_THREADS=$threads
  run nodnnl.t$threads none OMP_NUM_THREADS=$threads HCOPS_DNNL=0 LD_PRELOAD="$lib"
  run preload.t$threads claims OMP_NUM_THREADS=$threads HCOPS_VERBOSE=1 LD_PRELOAD="$lib"
done
exit $status

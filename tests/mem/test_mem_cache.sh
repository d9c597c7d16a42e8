#!/bin/sh
# test_mem_cache, one case per process (each counts from a fresh start), with
# the settings the case is about. The bound and the loop run without decay:
# a machine stalled for 10 s must not make them fail (their bound is then the
# process's peak, which their steps, milliseconds apart, see anyway).
set -u
. "${srcdir:-../../tests}/time_limits.sh"
fail=0
run() {
  name=$1; shift
  if timeout "$(time_limit 60)" env "$@" ./test_mem_cache "$name"; then echo "PASS: $name"; else echo "FAIL: $name"; fail=1; fi
}
run bound HCOPS_MEM_CACHE=1G HCOPS_MEM_CACHE_DECAY=never
run loop HCOPS_MEM_CACHE=1G HCOPS_MEM_CACHE_DECAY=never
run decay1 HCOPS_MEM_CACHE_DECAY=1
run decay0 HCOPS_MEM_CACHE_DECAY=0
run never HCOPS_MEM_CACHE_DECAY=never
run off HCOPS_MEM_CACHE=0
exit $fail

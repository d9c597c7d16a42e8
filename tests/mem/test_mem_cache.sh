#!/bin/sh
# test_mem_cache, one case per process (each counts from a fresh start), with
# the settings the case is about.
set -u
fail=0
run() {
  name=$1; shift
  if timeout 60 env "$@" ./test_mem_cache "$name"; then echo "PASS: $name"; else echo "FAIL: $name"; fail=1; fi
}
run bound HCOPS_MEM_CACHE=1G
run loop HCOPS_MEM_CACHE=1G
run decay1 HCOPS_MEM_CACHE_DECAY=1
run decay0 HCOPS_MEM_CACHE_DECAY=0
run never HCOPS_MEM_CACHE_DECAY=never
run off HCOPS_MEM_CACHE=0
exit $fail

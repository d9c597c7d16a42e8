#!/bin/sh
# test_mem_pages with the reuse cache off (freed blocks, hugetlb ones
# included, go straight back to the system). It resizes the hugetlb pool
# when root; whatever happens to it (crash, timeout), the pool's size is put
# back here.
# QEMU's user-mode emulation (make check-aarch64) maps the guest's memory
# itself: its pages are not the ones madvise asked for, so there are no
# huge pages to count.
. "${srcdir:-../../tests}/time_limits.sh"
if [ "${HCOPS_TEST_EMULATED:-no}" = yes ]; then
  echo "SKIP: page sizes under QEMU user-mode emulation are the emulator's"
  exit 77
fi
pool=/proc/sys/vm/nr_hugepages
saved=$(cat $pool 2>/dev/null)
restore() { [ -n "$saved" ] && [ "$(cat $pool)" != "$saved" ] && echo "$saved" >$pool; }
trap restore EXIT
trap 'exit 1' INT TERM
# The pool is the machine's: the tests that use it (test_mem_slack.sh,
# test_mem_hugetlb_pool.sh) take this lock too, so they never see it resized.
lock="${TMPDIR:-/tmp}/hcops-hugetlb-pool.lock"
if command -v flock >/dev/null 2>&1; then
  flock "$lock" timeout "$(time_limit 60)" env HCOPS_MEM_CACHE=0 ./test_mem_pages
else
  timeout "$(time_limit 60)" env HCOPS_MEM_CACHE=0 ./test_mem_pages
fi

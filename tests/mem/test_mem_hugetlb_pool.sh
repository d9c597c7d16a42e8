#!/bin/sh
# test_mem_hugetlb_pool with the reuse cache off: every request maps. Under
# the lock test_mem_pages.sh holds while it resizes the hugetlb pool.
. "${srcdir:-../../tests}/time_limits.sh"
lock="${TMPDIR:-/tmp}/hcops-hugetlb-pool.lock"
command -v flock >/dev/null 2>&1 || exec timeout "$(time_limit 60)" env HCOPS_MEM_CACHE=0 ./test_mem_hugetlb_pool
exec flock "$lock" timeout "$(time_limit 60)" env HCOPS_MEM_CACHE=0 ./test_mem_hugetlb_pool

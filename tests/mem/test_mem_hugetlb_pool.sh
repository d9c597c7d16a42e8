#!/bin/sh
# test_mem_hugetlb_pool with the reuse cache off: every request maps. Under
# the lock test_mem_pages.sh holds while it resizes the hugetlb pool.
lock="${TMPDIR:-/tmp}/hcops-hugetlb-pool.lock"
command -v flock >/dev/null 2>&1 || exec timeout 60 env HCOPS_MEM_CACHE=0 ./test_mem_hugetlb_pool
exec flock "$lock" timeout 60 env HCOPS_MEM_CACHE=0 ./test_mem_hugetlb_pool

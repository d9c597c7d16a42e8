#!/bin/sh
# test_mem_slack under LD_PRELOAD of libhcops_mem, once per page-kind policy
# (hugetlb with this machine's pool, often empty: then THP in its place), with
# and without the reuse cache, with a 4 KiB threshold that sends small blocks
# to the arena too, and with an 8 MiB fast tier that sends the rest of 'fast'
# to DDR. Every block's slack past its end must read.
. "${srcdir:-../../tests}/time_limits.sh"
lib=${HCOPS_MEM_LIB:?HCOPS_MEM_LIB must name the libhcops_mem.so to test}
# Under the lock test_mem_pages.sh holds while it resizes the hugetlb pool.
lock="${TMPDIR:-/tmp}/hcops-hugetlb-pool.lock"
if [ -z "${hcops_pool_locked:-}" ] && command -v flock >/dev/null 2>&1; then
  hcops_pool_locked=1 exec flock "$lock" sh "$0" "$@"
fi
status=0
run() {
  policy=$1
  shift
  echo "== HCOPS_MEM_POLICY=\"$policy\" $*"
  timeout "$(time_limit 120)" env HCOPS_MEM_POLICY="$policy" "$@" LD_PRELOAD="$lib" ./test_mem_slack || status=1
}
for policy in fast,thp thp base hugetlb local,hugetlb "2M-:ddr,hugetlb;-2M:local,base"; do
  run "$policy"
  run "$policy" HCOPS_MEM_CACHE=0
  run "$policy" HCOPS_MEM_THRESHOLD=4K
done
run fast,thp HCOPS_MEM_FAST_NODES=0 HCOPS_MEM_FAST_LIMIT=8M
exit $status

#!/bin/sh
# hcops-run's split of CPUs between local ranks (--dry-run prints its choice):
# whole cores, between the ranks given the same CPU set only, on this machine
# and on an SMT topology from HCOPS_TOPOLOGY_DIR (HWLOC_XMLFILE), ranks of
# one job on two hosts (UTS namespaces) sharing TMPDIR; and the
# malloc tunables it gives the command (GLIBC_TUNABLES).
run=${HCOPS_RUN:?HCOPS_RUN must name the hcops-run to test}
unset LD_PRELOAD PMIX_NAMESPACE SLURM_JOB_ID OMP_NUM_THREADS HCOPS_RUN_OMP_NUM_THREADS HCOPS_MPI_EXCLUSIVE HWLOC_XMLFILE GLIBC_TUNABLES \
  MALLOC_MMAP_THRESHOLD_ MALLOC_TRIM_THRESHOLD_ \
  MPI_LOCALRANKID MPI_LOCALNRANKS PMI_LOCAL_RANK PMI_LOCAL_SIZE SLURM_LOCALID SLURM_NTASKS_PER_NODE \
  SLURM_STEP_ID SLURM_NODEID SLURM_STEP_TASKS_PER_NODE
TMPDIR=$(mktemp -d)
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT
failed=0

# rank R N ARGS...: hcops-run --mpi --dry-run as local rank R of N.
rank() {
  r=$1 n=$2
  shift 2
  OMPI_COMM_WORLD_LOCAL_RANK=$r OMPI_COMM_WORLD_LOCAL_SIZE=$n "$run" --mpi --dry-run "$@" true
}
# expect OUTPUT PATTERN...: every pattern is in the output.
expect() {
  got=$1
  shift
  echo "$got"
  for p in "$@"; do
    case $got in
      *"$p"*) ;;
      *) echo "FAIL: no '$p'"; failed=1 ;;
    esac
  done
}

echo "== this machine, 2 unbound local ranks"
all=$(cat /sys/devices/system/cpu/online)
a=$(rank 0 2 --cpus "$all")
b=$(rank 1 2 --cpus "$all")
expect "$a" "rank 0/2: CPUs " "2 ranks share"
expect "$b" "rank 1/2: CPUs " "2 ranks share"
if [ "$(getconf _NPROCESSORS_ONLN)" -ge 2 ] && [ "${a%% (*}" = "${b%% (*}" ]; then
  echo "FAIL: both ranks got the same CPUs"
  failed=1
fi

echo "== Slurm: a batch script is one process; a step's ranks on this node"
# The batch step has the job's --ntasks-per-node and SLURM_LOCALID=0 but no
# SLURM_STEP_ID: no rank is waited for (that took 5 s and a warning).
start=$(date +%s)
out=$(SLURM_JOB_ID=77 SLURM_NTASKS_PER_NODE=2 SLURM_LOCALID=0 "$run" --dry-run --cpus "$all" true 2>&1)
expect "$out" "rank 0/1: CPUs $all"
case $out in *"did not all start"*) echo "FAIL: the batch script waited for ranks"; failed=1 ;; esac
[ $(($(date +%s) - start)) -lt 4 ] || { echo "FAIL: the batch script's hcops-run took 4 s or more"; failed=1; }
# In a step: this node's count from SLURM_STEP_TASKS_PER_NODE at SLURM_NODEID
# ("1,2(x2),3": node 0 has 1, nodes 1 and 2 have 2, node 3 has 3), not the
# job's request; an unreadable list falls back to the request.
step() {  # NODEID LIST LOCALID
  SLURM_JOB_ID=77 SLURM_STEP_ID=3 SLURM_NTASKS_PER_NODE=5 SLURM_NODEID=$1 SLURM_STEP_TASKS_PER_NODE=$2 \
    SLURM_LOCALID=$3 "$run" --dry-run --cpus "$all" true 2>&1
}
expect "$(step 0 "1,2(x2),3" 0)" "rank 0/1: CPUs $all"
step 2 "1,2(x2),3" 0 >"$TMPDIR/s0.out" &
step 2 "1,2(x2),3" 1 >"$TMPDIR/s1.out"
wait
expect "$(cat "$TMPDIR/s0.out")" "rank 0/2: CPUs " "2 ranks share $all"
expect "$(cat "$TMPDIR/s1.out")" "rank 1/2: CPUs " "2 ranks share $all"
ls "$TMPDIR" | grep -q '^hcops-run\.' && { echo "FAIL: the step's meeting directory was left behind"; failed=1; }
for list in "2(x" "x,1" "2(x0)"; do
  SLURM_JOB_ID=77 SLURM_STEP_ID=3 SLURM_NTASKS_PER_NODE=1 SLURM_NODEID=0 SLURM_STEP_TASKS_PER_NODE=$list \
    SLURM_LOCALID=0 "$run" --dry-run --cpus "$all" true >"$TMPDIR/bad.out" 2>&1
  expect "$(cat "$TMPDIR/bad.out")" "rank 0/1: CPUs $all"
done

echo "== hcops-run under hcops-run: the inner one chooses again"
# The outer's OMP_NUM_THREADS (all cores) is not the caller's: the inner
# rank, bound to its share, sets its own; the caller's is kept through both.
# HCOps' libraries are preloaded once, from the inner run, whatever the
# outer preloaded (here a copy of another prefix); other libraries stay.
nested=$("$run" env OMPI_COMM_WORLD_LOCAL_RANK=1 OMPI_COMM_WORLD_LOCAL_SIZE=2 "$run" --dry-run --cpus "$all" true)
alone=$(OMPI_COMM_WORLD_LOCAL_RANK=1 OMPI_COMM_WORLD_LOCAL_SIZE=2 "$run" --dry-run --cpus "$all" true |
  sed -n 's/.*OMP_NUM_THREADS=\([0-9]*\).*/\1/p')
expect "$nested" "rank 1/2: " "OMP_NUM_THREADS=$alone;"
expect "$(OMP_NUM_THREADS=7 "$run" "$run" --dry-run true)" "OMP_NUM_THREADS=7;"
own=$("$run" --dry-run true | sed -n 's/.*LD_PRELOAD=\([^;]*\);.*/\1/p')
got=$(LD_PRELOAD="/opt/other-prefix/lib/libhcops.so.0:$own" "$run" --dry-run true 2>/dev/null |
  sed -n 's/.*LD_PRELOAD=\([^;]*\);.*/\1/p')
echo "preloaded under an outer hcops-run: $got"
[ "$got" = "$own" ] || { echo "FAIL: LD_PRELOAD '$got', expected '$own'"; failed=1; }
got=$(LD_PRELOAD="/lib/libkeep.so" "$run" --dry-run true 2>/dev/null | sed -n 's/.*LD_PRELOAD=\([^;]*\);.*/\1/p')
[ "$got" = "$own /lib/libkeep.so" ] || { echo "FAIL: the caller's LD_PRELOAD: '$got'"; failed=1; }

echo "== a library path with a space: refused in one line, nothing run"
# ld.so splits LD_PRELOAD at spaces: such a path would preload nothing and
# print an error in every process. A copy of hcops-run whose build tree
# has a space in its path (its libhcops.so a stand-in: never loaded).
spaced="$TMPDIR/my build"
mkdir -p "$spaced/shim/.libs" "$spaced/tools"
: >"$spaced/shim/.libs/libhcops.so"
ln -s "$(dirname "$(readlink -f "$run")")/hcops-cpus" "$spaced/tools/hcops-cpus"
# (libdir: none, so that an installed copy is not found first)
sed -e "s|^builddir=.*|builddir='$spaced'|" -e "s|^libdir=.*|libdir='$TMPDIR/no-libdir'|" "$run" >"$TMPDIR/hcops-run-spaced"
chmod +x "$TMPDIR/hcops-run-spaced"
"$TMPDIR/hcops-run-spaced" --dry-run touch "$TMPDIR/ran" >"$TMPDIR/out" 2>"$TMPDIR/err"
rc=$?
cat "$TMPDIR/err"
if [ $rc != 2 ] || [ -s "$TMPDIR/out" ] || [ -e "$TMPDIR/ran" ] || [ "$(wc -l <"$TMPDIR/err")" != 1 ] ||
  ! grep -q "^hcops: hcops-run: cannot preload '$spaced/shim/.libs/libhcops.so': LD_PRELOAD cannot hold a path with a space" "$TMPDIR/err"; then
  echo "FAIL: a library path with a space: exit $rc"
  failed=1
fi
rm -rf "$spaced" "$TMPDIR/hcops-run-spaced"

echo "== --cpus outside the list grammar: one error line, exit 2, nothing run"
for bad in -1 3-1 0,0 0-2,1 1, ,1 0,,1 "0 " 1x last 0-last 4294967296 18446744073709551615 "1
2" ""; do
  shown=$(printf '%s' "$bad" | tr '\n' '?')
  "$run" --dry-run --cpus "$bad" true >"$TMPDIR/out" 2>"$TMPDIR/err"
  rc=$?
  if [ $rc != 2 ] || [ -s "$TMPDIR/out" ] || [ "$(wc -l <"$TMPDIR/err")" != 1 ] ||
    ! grep -Fqx "hcops: hcops-run: --cpus \"$shown\" is not a CPU list (numbers and ranges a-b, a <= b, e.g. 0-3,8; each CPU once)" "$TMPDIR/err"; then
    echo "FAIL: --cpus \"$shown\": exit $rc, output: $(cat "$TMPDIR/out" "$TMPDIR/err")"
    failed=1
  fi
done
expect "$(rank 0 1 --cpus 0)" "rank 0/1: CPUs 0 (1 cores"
# A list of CPUs the topology does not have (this machine's: no XML here).
"$run" --dry-run --cpus 0-100000 true >"$TMPDIR/out" 2>"$TMPDIR/err"
rc=$?
if [ $rc != 2 ] || [ -s "$TMPDIR/out" ] ||
  ! grep -Eqx 'hcops: hcops-run: --cpus "0-100000": CPU [0-9]+ is not one of the topology.s \([0-9,-]+\)' "$TMPDIR/err"; then
  echo "FAIL: --cpus 0-100000: exit $rc, output: $(cat "$TMPDIR/out" "$TMPDIR/err")"
  failed=1
fi

xml=${HCOPS_TOPOLOGY_DIR:-}/epyc-nps4-2s.xml
if [ -f "$xml" ]; then
  export HWLOC_XMLFILE="$xml"
  echo "== EPYC NPS4 (128 cores, 2 PUs each), 2 unbound local ranks"
  expect "$(rank 0 2 --cpus 0-255)" "CPUs 0-127 (64 cores" "OMP_NUM_THREADS=63" "HCOPS_MPI_EXCLUSIVE=1"
  expect "$(rank 1 2 --cpus 0-255)" "CPUs 128-255 (64 cores" "OMP_NUM_THREADS=63"
  echo "== EPYC NPS4, 3 ranks meeting by job name: 0 and 1 share 0-5, 2 has 8-15"
  export PMIX_NAMESPACE=hcops-test
  rank 0 3 --cpus 0-5 >"$TMPDIR/0.out" &
  rank 1 3 --cpus 0-5 >"$TMPDIR/1.out" &
  rank 2 3 --cpus 8-15 >"$TMPDIR/2.out"
  wait
  # 3 cores between 2 ranks: whole cores (0-1 | 2-5), not 3 CPUs each.
  expect "$(cat "$TMPDIR/0.out")" "CPUs 0-1 (1 cores, bound here; 2 ranks share 0-5)" "OMP_NUM_THREADS=1;"
  expect "$(cat "$TMPDIR/1.out")" "CPUs 2-5 (2 cores, bound here; 2 ranks share 0-5)" "OMP_NUM_THREADS=1,"
  expect "$(cat "$TMPDIR/2.out")" "CPUs 8-15 (4 cores; 1 ranks share 8-15)" "OMP_NUM_THREADS=3"
  ls "$TMPDIR" | grep -q '^hcops-run\.' && { echo "FAIL: the meeting directory was left behind"; failed=1; }
  echo "== EPYC NPS4, one job on two hosts with a shared TMPDIR: each host's ranks meet their own"
  # The meeting directory is named by the job and the host (uname -n; two
  # hosts here by a UTS namespace each). Host b's rank 0 writes its file and
  # waits; host a's two ranks meet and end; then b's rank 1 comes. Named by
  # the job alone, a's ranks overwrote b0's file and removed the directory on
  # leaving: b's ranks never met (a warning after 5 s, then each counted
  # alone), where each host's pair must share its CPUs.
  if unshare --uts sh -c 'echo hcops-probe >/proc/sys/kernel/hostname' 2>/dev/null; then
    on_host() {  # HOST LOCAL_RANK CPUS: hcops-run --mpi --dry-run as local rank R of 2 on HOST
      unshare --uts sh -c 'echo "$1" >/proc/sys/kernel/hostname &&
        OMPI_COMM_WORLD_LOCAL_RANK=$2 OMPI_COMM_WORLD_LOCAL_SIZE=2 exec "$4" --mpi --dry-run --cpus "$3" true' \
        -- "$@" "$run"
    }
    on_host hcops-test-b 0 8-15 >"$TMPDIR/b0.out" 2>"$TMPDIR/b0.err" &
    tries=0
    until ls "$TMPDIR"/hcops-run.*/0 >/dev/null 2>&1 || [ $tries -ge 200 ]; do sleep 0.05; tries=$((tries + 1)); done
    on_host hcops-test-a 0 0-5 >"$TMPDIR/a0.out" 2>"$TMPDIR/a0.err" &
    on_host hcops-test-a 1 0-5 >"$TMPDIR/a1.out" 2>"$TMPDIR/a1.err"
    wait $!
    on_host hcops-test-b 1 8-15 >"$TMPDIR/b1.out" 2>"$TMPDIR/b1.err"
    wait
    expect "$(cat "$TMPDIR/a0.out")" "CPUs 0-1 (1 cores, bound here; 2 ranks share 0-5)"
    expect "$(cat "$TMPDIR/a1.out")" "CPUs 2-5 (2 cores, bound here; 2 ranks share 0-5)"
    expect "$(cat "$TMPDIR/b0.out")" "CPUs 8-11 (2 cores, bound here; 2 ranks share 8-15)"
    expect "$(cat "$TMPDIR/b1.out")" "CPUs 12-15 (2 cores, bound here; 2 ranks share 8-15)"
    if grep -h . "$TMPDIR"/[ab][01].err; then echo "FAIL: the ranks said something on stderr (above)"; failed=1; fi
    ls "$TMPDIR" | grep -q '^hcops-run\.' && { echo "FAIL: a host's meeting directory was left behind"; failed=1; }
  else
    echo "SKIP (this case only): two hosts need a UTS namespace whose host name can be set (unshare --uts: CAP_SYS_ADMIN)"
  fi
else
  echo "FAIL: no $xml (the checkout's tests/topologies): topology cases not run"
  failed=1
fi

echo "== malloc tunables"
# tunables ARGS...: the GLIBC_TUNABLES the command sees.
tunables() { "$run" "$@" sh -c 'echo "${GLIBC_TUNABLES-unset}"'; }
mmap=glibc.malloc.mmap_threshold=33554432 trim=glibc.malloc.trim_threshold=4294967296 thp=glibc.malloc.hugetlb=1
check_tunables() {  # WHAT GOT WANT
  echo "$1: $2"
  [ "$2" = "$3" ] || { echo "FAIL: $1: '$2', expected '$3'"; failed=1; }
}
check_tunables "default" "$(tunables)" "$mmap:$trim:$thp"
check_tunables "--no-malloc-tuning" "$(tunables --no-malloc-tuning)" unset
check_tunables "the caller's trim threshold kept" \
  "$(GLIBC_TUNABLES=glibc.malloc.trim_threshold=5:glibc.cpu.x86_rep_movsb_threshold=4096 tunables)" \
  "glibc.malloc.trim_threshold=5:glibc.cpu.x86_rep_movsb_threshold=4096:$mmap:$thp"
check_tunables "hcops-run under hcops-run adds nothing twice" \
  "$("$run" "$run" sh -c 'echo "$GLIBC_TUNABLES"')" "$mmap:$trim:$thp"
check_tunables "glibc's MALLOC_TRIM_THRESHOLD_ left to the caller" \
  "$(MALLOC_TRIM_THRESHOLD_=65536 tunables)" "$mmap:$thp"
check_tunables "--no-malloc-tuning keeps the caller's" \
  "$(GLIBC_TUNABLES=glibc.malloc.arena_max=2 tunables --no-malloc-tuning)" glibc.malloc.arena_max=2
# That glibc applies them (it ignores an out-of-range value silently; 32 MiB
# is the largest mmap threshold it takes): where a 16 MiB malloc comes from,
# by mallinfo2's count of mmapped blocks, under hcops-run (the heap) and
# without it (mmap).
probe='
import ctypes, ctypes.util
libc = ctypes.CDLL(ctypes.util.find_library("c"))
class Mallinfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                              "fsmblks", "uordblks", "fordblks", "keepcost")]
if not hasattr(libc, "mallinfo2"):  # glibc before 2.33
    print("unknown")
    raise SystemExit(0)
libc.mallinfo2.restype = Mallinfo2
libc.malloc.restype = ctypes.c_void_p
before = libc.mallinfo2().hblks
p = libc.malloc(16 << 20)
print("mmapped" if libc.mallinfo2().hblks > before else "heap")
libc.free(ctypes.c_void_p(p))'
if ! command -v python3 >/dev/null 2>&1; then
  echo "SKIP: where a malloc comes from: no python3"
elif [ "$(python3 -c "$probe")" = unknown ]; then
  echo "SKIP: where a malloc comes from: this glibc has no mallinfo2 (before 2.33)"
else
  check_tunables "a 16 MiB malloc under hcops-run" "$("$run" --no-ops python3 -c "$probe")" heap
  check_tunables "a 16 MiB malloc without it (the control)" "$(python3 -c "$probe")" mmapped
fi

# hugetlb=1 applied: a 64 MiB malloc (mapped: past the mmap threshold),
# touched, is backed by transparent huge pages (AnonHugePages in
# smaps_rollup) under hcops-run and not without it. Only where the kernel's
# THP mode is "madvise" (with "always" both have them, with "never"
# neither), and on a glibc that knows the tunable (2.35 and later).
thp_probe='
import ctypes, ctypes.util
libc = ctypes.CDLL(ctypes.util.find_library("c"))
libc.malloc.restype = ctypes.c_void_p
n = 64 << 20
p = libc.malloc(n)
ctypes.memset(p, 1, n)
kb = 0
with open("/proc/self/smaps_rollup") as f:
    for line in f:
        if line.startswith("AnonHugePages:"):
            kb = int(line.split()[1])
print("huge" if kb >= 2048 else "small")'
thp_mode=$(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || true)
glibc_minor=$(getconf GNU_LIBC_VERSION 2>/dev/null | sed -n 's/^glibc 2\.\([0-9]*\).*/\1/p')
if ! command -v python3 >/dev/null 2>&1 || [ ! -r /proc/self/smaps_rollup ]; then
  echo "SKIP: huge pages for malloc: no python3 or no /proc/self/smaps_rollup"
elif [ "$thp_mode" != madvise ]; then
  echo "SKIP: huge pages for malloc: the kernel's THP mode is '${thp_mode:-unknown}', not madvise"
elif [ "${glibc_minor:-0}" -lt 35 ]; then
  echo "SKIP: huge pages for malloc: glibc 2.${glibc_minor:-?} has no glibc.malloc.hugetlb"
else
  check_tunables "a 64 MiB malloc under hcops-run" "$("$run" --no-ops python3 -c "$thp_probe")" huge
  check_tunables "a 64 MiB malloc without it (the control)" "$(python3 -c "$thp_probe")" small
fi

[ $failed = 0 ] && echo "test_hcops_run.sh: all cases passed"
exit $failed

#!/bin/sh
# The hcops backend between two "hosts": network namespaces joined by a veth
# pair shaped to 1 Gbit/s and then 10 Gbit/s (tests/torch2/netns_pair.sh),
# Open MPI over TCP between them (an orted in each namespace, as on two
# nodes), gloo over the same link: test_dist.py (every collective and DDP
# against gloo, hcops:// rendezvous across the link; at 1 Gbit/s) and the
# unmodified DDP script under hcops-run --dist (at both rates). Needs root and network namespaces;
# skips, saying why, without them.
. "${srcdir:-../../tests}/time_limits.sh"
. "${srcdir:-../../tests}/torch2/torch2_env.sh"
lib=${HCOPS_C10D_TORCH2_LIB:?}
[ -f "$lib" ] || { echo "SKIP: $lib was not built (configure found no Python.h for the torch 2.x python)"; exit 77; }
dir=${srcdir:-../../tests}/torch2
dir=$(cd "$dir" && pwd)
pair=$dir/netns_pair.sh
why=$(sh "$pair" check 2>&1) || { echo "SKIP: two network namespaces cannot be made here: $why"; exit 77; }
HCOPS_C10D_LIB=$lib OMP_NUM_THREADS=1
PYTHONPATH="$HCOPS_TEST_SRCDIR/python${PYTHONPATH:+:$PYTHONPATH}"
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export HCOPS_C10D_LIB OMP_NUM_THREADS PYTHONPATH OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
unset HCOPS_MPI HCOPS_MPI_VERBOSE LD_PRELOAD MASTER_ADDR MASTER_PORT RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE
run=${HCOPS_TEST_TOP_BUILDDIR:?}/tools/hcops-run
ns=hct$$
# The "nodes'" temporary folders (netns_agent.sh) are made in it.
TMPDIR=$(mktemp -d)
export TMPDIR
trap 'sh "$pair" down $ns; rm -rf "$TMPDIR"' EXIT
trap 'exit 1' HUP INT TERM
status=0
fail() { echo "FAIL: $*"; status=1; }
for rate in 1gbit 10gbit; do
  sh "$pair" down $ns
  sh "$pair" up $ns $rate 199 || { fail "netns_pair.sh up $ns $rate"; continue; }
  mpirun="ip netns exec ${ns}0 ${MPIRUN:-mpirun} --host ${ns}0:1,${ns}1:1 -np 2
    --mca plm_rsh_agent $dir/netns_agent.sh --mca plm_rsh_no_tree_spawn 1 --mca pml ob1 --mca btl self,tcp
    --mca btl_tcp_if_include hc0 --mca oob_tcp_if_include hc0
    -x PYTHONPATH -x HCOPS_C10D_LIB -x OMP_NUM_THREADS -x GLOO_SOCKET_IFNAME=hc0"
  where=$(timeout -k 10 "$(time_limit 60)" $mpirun sh -c 'echo "rank $OMPI_COMM_WORLD_RANK in $(ip netns identify $$)"' 2>&1)
  echo "$where"
  [ "$(echo "$where" | grep -c "rank 0 in ${ns}0\|rank 1 in ${ns}1")" = 2 ] || fail "$rate: the ranks are not one per namespace"
  # Every operation at the slower rate; the DDP script at both.
  if [ $rate = 1gbit ]; then
    echo "== $rate: test_dist.py"
    out=$(timeout -k 10 "$(time_limit 300)" $mpirun "$PYTHON" "$dir/test_dist.py" 2>&1)
    rc=$?
    oks=$(echo "$out" | grep -o "test_dist on 2 ranks: OK" | wc -l)
    if [ $rc = 0 ] && [ "$oks" = 2 ]; then
      echo "$out" | grep -v 'Warning\|warn(\|return func\|^\[rank\|socket.cpp' | tail -8
    else
      # Its last 150 lines, unfiltered: a crash's report (Open MPI's, a
      # backtrace) is many lines.
      echo "$out" | tail -150
      fail "$rate: test_dist.py: exit $rc, $oks of 2 ranks OK"
    fi
  fi
  echo "== $rate: hcops-run --dist dist_script.py (hcops:// rendezvous)"
  out=$(timeout -k 10 "$(time_limit 300)" $mpirun "$run" --dist --no-ops "$PYTHON" "$dir/dist_script.py" 2>&1)
  rc=$?
  n=$(echo "$out" | grep -o "backend hcops" | wc -l)
  if [ $rc = 0 ] && [ "$n" = 2 ]; then
    echo "$out" | grep "sums\|backend"
  else
    echo "$out" | tail -150
    fail "$rate: dist_script.py: exit $rc, $n of 2 ranks on hcops"
  fi
done
exit $status

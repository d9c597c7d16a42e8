#!/bin/sh
# test_mpi_verbose under LD_PRELOAD of libhcops_mpi.so: HCOPS_MPI_VERBOSE=2
# prints one "hcops_verbose,mpi,..." line per offloaded operation (call,
# communicator size, count, type, op, bytes, then milliseconds in flight and
# exposed, exposed never more than in flight and, for a blocking call, all
# of it) after a legend line, besides level 1's summary; level 1 prints the
# summary alone; a value out of range warns once and prints nothing.
. "${srcdir:-..}/mpi/mpi_common.sh"
prog=./test_mpi_verbose
MPI_TIMEOUT=60

# run LABEL NP MPIRUN-ARGS... under the preload.
run() {
  label=$1 np=$2
  shift 2
  mpi_job "$label" "$np" ' 0 failed$' -x LD_PRELOAD="$HCOPS_MPI_LIB" "$@" "$prog"
}

# op_lines: the per-operation lines of $err.
op_lines() { grep '^hcops_verbose,mpi,' "$err"; }

# check_ops NP: each rank's operation lines are exactly the ones it expects
# (times aside), and their times are consistent.
check_ops() {
  r=0
  while [ "$r" -lt "$1" ]; do
    sed -n "s/^rank $r: expect //p" "$out" | sort >"$out.want"
    op_lines | sed -n "s/^hcops_verbose,mpi,$r,\([^,]*,[^,]*,[^,]*,[^,]*,[^,]*,[^,]*\),[^,]*,[^,]*$/\1/p" | sort >"$out.got"
    if [ ! -s "$out.want" ] || ! cmp -s "$out.want" "$out.got"; then
      echo "FAIL: rank $r: operation lines (< expected, > printed)"
      diff "$out.want" "$out.got"
      failed=1
    fi
    r=$((r + 1))
  done
  rm -f "$out.want" "$out.got"
  bad=$(op_lines | awk -F, '$10 < 0 || $11 < 0 || $11 > $10 || ($4 == "allreduce" && $11 != $10)')
  [ -z "$bad" ] || { echo "FAIL: exposed < 0, > in flight, or less than in flight for a blocking call:"; echo "$bad"; failed=1; }
  [ "$(grep -c '^hcops_verbose,mpi_legend,rank,call,ranks,count,type,op,bytes,in_flight_ms,exposed_ms$' "$err")" = "$1" ] ||
    { echo "FAIL: not one legend line per rank"; failed=1; }
  check_offloaded "$err" "$1" >/dev/null || failed=1
}

run "HCOPS_MPI_VERBOSE=2" 2 -x HCOPS_MPI_VERBOSE=2 && check_ops 2
run "HCOPS_MPI_VERBOSE=2" 3 -x HCOPS_MPI_VERBOSE=2 && check_ops 3

run "HCOPS_MPI_VERBOSE=1" 2 -x HCOPS_MPI_VERBOSE=1
check_offloaded "$err" 2 || failed=1
if grep -q '^hcops_verbose,' "$err"; then
  echo "FAIL: HCOPS_MPI_VERBOSE=1 printed operation lines"
  failed=1
fi

for bad in 3 -1 yes; do
  run "HCOPS_MPI_VERBOSE=$bad" 2 -x HCOPS_MPI_VERBOSE=$bad
  n=$(grep -c "^hcops: .*HCOPS_MPI_VERBOSE=\"$bad\"" "$err")
  [ "$n" = 2 ] || { echo "FAIL: HCOPS_MPI_VERBOSE=$bad: $n warnings, expected one per rank"; failed=1; }
  if grep -q '^hcops_verbose,\|^hcops_mpi:' "$err"; then
    echo "FAIL: HCOPS_MPI_VERBOSE=$bad printed statistics"
    failed=1
  fi
done

[ $failed = 0 ] && echo "test_mpi_verbose.sh: all runs passed"
exit $failed

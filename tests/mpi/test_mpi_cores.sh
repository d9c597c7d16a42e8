#!/bin/sh
# HCOPS_MPI_CORES under LD_PRELOAD of libhcops_mpi.so: a value outside the
# list grammar (doc/environment.md, "CPU and node lists") or naming a CPU
# the rank cannot use warns once per rank, on one line with the value
# escaped, and the progress thread goes where it goes without the variable
# ("last"), as HCOPS_MPI_VERBOSE=1's "progress CPU(s)" line shows; the
# variable itself is left alone (test_mpi_environ checks every HCOPS_*).
# Values from issue 13 that were CPU -1, 0, 1 or 2.
. "${srcdir:-..}/mpi/mpi_common.sh"
prog=./test_mpi_environ
MPI_TIMEOUT=60
NP=2

# run LABEL: the program on NP unbound ranks (each sees the whole CPU set,
# so "last" gives the ranks different CPUs) with HCOPS_MPI_VERBOSE=1 and
# the caller's HCOPS_MPI_CORES, if set.
run() {
  if [ -n "${HCOPS_MPI_CORES+set}" ]; then
    mpi_job "$1" $NP ' 0 failed$' --bind-to none -x LD_PRELOAD="$HCOPS_MPI_LIB" -x HCOPS_MPI_VERBOSE=1 \
      -x HCOPS_MPI_CORES "$prog"
  else
    mpi_job "$1" $NP ' 0 failed$' --bind-to none -x LD_PRELOAD="$HCOPS_MPI_LIB" -x HCOPS_MPI_VERBOSE=1 "$prog"
  fi
}
# progress: each rank's "progress CPU(s) ..." ending, sorted by rank.
progress() { sed -n 's/^hcops_mpi: rank \([0-9]*\): .*; progress CPU(s) /\1 /p' "$err" | sort; }

run "HCOPS_MPI_CORES unset"
progress >"$out.default"
trap 'rm -f "$out" "$err" "$out.default"' EXIT
if [ "$(wc -l <"$out.default")" != $NP ] || grep -qv '(HCOPS_MPI_CORES=last)$' "$out.default"; then
  echo "FAIL: without HCOPS_MPI_CORES: not one 'progress CPU(s) ... (HCOPS_MPI_CORES=last)' line per rank:"
  cat "$out.default"
  failed=1
fi

# bad VALUE QUOTED: HCOPS_MPI_CORES=VALUE warns once per rank, each warning
# one line quoting it as QUOTED, and every rank uses the default CPUs.
bad() {
  HCOPS_MPI_CORES=$1
  export HCOPS_MPI_CORES
  # mpi_job's echo would expand the backslashes of the label.
  run "HCOPS_MPI_CORES=$(printf '%s' "$2" | sed 's/\\/\\\\/g')"
  unset HCOPS_MPI_CORES
  n=$(grep -Fc "hcops: warning: HCOPS_MPI_CORES=$2: " "$err")
  [ "$n" = $NP ] || { printf 'FAIL: HCOPS_MPI_CORES=%s: %s warning lines quoting it so, expected %s\n' "$2" "$n" $NP; failed=1; }
  # Nothing else on stderr but the summaries: no piece of a split line.
  others=$(grep -v '^hcops_mpi: rank [0-9]*: \|^hcops: warning: HCOPS_MPI_CORES=' "$err")
  [ -z "$others" ] || { printf 'FAIL: HCOPS_MPI_CORES=%s: other output: %s\n' "$2" "$others"; failed=1; }
  if ! progress | cmp -s - "$out.default"; then
    printf 'FAIL: HCOPS_MPI_CORES=%s: progress CPUs not the default (< default, > got):\n' "$2"
    progress | diff "$out.default" -
    failed=1
  fi
}

bad -1 '"-1"'
bad 99999999999999999999999999 '"99999999999999999999999999"'
bad 18446744073709551615 '"18446744073709551615"'
bad 4294967296 '"4294967296"'
bad 4294967297 '"4294967297"'
bad "1
2" '"1\n2"'
bad 0,0,0 '"0,0,0"'
bad "0, 1" '"0, 1"'
bad "$(printf 'x\001\033y')" '"x\x01\x1by"'
# A CPU this machine does not have (configured CPUs are numbered from 0).
none=$(getconf _NPROCESSORS_CONF)
bad "$none" "\"$none\""
bad "0-$none" "\"0-$none\""
# Long values are cut after 64 bytes.
long=$(printf '1,%.0s' $(seq 50))1
bad "$long" "\"$(printf '1,%.0s' $(seq 32))\"..."

# A valid list is taken as written, silently.
HCOPS_MPI_CORES=0 && export HCOPS_MPI_CORES
run "HCOPS_MPI_CORES=0"
unset HCOPS_MPI_CORES
if grep -q '^hcops: ' "$err" || [ "$(progress | grep -c ' 0 (HCOPS_MPI_CORES=0)$')" != $NP ]; then
  echo "FAIL: HCOPS_MPI_CORES=0: not CPU 0 on every rank, silently:"
  cat "$err"
  failed=1
fi

[ $failed = 0 ] && echo "test_mpi_cores.sh: all runs passed"
exit $failed

# Sourced by the libhcops_mpi tests (tests/mpi.am): how they start MPI jobs.
# Every job runs under `timeout`, so a hang fails the test (exit 124) instead
# of blocking make check; ranks may outnumber cores (--oversubscribe); the
# transport is shared memory only (ob1 over self,vader), which keeps Open MPI
# quiet and local. MPIRUN and HCOPS_MPI_LIB come from tests/Makefile.am.
MPIRUN=${MPIRUN:-mpirun}
HCOPS_MPI_LIB=${HCOPS_MPI_LIB:?HCOPS_MPI_LIB must name the libhcops_mpi.so to test}
MPI_TIMEOUT=${MPI_TIMEOUT:-120}  # natively; time_limits.sh scales it
. "${srcdir:-../../tests}/time_limits.sh"
# Open MPI refuses root unless told; only say so when root.
if [ "$(id -u)" = 0 ]; then
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
fi
# Settings of the caller's that would change what the tests check.
unset HCOPS_MPI HCOPS_MPI_VERBOSE HCOPS_MPI_CORES HCOPS_MPI_OFFLOAD_MIN HCOPS_MPI_EXCLUSIVE LD_PRELOAD

# mpi_run NP ARGS...: mpirun -np NP ARGS under the timeout; the environment
# (LD_PRELOAD, HCOPS_MPI_*) reaches the ranks as mpirun's own.
mpi_run() {
  np=$1
  shift
  timeout -k 10 "$(time_limit "$MPI_TIMEOUT")" "$MPIRUN" -np "$np" --oversubscribe --mca pml ob1 --mca btl self,vader "$@"
}

# Every job's output lands in these, and any failed check sets failed=1.
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
failed=0

# mpi_job LABEL NP WANT ARGS...: mpi_run NP ARGS with stdout in $out and
# stderr in $err, shows them (without the
# HCOPS_MPI_VERBOSE lines), and sets failed=1 when the job timed out, failed,
# or printed no line matching WANT.
mpi_job() {
  label=$1 np=$2 want=$3
  shift 3
  echo "== $label: $np ranks: $*"
  mpi_run "$np" "$@" >"$out" 2>"$err"
  rc=$?
  cat "$out"
  grep -v '^hcops_mpi: rank' "$err" | head -40
  if [ $rc != 0 ]; then
    [ $rc = 124 ] && echo "FAIL: $label: timed out (hung?)" || echo "FAIL: $label: exit $rc"
    failed=1
  fi
  if ! grep -q "$want" "$out"; then
    echo "FAIL: $label: no '$want' in the output"
    failed=1
  fi
}

# mpi_checked LABEL NP ARGS...: mpi_job for a program that ends with
# mpi_check_summary's "... 0 failed" line.
mpi_checked() {
  label=$1 np=$2
  shift 2
  mpi_job "$label" "$np" ' 0 failed$' "$@"
}

# check_offloaded ERRFILE NP: every rank printed HCOPS_MPI_VERBOSE's line with
# a positive count. Prints the lines; returns 1 if one is missing.
check_offloaded() {
  ok=0
  r=0
  while [ "$r" -lt "$2" ]; do
    n=$(sed -n "s/^hcops_mpi: rank $r: \([0-9]*\) allreduce offloaded.*/\1/p" "$1")
    if [ -z "$n" ] || [ "$n" -le 0 ]; then
      echo "FAIL: rank $r: no 'hcops_mpi: rank $r: N allreduce offloaded' line with N > 0"
      ok=1
    fi
    r=$((r + 1))
  done
  grep '^hcops_mpi: rank' "$1"
  return $ok
}

#!/bin/sh
# The torch.distributed backend "hcops" (hcops_c10d_torch2.so) against gloo,
# on 2 and 3 ranks (tests/torch2/test_dist.py), with libhcops_mpi offloading
# (linked) and declining (HCOPS_MPI=0: the backend's completion threads then
# poll each operation, MPI being at MPI_THREAD_MULTIPLE); every job under
# `timeout`. With HCOPS_DIST_TORCH1=1 (tests/torch/test_dist_torch1.sh), the
# same with Debian's python and hcops_c10d_torch1.so.
. "${srcdir:-../../tests}/time_limits.sh"
if [ "${HCOPS_DIST_TORCH1:-0}" = 1 ]; then
  PYTHON=${HCOPS_TORCH1_PYTHON:?} lib=${HCOPS_C10D_TORCH1_LIB:?}
  [ -f "$lib" ] || { echo "SKIP: $lib was not built (configure found no Python.h or pybind11 for $PYTHON: python3-dev, pybind11-dev)"; exit 77; }
  echo "== $("$PYTHON" -c 'import torch; print("torch", torch.__version__)') ($PYTHON), $lib"
else
  . "${srcdir:-../../tests}/torch2/torch2_env.sh"
  lib=${HCOPS_C10D_TORCH2_LIB:?}
  [ -f "$lib" ] || { echo "SKIP: $lib was not built (configure found no Python.h for the torch 2.x python)"; exit 77; }
fi
HCOPS_C10D_LIB=$lib
PYTHONPATH="$HCOPS_TEST_SRCDIR/python${PYTHONPATH:+:$PYTHONPATH}"
export HCOPS_C10D_LIB PYTHONPATH
if [ "$(id -u)" = 0 ]; then
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
fi
unset HCOPS_MPI HCOPS_MPI_VERBOSE LD_PRELOAD
test=${srcdir:-../../tests}/torch2/test_dist.py
status=0
# run LABEL NP [ENV=VALUE...]: one job; every rank must print its OK line.
run() {
  label=$1 np=$2
  shift 2
  echo "== $label: $np ranks"
  out=$(timeout -k 10 "$(time_limit 300)" "${MPIRUN:-mpirun}" -np "$np" --oversubscribe --mca pml ob1 --mca btl self,vader \
    "$@" "$PYTHON" "$test" 2>&1)
  rc=$?
  echo "$out" | grep -v 'UserWarning\|warnings.warn' | tail -25
  # Counted as occurrences: mpirun's forwarding can run two ranks' lines together.
  oks=$(echo "$out" | grep -o "test_dist on $np ranks: OK" | wc -l)
  if [ $rc != 0 ] || [ "$oks" != "$np" ]; then
    echo "FAIL: $label: exit $rc, $oks of $np ranks OK"
    status=1
  fi
}
run "offloaded to libhcops_mpi" 2 -x HCOPS_MPI_VERBOSE=1
echo "$out" | grep -q "operations offloaded for torch.distributed" ||
  { echo "FAIL: HCOPS_MPI_VERBOSE=1 counted no backend operation"; status=1; }
# 3 ranks (sums in MPI's order) on the 2.x build; the 1.13 one shares the code.
[ "${HCOPS_DIST_TORCH1:-0}" = 1 ] || run "offloaded to libhcops_mpi" 3
run "HCOPS_MPI=0: declined, run by the backend itself" 2 -x HCOPS_MPI=0 -x HCOPS_MPI_VERBOSE=1
if echo "$out" | grep -q "operations offloaded for torch.distributed"; then
  echo "FAIL: HCOPS_MPI=0: operations were offloaded"
  status=1
fi
exit $status

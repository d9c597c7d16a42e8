#!/bin/sh
# test_mpi_fp_env with and without LD_PRELOAD of libhcops_mpi.so, under
# every HWLOC_XMLFILE of abi/fp_env_xmls.sh: the wrapper must leave the
# caller's floating-point environment as it found it. What the MPI library
# itself changes (Open MPI loads HWLOC_XMLFILE's topology too) is printed by
# both runs alike: the FAIL lines of the preloaded run must be those of the
# run without the wrapper. Under an unusable value each rank says it once.
. "${srcdir:-..}/mpi/mpi_common.sh"
. "${srcdir:-..}/abi/fp_env_xmls.sh"
trap 'rm -rf "$out" "$err" "$fp_tmp"' EXIT
prog=./test_mpi_fp_env
MPI_TIMEOUT=60
fp_probe_libxml ./test_fp_env  # the same hwloc, without mpirun
np=2

# run KIND VALUE: both runs under HWLOC_XMLFILE=VALUE, compared.
run() {
  kind=$1 value=$2
  fp_run "$value" mpi_run $np "$prog" </dev/null >"$out" 2>"$err"
  grep '^FAIL' "$out" | sort >"$fp_tmp/plain"
  fp_run "$value" mpi_run $np -x LD_PRELOAD="$HCOPS_MPI_LIB" "$prog" </dev/null >"$out" 2>"$err"
  rc=$?
  grep '^FAIL' "$out" | sort >"$fp_tmp/wrapped"
  n=$(fp_warnings "$err")
  want=0
  [ "$kind" = bad ] && want=$np
  if [ $rc != 0 ] && [ ! -s "$fp_tmp/plain" ]; then
    echo "FAIL: HWLOC_XMLFILE=$value: exit $rc"
    cat "$out" "$err" | head -20
    failed=1
  elif ! cmp -s "$fp_tmp/plain" "$fp_tmp/wrapped"; then
    echo "FAIL: HWLOC_XMLFILE=$value: the wrapper changed the FP environment (< without, > with the wrapper):"
    diff "$fp_tmp/plain" "$fp_tmp/wrapped"
    failed=1
  elif [ "$n" != $want ]; then
    echo "FAIL: HWLOC_XMLFILE=$value: $n warnings that it cannot be used, want $want:"
    grep '^hcops' "$err" | head -5
    failed=1
  else
    echo "PASS: HWLOC_XMLFILE=$value: $(grep -c '^ok' "$out") calls unchanged, $(wc -l <"$fp_tmp/plain") changed by MPI itself"
  fi
}

for v in $fp_good; do run good "$v"; done
while IFS= read -r v; do run bad "$v"; done <<EOF
$fp_bad

#!/bin/sh
# test_ops_eltwise on every kernel family this CPU runs (hcops-info
# --families), forced with HCOPS_ISA, so that the operator kernels of a
# lower family are tested on a machine that would not pick it; the program
# checks that the operators run on the family asked for. Operator families
# this CPU cannot run, and GEMM families without operator kernels, are
# named as skipped.
set -u
. "${srcdir:-../../tests}/families.sh"
status=0
for f in $ops_families; do
  runs_here "$f" || echo "SKIP: operator family $f: this CPU cannot run it"
done
for isa in $families; do
  has_ops "$isa" || { echo "SKIP: kernel family $isa has no operator kernels"; continue; }
  echo "== HCOPS_ISA=$isa"
  HCOPS_ISA=$isa ./test_ops_eltwise "$isa" || status=1
done
exit $status

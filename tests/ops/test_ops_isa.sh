#!/bin/sh
# The operator kernels' tests on every kernel family this CPU can execute
# (hcops-info --families), forced with HCOPS_ISA, so a lower family is never
# left untested on a machine that would not pick it by itself. Each program
# checks that the operators run on the family named (one without operator
# kernels passes to the next, as ops/family.h says). Operator families this
# CPU cannot run are skipped, and said so.
set -u
programs="./test_ops_softmax ./test_ops_layer_norm ./test_ops_output ./test_ops_reduce"
. "${srcdir:-../../tests}/families.sh"
status=0
for isa in $ops_families; do
  runs_here "$isa" || echo "SKIP: HCOPS_ISA=$isa: this CPU cannot run the $isa operator kernels, not tested here"
done
for isa in $families; do
  for p in $programs; do
    echo "== HCOPS_ISA=$isa $p"
    HCOPS_ISA=$isa $p || status=1
  done
done
exit $status

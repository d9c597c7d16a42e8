#!/bin/sh
# The operator kernels' tests on every kernel family this CPU can execute
# (hcops-info --families), forced with HCOPS_ISA, so a lower family is never
# left untested on a machine that would not pick it by itself. Each program
# checks that the operators run on the family named (one without operator
# kernels passes to the next, as ops/family.h says). Operator families this
# CPU cannot run are skipped, and said so.
set -u
programs="./test_ops_softmax ./test_ops_layer_norm ./test_ops_output"
families=$(../tools/hcops-info --families)
if [ -z "$families" ]; then
  echo "FAIL: hcops-info --families lists no kernel family"
  exit 1
fi
status=0
for isa in avx512 avx2 generic; do
  case " $(echo $families) " in
    *" $isa "*) ;;
    *) echo "SKIP: HCOPS_ISA=$isa: this CPU cannot run the $isa operator kernels, not tested here" ;;
  esac
done
for isa in $families; do
  for p in $programs; do
    echo "== HCOPS_ISA=$isa $p"
    HCOPS_ISA=$isa $p || status=1
  done
done
exit $status

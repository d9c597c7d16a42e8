#!/bin/sh
# test_ops_eltwise on every kernel family this CPU runs (hcops-info
# --families), forced with HCOPS_ISA, so that the operator kernels of a
# lower family are tested on a machine that would not pick it; the program
# checks that the operators run on the family asked for. Operator families
# this CPU cannot run, and GEMM families without operator kernels, are
# named as skipped.
set -u
op_families="avx512 avx2 generic"
families=$(../tools/hcops-info --families)
if [ -z "$families" ]; then
  echo "FAIL: hcops-info --families lists no kernel family"
  exit 1
fi
status=0
for f in $op_families; do
  case " $(echo $families) " in
    *" $f "*) ;;
    *) echo "SKIP: operator family $f: this CPU cannot run it" ;;
  esac
done
for isa in $families; do
  case " $op_families " in
    *" $isa "*) ;;
    *) echo "SKIP: kernel family $isa has no operator kernels"; continue ;;
  esac
  echo "== HCOPS_ISA=$isa"
  HCOPS_ISA=$isa ./test_ops_eltwise "$isa" || status=1
done
exit $status

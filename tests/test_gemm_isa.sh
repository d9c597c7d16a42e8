#!/bin/sh
# The randomized GEMM suite on every kernel family this CPU can execute,
# forced with HCOPS_ISA, so a lower path is never left untested on a machine
# that would not pick it by itself.
set -u
best=$(../tools/hcops-info | sed -n 's/.*best for this CPU: \([a-z0-9]*\).*/\1/p')
case $best in
  avx512) families="generic avx2 avx512" ;;
  avx2) families="generic avx2" ;;
  *) families="generic" ;;
esac
status=0
for isa in $families; do
  echo "== HCOPS_ISA=$isa"
  HCOPS_ISA=$isa ../tools/hcops-info | grep -q "^kernel family: $isa " || { echo "FAIL: $isa not selected"; status=1; }
  HCOPS_ISA=$isa HCOPS_NUM_THREADS=2 ./test_gemm || status=1
done
exit $status

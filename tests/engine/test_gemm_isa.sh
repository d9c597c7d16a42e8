#!/bin/sh
# The randomized GEMM suite on every kernel family this CPU can execute,
# forced with HCOPS_ISA, so a lower path is never left untested on a machine
# that would not pick it by itself; and on each, with B always packed and
# always read in place (HCOPS_PACK_B), whatever the shape would choose.
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
  [ $isa = generic ] && continue  # packs always: no in-place kernel
  for pack in always never; do
    echo "== HCOPS_ISA=$isa HCOPS_PACK_B=$pack"
    HCOPS_ISA=$isa HCOPS_PACK_B=$pack ../tools/hcops-info | grep -q "^  sgemm: .*B .*HCOPS_PACK_B=$pack" ||
      { echo "FAIL: HCOPS_PACK_B=$pack not in effect"; status=1; }
    HCOPS_ISA=$isa HCOPS_PACK_B=$pack HCOPS_NUM_THREADS=2 ./test_gemm || status=1
  done
done
exit $status

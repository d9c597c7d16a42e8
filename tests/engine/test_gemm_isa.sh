#!/bin/sh
# The randomized GEMM suite on every kernel family this CPU can execute
# (as the registry lists them: hcops-info --families),
# forced with HCOPS_ISA, so a lower path is never left untested on a machine
# that would not pick it by itself; and on each, with B always packed and
# always read in place (HCOPS_PACK_B), whatever the shape would choose.
set -u
families=$(../tools/hcops-info --families)
if [ -z "$families" ]; then
  echo "FAIL: hcops-info --families lists no kernel family"
  exit 1
fi
status=0
for isa in $families; do
  echo "== HCOPS_ISA=$isa"
  HCOPS_ISA=$isa ../tools/hcops-info | grep -q "^kernel family: $isa " || { echo "FAIL: $isa not selected"; status=1; }
  HCOPS_ISA=$isa HCOPS_NUM_THREADS=2 ./test_gemm || status=1
  if HCOPS_ISA=$isa ../tools/hcops-info | grep -q "^  sgemm: .*always packed (no in-place kernel)"; then
    echo "== HCOPS_ISA=$isa always packs B: no in-place kernel, HCOPS_PACK_B has nothing to switch"
    continue
  fi
  for pack in always never; do
    echo "== HCOPS_ISA=$isa HCOPS_PACK_B=$pack"
    HCOPS_ISA=$isa HCOPS_PACK_B=$pack ../tools/hcops-info | grep -q "^  sgemm: .*B .*HCOPS_PACK_B=$pack" ||
      { echo "FAIL: HCOPS_PACK_B=$pack not in effect"; status=1; }
    HCOPS_ISA=$isa HCOPS_PACK_B=$pack HCOPS_NUM_THREADS=2 ./test_gemm || status=1
  done
done
exit $status

#!/bin/sh
# The randomized GEMM suite on every kernel family this CPU can execute
# (as the registry lists them: hcops-info --families),
# forced with HCOPS_ISA, so a lower path is never left untested on a machine
# that would not pick it by itself; and on each, with B always packed and
# always read in place (HCOPS_PACK_B), whatever the shape would choose, and
# with the skinny and shallow kernels off (HCOPS_SKINNY=never: products of
# n <= 16 or k <= 16 packed).
set -u
. "${srcdir:-../../tests}/families.sh"
status=0
for isa in $families; do
  # A family without f32 kernels of its own ("serves" lists no f32:f32:f32,
  # e.g. avx512_bf16) passes sgemm to the next row, which this loop tests
  # under its own name: running the f32 suite here would only repeat it.
  if ! ../tools/hcops-info | grep -Eq "^  $isa +.*serves ([^;]* )?f32:f32:f32[ ;]"; then
    sgemm=$(HCOPS_ISA=$isa ../tools/hcops-info | sed -n 's/^kernel family: \([a-z0-9_]*\) .*/\1/p')
    echo "== HCOPS_ISA=$isa: $isa has no f32 kernels; sgemm goes to $sgemm, tested under HCOPS_ISA=$sgemm"
    case " $(echo $families) " in
      *" $sgemm "*) [ "$sgemm" != "$isa" ] || { echo "FAIL: $isa chosen for sgemm without f32 kernels"; status=1; } ;;
      *) echo "FAIL: HCOPS_ISA=$isa gives sgemm to '$sgemm', not a family of this CPU"; status=1 ;;
    esac
    continue
  fi
  echo "== HCOPS_ISA=$isa"
  HCOPS_ISA=$isa ../tools/hcops-info | grep -q "^kernel family: $isa " || { echo "FAIL: $isa not selected"; status=1; }
  HCOPS_ISA=$isa HCOPS_NUM_THREADS=2 ./test_gemm || status=1
  if HCOPS_ISA=$isa ../tools/hcops-info | grep -q "^  sgemm: .*always packed (no in-place kernel)"; then
    echo "== HCOPS_ISA=$isa always packs B: no in-place kernel, HCOPS_PACK_B has nothing to switch"
    continue
  fi
  if HCOPS_ISA=$isa ../tools/hcops-info | grep -q "^  sgemm: .*n <= 16: stream A unpacked"; then
    echo "== HCOPS_ISA=$isa HCOPS_SKINNY=never"
    HCOPS_ISA=$isa HCOPS_SKINNY=never ../tools/hcops-info | grep -q "^  sgemm: .*(HCOPS_SKINNY=never)" ||
      { echo "FAIL: HCOPS_SKINNY=never not in effect"; status=1; }
    HCOPS_ISA=$isa HCOPS_SKINNY=never HCOPS_NUM_THREADS=2 ./test_gemm || status=1
  fi
  for pack in always never; do
    echo "== HCOPS_ISA=$isa HCOPS_PACK_B=$pack"
    HCOPS_ISA=$isa HCOPS_PACK_B=$pack ../tools/hcops-info | grep -q "^  sgemm: .*B .*HCOPS_PACK_B=$pack" ||
      { echo "FAIL: HCOPS_PACK_B=$pack not in effect"; status=1; }
    HCOPS_ISA=$isa HCOPS_PACK_B=$pack HCOPS_NUM_THREADS=2 ./test_gemm || status=1
  done
done
exit $status

#!/bin/sh
# netlib's own BLAS and CBLAS testers (LAPACK's BLAS/TESTING and
# CBLAS/testing, as Debian's libblas-test builds them, beside netlib's
# libblas.so.3) with libhcops preloaded: level 3 in single and double
# precision, Fortran and CBLAS (xblat3s/d, xscblat3, xdcblat3: GEMM's
# computational tests and error exits are ours, SYMM/TRMM/TRSM/SYRK/SYR2K
# are forwarded), on every kernel family this CPU runs (HCOPS_ISA); levels
# 1 and 2 (all forwarded) once. Every routine must report PASSED, nothing
# FAIL or SUSPECT, and the GEMMs must have run on the family (HCOPS_VERBOSE).
set -u
. "${srcdir:-../../tests}/families.sh"
dir=$(dirname "${HCOPS_SYMS_REFERENCE:?}")
if [ ! -x "$dir/xblat3s" ]; then
  echo "SKIP: netlib's BLAS testers not in $dir: install the Debian package libblas-test"
  exit 77
fi
lib=${HCOPS_LIB:?}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0

# tester input isa routine: runs it in $work (input "-": none), checks what
# it wrote (every routine PASS or PASSED, nothing FAIL or SUSPECT), and,
# unless routine is "-", that its GEMMs ran on the family HCOPS_ISA=isa
# gives `routine` (sgemm or dgemm: a family without f64 kernels passes
# dgemm to the next row).
run() {
  tester=$1 isa=$3 routine=$4
  case $2 in -) input=/dev/null ;; *) input=$dir/$2 ;; esac
  rm -f "$work"/*
  (cd "$work" && HCOPS_ISA=$isa HCOPS_VERBOSE=1 LD_PRELOAD=$lib "$dir/$tester" <"$input" >stdout 2>stderr)
  rc=$?
  out=$(cat "$work"/stdout "$work"/*.out "$work"/*.SUMM 2>/dev/null)
  passed=$(echo "$out" | grep -c "PASS")
  bad=$(echo "$out" | grep -E "FAIL|SUSPECT|\*\*\*\*\*\*" | head -5)
  line="== HCOPS_ISA=$isa $tester: exit $rc, $passed PASS lines"
  if [ "$routine" != - ]; then
    fam=$(HCOPS_ISA=$isa ../tools/hcops-info | sed -n "s/^  $routine: \([a-z0-9_]*\),.*/\1/p")
    gemms=$(grep -c ",hcops:$fam," "$work/stderr")
    line="$line, $gemms GEMMs on $fam"
    [ -n "$fam" ] && [ "$gemms" -gt 0 ] || { echo "FAIL: $tester: no GEMM ran on '$fam'"; status=1; }
  fi
  echo "$line"
  if [ "$rc" != 0 ] || [ "$passed" = 0 ] || [ -n "$bad" ]; then
    echo "FAIL: $tester under HCOPS_ISA=$isa"
    echo "$bad"
    tail -20 "$work/stdout"
    status=1
  fi
}

for isa in $families; do
  # A family without f32 kernels (avx512_bf16) passes both GEMMs to the
  # next row, which this loop runs under its own name.
  if ! ../tools/hcops-info | grep -Eq "^  $isa +.*serves ([^;]* )?f32:f32:f32[ ;]"; then
    echo "== HCOPS_ISA=$isa: no f32 kernels; its GEMMs are the next row's, tested under that name"
    continue
  fi
  run xblat3s sblat3.in "$isa" sgemm
  run xblat3d dblat3.in "$isa" dgemm
  run xscblat3 sin3 "$isa" sgemm
  run xdcblat3 din3 "$isa" dgemm
done
# Levels 1 and 2 are forwarded: the same on every family and vector length
# (not rerun when HCOPS_TEST_FAMILIES picks families).
[ -z "${HCOPS_TEST_FAMILIES:-}" ] || exit $status
first=$(echo $families | cut -d' ' -f1)
for t in "xblat1s -" "xblat1d -" "xblat2s sblat2.in" "xblat2d dblat2.in" "xscblat1 -" "xdcblat1 -" \
  "xscblat2 sin2" "xdcblat2 din2"; do
  run $t "$first" -
done
exit $status

#!/bin/sh
# HCOPS_FP32_MATH, the engine's f32 mode, through sgemm_, cblas_sgemm and
# dnnl_sgemm where HCOps has its oneDNN layer (fp32_math_probe), on the
# generic family and on the default one (the PyTorch dispatcher's GEMMs and
# attention: tests/torch/test_fp32_math.py):
#  - unset and `strict` give the same bits; a bad value warns exactly once
#    ("hcops: warning: HCOPS_FP32_MATH=...") and gives strict's bits too;
#  - `bf16` and `bf16x3`, where hcops-info says the mode is in effect (on
#    generic always: it serves every mode), stay
#    within their bounds against f64 (the probe checks), bf16x3 at least 100x
#    closer than bf16 on the same random data; where it is not in effect,
#    hcops-info says why, and the results are strict's, bit for bit;
#  - a mode is a permission: on a family that serves no kernel of its own
#    for the mode (avx512, avx2: the latter's bf16 kernels take bf16
#    inputs only), strict runs, even though generic (a lower row)
#    serves one; every verbose sgemm_/cblas_sgemm/dnnl_sgemm line names the
#    mode that ran.
set -u
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "PASS: $1"; }
ko() { fail=$((fail + 1)); echo "FAIL: $1"; }
probe=./fp32_math_probe
info=../tools/hcops-info
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# in_effect ISA MODE: the mode hcops-info says is in effect.
in_effect() {
  HCOPS_ISA=$1 HCOPS_FP32_MATH=$2 $info 2>/dev/null |
    sed -n 's/^fp32 math (HCOPS_FP32_MATH, every f32 GEMM but oneDNN primitives): asked [a-z0-9]*, in effect \([a-z0-9]*\).*/\1/p'
}

# run ISA MODE EXPECT TAG: the probe with HCOPS_FP32_MATH=MODE (unset when
# MODE is -), checking the bounds of EXPECT; C in $tmp/TAG.bin, stderr in
# $tmp/TAG.err, the mean error in $tmp/TAG.mean.
run() {
  if [ "$2" = - ]; then
    env -u HCOPS_FP32_MATH HCOPS_ISA=$1 $probe "$3" "$tmp/$4.bin" >"$tmp/$4.out" 2>"$tmp/$4.err"
  else
    HCOPS_ISA=$1 HCOPS_FP32_MATH=$2 $probe "$3" "$tmp/$4.bin" >"$tmp/$4.out" 2>"$tmp/$4.err"
  fi
  status=$?
  sed -n 's/^mean_error //p' "$tmp/$4.out" >"$tmp/$4.mean"
  if [ $status = 0 ]; then ok "$4: within the $3 bounds (mean error $(cat "$tmp/$4.mean"))"
  else ko "$4: $(cat "$tmp/$4.out" "$tmp/$4.err")"; fi
}

# verbose_says ISA MODE EXPECT WANT TAG: with HCOPS_FP32_MATH=MODE, the
# probe (checking EXPECT's bounds) prints one line per routine ending in
# WANT, and the info line has fp32_WANT.
verbose_says() {
  HCOPS_ISA=$1 HCOPS_FP32_MATH=$2 HCOPS_VERBOSE=1 $probe "$3" "$tmp/v.bin" >/dev/null 2>"$tmp/v.err"
  for routine in $routines; do
    n=0
    while IFS= read -r line; do
      case "$line" in "hcops_verbose,exec,$routine,"*" $4") n=$((n + 1)) ;; esac
    done <"$tmp/v.err"
    [ "$n" = 1 ] && ok "$5: the $routine line says $4" || ko "$5: $routine line does not end in '$4': $(cat "$tmp/v.err")"
  done
  grep '^hcops_verbose,info,' "$tmp/v.err" | grep -qF ",fp32_$4" && ok "$5: the info line says fp32_$4" ||
    ko "$5: no info line with fp32_$4: $(grep '^hcops_verbose,info' "$tmp/v.err")"
}

routines=$($probe --routines)
families=$($info --families)
best=$(echo "$families" | head -n 1)
isas=generic
[ "$best" != generic ] && isas="generic $best"
for isa in $isas; do
  echo "== HCOPS_ISA=$isa"
  run $isa - strict "$isa-unset"
  run $isa strict strict "$isa-strict"
  [ ! -s "$tmp/$isa-unset.err" ] && [ ! -s "$tmp/$isa-strict.err" ] && ok "$isa: silent without HCOPS_VERBOSE" ||
    ko "$isa: unasked output: $(cat "$tmp/$isa-unset.err" "$tmp/$isa-strict.err")"
  cmp -s "$tmp/$isa-unset.bin" "$tmp/$isa-strict.bin" && ok "$isa: strict and unset agree bit for bit" ||
    ko "$isa: strict and unset differ"
  verbose_says $isa strict strict math=strict "$isa strict"

  run $isa fast strict "$isa-bad"
  n=$(grep -c '^hcops: warning: HCOPS_FP32_MATH="fast" is not one of strict|bf16|bf16x3; ignored' "$tmp/$isa-bad.err")
  [ "$n" = 1 ] && ok "$isa: HCOPS_FP32_MATH=fast warns once" || ko "$isa: fast warned $n times: $(cat "$tmp/$isa-bad.err")"
  other=$(grep -vc '^hcops: warning: HCOPS_FP32_MATH=' "$tmp/$isa-bad.err")
  [ "$other" = 0 ] && ok "$isa: nothing else printed" || ko "$isa: extra output: $(cat "$tmp/$isa-bad.err")"
  cmp -s "$tmp/$isa-bad.bin" "$tmp/$isa-strict.bin" && ok "$isa: a bad value computes strict, bit for bit" ||
    ko "$isa: HCOPS_FP32_MATH=fast differs from strict"
  HCOPS_ISA=$isa HCOPS_FP32_MATH=fast $info 2>/dev/null | grep -q '^fp32 math .*: asked strict, in effect strict$' &&
    ok "$isa: hcops-info: a bad value is strict" || ko "$isa: hcops-info on a bad value: $($info | grep '^fp32 math')"

  for mode in bf16 bf16x3; do
    effect=$(in_effect $isa $mode)
    # generic serves f32 in every mode (its reference bf16 kernels): the
    # mode must be in effect there, so the modes are tested on any CPU.
    [ $isa = generic ] && [ "$effect" != $mode ] && ko "generic: $mode not in effect ('$effect')"
    if [ "$effect" = $mode ]; then
      run $isa $mode $mode "$isa-$mode"
      cmp -s "$tmp/$isa-$mode.bin" "$tmp/$isa-strict.bin" && ko "$isa: $mode computed strict's bits" ||
        ok "$isa: $mode is not strict"
      verbose_says $isa $mode $mode "math=$mode" "$isa $mode"
    elif [ "$effect" = strict ]; then
      why=$(HCOPS_ISA=$isa HCOPS_FP32_MATH=$mode $info | sed -n 's/^fp32 math .*in effect strict (\(.*\))$/\1/p')
      [ -n "$why" ] && ok "$isa: $mode not in effect: $why" || ko "$isa: $mode refused without a reason"
      run $isa $mode strict "$isa-$mode"
      cmp -s "$tmp/$isa-$mode.bin" "$tmp/$isa-strict.bin" && ok "$isa: $mode refused computes strict, bit for bit" ||
        ko "$isa: $mode refused but differs from strict"
      verbose_says $isa $mode strict "math=strict($mode asked: $why)" "$isa $mode refused"
    else
      ko "$isa: hcops-info gives no fp32 math line for $mode ('$effect')"
    fi
  done
  if [ -s "$tmp/$isa-bf16.mean" ] && [ -s "$tmp/$isa-bf16x3.mean" ] &&
    [ "$(in_effect $isa bf16)" = bf16 ] && [ "$(in_effect $isa bf16x3)" = bf16x3 ]; then
    e1=$(cat "$tmp/$isa-bf16.mean") e3=$(cat "$tmp/$isa-bf16x3.mean")
    awk -v a="$e1" -v b="$e3" 'BEGIN { exit !(a >= 100 * b) }' && ok "$isa: bf16x3 ($e3) >= 100x closer than bf16 ($e1)" ||
      ko "$isa: bf16x3 ($e3) not 100x closer than bf16 ($e1)"
  else
    echo "NOTE: $isa: bf16 and bf16x3 are not both in effect; their accuracies are not compared here"
  fi
done

# The permission: a family above generic that serves no bf16 kernel of its
# own keeps strict, with the reason, though generic serves one.
for isa in avx512 avx2; do
  echo "$families" | grep -qx $isa || continue
  for mode in bf16 bf16x3; do
    line=$(HCOPS_ISA=$isa HCOPS_FP32_MATH=$mode $info | grep '^fp32 math')
    case "$line" in
      *"asked $mode, in effect strict (no $mode kernel at or above $isa)") ok "HCOPS_ISA=$isa $mode: $line" ;;
      *) ko "HCOPS_ISA=$isa $mode: $line" ;;
    esac
  done
done

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]

#!/bin/sh
# test_gemm_bf16 (every bf16 combination of the engine against f64
# references) on every kernel family this CPU runs (hcops-info --families),
# forced with HCOPS_ISA, with 1 and 2 threads. The program prints which
# family served each combination and fails when the forced family serves a
# combination but another one ran; a family that serves no bf16 leaves it
# to the next row that does (generic serves them all).
set -u
. "${srcdir:-../../tests}/families.sh"
status=0
for isa in $families; do
  # A family that serves no bf16 passes them all to the next row that does,
  # which this loop runs under its own name.
  if ! ../tools/hcops-info | grep -Eq "^  $isa +.*serves ([^;]* )?bf16:"; then
    echo "== HCOPS_ISA=$isa serves no bf16 GEMM: tested under the family that does"
    continue
  fi
  for threads in 1 2; do
    echo "== HCOPS_ISA=$isa HCOPS_NUM_THREADS=$threads"
    HCOPS_ISA=$isa HCOPS_NUM_THREADS=$threads ./test_gemm_bf16 "$isa" || status=1
  done
done
# Which avx512_bf16 tile serves: vdpbf16ps, unless the family measured it
# slower than widening onto the FMAs (HCOPS_VERBOSE says so, and hcops-info
# names the widened tile); HCOPS_ISA=avx512_bf16 keeps vdpbf16ps. The
# family's own probe is checked against hcops-peak's separate measurement
# of the same two rates (one thread): vdpbf16ps below 1/1.6 of the FMAs'
# flops must have been passed over, at or above them must have been kept;
# between, either is right.
if runs_here avx512_bf16; then
  forced=$(HCOPS_ISA=avx512_bf16 ../tools/hcops-info | grep "^  bf16->f32: ")
  case "$forced" in
    *"avx512_bf16, microkernel 32x12,"*) echo "== HCOPS_ISA=avx512_bf16 keeps vdpbf16ps" ;;
    *) echo "FAIL: HCOPS_ISA=avx512_bf16 did not keep the vdpbf16ps tile: $forced"; status=1 ;;
  esac
  # One process: its info line and its verbose reason come from one probe.
  out=$(env -u HCOPS_ISA HCOPS_VERBOSE=1 ../tools/hcops-info 2>&1)
  chosen=$(printf '%s\n' "$out" | grep "^  bf16->f32: ")
  why=$(printf '%s\n' "$out" | grep "avx512_bf16: its bf16:bf16:f32 kernel passed over")
  expect=$(../tools/hcops-peak --json 2>/dev/null | python3 -c '
import json, sys
p = json.load(sys.stdin)
dot, fma = p["avx512_bf16"]["bf16"]["1"], p["avx512"]["f32"]["1"]
print("widened" if dot * 1.6 < fma else "vdpbf16ps" if dot >= fma else "either", f"{dot:.0f}", f"{fma:.0f}")' 2>/dev/null)
  echo "== hcops-peak, 1 thread: vdpbf16ps ${expect#* } GFLOPS (bf16, then f32 FMAs): expect ${expect%% *}"
  case "$chosen" in
    *" avx512_bf16, "*)
      if [ -n "$why" ]; then
        case "$chosen" in
          *"(bf16 widened onto the f32 FMAs)"*) got=widened; echo "== unforced: widened tile: ${why#*passed over: }" ;;
          *) got=bad; echo "FAIL: vdpbf16ps passed over ($why) but hcops-info says: $chosen"; status=1 ;;
        esac
      else
        case "$chosen" in
          *widened*) got=bad; echo "FAIL: the widened tile serves without a reason in HCOPS_VERBOSE: $chosen"; status=1 ;;
          *) got=vdpbf16ps; echo "== unforced: vdpbf16ps (not measured slower here)" ;;
        esac
      fi
      case "${expect%% *}" in
        widened | vdpbf16ps)
          [ "$got" = "${expect%% *}" ] || [ "$got" = bad ] ||
            { echo "FAIL: the family chose $got, hcops-peak's rates say ${expect%% *}"; status=1; } ;;
        either) ;;
        *) echo "FAIL: hcops-peak gave no avx512_bf16 and avx512 rates to check the choice against"; status=1 ;;
      esac ;;
    *) echo "== unforced: bf16 served by another family (${chosen#*: }): the tile choice is not this CPU's" ;;
  esac
fi

# And as chosen without HCOPS_ISA: a family may list more than one kernel
# for the same datatypes and pick among them by what it measures
# (avx512_bf16 widens bf16 onto the FMAs where vdpbf16ps is the slower
# way), and only the unforced choice reaches the second.
# (Not under HCOPS_TEST_FAMILIES, which asks for those families alone.)
for threads in 1 2; do
  [ -z "${HCOPS_TEST_FAMILIES:-}" ] || break
  echo "== HCOPS_ISA unset HCOPS_NUM_THREADS=$threads"
  env -u HCOPS_ISA HCOPS_NUM_THREADS=$threads ./test_gemm_bf16 || status=1
done
exit $status

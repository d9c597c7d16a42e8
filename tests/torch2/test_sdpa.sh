#!/bin/sh
# PyTorch 2.x's CPU flash attention on HCOps (tests/torch2/test_sdpa.py).
. "${srcdir:-../../tests}/torch2/torch2_env.sh"
# As the CPU chooses (bf16 products where the kernels that serve the bf16
# GEMMs compute on bf16 instructions: amx, avx512_bf16; on AArch64 sme and
# sve_bf16), and forced to a family without them, where bf16 slices are
# widened to f32.
. "${srcdir:-../../tests}/families.sh"
bf16_families="amx avx512_bf16 sme sve_bf16"
native=f32
for isa in $bf16_families; do runs_here $isa && native=bf16; done
# Where the avx512_bf16 family passes over vdpbf16ps for its tile widened
# onto the FMAs (it measures vdpbf16ps the slower, once per process:
# kernels/avx512_bf16/dot_rate.h), slices are widened once instead:
# test_sdpa.py expects f32 where its child's verbose lines say so.
# HCOPS_ISA=avx512_bf16 keeps vdpbf16ps, and bf16 products, whatever the
# measurement.
# The first family this CPU runs that has no bf16 GEMM instructions.
widening=
for isa in $families; do
  case " $bf16_families " in *" $isa "*) continue ;; esac
  widening=$isa
  break
done
# With AMX, slices of whole tiles of keys run fused on the tiles
# (ops/attention_tiles.h), and once more on the AVX512_BF16 family's GEMMs.
tiles=0
if runs_here amx; then tiles=1; fi
status=0
echo "== as the CPU chooses: bf16 products $native$([ $tiles = 1 ] && echo ', fused on the AMX tiles where S is a multiple of 32')"
SDPA_TILES=$tiles SDPA_PRODUCTS=$native "$PYTHON" "${srcdir:-../../tests}/torch2/test_sdpa.py" || status=1
# avx512_bf16 and sve_bf16 forced where they run (below amx and sme, or the
# CPU's first family themselves: forced, avx512_bf16 keeps vdpbf16ps
# whatever its measured rate): bf16 products on the engine's GEMMs.
for isa in avx512_bf16 sve_bf16; do
  runs_here $isa || continue
  echo "== HCOPS_ISA=$isa: bf16 products on the engine's GEMMs"
  HCOPS_ISA=$isa SDPA_PRODUCTS=bf16 "$PYTHON" "${srcdir:-../../tests}/torch2/test_sdpa.py" || status=1
done
echo "== HCOPS_ISA=$widening: bf16 slices widened to f32"
HCOPS_ISA=$widening SDPA_PRODUCTS=f32 "$PYTHON" "${srcdir:-../../tests}/torch2/test_sdpa.py" || status=1
# HCOPS_FP32_MATH is a permission for f32 work: bf16 attention, widened to
# f32 or not, is the same bits under bf16 as under strict. That can only
# be told apart where the mode is in effect (a bf16 family serves the f32
# products: hcops-info says so); elsewhere the comparison is skipped, said.
echo "== bf16 attention under HCOPS_FP32_MATH=bf16 against strict"
if HCOPS_FP32_MATH=bf16 ../tools/hcops-info | grep -q '^fp32 math.*in effect bf16'; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  for mode in strict bf16; do
    HCOPS_FP32_MATH=$mode "$PYTHON" "${srcdir:-../../tests}/torch2/test_sdpa.py" --bits "$tmp/$mode.pt" || status=1
  done
  "$PYTHON" "${srcdir:-../../tests}/torch2/test_sdpa.py" --same-bits "$tmp/strict.pt" "$tmp/bf16.pt" || status=1
else
  echo "SKIP: HCOPS_FP32_MATH=bf16 is not in effect on this CPU ($(HCOPS_FP32_MATH=bf16 ../tools/hcops-info | grep '^fp32 math')): nothing to tell apart"
fi
exit $status

#!/bin/sh
# PyTorch 2.x's CPU flash attention on HCOps (tests/torch2/test_sdpa.py).
. "${srcdir:-../../tests}/torch2/torch2_env.sh"
# Twice: as the CPU chooses (bf16 products where a family with bf16 GEMM
# instructions serves them), and forced to a family without them, where
# bf16 slices are widened to f32.
families=$(../tools/hcops-info --families)
case " $(echo $families) " in
  *" amx "* | *" avx512_bf16 "*) native=bf16 ;;
  *) native=f32 ;;
esac
widening=
for isa in avx512 avx2 generic; do
  case " $(echo $families) " in *" $isa "*) widening=$isa; break ;; esac
done
status=0
echo "== as the CPU chooses: bf16 products $native"
SDPA_PRODUCTS=$native "$PYTHON" "${srcdir:-../../tests}/torch2/test_sdpa.py" || status=1
echo "== HCOPS_ISA=$widening: bf16 slices widened to f32"
HCOPS_ISA=$widening SDPA_PRODUCTS=f32 "$PYTHON" "${srcdir:-../../tests}/torch2/test_sdpa.py" || status=1
exit $status

#!/bin/sh
# PyTorch 2.x's CPU flash attention on HCOps (tests/torch2/test_sdpa.py).
. "${srcdir:-../../tests}/torch2/torch2_env.sh"
# Twice: as the CPU chooses (bf16 products where a family with bf16 GEMM
# instructions serves them), and forced to a family without them, where
# bf16 slices are widened to f32.
. "${srcdir:-../../tests}/families.sh"
if runs_here amx || runs_here avx512_bf16; then native=bf16; else native=f32; fi
# The first family this CPU runs that has no bf16 GEMM instructions.
widening=
for isa in $families; do
  case $isa in amx | avx512_bf16) continue ;; esac
  widening=$isa
  break
done
status=0
echo "== as the CPU chooses: bf16 products $native"
SDPA_PRODUCTS=$native "$PYTHON" "${srcdir:-../../tests}/torch2/test_sdpa.py" || status=1
echo "== HCOPS_ISA=$widening: bf16 slices widened to f32"
HCOPS_ISA=$widening SDPA_PRODUCTS=f32 "$PYTHON" "${srcdir:-../../tests}/torch2/test_sdpa.py" || status=1
exit $status

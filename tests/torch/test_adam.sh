#!/bin/sh
# The fused Adam/AdamW step (hcops::adam_step_, hcops.torch.optim) against
# stock PyTorch in the same process: the full test on the family this CPU
# chooses with 2 threads, a quicker one (largest tensor 40009 elements,
# still split across threads) with 1 thread and on every other operator
# family this CPU runs (HCOPS_ISA). Every family must agree with stock
# bitwise: avx2 and avx512 fuse as PyTorch's AVX2 kernels do, generic
# through libm's fma.
set -u
lib=${HCOPS_TORCH_LIB:-}
if [ ! -f "$lib" ]; then
  echo "SKIP: libhcops_torch.so not built (configure --without-torch?): $lib"
  exit 77
fi
py="${PYTHON:-/usr/bin/python3} ${srcdir:-../../tests}/torch/test_adam.py $lib ${HCOPS_ADAM_ARGS:-}"
status=0
echo "== chosen family, 2 threads"
$py --threads 2 || status=1
echo "== chosen family, 1 thread, quick"
$py --threads 1 --quick || status=1
chosen=$(HCOPS_VERBOSE=1 ${PYTHON:-/usr/bin/python3} -c "
import torch; torch.ops.load_library('$lib')
torch.ops.hcops.adam_step_([torch.ones(1)], [torch.ones(1)], [torch.ones(1)], [torch.ones(1)], [], [torch.zeros(())],
                           0.1, 0.9, 0.999, 1e-8, 0.0, False, False, False)" 2>&1 | sed -n 's/^hcops_verbose,exec,adam_step_,.*,hcops:\([a-z0-9_]*\),.*/\1/p')
echo "== chosen family: $chosen"
[ -n "$chosen" ] || { echo "FAIL: no verbose line names the chosen family"; status=1; }
. "${srcdir:-../../tests}/families.sh"
for isa in $families; do
  has_ops "$isa" || continue
  [ "$isa" = "$chosen" ] && continue
  echo "== HCOPS_ISA=$isa, 2 threads, quick"
  HCOPS_ISA=$isa $py --threads 2 --quick || status=1
done
exit $status

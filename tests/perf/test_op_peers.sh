#!/bin/sh
# hcops-dnnl-ops --selftest --quick: each operator's oneDNN primitive
# (eltwise gelu_tanh/gelu_erf/swish, softmax_v2 accurate/log, layer
# normalization with and without scale and shift), forward and backward, f32
# and bf16, on 3x5x37 against a reference computed in double from the same
# inputs; on 1 and 2 OpenMP threads. hcops-stream --quick: the triad's result
# is checked element by element. Each exits non-zero on a wrong result.
set -eu
perf="${HCOPS_PERF_BUILDDIR:?set by tests/perf/perf.am}"
tools="${HCOPS_TOOLS_BUILDDIR:?set by tests/perf/perf.am}"
status=0
for t in 1 2; do
  if ! OMP_NUM_THREADS=$t "$perf/hcops-dnnl-ops" --selftest --quick; then
    echo "FAIL: hcops-dnnl-ops --selftest on $t thread(s)"
    status=1
  fi
  if ! OMP_NUM_THREADS=$t "$tools/hcops-stream" --quick; then
    echo "FAIL: hcops-stream on $t thread(s)"
    status=1
  fi
done
exit $status

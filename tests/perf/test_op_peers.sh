#!/bin/sh
# hcops-dnnl-ops --selftest --quick: each operator's oneDNN primitive
# (eltwise gelu_tanh/gelu_erf/swish, softmax_v2 accurate/log, layer
# normalization with and without scale and shift), forward and backward, f32
# and bf16, on 3x5x37 against a reference computed in double from the same
# inputs; on 1 and 2 OpenMP threads. hcops-stream --quick: the triad's result
# is checked element by element. Each exits non-zero on a wrong result.
# A primitive oneDNN does not implement here is skipped, said in a "skip"
# line. One peer is known wrong: Debian's arm64 oneDNN 2.6 jit:sve_512
# softmax in bf16 (forward, accurate and log), under QEMU (make
# check-aarch64: SVE 512 with BF16, which no SVE-512 hardware of its day
# had, so that path may never have run on silicon) gives values off by
# 10^39 (6.8e-37 for 0.048). Whether oneDNN or QEMU is wrong cannot be
# told here; those two lines are reported as a wrong peer, loudly, and not
# counted, in an emulated build only. Any other wrong output fails.
set -eu
perf="${HCOPS_PERF_BUILDDIR:?set by tests/perf/perf.am}"
tools="${HCOPS_TOOLS_BUILDDIR:?set by tests/perf/perf.am}"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
status=0
for t in 1 2; do
  if ! OMP_NUM_THREADS=$t "$perf/hcops-dnnl-ops" --selftest --quick >"$out" 2>&1; then
    cat "$out"
    wrong=$(grep '^FAIL ' "$out" || true)
    known=$(echo "$wrong" | grep -E '^FAIL (log_)?softmax fwd bf16 [0-9x]+ dst: jit:sve_512, ' || true)
    if [ "${HCOPS_TEST_EMULATED:-no}" = yes ] && [ -n "$known" ] && [ "$wrong" = "$known" ]; then
      echo "PEER WRONG (not counted): oneDNN 2.6 jit:sve_512 bf16 softmax under QEMU, on $t thread(s): $(echo "$known" | wc -l) output(s)"
    else
      echo "FAIL: hcops-dnnl-ops --selftest on $t thread(s)"
      status=1
    fi
  else
    cat "$out"
  fi
  if ! OMP_NUM_THREADS=$t "$tools/hcops-stream" --quick; then
    echo "FAIL: hcops-stream on $t thread(s)"
    status=1
  fi
done
exit $status

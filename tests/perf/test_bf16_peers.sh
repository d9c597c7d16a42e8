#!/bin/sh
# The bf16 and fp32-mode benchmarks compute what they claim; no timing.
# hcops-dnnl-bf16 --selftest: oneDNN's dnnl_gemm_bf16bf16f32 and matmul
# primitive as perf/bf16_replay.py drives them (column-major calls mapped to
# row-major, every transposition, ld > minimal, alpha, beta, odd k) against a
# double reference from the same bf16 inputs, on 1 and 2 OpenMP threads.
# hcops-fp32-error: libhcops' strict sgemm_ on a small trace (every
# transposition, ld > minimal, beta 0 and 1, k up to 100) is within f32
# accumulation's (k + 2) 2^-24 of the f64 reference, and the program reports
# every distinct call (a repeated one counted once).
set -eu
perf="${HCOPS_PERF_BUILDDIR:?set by tests/perf/perf.am}"
lib="${HCOPS_LIB:?set by tests/Makefile.am}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
for t in 1 2; do
  if ! OMP_NUM_THREADS=$t "$perf/hcops-dnnl-bf16" --selftest >"$tmp/selftest.out"; then
    cat "$tmp/selftest.out"
    echo "FAIL: hcops-dnnl-bf16 --selftest on $t thread(s)"
    status=1
  fi
done
trace="$tmp/small.sgemm.csv"
cat >"$trace" <<'CSV'
transa,transb,m,n,k,alpha,lda,ldb,beta,ldc
N,N,37,29,100,1,40,101,0,39
T,N,37,29,100,1,101,101,1,37
N,T,64,48,33,0.5,64,50,1,70
T,T,17,5,9,1,9,5,0,17
T,N,37,29,100,1,101,101,1,37
CSV
out=$(HCOPS_FP32_MATH=strict "$perf/hcops-fp32-error" "$lib" "$trace")
echo "$out"
if ! echo "$out" | /usr/bin/python3 -c '
import json, sys
r = json.loads(sys.stdin.read())
bound = 102 * 2.0 ** -24
err, calls = r["max_err"], r["calls"]
ok = calls == 4 and 0 <= err <= bound and r["median_err"] <= err
print(f"strict: max error {err:.3g} (bound {bound:.3g}), {calls} distinct calls (4 expected)")
sys.exit(0 if ok else 1)'; then
  echo "FAIL: hcops-fp32-error on strict sgemm_"
  status=1
fi
exit $status

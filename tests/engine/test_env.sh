#!/bin/sh
# Configuration errors must never cost the application its results: every
# malformed HCOPS_* value warns exactly once on stderr ("hcops:" prefix) and
# the default is used; without HCOPS_VERBOSE the library prints nothing.
set -u
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "PASS: $1"; }
ko() { fail=$((fail + 1)); echo "FAIL: $1"; }
probe=./env_probe
info=../tools/hcops-info
err=$(mktemp) out=$(mktemp)
trap 'rm -f "$err" "$out"' EXIT

# run NAME ENV...: run the probe with ENV, results must be right
run() {
  name=$1; shift
  if env "$@" $probe >"$out" 2>"$err"; then ok "$name: results right"; else ko "$name: probe failed: $(cat "$out" "$err")"; fi
}
count() { grep -c "$1" "$err"; }

run "clean environment"
[ ! -s "$err" ] && ok "silent without HCOPS_VERBOSE" || ko "unasked output: $(cat "$err")"

for spec in HCOPS_NUM_THREADS=abc HCOPS_NUM_THREADS=0 HCOPS_NUM_THREADS=-4 HCOPS_ISA=sparc64 \
            HCOPS_VERBOSE=9 HCOPS_VERBOSE=yes HCOPS_BIND=maybe; do
  var=${spec%%=*}
  run "$spec" "$spec"
  n=$(count "^hcops: warning: $var=")
  [ "$n" = 1 ] && ok "$spec warns once" || ko "$spec warned $n times: $(cat "$err")"
  other=$(grep -v "^hcops: warning: $var=" "$err" | grep -vc '^hcops_verbose')
  [ "$other" = 0 ] && ok "$spec: nothing else printed" || ko "$spec: extra output: $(cat "$err")"
done

run "missing HCOPS_REFERENCE_BLAS" HCOPS_REFERENCE_BLAS=/nonexistent/libblas.so
n=$(count '^hcops: cannot use HCOPS_REFERENCE_BLAS=/nonexistent/libblas.so')
[ "$n" = 1 ] && ok "bad HCOPS_REFERENCE_BLAS: one error, then the default reference" || ko "bad reference: $(cat "$err")"

run "HCOPS_VERBOSE=1" HCOPS_VERBOSE=1
n=$(count '^hcops_verbose,exec,sgemm_,N,N,')
[ "$n" = 2 ] && ok "HCOPS_VERBOSE=1 prints one line per GEMM" || ko "HCOPS_VERBOSE=1 printed $n exec lines"

run "HCOPS_VERBOSE=2" HCOPS_VERBOSE=2
n=$(count '^hcops_verbose,summary,sgemm_,N,N,')
[ "$n" = 2 ] && ok "HCOPS_VERBOSE=2 prints a summary per shape" || ko "HCOPS_VERBOSE=2 printed $n summary lines"

best=$($info | sed -n 's/.*best for this CPU: \([a-z0-9]*\).*/\1/p')
for isa in generic avx2 avx512; do
  case "$isa:$best" in avx512:avx2|avx512:generic|avx2:generic) continue ;; esac
  run "HCOPS_ISA=$isa" HCOPS_ISA=$isa
  HCOPS_ISA=$isa $info | grep -q "^kernel family: $isa " && ok "HCOPS_ISA=$isa selects $isa" || ko "HCOPS_ISA=$isa not selected"
done

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]

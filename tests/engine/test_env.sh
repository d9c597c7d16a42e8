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

# The weight cache's limit, read where it is used (hcops-info shows it).
for spec in HCOPS_WEIGHT_CACHE=lots HCOPS_WEIGHT_CACHE=-1; do
  env "$spec" $info >"$out" 2>"$err"
  n=$(count "^hcops: warning: HCOPS_WEIGHT_CACHE=")
  [ "$n" = 1 ] && grep -q "^weight cache (HCOPS_WEIGHT_CACHE): up to 1024 MiB" "$out" &&
    ok "$spec warns once; hcops-info shows the default 1024 MiB" || ko "$spec: $(cat "$err" "$out" | grep -i 'weight cache')"
done
HCOPS_WEIGHT_CACHE=0 $info 2>"$err" | grep -q "^weight cache (HCOPS_WEIGHT_CACHE): off$" && [ ! -s "$err" ] &&
  ok "HCOPS_WEIGHT_CACHE=0: hcops-info says off" || ko "HCOPS_WEIGHT_CACHE=0: $(HCOPS_WEIGHT_CACHE=0 $info 2>&1 | grep -i 'weight cache')"

run "missing HCOPS_UNDERLYING_BLAS" HCOPS_UNDERLYING_BLAS=/nonexistent/libblas.so
n=$(count '^hcops: cannot use HCOPS_UNDERLYING_BLAS=/nonexistent/libblas.so')
[ "$n" = 1 ] && ok "bad HCOPS_UNDERLYING_BLAS: one error, then the default underlying BLAS" || ko "bad underlying BLAS: $(cat "$err")"
# The variable's earlier name is read when it is unset, and named in the error.
run "missing HCOPS_REFERENCE_BLAS" HCOPS_REFERENCE_BLAS=/nonexistent/libblas.so
n=$(count '^hcops: cannot use HCOPS_REFERENCE_BLAS=/nonexistent/libblas.so')
[ "$n" = 1 ] && ok "bad HCOPS_REFERENCE_BLAS (the earlier name): one error" || ko "bad HCOPS_REFERENCE_BLAS: $(cat "$err")"
run "HCOPS_UNDERLYING_BLAS wins over HCOPS_REFERENCE_BLAS" HCOPS_UNDERLYING_BLAS=/nonexistent/new.so HCOPS_REFERENCE_BLAS=/nonexistent/old.so
n=$(count '^hcops: cannot use HCOPS_UNDERLYING_BLAS=/nonexistent/new.so')
[ "$n" = 1 ] && [ "$(count 'old.so')" = 0 ] && ok "HCOPS_UNDERLYING_BLAS wins over its earlier name" ||
  ko "both names set: $(cat "$err")"

run "HCOPS_VERBOSE=1" HCOPS_VERBOSE=1
n=$(count '^hcops_verbose,exec,sgemm_,N,N,')
[ "$n" = 2 ] && ok "HCOPS_VERBOSE=1 prints one line per GEMM" || ko "HCOPS_VERBOSE=1 printed $n exec lines"

run "HCOPS_VERBOSE=2" HCOPS_VERBOSE=2
n=$(count '^hcops_verbose,summary,sgemm_,N,N,')
[ "$n" = 2 ] && ok "HCOPS_VERBOSE=2 prints a summary per shape" || ko "HCOPS_VERBOSE=2 printed $n summary lines"

# Every family this CPU runs (the registry's list, not a copy of it here)
# can be forced, and the verbose line names it.
families=$($info --families)
[ -n "$families" ] && ok "hcops-info --families: $(echo $families)" || ko "hcops-info --families lists nothing"
# "kernel family" is f32 GEMM's: a family without f32 kernels (avx512_bf16,
# "serves" lists no f32:f32:f32 of its own) passes sgemm to the next family
# of the list that has them.
serves_f32() { $info | grep -Eq "^  $1 +.*serves ([^;]* )?f32:f32:f32[ ;]"; }
f32_families=$(for isa in $families; do serves_f32 $isa && echo $isa; done)
best=$(echo "$f32_families" | head -n 1)
$info | grep -q "^kernel family: $best (best for this CPU: $best)" && ok "first fit is $best" ||
  ko "hcops-info does not choose $best: $($info | grep '^kernel family')"
for isa in $families; do
  # The family sgemm gets under HCOPS_ISA=$isa: $isa itself, or the next one with f32 kernels.
  want=$(echo "$families" | sed -n "/^$isa\$/,\$p" | while read -r f; do serves_f32 $f && echo $f && break; done)
  [ "$want" = "$isa" ] || echo "== $isa has no f32 kernels: sgemm goes to $want"
  run "HCOPS_ISA=$isa" HCOPS_ISA=$isa
  HCOPS_ISA=$isa $info | grep -q "^kernel family: $want " && ok "HCOPS_ISA=$isa selects $want for sgemm" ||
    ko "HCOPS_ISA=$isa: $want not selected for sgemm"
  run "HCOPS_ISA=$isa HCOPS_VERBOSE=1" HCOPS_ISA=$isa HCOPS_VERBOSE=1
  n=$(count "^hcops_verbose,exec,sgemm_,.*,hcops:$want,tile=")
  [ "$n" = 2 ] && ok "verbose names hcops:$want" || ko "verbose does not name hcops:$want: $(cat "$err")"
done
upper=$(echo "$best" | tr a-z A-Z)
HCOPS_ISA=$upper $info | grep -q "^kernel family: $best " && ok "HCOPS_ISA is case-insensitive" || ko "HCOPS_ISA=$upper"
# A family in the table that this CPU cannot run: one warning, then the best.
unsupported=$($info | sed -n 's/^  \([a-z0-9_]*\) *not on this CPU,.*/\1/p' | head -n 1)
if [ -n "$unsupported" ]; then
  run "HCOPS_ISA=$unsupported (not on this CPU)" HCOPS_ISA=$unsupported
  n=$(count "^hcops: warning: HCOPS_ISA=$unsupported is not supported by this CPU")
  [ "$n" = 1 ] && ok "HCOPS_ISA=$unsupported warns once" || ko "HCOPS_ISA=$unsupported: $(cat "$err")"
  HCOPS_ISA=$unsupported $info 2>/dev/null | grep -q "^kernel family: $best " && ok "and falls back to $best" ||
    ko "HCOPS_ISA=$unsupported does not fall back to $best"
else
  echo "SKIP: every kernel family of the table runs on this CPU; the unsupported-family fallback is not exercised"
fi

# HCOPS_CPU_DISABLE turns CPU features off (never on): a name it does not
# know warns once and changes nothing; a family needing a feature turned off
# is passed over as on a CPU without it (hcops-info: "turned off"), its
# GEMMs going to the next one, with the right results.
run "HCOPS_CPU_DISABLE=nosuchfeature" HCOPS_CPU_DISABLE=nosuchfeature
n=$(count '^hcops: warning: HCOPS_CPU_DISABLE: unknown feature "nosuchfeature"')
[ "$n" = 1 ] && [ "$(grep -vc '^hcops_verbose' "$err")" = 1 ] && ok "an unknown HCOPS_CPU_DISABLE name warns once" ||
  ko "HCOPS_CPU_DISABLE=nosuchfeature: $(cat "$err")"
HCOPS_CPU_DISABLE=nosuchfeature $info 2>/dev/null | grep -q "^kernel family: $best " &&
  ok "and changes nothing ($best)" || ko "HCOPS_CPU_DISABLE=nosuchfeature changed the family"
needs() { $info | sed -n "s/^  $1 .* needs \([^;]*\);.*/\1/p"; }
prev=
for isa in $f32_families; do
  if [ -n "$prev" ]; then
    # A feature $prev needs and $isa (the next f32 family) does not.
    feature=$(for x in $(needs "$prev"); do echo " $(needs "$isa") " | grep -q " $x " || echo "$x"; done | head -n 1)
    if [ -z "$feature" ]; then
      echo "== $prev needs nothing $isa does not: not turned off alone"
    else
      # sgemm's family then: one that runs here and does not need $feature
      # (not necessarily $isa: sme does not need sve).
      want=$(HCOPS_CPU_DISABLE=$feature $info | sed -n 's/^kernel family: \([a-z0-9_]*\) .*/\1/p')
      echo " $(needs "$want") " | grep -q " $feature " || [ "$want" = "$prev" ] ||
        ! echo "$f32_families" | grep -qx "$want" && ko "HCOPS_CPU_DISABLE=$feature: sgemm's family is $want" ||
        ok "HCOPS_CPU_DISABLE=$feature: sgemm's family is $want"
      run "HCOPS_CPU_DISABLE=$feature" HCOPS_CPU_DISABLE=$feature HCOPS_VERBOSE=1
      c=$(count "^hcops_verbose,exec,sgemm_,.*,hcops:$want,tile=")
      [ "$c" = 2 ] && ok "HCOPS_CPU_DISABLE=$feature: sgemm on $want, not $prev" ||
        ko "HCOPS_CPU_DISABLE=$feature: sgemm not on $want: $(grep exec,sgemm_ "$err" | head -n 1)"
      HCOPS_CPU_DISABLE=$feature $info | grep -q "^  $prev  *turned off," && ok "hcops-info: $prev turned off" ||
        ko "hcops-info does not say $prev is turned off"
      # The warning names the first family that runs (for any datatype).
      first=$(HCOPS_CPU_DISABLE=$feature $info --families | head -n 1)
      HCOPS_CPU_DISABLE=$feature HCOPS_ISA=$prev $probe >/dev/null 2>"$err"
      n=$(count "^hcops: warning: HCOPS_ISA=$prev needs .*$feature.*, which HCOPS_CPU_DISABLE turns off; using $first\$")
      [ "$n" = 1 ] && ok "HCOPS_ISA=$prev with $feature turned off: one warning, $first" ||
        ko "HCOPS_ISA=$prev with $feature turned off: $(cat "$err")"
    fi
  fi
  prev=$isa
done
# A kernel that needs an optional part of its family's extension (hcops-info:
# "(with FEATURE)", as sme's f64 tiles need FEAT_SME_F64F64): that part
# turned off, its datatype goes to the next family, said under HCOPS_VERBOSE.
optional=$(for isa in $families; do $info | sed -n "s/^  $isa  *runs here,.*serves \([^;]*\);.*/\1/p" |
  grep -o 'f64:f64:f64(with [a-z0-9_]*)' | sed "s/.*(with \([a-z0-9_]*\))/$isa \1/"; done)
if [ -z "$optional" ]; then
  echo "SKIP: no f64 kernel here needs an optional feature (sme's f64 tiles, FEAT_SME_F64F64): that decline is not exercised"
else
  set -- $optional
  while [ $# -ge 2 ]; do
    isa=$1 feature=$2
    shift 2
    run "HCOPS_CPU_DISABLE=$feature" HCOPS_CPU_DISABLE=$feature HCOPS_VERBOSE=1
    grep -q "^hcops_verbose,info,kernel family $isa: its f64:f64:f64 kernel needs $feature (turned off by HCOPS_CPU_DISABLE); passed over" "$err" &&
      ok "verbose says why $isa does not serve f64" || ko "no verbose line for $isa's f64 kernel: $(grep info "$err")"
    grep "^hcops_verbose,exec,dgemm_," "$err" | grep -q ",hcops:$isa," &&
      ko "dgemm still on $isa with $feature turned off" || ok "dgemm not on $isa with $feature turned off"
  done
fi

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]

#!/bin/sh
# libhcops_mem's configuration under LD_PRELOAD: a malformed HCOPS_MEM_*
# value warns exactly once on stderr ("hcops:" prefix, with the position of
# the error in a policy) and the program runs on the default; nothing at all
# is printed when nothing is asked; the fast tier's capacity knob sends the
# overflow to DDR; HCOPS_MEM_STATS=1 reports at exit.
set -u
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "PASS: $1"; }
ko() { fail=$((fail + 1)); echo "FAIL: $1"; }
lib=${HCOPS_MEM_LIB:?HCOPS_MEM_LIB must name the libhcops_mem.so to test}
probe=./mem_probe
err=$(mktemp) out=$(mktemp)
trap 'rm -f "$err" "$out"' EXIT

# run NAME ENV... -- ARGS...: the probe preloaded, with ENV, must succeed
run() {
  name=$1; shift
  envs=
  while [ $# -gt 0 ] && [ "$1" != -- ]; do envs="$envs $1"; shift; done
  [ $# -gt 0 ] && shift
  # shellcheck disable=SC2086 # word splitting of $envs is wanted
  # timeout outside the preload: only the probe may print.
  if timeout 30 env -u HCOPS_MEM_POLICY -u HCOPS_MEM_THRESHOLD -u HCOPS_MEM_CACHE -u HCOPS_MEM_STATS \
       -u HCOPS_MEM_FAST_NODES -u HCOPS_MEM_FAST_LIMIT $envs LD_PRELOAD="$lib" $probe "$@" >"$out" 2>"$err"; then
    ok "$name: probe ran"
  else
    ko "$name: probe failed: $(cat "$out" "$err")"
  fi
}
value() { sed -n "s/^$1=//p" "$out"; }

run "clean environment" -- 
[ ! -s "$err" ] && [ ! -s "$out" ] && ok "silent when nothing is asked" || ko "unasked output: $(cat "$out" "$err")"

run "default counters" -- stat:allocations stat:threshold stat:fallback.to_glibc
[ "$(value allocations)" = 4 ] && ok "the probe's four large blocks are in the arena" || ko "allocations: $(cat "$out")"
[ "$(value threshold)" = 1048576 ] && ok "default threshold 1 MiB" || ko "threshold: $(cat "$out")"

# malformed VAR=VALUE, the text its warning must hold, what to check after
bad() {
  spec=$1 want=$2; shift 2
  var=${spec%%=*}
  run "$spec" "$spec" -- "$@"
  n=$(grep -c "^hcops: warning: $var=" "$err")
  [ "$n" = 1 ] && ok "$spec warns once" || ko "$spec warned $n times: $(cat "$err")"
  grep -q "^hcops: warning: $var=.*$want" "$err" && ok "$spec: the warning says '$want'" ||
    ko "$spec: no '$want' in: $(cat "$err")"
  [ "$(grep -vc "^hcops: warning: $var=" "$err")" = 0 ] && ok "$spec: nothing else printed" ||
    ko "$spec: extra output: $(cat "$err")"
}
# Positions are 1-based in messages: the 't' of thq, where ':' is missing,
# the upper bound that empties the range.
bad "HCOPS_MEM_POLICY=2M-:fast,thq" "at position 10" info stat:allocations
grep -q "^policy: fast,thp (default)" "$out" && ok "bad policy: the default applies" || ko "policy now: $(cat "$out")"
[ "$(value allocations)" = 4 ] && ok "bad policy: large blocks still in the arena" || ko "allocations: $(cat "$out")"
bad "HCOPS_MEM_POLICY=bind" "at position 5"
bad "HCOPS_MEM_POLICY=4M-2M:fast" "empty size range at position 4"
bad "HCOPS_MEM_POLICY=fast,ddr" "second placement in one rule at position 6"
bad "HCOPS_MEM_THRESHOLD=12Q" "not a size" stat:threshold stat:allocations
[ "$(value threshold)" = 1048576 ] && [ "$(value allocations)" = 4 ] && ok "bad threshold: 1 MiB" ||
  ko "bad threshold: $(cat "$out")"
bad "HCOPS_MEM_THRESHOLD=-1" "not a size" stat:threshold
[ "$(value threshold)" = 1048576 ] && ok "negative threshold: 1 MiB" || ko "negative threshold: $(cat "$out")"
bad "HCOPS_MEM_CACHE=lots" "not a size" stat:cached
[ "$(value cached)" -gt 0 ] && ok "bad cache size: the default cache keeps freed blocks" || ko "cached: $(cat "$out")"
bad "HCOPS_MEM_FAST_LIMIT=8MiBs" "not a size"
bad "HCOPS_MEM_FAST_NODES=fast" "not a node list" stat:allocations
bad "HCOPS_MEM_STATS=yes" "is not 0, 1 or a path"

# Valid settings: silent, and in effect.
run "HCOPS_MEM_THRESHOLD=8M" HCOPS_MEM_THRESHOLD=8M -- stat:threshold stat:allocations
[ ! -s "$err" ] && [ "$(value threshold)" = 8388608 ] && [ "$(value allocations)" = 0 ] &&
  ok "8M threshold: nothing of the probe's is large" || ko "8M threshold: $(cat "$out" "$err")"
run "HCOPS_MEM_CACHE=0" HCOPS_MEM_CACHE=0 -- stat:cached stat:cache_hits
[ ! -s "$err" ] && [ "$(value cached)" = 0 ] && ok "HCOPS_MEM_CACHE=0 keeps nothing" || ko "cache 0: $(cat "$out" "$err")"
run "valid policy" "HCOPS_MEM_POLICY=2M-:local,base;64K-2M:ddr" -- info stat:allocations stat:threshold
[ ! -s "$err" ] && grep -q "^policy: 2M-:local,base;64K-2M:ddr,thp; otherwise fast,thp" "$out" &&
  ok "valid policy: silent and in effect" || ko "valid policy: $(cat "$out" "$err")"
# The 64K rule lowers the threshold: the probe's 64 and 200 KiB blocks are large too.
[ "$(value threshold)" = 65536 ] && [ "$(value allocations)" -ge 6 ] && ok "a 64K rule lowers the threshold" ||
  ko "64K rule: $(cat "$out")"

# The fast tier holds 8 MiB: the third 4 MiB block goes to DDR, also when the
# blocks come back from the reuse cache in another order.
run "fast tier full" HCOPS_MEM_FAST_NODES=0 HCOPS_MEM_FAST_LIMIT=8M -- fast3
[ ! -s "$err" ] && ok "fast limit: silent" || ko "fast limit printed: $(cat "$err")"
for r in 1 2; do
  grep -q "^round$r fast1 fast_in_use=4194304 fast_to_ddr=$((r - 1))$" "$out" &&
    grep -q "^round$r fast2 fast_in_use=8388608 fast_to_ddr=$((r - 1))$" "$out" &&
    grep -q "^round$r fast3 fast_in_use=8388608 fast_to_ddr=$r$" "$out" && grep -q "^round$r freed fast_in_use=0$" "$out" &&
    ok "fast limit, round $r: two blocks fast, the third counted as fallen back to DDR" ||
    ko "fast limit, round $r: $(cat "$out")"
done

# The exit report: on stderr, agreeing with the counters.
run "HCOPS_MEM_STATS=1" HCOPS_MEM_STATS=1 -- stat:allocations
grep -q "^hcops_mem: 4 large allocations (0 live)" "$err" && grep -q "^hcops_mem: fallbacks:" "$err" &&
  ok "HCOPS_MEM_STATS=1 reports at exit" || ko "HCOPS_MEM_STATS=1 report: $(cat "$err")"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]

#!/bin/sh
# libhcops_mem's configuration under LD_PRELOAD: a malformed HCOPS_MEM_*
# value warns exactly once on stderr ("hcops:" prefix, with the position of
# the error in a policy) and the program runs on the default; a node or CPU
# list (HCOPS_MEM_FAST_NODES, HCOPS_MEM_HELPER_CORE) naming a node or CPU the
# process cannot use is malformed too; a warning quotes the value escaped, on
# one line; nothing at all is printed when nothing is asked; the fast tier's capacity knob sends the
# overflow to DDR; HCOPS_MEM_STATS=1 reports at exit.
set -u
. "${srcdir:-../../tests}/time_limits.sh"
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
  if timeout "$(time_limit 30)" env -u HCOPS_MEM_POLICY -u HCOPS_MEM_THRESHOLD -u HCOPS_MEM_CACHE -u HCOPS_MEM_CACHE_DECAY -u HCOPS_MEM_STATS \
       -u HCOPS_MEM_FAST_NODES -u HCOPS_MEM_FAST_LIMIT -u HCOPS_MEM_HELPER_CORE $envs LD_PRELOAD="$lib" $probe "$@" >"$out" 2>"$err"; then
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
bad "HCOPS_MEM_CACHE_DECAY=soon" "not a number of seconds" stat:cached info
[ "$(value cached)" -gt 0 ] && grep -q "idle blocks released after 10000 ms$" "$out" &&
  ok "bad decay: 10 s, and the cache keeps freed blocks" || ko "bad decay: $(cat "$out")"
bad "HCOPS_MEM_CACHE_DECAY=-1" "not a number of seconds"
bad "HCOPS_MEM_CACHE_DECAY=1.5s" "not a number of seconds"
bad "HCOPS_MEM_CACHE_DECAY=0.1234567891" "not a number of seconds"
bad "HCOPS_MEM_FAST_LIMIT=8MiBs" "not a size"
bad "HCOPS_MEM_FAST_NODES=fast" "unexpected character (expected a node number or \"last\") at position 1" \
  stat:allocations
bad "HCOPS_MEM_STATS=yes" "is not 0, 1 or a path"

# Node and CPU lists (doc/environment.md, "CPU and node lists").
# run_list VAR VALUE ARGS...: like run, for values word splitting would break.
run_list() {
  var=$1 val=$2
  shift 2
  if timeout "$(time_limit 30)" env -u HCOPS_MEM_POLICY -u HCOPS_MEM_THRESHOLD -u HCOPS_MEM_CACHE -u HCOPS_MEM_CACHE_DECAY \
       -u HCOPS_MEM_STATS -u HCOPS_MEM_FAST_NODES -u HCOPS_MEM_FAST_LIMIT -u HCOPS_MEM_HELPER_CORE "$var=$val" LD_PRELOAD="$lib" \
       $probe "$@" >"$out" 2>"$err"; then
    ok "$var=$(escape "$val"): probe ran"
  else
    ko "$var=$(escape "$val"): probe failed: $(cat "$out" "$err")"
  fi
}
escape() { printf '%s' "$1" | od -An -c | tr -d ' \n'; }
# bad_list VAR VALUE QUOTED WANT: VAR=VALUE warns exactly once, on one line
# holding VAR=QUOTED (the value escaped) and WANT, and prints nothing else.
bad_list() {
  var=$1 val=$2 quoted=$3 want=$4
  run_list "$var" "$val" info
  label="$var=$quoted"
  [ "$(wc -l <"$err")" = 1 ] && ok "$label: one line on stderr" || ko "$label: stderr: $(cat "$err")"
  grep -Fq "hcops: warning: $var=$quoted: $want" "$err" && ok "$label: the warning quotes it escaped, says '$want'" ||
    ko "$label: no 'hcops: warning: $var=$quoted: $want' in: $(cat "$err")"
}
# The last CPU of this process, a CPU this machine does not have, a node it
# does not have.
last_cpu=$(sed -n 's/^Cpus_allowed_list:.*[^0-9]\([0-9][0-9]*\)$/\1/p' /proc/self/status)
no_cpu=$(getconf _NPROCESSORS_CONF)
no_node=1
while [ -e "/sys/devices/system/node/node$no_node" ]; do no_node=$((no_node + 1)); done

# The default: the machine's fast nodes, the last CPU for the helper.
run "no lists" -- info
grep '^fast nodes: ' "$out" >"$out.fast"
trap 'rm -f "$err" "$out" "$out.fast"' EXIT
grep -q '^helper thread: CPU '"$last_cpu"'$' "$out" && ! grep -q HCOPS_MEM_FAST_NODES "$out.fast" &&
  ok "defaults: helper on CPU $last_cpu, fast nodes from hwloc" || ko "defaults: $(cat "$out")"
# The kernel's page settings, from /sys as this test reads them.
thp_file=/sys/kernel/mm/transparent_hugepage
if [ -r $thp_file/enabled ]; then
  pages="transparent huge pages $(sed -n 's/.*\[\(.*\)\].*/\1/p' $thp_file/enabled) (defrag $(sed -n 's/.*\[\(.*\)\].*/\1/p' $thp_file/defrag))"
else
  pages="transparent huge pages not in this kernel"
fi
order=$(cat /sys/module/page_reporting/parameters/page_reporting_order 2>/dev/null)
if [ -z "$order" ]; then
  reporting="not in this kernel"
else
  reporting="no reporting device"
  for f in /sys/bus/virtio/drivers/virtio_balloon/virtio*/features; do
    [ -r "$f" ] && [ "$(cut -c6 "$f")" = 1 ] &&
      reporting="on, free blocks of 2^$order pages and larger (a huge page faulted on one waits while the host backs it again)"
  done
fi
grep -qxF "kernel pages: $pages; free page reporting to a hypervisor: $reporting" "$out" &&
  ok "kernel pages as /sys has them: $pages; reporting: ${reporting%%,*}" || ko "kernel pages: want '$pages; $reporting', got $(grep '^kernel pages' "$out")"
# Each bad list: one warning, then the default.
for v in "$no_node|\"$no_node\"|node $no_node is not usable at position 1" \
  "0,$no_node|\"0,$no_node\"|node $no_node is not usable at position 3" \
  "-1|\"-1\"|negative number at position 1" "0,0|\"0,0\"|node 0 named twice at position 3" \
  "4294967296|\"4294967296\"|number too large for a node at position 1" \
  "0 |\"0 \"|unexpected character at position 2" "0,|\"0,\"|empty item (expected a node number) at position 3"; do
  val=${v%%|*} rest=${v#*|}
  bad_list HCOPS_MEM_FAST_NODES "$val" "${rest%%|*}" "${rest#*|}"
  grep '^fast nodes: ' "$out" | cmp -s - "$out.fast" && ok "fast nodes as without HCOPS_MEM_FAST_NODES=$val" ||
    ko "HCOPS_MEM_FAST_NODES=$val: $(grep '^fast nodes: ' "$out")"
done
bad_list HCOPS_MEM_FAST_NODES "0
1" '"0\n1"' "unexpected character at position 2"
for v in "$no_cpu|\"$no_cpu\"|CPU $no_cpu is not usable at position 1" \
  "-1|\"-1\"|negative number at position 1" "0,1|\"0,1\"|a list where one CPU is expected at position 2" \
  "18446744073709551615|\"18446744073709551615\"|number too large for a CPU at position 1" \
  "$(printf '0\033')|\"0\\x1b\"|unexpected character at position 2"; do
  val=${v%%|*} rest=${v#*|}
  bad_list HCOPS_MEM_HELPER_CORE "$val" "${rest%%|*}" "${rest#*|}"
  grep -q "^helper thread: CPU $last_cpu\$" "$out" && ok "helper on CPU $last_cpu as without HCOPS_MEM_HELPER_CORE" ||
    ko "HCOPS_MEM_HELPER_CORE=$(escape "$val"): $(grep '^helper' "$out")"
done
long=$(printf '0%.0s' $(seq 100))
bad_list HCOPS_MEM_HELPER_CORE "${long}x" "\"$(printf '0%.0s' $(seq 64))\"..." "unexpected character at position 101"
# Valid lists: silent, and in effect.
first_cpu=$(sed -n 's/^Cpus_allowed_list:[^0-9]*\([0-9][0-9]*\).*/\1/p' /proc/self/status)
run_list HCOPS_MEM_HELPER_CORE "$first_cpu" info
[ ! -s "$err" ] && grep -q "^helper thread: CPU $first_cpu\$" "$out" &&
  ok "HCOPS_MEM_HELPER_CORE=$first_cpu: silent, in effect" || ko "HCOPS_MEM_HELPER_CORE=$first_cpu: $(cat "$out" "$err")"
run_list HCOPS_MEM_FAST_NODES last info
[ ! -s "$err" ] && grep -q '^fast nodes: .*\[HCOPS_MEM_FAST_NODES\]$' "$out" &&
  ok "HCOPS_MEM_FAST_NODES=last: silent, in effect" || ko "HCOPS_MEM_FAST_NODES=last: $(cat "$out" "$err")"

# Valid settings: silent, and in effect.
run "HCOPS_MEM_THRESHOLD=8M" HCOPS_MEM_THRESHOLD=8M -- stat:threshold stat:allocations
[ ! -s "$err" ] && [ "$(value threshold)" = 8388608 ] && [ "$(value allocations)" = 0 ] &&
  ok "8M threshold: nothing of the probe's is large" || ko "8M threshold: $(cat "$out" "$err")"
run "HCOPS_MEM_CACHE=0" HCOPS_MEM_CACHE=0 -- stat:cached stat:cache_hits stat:cache_evictions.cap \
  stat:cache_evictions.decay info
[ ! -s "$err" ] && [ "$(value cached)" = 0 ] && [ "$(value cache_hits)" = 0 ] &&
  [ "$(value cache_evictions.cap)" = 0 ] && [ "$(value cache_evictions.decay)" = 0 ] &&
  grep -q "^reuse cache: off$" "$out" && ok "HCOPS_MEM_CACHE=0 keeps nothing" || ko "cache 0: $(cat "$out" "$err")"
run "HCOPS_MEM_CACHE_DECAY=0.5" HCOPS_MEM_CACHE_DECAY=0.5 -- info
[ ! -s "$err" ] && grep -q "idle blocks released after 500 ms$" "$out" && ok "decay 0.5 s: silent and in effect" ||
  ko "decay 0.5: $(cat "$out" "$err")"
run "HCOPS_MEM_CACHE_DECAY=never" HCOPS_MEM_CACHE_DECAY=NEVER -- info
[ ! -s "$err" ] && grep -q "idle blocks never released$" "$out" && ok "decay never: silent and in effect" ||
  ko "decay never: $(cat "$out" "$err")"
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

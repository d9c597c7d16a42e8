#!/bin/sh
# perf/automem_bench.py in a quick mode runs and reports what it claims; no
# timing is judged: DiT-mini, one round of the four modes (AutoMem off, on a
# machine without a fast tier, forced with everything fitting, forced with a
# tight budget): exit status 0 (every mode's losses and parameters bitwise
# those of "off"), one row per mode, AutoMem active exactly in fits and
# tight, moves in tight only, the hooks' cost line and the CSV parse.
set -u
run="${HCOPS_RUN:?set by tests/torch/torch.am}"
src="${srcdir:-../../tests}/../perf"
py=${PYTHON:-/usr/bin/python3}
"$py" -c 'import torch' 2>/dev/null || { echo "SKIP: no torch"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
fail() { echo "FAIL: $*"; status=1; }

HCOPS_RUN="$run" "$py" "$src/automem_bench.py" --models mini --batch 2 --steps 1 --warmup 1 --rounds 1 \
  --threads 2 --csv "$tmp/out.csv" >"$tmp/out.txt" 2>&1
rc=$?
cat "$tmp/out.txt"
[ $rc = 0 ] || fail "automem_bench.py exited $rc"
row() { grep -E "^$1 " "$tmp/out.txt"; }
for m in off no-fast fits tight; do
  r=$(row "$m")
  [ -n "$r" ] || { fail "no row for $m"; continue; }
  case $r in *" yes") ;; *) fail "$m: results differ from off: $r" ;; esac
done
# Columns: mode, median, vs off, waited, prefetched, offloaded, active, same.
row off | awk '$7 != "no" { exit 1 }' || fail "off: AutoMem active"
row no-fast | awk '$7 != "no" || $5 != 0 { exit 1 }' || fail "no-fast: AutoMem active or moving"
row fits | awk '$7 != "yes" || $6 != 0 { exit 1 }' || fail "fits: not active, or offloads"
row tight | awk '$7 != "yes" || !($5 > 0) || !($6 > 0) { exit 1 }' || fail "tight: no prefetch or offload"
grep -q "^Hooks' own cost .* us per layer call" "$tmp/out.txt" || fail "no hooks' cost line"
grep -qE "^  DiT-mini/2: [0-9]+ layer calls a step" "$tmp/out.txt" || fail "no per-step hook cost"
"$py" - "$tmp/out.csv" <<'PY' || fail "CSV"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
modes = {r["mode"] for r in rows}
assert modes == {"off", "no-fast", "fits", "tight", "hooks"}, modes
assert all(float(r["median_s"]) > 0 for r in rows), rows
PY
[ $status = 0 ] && echo "PASS: automem_bench.py quick"
exit $status

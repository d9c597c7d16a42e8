#!/bin/sh
# perf/torch2_attention.py (DiT's attention through the dispatcher, HCOps
# against the wheel's flash kernel) in its quick mode: it runs, HCOps
# computes the calls it is given, and it prints a row for the forward and
# the backward of each dtype and thread count, and the CSV holds them. No
# timing is judged.
. "${srcdir:-../../tests}/torch2/torch2_env.sh"
. "${srcdir:-../../tests}/perf/bench_env.sh"
run_quick torch2_attention.py --threads 1 2 --csv "$tmp/a.csv"
# forward and backward per dtype and thread count: 8 rows.
"$PYTHON" - "$tmp/a.csv" <<'PY' || fail "CSV"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 8, len(rows)
assert {(r["dtype"], r["threads"], r["pass"]) for r in rows} == {
    (d, t, p) for d in ("f32", "bf16") for t in ("1", "2") for p in ("fwd", "bwd")}
assert all(float(r["stock_ms"]) > 0 and float(r["hcops_ms"]) > 0 for r in rows)
print(f"CSV: {len(rows)} rows")
PY
n=$(grep -cE '^tiny-64 ' "$tmp/out.txt")
[ "$n" = 8 ] || fail "$n rows printed, 8 expected"
[ $status = 0 ] && echo "PASS: torch2_attention.py quick"
exit $status

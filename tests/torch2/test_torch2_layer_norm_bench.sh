#!/bin/sh
# perf/torch2_layer_norm.py (LayerNorm on the residual stream through the
# dispatcher, HCOps against the wheel's own kernel) in its quick mode: it
# runs, HCOps computes calls, it prints a row for every direction, layout,
# dtype, state and thread count, and the CSV holds them. No timing is judged.
. "${srcdir:-../../tests}/torch2/torch2_env.sh"
. "${srcdir:-../../tests}/perf/bench_env.sh"
run_quick torch2_layer_norm.py --threads 1 2 --csv "$tmp/l.csv"
# fwd and bwd, swapped and contiguous, f32 and bf16, warm and cold: 16 per thread count.
"$PYTHON" - "$tmp/l.csv" <<'PY' || fail "CSV"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 16 * 2, len(rows)
assert {(r["dir"], r["layout"], r["dtype"], r["threads"], r["state"]) for r in rows} == \
    {(d, l, t, n, s) for d in ("fwd", "bwd") for l in ("swapped", "contiguous") for t in ("f32", "bf16")
     for n in ("1", "2") for s in ("warm", "cold")}
assert all(float(r["stock_ms"]) > 0 and float(r["hcops_ms"]) > 0 for r in rows)
print(f"CSV: {len(rows)} rows")
PY
n=$(grep -cE '^(fwd|bwd) ' "$tmp/out.txt")
[ "$n" = 32 ] || fail "$n case rows printed, 32 expected"
[ $status = 0 ] && echo "PASS: torch2_layer_norm.py quick"
exit $status

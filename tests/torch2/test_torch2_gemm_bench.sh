#!/bin/sh
# perf/torch2_gemm.py (DiT's GEMMs through the dispatcher, HCOps against the
# wheel's own kernels) in its quick mode: it runs, HCOps computes the calls
# it is given, and it prints a row for every product of each dtype and
# thread count, and the CSV holds them. No timing is judged.
. "${srcdir:-../../tests}/torch2/torch2_env.sh"
. "${srcdir:-../../tests}/perf/bench_env.sh"
run_quick torch2_gemm.py --threads 1 2 --csv "$tmp/g.csv"
# 4 Linears x 3 products + adaLN's 3 + 2 attention products = 17 per dtype and thread count.
"$PYTHON" - "$tmp/g.csv" <<'PY' || fail "CSV"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 17 * 2 * 2, len(rows)
assert {(r["dtype"], r["threads"]) for r in rows} == {("f32", "1"), ("f32", "2"), ("bf16", "1"), ("bf16", "2")}
assert all(float(r["stock_ms"]) > 0 and float(r["hcops_ms"]) > 0 for r in rows)
print(f"CSV: {len(rows)} rows")
PY
n=$(grep -cE '^(fwd|dgrad|wgrad|adaln|attn) ' "$tmp/out.txt")
[ "$n" = 68 ] || fail "$n product rows printed, 68 expected"
[ $status = 0 ] && echo "PASS: torch2_gemm.py quick"
exit $status

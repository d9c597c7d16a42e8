#!/bin/sh
# perf/dit/torch2_step_ab.py (HCOps on and off in one process, steps
# alternated) in a quick run on the PyTorch 2.x venv: DiT-tiny, f32, eager
# only, one round. No timing is judged: exit status 0, a row for both
# variants in the table and the CSV, HCOps' losses within 1e-4 of stock's
# (the same batches and label dropout from the same weights), no call
# computed by HCOps in stock's steps and some in HCOps' own, and HCOps'
# GEMMs, attention and LayerNorm counted as computed (a run in which they
# were not measured nothing of HCOps).
. "${srcdir:-../../tests}/torch2/torch2_env.sh"
. "${srcdir:-../../tests}/perf/bench_env.sh"
"$PYTHON" "${srcdir:-../../tests}/../perf/dit/torch2_step_ab.py" --model tiny --batch 2 --threads 2 --rounds 1 --warmup 1 --amp none \
  --compile none --csv "$tmp/ab.csv" >"$tmp/out.txt" 2>&1
rc=$?
cat "$tmp/out.txt"
[ $rc = 0 ] || fail "torch2_step_ab.py exited $rc"
for v in stock hcops; do
  grep -Eq "^f32 +$v +[0-9.]+ " "$tmp/out.txt" || fail "no table row for $v"
  grep -q ",f32,$v," "$tmp/ab.csv" || fail "no CSV row for $v"
done
gap=$(sed -n "s/^f32: hcops's losses within \([0-9.e+-]*\) of stock's$/\1/p" "$tmp/out.txt")
[ -n "$gap" ] || fail "no loss comparison of hcops against stock"
awk -v g="$gap" 'BEGIN { exit !(g <= 1e-4) }' || fail "hcops' losses $gap from stock's (over 1e-4)"
# HCOps computed nothing in stock's steps (set_enabled(False) took) and
# something in its own.
grep -Eq "^f32: HCOps computed per variant: stock 0, hcops [1-9][0-9]*$" "$tmp/out.txt" ||
  fail "per-variant counts: not none for stock and some for hcops"
line=$(grep "^HCOps computed: " "$tmp/out.txt") || fail "no call counts"
for op in mm addmm _scaled_dot_product_flash_attention_for_cpu native_layer_norm; do
  echo "$line" | grep -Eq "[ ,]$op [1-9][0-9]*(,|$)" || fail "HCOps computed no $op: $line"
done
[ $status = 0 ] && echo "both variants measured, losses within $gap, HCOps' operators computed"
exit $status

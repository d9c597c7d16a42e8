#!/bin/sh
# The oneDNN-takeover benchmarks run and report what they claim; no timing.
# hcops-dnnl-replay on a small primitive list in the recorder's format (the
# layouts, attributes and broadcasts of a DiT step, a bias with output scale,
# sum and eltwise post-ops, in bf16 and again in f32, so that they are
# replayed on a CPU where oneDNN 2.6 has no bf16 matmul; and, last, two rows
# it must skip: an inner product and a blocked layout), stock and with
# libhcops.so preloaded: every rebuilt
# primitive's ONEDNN_VERBOSE=1 exec line carries the row's memory descriptors,
# attributes and problem (the primitive rebuilt is the one recorded), every
# result is within its double reference, the JSON line parses and names the
# skipped rows. perf/dnnl_replay.py --quick --primitives on that list, and
# perf/dnnl_dit_step.py --quick (DiT-tiny, one round; skipped without torch):
# their CSV files parse with a row per primitive / configuration and step.
set -u
perf="${HCOPS_PERF_BUILDDIR:?set by tests/perf/perf.am}"
tools="${HCOPS_TOOLS_BUILDDIR:?set by tests/perf/perf.am}"
lib="${HCOPS_LIB:?set by tests/Makefile.am}"
src="${srcdir:-../../tests}/../perf"
py=${PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
fail() { echo "FAIL: $*"; status=1; }

cat >"$tmp/prims.csv" <<'CSV'
calls,stock_ms,kind,prop,mds,attrs,aux,problem
12,0.5,matmul,undef,src_bf16::blocked:ab:f0 wei_bf16::blocked:ba:f0 dst_bf16::blocked:ab:f0,attr-scratchpad:user attr-post-ops:sum ,,64x48:48x96:64x96
12,0.5,matmul,undef,src_bf16::blocked:ba:f0 wei_bf16::blocked:ab:f0 dst_bf16::blocked:ab:f0,attr-scratchpad:user ,,96x64:64x48:96x48
2,0.2,matmul,undef,src_bf16::blocked:acb:f0 wei_bf16::blocked:abc:f0 dst_bf16::blocked:abc:f0,attr-scratchpad:user ,,6x32x20:6x20x24:6x32x24
1,0.1,matmul,undef,src_bf16::blocked:abc:f0 wei_bf16::blocked:acb:f0 dst_bf16::blocked:abc:f0,attr-scratchpad:user ,,4x21x19:1x19x33:4x21x33
1,0.1,matmul,undef,src_bf16::blocked:ab:f0 wei_bf16::blocked:ba:f0 bia_f32::blocked:ab:f0_mask2 dst_bf16::blocked:ab:f0,attr-oscale:0:0.500000 attr-post-ops:sum:2+eltwise_gelu_tanh ,,33x32:32x47:33x47
1,0.1,matmul,undef,src_f32::blocked:ab:f0 wei_f32::blocked:ab:f0 dst_f32::blocked:ab:f0,attr-post-ops:eltwise_swish:1.5:0:2 ,,33x17:17x5:33x5
12,0.5,matmul,undef,src_f32::blocked:ab:f0 wei_f32::blocked:ba:f0 dst_f32::blocked:ab:f0,attr-scratchpad:user attr-post-ops:sum ,,64x48:48x96:64x96
12,0.5,matmul,undef,src_f32::blocked:ba:f0 wei_f32::blocked:ab:f0 dst_f32::blocked:ab:f0,attr-scratchpad:user ,,96x64:64x48:96x48
2,0.2,matmul,undef,src_f32::blocked:acb:f0 wei_f32::blocked:abc:f0 dst_f32::blocked:abc:f0,attr-scratchpad:user ,,6x32x20:6x20x24:6x32x24
1,0.1,matmul,undef,src_f32::blocked:abc:f0 wei_f32::blocked:acb:f0 dst_f32::blocked:abc:f0,attr-scratchpad:user ,,4x21x19:1x19x33:4x21x33
1,0.1,matmul,undef,src_f32::blocked:ab:f0 wei_f32::blocked:ba:f0 bia_f32::blocked:ab:f0_mask2 dst_f32::blocked:ab:f0,attr-oscale:0:0.500000 attr-post-ops:sum:2+eltwise_gelu_tanh ,,33x32:32x47:33x47
1,0.1,inner_product,forward_training,src_bf16::blocked:ab:f0 wei_bf16:p:blocked:AB8b64a2b:f0 bia_f32::blocked:a:f0 dst_bf16::blocked:ab:f0,attr-scratchpad:user ,,mb32ic64oc96
1,0.1,matmul,undef,src_bf16::blocked:ab:f0 wei_bf16:p:blocked:AB8b64a2b:f0 dst_bf16::blocked:ab:f0,,,32x64:64x96:32x96
CSV

# oneDNN 2.6 has bf16 matmuls only with AVX-512 F/BW/VL/DQ, the features of
# HCOps' avx512 family: without them (an AVX2 CPU) its bf16 rows, and HCOps'
# (whose oneDNN layer leaves bf16 to oneDNN there), are skipped as
# unimplemented, and only there; the f32 rows must run.
case " $("$tools/hcops-info" --families | tr '\n' ' ') " in
  *" avx512 "*) NO_BF16=0 ;;
  *) NO_BF16=1 ;;
esac
export NO_BF16

# The replay program, stock and preloaded: results, JSON, and (stock) the
# verbose round trip of every rebuilt row.
for how in stock preloaded; do
  if [ $how = stock ]; then pre=; else pre=$lib; fi
  LD_PRELOAD=$pre OMP_NUM_THREADS=2 ONEDNN_VERBOSE=1 "$tools/hcops-dnnl-replay" --quick "$tmp/prims.csv" \
    >"$tmp/$how.out" 2>"$tmp/$how.err"
  rc=$?
  cat "$tmp/$how.err"
  [ $rc = 0 ] || fail "hcops-dnnl-replay ($how) exited $rc"
  if ! HOW=$how $py - "$tmp/prims.csv" "$tmp/$how.out" <<'PY'; then
import csv, json, os, sys
rows = list(csv.DictReader(open(sys.argv[1])))
out = open(sys.argv[2]).read().splitlines()
res = json.loads([l for l in out if l.startswith("{")][-1])["primitives"]
ok = len(res) == len(rows)
ran = set()
for r, p in zip(rows, res):
    if p["index"] >= len(rows) - 2:  # the rows it must skip
        ok &= "skipped" in p
        continue
    if os.environ["NO_BF16"] == "1" and "bf16" in r["mds"] and "no implementation on this CPU" in p.get("skipped", ""):
        print(f"ok: row {p['index']} ({r['problem']}): bf16 without AVX-512, skipped: {p['skipped']}")
        continue
    good = "skipped" not in p and p["err"] <= 1 and p["ms"] > 0 and p["calls"] == int(r["calls"])
    print(f"{'ok' if good else 'FAIL'}: row {p['index']} ({r['problem']}): {p}")
    ok &= good
    ran.add(p["index"])
f32_rows = {i for i, r in enumerate(rows[:-2]) if "bf16" not in r["mds"]}
print(f"{'ok' if f32_rows <= ran else 'FAIL'}: the {len(f32_rows)} f32 rows ran")
ok &= f32_rows <= ran
if os.environ["HOW"] == "stock":  # the rebuilt primitives as oneDNN describes them
    want = {(r["mds"], r["attrs"].strip(), r["problem"]) for i, r in enumerate(rows[:-2]) if i in ran}
    seen = {(f[6], f[7].strip(), f[9]) for f in (l.split(",") for l in out if l.startswith("onednn_verbose,exec,"))}
    print(f"{'ok' if want == seen else 'FAIL'}: verbose round trip; not seen: {want - seen}; unexpected: {seen - want}")
    ok &= want == seen
sys.exit(0 if ok else 1)
PY
    fail "hcops-dnnl-replay ($how): results or JSON"
  fi
done

# The orchestrators, quick: CSV files that parse.
if ! HCOPS_BUILD="$perf/.." HCOPS_LIB=$lib $py "$src/dnnl_replay.py" --quick --primitives "$tmp/prims.csv" \
    --csv "$tmp/replay.csv"; then
  fail "perf/dnnl_replay.py --quick"
fi
$py - "$tmp/replay.csv" "$tmp/prims.csv" <<'PY' || fail "perf/dnnl_replay.py: CSV"
import csv, os, sys
rows = list(csv.DictReader(open(sys.argv[1])))
prims = list(csv.DictReader(open(sys.argv[2])))
ok = len(rows) == len(prims) + 1 and rows[-1]["index"] == "total" and float(rows[-1]["stock_ms"]) > 0
# As above: bf16 rows skipped as unimplemented, only where oneDNN has no bf16 matmul;
# the f32 rows always run.
body = rows[:-3]
ran = [r for r in body if not (os.environ["NO_BF16"] == "1" and "bf16" in r["mds"]
                               and "no implementation on this CPU" in r["skipped"])]
ok &= len(ran) >= sum("bf16" not in r["mds"] for r in body)
ok &= all(float(r["hcops_speedup"]) > 0 for r in ran) and all(r["skipped"] for r in rows[-3:-1])
print(f"{'ok' if ok else 'FAIL'}: dnnl-replay.csv, {len(rows)} rows")
sys.exit(0 if ok else 1)
PY

if ! $py -c "import torch" 2>/dev/null; then
  echo "SKIP: perf/dnnl_dit_step.py --quick: torch cannot be imported by $py"
  exit $status
fi
HCOPS_BUILD="$perf/.." HCOPS_LIB=$lib $py "$src/dnnl_dit_step.py" --quick --csv "$tmp/step.csv" >"$tmp/step.out" 2>&1
rc=$?
cat "$tmp/step.out"
# 1 with agreeing losses: HCOps ran no matmul (the takeover's own tests say why); anything else fails.
if [ $rc != 0 ] && ! { [ $rc = 1 ] && grep -q "AGREE$" "$tmp/step.out"; }; then
  fail "perf/dnnl_dit_step.py --quick exited $rc"
fi
$py - "$tmp/step.csv" <<'PY' || fail "perf/dnnl_dit_step.py: CSV"
import csv, math, sys
rows = list(csv.DictReader(open(sys.argv[1])))
configs = {r["config"] for r in rows}
ok = {"stock", "gemm", "fp32"} <= configs and all(float(r["time_s"]) > 0 and math.isfinite(float(r["loss"]))
                                                  for r in rows)
print(f"{'ok' if ok else 'FAIL'}: dnnl-dit-step.csv, {len(rows)} rows, configurations {sorted(configs)}")
sys.exit(0 if ok else 1)
PY
exit $status

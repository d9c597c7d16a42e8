#!/usr/bin/env python3
"""Per-primitive replay of the oneDNN matmuls of a bf16-autocast DiT training
step: HCOps' primitives (libhcops.so preloaded) against oneDNN's own.

1. Record: one step of perf/dit/dit.py (DiT-S/2, batch 8, bf16 autocast,
   after a warm-up step) under ONEDNN_VERBOSE=1, stock PyTorch; each distinct
   matmul exec line (memory descriptors, attributes, problem) becomes a row
   of the primitive list with its calls per step and stock's median ms
   (perf-results/dnnl-dit-primitives.csv; --primitives FILE reuses a list).
2. Replay: build/tools/hcops-dnnl-replay rebuilds every primitive from its
   fields, checks one execution against a double reference and times
   repeated executions; run stock and with LD_PRELOAD=libhcops.so in turn
   (one process each, the order alternated round by round).
3. Report per primitive the median ms of each and HCOps' speed-up (median over
   rounds of stock ms / HCOps ms), and the time-weighted total (sum of calls x
   ms: one step's matmul time) with its speed-up, the median of the per-round
   ratios. One run under HCOPS_VERBOSE=1 says which primitives HCOps ran
   (its hcops_verbose,exec,cpu,matmul lines, matched by their fields); the
   others were forwarded to oneDNN and their ratio is oneDNN against itself.

  $PYTHON perf/dnnl_replay.py [--quick] [--rounds 3] [--threads 2] [--model S --batch 8]
                              [--primitives FILE] [--csv F]

Target (issue 16): HCOps' primitives >= 1.10x oneDNN's on the time-weighted
total. --quick: DiT-tiny, batch 2, 1 round, hcops-dnnl-replay --quick: a check
that it all runs. Exit status: 0 ok, 1 a result off the reference, 2 run error.
"""
import argparse
import collections
import csv
import os
import statistics
import sys

from benchlib.build import LIBHCOPS, PYTHON, program, require
from benchlib.child import RunError, child_env, json_result, run
from benchlib.report import cpu_model, error, load_average, write_csv
from benchlib.rounds import alternated

PERF = os.path.dirname(os.path.abspath(__file__))
DIT = os.path.join(PERF, "dit", "dit.py")
REPLAY = program("hcops-dnnl-replay")
FIELDS = ["calls", "stock_ms", "kind", "prop", "mds", "attrs", "aux", "problem"]
ONEDNN_EXEC = "onednn_verbose,exec,cpu,"
HCOPS_EXEC = "hcops_verbose,exec,cpu,"
CONFIGS = ("stock", "hcops")
TARGET = 1.10


def exec_fields(line, prefix):
    """(kind, prop, mds, attrs, aux, problem, ms) of a matmul/inner_product exec line, or None."""
    if not line.startswith(prefix):
        return None
    f = line.split(",")
    if len(f) < 11 or f[3] not in ("matmul", "inner_product"):
        return None
    return f[3], f[5], f[6], f[7], f[8], f[9], f[10]


def key_of(kind, prop, mds, attrs, aux, problem):
    """What identifies a primitive across verbose lines (scratchpad mode aside: HCOps has none)."""
    attrs = " ".join(sorted(a for a in attrs.split() if not a.startswith("attr-scratchpad:")))
    return kind, prop, mds, attrs, aux, problem


def record(args, path):
    """Runs the DiT step under ONEDNN_VERBOSE=1 and writes the primitive list."""
    steps, warmup = 1, 1
    cmd = [PYTHON, DIT, "--model", args.model, "--batch", str(args.batch), "--steps", str(steps), "--warmup",
           str(warmup), "--threads", str(args.threads), "--autocast", "bf16", "--json"]
    proc = run(cmd, child_env(args.threads, drop=["HCOPS_", "ONEDNN_", "DNNL_"], ONEDNN_VERBOSE="1"))
    times = collections.defaultdict(list)
    for line in proc.stdout.splitlines():
        f = exec_fields(line, ONEDNN_EXEC)
        if f and f[0] == "matmul":
            times[f[:6]].append(float(f[6]))
    if not times:
        raise RunError(f"no oneDNN matmul in the verbose output of {' '.join(cmd)}: does PyTorch send bf16 "
                       "matmuls to oneDNN on this CPU (AVX-512 BW/VL/DQ)?")
    rows = [[len(ms) // (steps + warmup), f"{statistics.median(ms):.4f}", *k] for k, ms in times.items()]
    rows.sort(key=lambda r: -r[0] * float(r[1]))
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    write_csv(path, FIELDS, rows)
    print(f"recorded {len(rows)} distinct matmul primitives, {sum(r[0] for r in rows)} calls per step, "
          f"DiT-{args.model}/2 batch {args.batch}: {path}")


def read_primitives(path):
    with open(path, newline="") as f:
        return [r for r in csv.DictReader(f)]


def replay(args, path, config, verbose=False):
    env = child_env(args.threads, drop=["HCOPS_", "ONEDNN_", "DNNL_"])
    if config == "hcops":
        env["LD_PRELOAD"] = args.lib
        if verbose:
            env["HCOPS_VERBOSE"] = "1"
    cmd = [REPLAY, *(["--quick"] if args.quick else []), *(["--warmup", "0", "--repeats", "1"] if verbose else []),
           path]
    proc = run(cmd, env, check=False)
    if proc.returncode not in (0, 1):  # 1: a result off the reference, reported below
        raise RunError(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    return json_result(proc), proc


def taken_by_hcops(args, path, prims):
    """The primitive indices HCOps ran, from one run under HCOPS_VERBOSE=1."""
    _, proc = replay(args, path, "hcops", verbose=True)
    seen = collections.Counter(key_of(*f[:6]) for f in (exec_fields(l, HCOPS_EXEC) for l in proc.stderr.splitlines())
                               if f)
    return {i for i, p in enumerate(prims)
            if seen[key_of(p["kind"], p["prop"], p["mds"], p["attrs"], p["aux"], p["problem"])] > 0}


def short(p):
    """The layouts (src/wei tags) and post-ops of a primitive, for the table."""
    tags = [tok.split(":")[3] if tok.count(":") >= 3 else "?" for tok in p["mds"].split()]
    post = [a.split(":", 1)[1] for a in p["attrs"].split() if a.startswith(("attr-post-ops:", "attr-oscale:"))]
    text = f"{'/'.join(tags[:2])}{' ' + ','.join(post) if post else ''}"
    return text if len(text) <= 25 else text[:22] + "..."


def summarise(prims, rounds):
    """Per primitive: median ms of each config, median over rounds of stock/hcops; and the totals."""
    rows = []
    for i, p in enumerate(prims):
        res = [r[c]["primitives"][i] for r in rounds for c in CONFIGS]
        if any("skipped" in x for x in res):
            rows.append({"index": i, "skipped": next(x["skipped"] for x in res if "skipped" in x)})
            continue
        ms = {c: statistics.median(r[c]["primitives"][i]["ms"] for r in rounds) for c in CONFIGS}
        ratio = statistics.median(r["stock"]["primitives"][i]["ms"] / r["hcops"]["primitives"][i]["ms"]
                                  for r in rounds)
        err = {c: max(r[c]["primitives"][i]["err"] for r in rounds) for c in CONFIGS}
        rows.append({"index": i, "ms": ms, "speedup": ratio, "err": err,
                     "impl": rounds[-1]["stock"]["primitives"][i]["impl"]})
    timed = [r for r in rows if "ms" in r]

    def total(rnd, c):
        return sum(int(prims[r["index"]]["calls"]) * rnd[c]["primitives"][r["index"]]["ms"] for r in timed)

    totals = {c: statistics.median(total(r, c) for r in rounds) for c in CONFIGS}
    total_ratio = statistics.median(total(r, "stock") / total(r, "hcops") for r in rounds) if timed else None
    return rows, totals, total_ratio


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="DiT-tiny batch 2, 1 round, short timing")
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--model", help="dit.py's model (default S; --quick tiny)")
    ap.add_argument("--batch", type=int, help="default 8; --quick 2")
    ap.add_argument("--primitives", help="a primitive list to replay instead of recording one")
    ap.add_argument("--record-to", default=os.path.join("perf-results", "dnnl-dit-primitives.csv"))
    ap.add_argument("--csv", default=os.path.join("perf-results", "dnnl-replay.csv"))
    args = ap.parse_args()
    args.rounds = args.rounds or (1 if args.quick else 3)
    args.model = args.model or ("tiny" if args.quick else "S")
    args.batch = args.batch or (2 if args.quick else 8)
    args.lib = os.environ.get("HCOPS_LIB", LIBHCOPS)
    require(REPLAY, args.lib)
    try:
        path = args.primitives
        if not path:
            path = args.record_to
            record(args, path)
        prims = read_primitives(path)
        print(f"CPU {cpu_model()}; load average {load_average():.2f}; {len(prims)} primitives from {path}; "
              f"{args.threads} threads; {args.rounds} round(s); libhcops: {args.lib}", flush=True)
        rounds = []
        for r in range(args.rounds):
            rounds.append({c: replay(args, path, c)[0] for c in alternated(CONFIGS, r)})
            print(f"round {r + 1}/{args.rounds} done", flush=True)
        taken = taken_by_hcops(args, path, prims)
    except RunError as e:
        error(e)
        return 2
    rows, totals, total_ratio = summarise(prims, rounds)

    print(f"\n{'#':>3} {'calls':>5}  {'problem':<34}{'layouts, post-ops':<26}{'stock ms':>10}{'hcops ms':>10}"
          f"{'speedup':>11}  ran in")
    failed = []
    for row in rows:
        p = prims[row["index"]]
        if "skipped" in row:
            print(f"{row['index']:>3} {p['calls']:>5}  {p['problem']:<34}{short(p):<26}  skipped: {row['skipped']}")
            continue
        where = "hcops" if row["index"] in taken else "oneDNN (forwarded)"
        print(f"{row['index']:>3} {p['calls']:>5}  {p['problem']:<34}{short(p):<26}{row['ms']['stock']:>10.4f}"
              f"{row['ms']['hcops']:>10.4f}{row['speedup']:>10.3f}x  {where}")
        failed += [f"#{row['index']} {c}" for c in CONFIGS if not row["err"][c] <= 1]
    ratio_text = "n/a" if total_ratio is None else f"{total_ratio:.3f}x"
    print(f"\ntime-weighted total (sum of calls x ms, one step's matmuls): stock {totals['stock']:.2f} ms, "
          f"hcops {totals['hcops']:.2f} ms; HCOps speed-up {ratio_text} (median of per-round ratios; target "
          f">= {TARGET:.2f}x: {'met' if total_ratio and total_ratio >= TARGET else 'MISSED'})")
    print(f"HCOps ran {len(taken)} of {len(prims)} primitives (HCOPS_VERBOSE=1); load average at the end "
          f"{load_average():.2f}")
    if failed:
        error(f"results off the double reference: {', '.join(failed)}")
    os.makedirs(os.path.dirname(args.csv) or ".", exist_ok=True)
    out = []
    for row in rows:
        p = prims[row["index"]]
        base = [row["index"], p["calls"], p["kind"], p["mds"], p["attrs"].strip(), p["problem"]]
        if "skipped" in row:
            out.append(base + ["", "", "", "", "", "", "", row["skipped"]])
        else:
            out.append(base + [f"{row['ms']['stock']:.5f}", f"{row['ms']['hcops']:.5f}", f"{row['speedup']:.4f}",
                               row["index"] in taken, f"{row['err']['stock']:.3g}", f"{row['err']['hcops']:.3g}",
                               row["impl"], ""])
    out.append(["total", sum(int(p["calls"]) for p in prims), "", "", "", "", f"{totals['stock']:.4f}",
                f"{totals['hcops']:.4f}", "" if total_ratio is None else f"{total_ratio:.4f}", "", "", "", "", ""])
    write_csv(args.csv, ["index", "calls", "kind", "mds", "attrs", "problem", "stock_ms", "hcops_ms", "hcops_speedup",
                         "ran_in_hcops", "stock_err", "hcops_err", "stock_impl", "skipped"], out)
    print(f"wrote {args.csv}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

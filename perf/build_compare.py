#!/usr/bin/env python3
"""Replays the recorded DiT sgemm_ traces through two builds of libhcops.so,
A (e.g. before a change) and B (after), to show that the change did not slow
the GEMMs: f32 (sgemm_), f64 (dgemm_) and bf16 operands (sbgemm_), on 1
and 2 threads.

Every (build, precision, trace, threads) runs in its own process through
build/tools/hcops-replay; the two builds alternate within each round (A-B,
then B-A) and the result is, per case, the median over rounds of the
per-round ratio time B / time A (< 1: B faster). A change that leaves the
code paths alone should read 0.98-1.02 on a quiet machine.

  $PYTHON perf/build_compare.py A.so B.so [TRACE...] [--rounds 5] [--threads 1,2]
                                [--precisions f32,f64,bf16] [--repeats 2] [--csv F]

A.so, B.so: two libhcops.so (e.g. a worktree's build/shim/.libs/libhcops.so).
TRACE: default the four DiT traces of perf/workloads ($HCOPS_WORKLOADS).
"""
import argparse
import os
import statistics
import sys

from benchlib import traces
from benchlib.build import program, require
from benchlib.child import child_env, json_result, run
from benchlib.report import cpu_model, load_average, write_csv
from benchlib.rounds import alternated

FLAG = {"f32": "s", "f64": "d", "bf16": "b"}  # hcops-replay's --precision (f64: dgemm_)


def seconds(replay, lib, trace, threads, precision, repeats):
    """The whole trace's time (attention and Linear calls) through lib, in a
    process of its own."""
    cmd = [replay, "--precision", FLAG[precision], lib, trace, str(repeats)]
    r = json_result(run(cmd, child_env(threads=threads)))
    return r["attention_s"] + r["linear_s"], r["attention_gflop"] + r["linear_gflop"]


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("a", help="libhcops.so of build A (before)")
    ap.add_argument("b", help="libhcops.so of build B (after)")
    ap.add_argument("traces", nargs="*")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=2, help="timed passes per process, after a warm-up")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--precisions", default="f32,bf16")
    ap.add_argument("--csv", default=os.path.join("perf-results", "build-compare.csv"))
    args = ap.parse_args(argv)
    replay = program("hcops-replay")
    require(replay, args.a, args.b)
    trace_paths = args.traces or traces.default_traces()
    threads = [int(t) for t in args.threads.split(",")]
    precisions = args.precisions.split(",")
    print(f"machine: {cpu_model()}, {os.cpu_count()} CPUs, load {load_average():.2f} at start")
    print(f"A: {args.a}\nB: {args.b}\n{args.rounds} rounds, A and B alternated (A-B, B-A, ...)")
    rows = []
    header = f"{'precision':9} {'trace':28} {'thr':>3} {'A GFLOPS':>9} {'B GFLOPS':>9} {'B/A time':>9}  per round"
    print(header)
    for precision in precisions:
        for trace in trace_paths:
            for t in threads:
                ratios, gf = [], {"a": [], "b": []}
                for r in range(args.rounds):
                    got = {}
                    for which in alternated(["a", "b"], r):
                        s, flop = seconds(replay, getattr(args, which), trace, t, precision, args.repeats)
                        got[which] = s
                        gf[which].append(flop / s)
                    ratios.append(got["b"] / got["a"])
                med = statistics.median(ratios)
                ga, gb = statistics.median(gf["a"]), statistics.median(gf["b"])
                name = traces.label(trace)
                print(f"{precision:9} {name:28} {t:>3} {ga:>9.1f} {gb:>9.1f} {med:>9.3f}  "
                      + " ".join(f"{x:.3f}" for x in ratios), flush=True)
                rows.append([precision, name, t, f"{ga:.2f}", f"{gb:.2f}", f"{med:.4f}"]
                            + [f"{x:.4f}" for x in ratios])
    all_ratios = [float(r[5]) for r in rows]
    print(f"median of the cases' B/A: {statistics.median(all_ratios):.3f}, "
          f"range {min(all_ratios):.3f}-{max(all_ratios):.3f}; load {load_average():.2f} at end")
    os.makedirs(os.path.dirname(args.csv) or ".", exist_ok=True)
    write_csv(args.csv, ["precision", "trace", "threads", "a_gflops", "b_gflops", "b_over_a_time"]
              + [f"round{i + 1}" for i in range(args.rounds)], rows)
    print(f"wrote {args.csv}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

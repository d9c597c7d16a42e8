#!/usr/bin/env python3
"""HCOPS_FP32_MATH on the recorded DiT sgemm_ traces: what each fp32 compute
mode of HCOps' sgemm_ gains in speed and costs in accuracy.

Speed: each trace replayed through libhcops.so's sgemm_ (hcops-replay) under
HCOPS_FP32_MATH=strict, bf16 and bf16x3, each run in its own process, the mode
order rotated from trace to trace and round to round; per trace, thread count
and mode the median GFLOPS and the median over rounds of the ratio strict time
/ mode time (> 1: the mode is faster).

Error: hcops-fp32-error under each mode, on the distinct calls of each trace
with random inputs in [-1, 1): per element |c - r| / (|alpha| |A||B| + |beta||C|)
against a double dgemm_ (Debian's OpenBLAS when installed, else libhcops'
own, which the mode does not change); the largest over the trace, and the
median over calls of each call's median. The error does not depend on the
thread count (the split of the work does not change the k order of a sum),
so it is measured once, on the largest thread count.

  $PYTHON perf/fp32_math.py [TRACE...] [--quick] [--rounds 3] [--threads 1,2] [--csv F]

TRACE: default the four DiT traces of perf/workloads ($HCOPS_WORKLOADS).
Default CSV: perf-results/fp32-math.csv. --quick: 12 small calls of each trace,
1 round, 1 pass: a check that it runs.
"""
import argparse
import os
import statistics
import sys
import tempfile

from benchlib import blas_peers, traces
from benchlib.build import LIBHCOPS, MULTIARCH, program, require
from benchlib.child import RunError, child_env, json_result, run
from benchlib.report import cpu_model, error, load_average, write_csv
from benchlib.rounds import rotated

MODES = ("strict", "bf16", "bf16x3")
ERROR = program("hcops-fp32-error")
REFERENCE = f"{MULTIARCH}/libblas.so.3"  # Debian's default BLAS (OpenBLAS): not the library measured
# Left out of every child: a mode or family set by the caller would change what is measured.
DROPPED = ("HCOPS_FP32_MATH", "HCOPS_VERBOSE")


def speed(args, trace, threads, mode):
    r = blas_peers.replay(args.replay, "hcops", trace, threads, "s", args.repeats, {"HCOPS_FP32_MATH": mode})
    return r["attention_s"] + r["linear_s"], r["attention_gflop"] + r["linear_gflop"]


def error_of(args, trace, threads, mode):
    cmd = [ERROR, LIBHCOPS, trace] + (["--ref", REFERENCE] if os.path.exists(REFERENCE) else [])
    if args.quick:
        cmd += ["--max-calls", "4"]
    env = child_env(threads=threads, drop=DROPPED, HCOPS_FP32_MATH=mode)
    return json_result(run(cmd, env))


def fmt(x, spec):
    return "n/a" if x is None else format(x, spec)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("traces", nargs="*")
    ap.add_argument("--quick", action="store_true", help="12 small calls per trace, 1 round, 1 pass")
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--repeats", type=int, help="timed passes per process, after a warm-up (default 2; quick 1)")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--replay", default=blas_peers.REPLAY)
    ap.add_argument("--csv", default=os.path.join("perf-results", "fp32-math.csv"))
    args = ap.parse_args()
    rounds_n = args.rounds or (1 if args.quick else 3)
    args.repeats = args.repeats or (1 if args.quick else 2)
    threads_list = [int(t) for t in args.threads.split(",")]
    paths = args.traces or traces.default_traces()
    if not paths:
        error("no trace given and none found in perf/workloads (set HCOPS_WORKLOADS)")
        return 2
    require(LIBHCOPS, args.replay, ERROR, *paths)
    print(f"{len(paths)} trace(s) x threads {args.threads} x modes {', '.join(MODES)}, {rounds_n} round(s); "
          f"CPU {cpu_model()}, load average {load_average()}", flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        if args.quick:
            paths = [traces.subset(p, tmp) for p in paths]
        cases = [(p, t) for p in paths for t in threads_list]
        try:
            rounds = []
            for r in range(rounds_n):
                rounds.append({case: {mode: speed(args, *case, mode) for mode in rotated(list(MODES), i + r)}
                               for i, case in enumerate(cases)})
                print(f"round {r + 1}/{rounds_n} done", flush=True)
            errors = {(p, mode): error_of(args, p, max(threads_list), mode) for p in paths for mode in MODES}
        except RunError as e:
            error(e)
            return 2

    rows = []
    for p, t in cases:
        for mode in MODES:
            per_round = [r[p, t] for r in rounds]
            gf = statistics.median(x[mode][1] / x[mode][0] for x in per_round)
            ratio = statistics.median(x["strict"][0] / x[mode][0] for x in per_round)
            e = errors[p, mode]
            rows.append((p, t, mode, gf, ratio, e["max_err"], e["median_err"], e["calls"], e["worst_call"]))

    print(f"\n{'trace':<22}{'threads':>8}{'mode':>8}{'GFLOPS':>10}{'vs strict':>11}{'max error':>12}"
          f"{'median error':>14}{'calls':>7}  worst call")
    for p, t, mode, gf, ratio, emax, emed, calls, worst in rows:
        print(f"{traces.label(p):<22}{t:>8}{mode:>8}{gf:>10.1f}{ratio:>10.3f}x{emax:>12.2e}{emed:>14.2e}"
              f"{calls:>7}  {worst}")
    print("\nvs strict = median over rounds of (strict time / mode time) in the same round; > 1: the mode is faster."
          "\nerror = |c - r| / (|alpha| |A||B| + |beta||C|) per element, against f64; max over the distinct calls "
          "of the trace, and median over them of each call's median (measured on "
          f"{max(threads_list)} thread(s)).")
    for p in paths:  # a mode the library does not apply shows as strict's error
        if errors[p, "bf16"]["max_err"] <= 4 * errors[p, "strict"]["max_err"]:
            error(f"{traces.label(p)}: bf16's error is strict's: HCOPS_FP32_MATH not applied by {LIBHCOPS}?")
    print(f"load average at the end {load_average()}")
    os.makedirs(os.path.dirname(args.csv) or ".", exist_ok=True)
    write_csv(args.csv, ["trace", "threads", "mode", "gflops", "speedup_vs_strict", "max_err", "median_err",
                         "distinct_calls", "worst_call"],
              ([os.path.basename(p).removesuffix(".sgemm.csv"), t, mode, f"{gf:.2f}", f"{ratio:.3f}", f"{emax:.3e}",
                f"{emed:.3e}", calls, worst] for p, t, mode, gf, ratio, emax, emed, calls, worst in rows))
    print(f"wrote {args.csv}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Thin products small enough for one block (n <= 16 or k <= 16, one
thread's worth of flops): the path HCOps picks for each (HCOPS_SKINNY=auto:
the family's measured choice, kernel.h's GemmKernel::thin_choice) against
the skinny and shallow kernels on every product they take
(HCOPS_SKINNY=always, the choice before it existed) and one block on every
one (HCOPS_SKINNY=never), on random shapes the choice's fit did not see.

Each shape is a trace of one product repeated (hcops-replay, best of
--repeats passes after a warm-up), each setting in its own process,
alternated within each round; per shape the median over rounds. The
summary is the sum over shapes: auto against always, never, and the best
of the two per shape (what a perfect choice would take).

  $PYTHON perf/thin_paths.py [LIB] [--shapes 60] [--rounds 3] [--precisions f32,f64]
                             [--seed 1] [--baseline OLD_LIB] [--csv F]

LIB: libhcops.so (default: the build's). --baseline: a second build run
with HCOPS_SKINNY=auto beside them (e.g. the tree before a change).
"""
import argparse
import math
import os
import random
import statistics
import sys
import tempfile

from benchlib.build import LIBHCOPS, program, require
from benchlib.child import child_env, json_result, run
from benchlib.report import cpu_label, load_average, write_csv
from benchlib.rounds import alternated

FLAG = {"f32": "s", "f64": "d"}
CALLS = 1000  # products a trace repeats: a pass of 0.1-5 ms, above the timer's microsecond
# Products of at most this many flops (2 m n k): the lower half of what one
# block takes on the avx2 family (m n k under its kMinFlopsPerThread, 500
# 000), where the paths differ most; the doc/perf CSVs were measured so.
MAX_FLOPS = 500_000


def shapes(precision, count, rng):
    """Random thin products of at most MAX_FLOPS: three in four with n <= 16
    (k log-uniform in 1-512), the rest with k <= 16 and n 17-128 (f32 only:
    f64 has no shallow kernel); m up to 128 (f32) or 64 (f64: avx2's mc)."""
    out = []
    m_max = 128 if precision == "f32" else 64
    while len(out) < count:
        ta, tb = rng.choice("NT"), rng.choice("NT")
        m = rng.randint(1, m_max)
        if precision == "f64" or rng.random() < 0.75:
            n, k = rng.randint(1, 16), int(round(math.exp(rng.uniform(0, math.log(512)))))
        else:
            n, k = rng.randint(17, 128), rng.randint(1, 16)
        if 2 * m * n * k <= MAX_FLOPS:
            out.append((ta, tb, m, n, k))
    return out


def trace_line(ta, tb, m, n, k):
    lda = m if ta == "N" else k
    ldb = k if tb == "N" else n
    return f"{ta},{tb},{m},{n},{k},1,{lda},{ldb},0,{m}\n"


def per_call_us(replay, lib, trace, precision, threads, repeats, skinny):
    env = child_env(threads=threads, HCOPS_SKINNY=skinny)
    r = json_result(run([replay, "--precision", FLAG[precision], lib, trace, str(repeats)], env))
    return (r["linear_s"] + r["attention_s"]) / r["calls"] * 1e6


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("lib", nargs="?", default=None, help="libhcops.so (default: the build's)")
    ap.add_argument("--baseline", help="a second libhcops.so, run with HCOPS_SKINNY=auto")
    ap.add_argument("--shapes", type=int, default=60, help="random shapes per precision")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=10, help="timed passes per process, after a warm-up")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--precisions", default="f32,f64")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--csv", default=os.path.join("perf-results", "thin-paths.csv"))
    args = ap.parse_args(argv)
    replay = program("hcops-replay")
    lib = args.lib or LIBHCOPS
    require(replay, lib, *([args.baseline] if args.baseline else []))
    configs = [("auto", lib, "auto"), ("always", lib, "always"), ("never", lib, "never")]
    if args.baseline:
        configs.append(("baseline", args.baseline, "auto"))
    names = [c[0] for c in configs]
    print(f"machine: {cpu_label()}, {os.cpu_count()} CPUs, load {load_average():.2f} at start; "
          f"{args.threads} thread(s), {args.rounds} rounds alternated; us per call")
    rng = random.Random(args.seed)
    rows, summary = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for precision in args.precisions.split(","):
            print(f"{'prec':4} {'op':2} {'m':>4} {'n':>4} {'k':>4} " + " ".join(f"{n:>8}" for n in names) +
                  "  auto/best")
            totals = {n: 0.0 for n in names + ["best"]}
            worse = 0
            for ta, tb, m, n, k in shapes(precision, args.shapes, rng):
                trace = os.path.join(tmp, "shape.trace")
                with open(trace, "w") as f:
                    f.write(trace_line(ta, tb, m, n, k) * CALLS)
                times = {name: [] for name in names}
                for r in range(args.rounds):
                    for name, path, skinny in alternated(configs, r):
                        times[name].append(per_call_us(replay, path, trace, precision, args.threads, args.repeats,
                                                       skinny))
                med = {name: statistics.median(v) for name, v in times.items()}
                best = min(med["always"], med["never"])
                ratio = med["auto"] / best
                worse += ratio > 1.1
                for name in names:
                    totals[name] += med[name]
                totals["best"] += best
                print(f"{precision:4} {ta}{tb} {m:4} {n:4} {k:4} " + " ".join(f"{med[x]:8.3f}" for x in names) +
                      f"  {ratio:9.2f}", flush=True)
                rows.append([precision, ta + tb, m, n, k] + [round(med[x], 4) for x in names] +
                            [round(ratio, 4), cpu_label()])
            line = (f"{precision}: {args.shapes} shapes, sum of per-call times: auto {totals['auto']:.1f} us, "
                    f"always {totals['always']:.1f} ({totals['always'] / totals['auto']:.2f}x auto), never "
                    f"{totals['never']:.1f} ({totals['never'] / totals['auto']:.2f}x), best of the two per shape "
                    f"{totals['best']:.1f} (auto at {totals['best'] / totals['auto']:.1%} of it)")
            if args.baseline:
                line += f", baseline {totals['baseline']:.1f} ({totals['baseline'] / totals['auto']:.2f}x)"
            line += f"; auto over 1.1x the best on {worse} shapes"
            summary.append(line)
    print("\n".join(summary))
    os.makedirs(os.path.dirname(os.path.abspath(args.csv)), exist_ok=True)
    write_csv(args.csv, ["precision", "op", "m", "n", "k"] + [f"{x}_us" for x in names] + ["auto_over_best", "cpu"],
              rows)
    print(f"wrote {args.csv}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
"""Replays a recorded sgemm_ trace through HCOps and its peers, alternating them
round by round (each run in its own process) and reporting the median of the
per-round time ratios, for the whole trace and for its attention and Linear parts.

  $PYTHON perf/blas_replay.py TRACE [--rounds 5] [--threads 2] [--libs hcops,openblas,...] [--csv out.csv]

Libraries: hcops (the build's libhcops.so), openblas (Debian's default libblas.so.3),
openblas-skx (the same with OPENBLAS_CORETYPE=SkylakeX), blis (libblis4-openmp, when
installed), dnnl (oneDNN dnnl_sgemm). The replay itself is build/perf/hcops-replay.
"""
import argparse
import os
import sys

from benchlib import blas_peers
from benchlib.child import RunError
from benchlib.report import error, not_installed, write_csv
from benchlib.rounds import median_over, run_rounds

PARTS = ("total", "attention", "linear")


def replay(args, name):
    r = blas_peers.replay(args.replay, name, args.trace, args.threads)
    r["total_s"] = r["attention_s"] + r["linear_s"]
    r["total_gflop"] = r["attention_gflop"] + r["linear_gflop"]
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    blas_peers.add_options(ap)
    ap.add_argument("--csv")
    args = ap.parse_args()
    args.libs = args.libs or blas_peers.default_libs("s")
    libs = blas_peers.installed(args.libs)
    print(f"trace {os.path.basename(args.trace)}, {args.threads} threads, {args.rounds} rounds, "
          f"order rotated each round; skipped (not installed): {not_installed(args.libs.split(','), libs)}")
    try:
        rounds = run_rounds(args.rounds, libs, lambda name: replay(args, name))
    except RunError as e:
        error(e)
        return 2

    print(f"\n{'library':<14}" + "".join(f"{p + ' GFLOPS':>18}" for p in PARTS) +
          "".join(f"{'hcops speedup ' + p:>26}" for p in PARTS))
    for name in libs:
        gf = [median_over(rounds, lambda r: r[name][f"{p}_gflop"] / r[name][f"{p}_s"]) for p in PARTS]
        ratio = [median_over(rounds, lambda r: r[name][f"{p}_s"] / r["hcops"][f"{p}_s"]) for p in PARTS]
        print(f"{name:<14}" + "".join(f"{g:>18.1f}" for g in gf) + "".join(f"{x:>25.3f}x" for x in ratio))
    print("\nspeedup = median over rounds of (peer time / hcops time) in the same round; > 1: hcops faster")
    if args.csv:
        write_csv(args.csv, ["round", "library", "attention_s", "linear_s", "attention_gflop", "linear_gflop"],
                  ([i, name, x["attention_s"], x["linear_s"], x["attention_gflop"], x["linear_gflop"]]
                   for i, r in enumerate(rounds, 1) for name, x in r.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

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
import csv
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.environ.get("HCOPS_BUILD", os.path.join(HERE, "..", "build"))
MULTIARCH = "/usr/lib/x86_64-linux-gnu"
PEERS = {
    "hcops": (os.path.join(BUILD, "shim", ".libs", "libhcops.so"), {}),
    "openblas": (f"{MULTIARCH}/libblas.so.3", {}),
    "openblas-skx": (f"{MULTIARCH}/openblas-pthread/libblas.so.3", {"OPENBLAS_CORETYPE": "SkylakeX"}),
    "blis": (f"{MULTIARCH}/blis-openmp/libblas.so.3", {}),
    "dnnl": (f"dnnl:{MULTIARCH}/libdnnl.so.2", {}),
}
PARTS = ("total", "attention", "linear")


def replay(binary, trace, name, threads):
    lib, extra = PEERS[name]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads),
               BLIS_NUM_THREADS=str(threads), **extra)
    env.pop("LD_PRELOAD", None)
    out = subprocess.run([binary, lib, trace], env=env, capture_output=True, text=True, check=True).stdout
    r = json.loads(out.splitlines()[-1])
    r["total_s"] = r["attention_s"] + r["linear_s"]
    r["total_gflop"] = r["attention_gflop"] + r["linear_gflop"]
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--libs", default="hcops,openblas,openblas-skx,blis,dnnl")
    ap.add_argument("--replay", default=os.path.join(BUILD, "perf", "hcops-replay"))
    ap.add_argument("--csv")
    args = ap.parse_args()
    libs = [n for n in args.libs.split(",") if os.path.exists(PEERS[n][0].removeprefix("dnnl:"))]
    if "hcops" not in libs:
        sys.exit(f"blas_replay.py: {PEERS['hcops'][0]} not found: build first (make)")
    print(f"trace {os.path.basename(args.trace)}, {args.threads} threads, {args.rounds} rounds, "
          f"order rotated each round; skipped (not installed): "
          f"{', '.join(n for n in args.libs.split(',') if n not in libs) or 'none'}")
    rounds = []
    for r in range(args.rounds):
        order = libs[r % len(libs):] + libs[:r % len(libs)]
        rounds.append({name: replay(args.replay, args.trace, name, args.threads) for name in order})

    print(f"\n{'library':<14}" + "".join(f"{p + ' GFLOPS':>18}" for p in PARTS) +
          "".join(f"{'hcops speedup ' + p:>26}" for p in PARTS))
    for name in libs:
        gf = [statistics.median(r[name][f"{p}_gflop"] / r[name][f"{p}_s"] for r in rounds) for p in PARTS]
        ratio = [statistics.median(r[name][f"{p}_s"] / r["hcops"][f"{p}_s"] for r in rounds) for p in PARTS]
        print(f"{name:<14}" + "".join(f"{g:>18.1f}" for g in gf) + "".join(f"{x:>25.3f}x" for x in ratio))
    print("\nspeedup = median over rounds of (peer time / hcops time) in the same round; > 1: hcops faster")
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["round", "library", "attention_s", "linear_s", "attention_gflop", "linear_gflop"])
            for i, r in enumerate(rounds, 1):
                for name, x in r.items():
                    w.writerow([i, name, x["attention_s"], x["linear_s"], x["attention_gflop"], x["linear_gflop"]])


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Runs build/perf/hcops-mem-bench under glibc's malloc and the interposers,
alternating them round by round (each run in its own process, the order
rotated every round), and reports
  - what a malloc/free pair below the threshold costs on top of glibc, as the
    median over rounds of (interposer ns - glibc ns) in the same round (target:
    <= 5 ns added, since every small allocation of the process pays it);
  - the large-allocation costs (malloc + touch every page + free, and malloc +
    free alone) as the median over rounds of interposer time / glibc time.

  $PYTHON perf/mem_bench.py [--rounds 5] [--quick] [--configs glibc,hcops,...] [--csv F]

Configurations: glibc (no preload), hcops (libhcops_mem.so, default policy
"fast,thp" and reuse cache), hcops-nocache (the same with HCOPS_MEM_CACHE=0),
memtier (memkind's libmemtier.so with one DRAM tier: its cost as an
interposer, not a tiering result; Debian package libmemkind0).
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys

from blas_replay import BUILD, MULTIARCH

MEM = os.path.join(BUILD, "shim", "mem", ".libs", "libhcops_mem.so")
MEMTIER = f"{MULTIARCH}/libmemtier.so.0"
# libmemtier aborts without a POLICY entry, even for a single tier.
MEMTIER_ENV = {"MEMKIND_MEM_TIERS": "KIND:DRAM,RATIO:1;POLICY:STATIC_RATIO"}
CONFIGS = {  # name: (preload or None, extra environment)
    "glibc": (None, {}),
    "hcops": (MEM, {}),
    "hcops-nocache": (MEM, {"HCOPS_MEM_CACHE": "0"}),
    "memtier": (MEMTIER, MEMTIER_ENV),
}
TESTS = ("small", "small_2t", "align64", "touch", "notouch")


def clean_env():
    """The caller's environment without anything that would change an allocator."""
    return {k: v for k, v in os.environ.items()
            if k != "LD_PRELOAD" and not k.startswith(("HCOPS_MEM_", "MEMKIND_", "GLIBC_TUNABLES", "MALLOC_"))}


def run(binary, name, quick):
    preload, extra = CONFIGS[name]
    env = dict(clean_env(), **extra)
    if preload:
        env["LD_PRELOAD"] = preload
    out = subprocess.run([binary] + (["--quick"] if quick else []), env=env,
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.splitlines()[-1])


def size_label(n):
    n = int(n)
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB" if n >= 1 << 10 else f"{n} B"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="shorter batches (noisier)")
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--bench", default=os.path.join(BUILD, "perf", "hcops-mem-bench"))
    ap.add_argument("--csv")
    args = ap.parse_args()
    wanted = args.configs.split(",")
    configs = [n for n in wanted if CONFIGS[n][0] is None or os.path.exists(CONFIGS[n][0])]
    if "glibc" not in configs or not os.path.exists(args.bench) or not os.path.exists(MEM):
        sys.exit("mem_bench.py: needs glibc in --configs and a built hcops-mem-bench and libhcops_mem.so (make)")
    print(f"{args.rounds} rounds, order rotated each round; skipped (not installed): "
          f"{', '.join(n for n in wanted if n not in configs) or 'none'}")
    rounds = []
    for r in range(args.rounds):
        order = configs[r % len(configs):] + configs[:r % len(configs)]
        rounds.append({name: run(args.bench, name, args.quick) for name in order})

    def med(f):
        return statistics.median(f(x) for x in rounds)

    for test, title in (("small", "malloc+free pair, 1 thread"), ("small_2t", "malloc+free pair, 2 threads"),
                        ("align64", "posix_memalign(64)+free pair (PyTorch's way), 1 thread")):
        sizes = list(rounds[0]["glibc"][test])
        print(f"\n{title}: ns per pair (added vs glibc)\n{'config':<15}" +
              "".join(f"{size_label(s):>20}" for s in sizes))
        for name in configs:
            cells = [f"{med(lambda x: x[name][test][s]):.1f}" +
                     ("" if name == "glibc" else f" ({med(lambda x: x[name][test][s] - x['glibc'][test][s]):+.1f})")
                     for s in sizes]
            print(f"{name:<15}" + "".join(f"{c:>20}" for c in cells))
    for test, title in (("touch", "malloc + write every page + free"), ("notouch", "malloc + free, untouched")):
        sizes = list(rounds[0]["glibc"][test])
        print(f"\n{title}: us per cycle (time / glibc time)\n{'config':<15}" +
              "".join(f"{size_label(s):>24}" for s in sizes))
        for name in configs:
            cells = [f"{med(lambda x: x[name][test][s]) / 1e3:.2f}" +
                     ("" if name == "glibc" else f" ({med(lambda x: x[name][test][s] / x['glibc'][test][s]):.3f}x)")
                     for s in sizes]
            print(f"{name:<15}" + "".join(f"{c:>24}" for c in cells))
    if "hcops" in configs:
        worst = max(med(lambda x: x["hcops"]["small"][s] - x["glibc"]["small"][s]) for s in rounds[0]["glibc"]["small"])
        print(f"\nhcops small path, worst size: {worst:+.1f} ns per pair vs glibc (target <= 5 ns): "
              f"{'met' if worst <= 5 else 'NOT met'}")
    print("added = median over rounds of (config ns - glibc ns); ratios = median over rounds of config / glibc")
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["round", "config", "test", "bytes", "ns"])
            for i, r in enumerate(rounds, 1):
                for name, x in r.items():
                    for test in TESTS:
                        for size, ns in x[test].items():
                            w.writerow([i, name, test, size, ns])


if __name__ == "__main__":
    main()

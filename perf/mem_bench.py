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
import os
import sys

from benchlib.allocators import MEMTIER, MEMTIER_ENV, allocator_env
from benchlib.build import LIBHCOPS_MEM, program, require
from benchlib.child import RunError, json_result, run
from benchlib.report import error, not_installed, size_label, write_csv
from benchlib.rounds import median_over, run_rounds

CONFIGS = {  # name: (preload or None, extra environment)
    "glibc": (None, {}),
    "hcops": (LIBHCOPS_MEM, {}),
    "hcops-nocache": (LIBHCOPS_MEM, {"HCOPS_MEM_CACHE": "0"}),
    "memtier": (MEMTIER, MEMTIER_ENV),
}
TESTS = ("small", "small_2t", "align64", "touch", "notouch")
# (test, title): the small tests' tables show ns per pair and the ns added to
# glibc's, the large ones' us per cycle and the ratio to glibc's time.
SMALL = (("small", "malloc+free pair, 1 thread"), ("small_2t", "malloc+free pair, 2 threads"),
         ("align64", "posix_memalign(64)+free pair (PyTorch's way), 1 thread"))
LARGE = (("touch", "malloc + write every page + free"), ("notouch", "malloc + free, untouched"))


def run_bench(binary, name, quick):
    preload, extra = CONFIGS[name]
    env = allocator_env([preload] if preload else [], **extra)
    return json_result(run([binary] + (["--quick"] if quick else []), env))


def print_table(rounds, configs, test, heading, width, cell):
    """One row per configuration, one column per size; cell(name, size) is its text."""
    sizes = list(rounds[0]["glibc"][test])
    print(f"\n{heading}\n{'config':<15}" + "".join(f"{size_label(s):>{width}}" for s in sizes))
    for name in configs:
        print(f"{name:<15}" + "".join(f"{cell(name, s):>{width}}" for s in sizes))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="shorter batches (noisier)")
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--bench", default=program("hcops-mem-bench"))
    ap.add_argument("--csv")
    args = ap.parse_args()
    wanted = args.configs.split(",")
    configs = [n for n in wanted if CONFIGS[n][0] is None or os.path.exists(CONFIGS[n][0])]
    if "glibc" not in configs:
        error("needs glibc in --configs: every figure is relative to it")
        return 2
    require(args.bench, LIBHCOPS_MEM)
    print(f"{args.rounds} rounds, order rotated each round; skipped (not installed): {not_installed(wanted, configs)}")
    try:
        rounds = run_rounds(args.rounds, configs, lambda name: run_bench(args.bench, name, args.quick))
    except RunError as e:
        error(e)
        return 2

    def med(f):
        return median_over(rounds, f)

    for test, title in SMALL:
        print_table(rounds, configs, test, f"{title}: ns per pair (added vs glibc)", 20,
                    lambda name, s: f"{med(lambda x: x[name][test][s]):.1f}" +
                    ("" if name == "glibc" else f" ({med(lambda x: x[name][test][s] - x['glibc'][test][s]):+.1f})"))
    for test, title in LARGE:
        print_table(rounds, configs, test, f"{title}: us per cycle (time / glibc time)", 24,
                    lambda name, s: f"{med(lambda x: x[name][test][s]) / 1e3:.2f}" +
                    ("" if name == "glibc" else f" ({med(lambda x: x[name][test][s] / x['glibc'][test][s]):.3f}x)"))
    if "hcops" in configs:
        worst = max(med(lambda x: x["hcops"]["small"][s] - x["glibc"]["small"][s]) for s in rounds[0]["glibc"]["small"])
        print(f"\nhcops small path, worst size: {worst:+.1f} ns per pair vs glibc (target <= 5 ns): "
              f"{'met' if worst <= 5 else 'NOT met'}")
    print("added = median over rounds of (config ns - glibc ns); ratios = median over rounds of config / glibc")
    if args.csv:
        write_csv(args.csv, ["round", "config", "test", "bytes", "ns"],
                  ([i, name, test, size, ns] for i, r in enumerate(rounds, 1) for name, x in r.items()
                   for test in TESTS for size, ns in x[test].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

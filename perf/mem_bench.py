#!/usr/bin/env python3
"""Runs build/perf/hcops-mem-bench under glibc's malloc and the interposers,
alternating them round by round (each run in its own process, the order
rotated every round), and reports
  - what a malloc/free pair below the threshold costs on top of glibc, as the
    median over rounds of (interposer ns - glibc ns) in the same round (target:
    <= 5 ns added, since every small allocation of the process pays it);
  - the large-allocation costs (malloc + touch every page + free, and malloc +
    free alone) as the median over rounds of interposer time / glibc time;
  - peak RSS (ru_maxrss of each child, from wait4) beside wall time, of the
    benchmark run itself and of workloads like issue 13's: `sort` of a
    generated file of random lines, and a threaded Python workload allocating
    buffers of random sizes (perf/mem_threads.py). What an allocator keeps
    mapped for reuse shows here. The CSV gives each figure with the peak RSS
    (max_rss_kib) of the process that produced it.

  $PYTHON perf/mem_bench.py [--rounds 5] [--quick] [--configs glibc,hcops,...] [--workloads sort,pythreads]
                            [--csv F]

Configurations: glibc (no preload), hcops (libhcops_mem.so, default policy
"fast,thp" and reuse cache), hcops-nocache (the same with HCOPS_MEM_CACHE=0),
memtier (memkind's libmemtier.so with one DRAM tier: its cost as an
interposer, not a tiering result; Debian package libmemkind0).
"""
import argparse
import os
import random
import sys
import tempfile

from benchlib.allocators import MEMTIER, MEMTIER_ENV, allocator_env
from benchlib.build import LIBHCOPS_MEM, PERF, PYTHON, program, require
from benchlib.child import RunError, json_result, run_measured
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


# name: (title, command given the sort input and --quick); run after the benchmark.
WORKLOADS = {
    "sort": ("sort of random lines", lambda data, quick: ["sort", "-o", os.devnull, data]),
    "pythreads": ("Python, 4 threads", lambda data, quick: [PYTHON, os.path.join(PERF, "mem_threads.py"),
                                                              "60" if quick else "200"]),
}
warned = set()  # (configuration, workload) whose failure was reported once


def sort_input(directory, quick):
    """A file of random lines (hex digits, 10 to 80 a line; 64 MiB, 4 with --quick) for sort."""
    path = os.path.join(directory, "lines.txt")
    rng = random.Random(13)
    with open(path, "w") as f:
        left = (4 if quick else 64) << 20
        while left > 0:
            digits, pos, lines = rng.randbytes(1 << 20).hex(), 0, []
            while pos < len(digits):
                n = rng.randrange(10, 81)
                lines.append(digits[pos:pos + n])
                pos += n
            text = "\n".join(lines) + "\n"
            f.write(text)
            left -= len(text)
    return path


def run_bench(binary, name, quick, workloads, data):
    """The benchmark's JSON result, with "rss_kib" (its peak RSS) and "workloads":
    {workload: {"s": wall seconds, "rss_kib": peak RSS}, or None if it failed}."""
    preload, extra = CONFIGS[name]
    env = allocator_env([preload] if preload else [], **extra)
    # LC_ALL=C: sort compares bytes, the same work under every configuration.
    env["LC_ALL"] = "C"
    p = run_measured([binary] + (["--quick"] if quick else []), env)
    result = json_result(p)
    result["rss_kib"] = p.max_rss_kib
    result["workloads"] = {}
    for w in workloads:
        p = run_measured(WORKLOADS[w][1](data, quick), env, check=False)
        if p.returncode and (name, w) not in warned:
            warned.add((name, w))
            error(f"{name}: {w} exited {p.returncode}: {(p.stdout + p.stderr).strip()[-200:]}")
        result["workloads"][w] = None if p.returncode else {"s": p.wall_s, "rss_kib": p.max_rss_kib}
    return result


def print_table(rounds, configs, test, heading, width, cell):
    """One row per configuration, one column per size; cell(name, size) is its text."""
    sizes = list(rounds[0]["glibc"][test])
    print(f"\n{heading}\n{'config':<15}" + "".join(f"{size_label(s):>{width}}" for s in sizes))
    for name in configs:
        print(f"{name:<15}" + "".join(f"{cell(name, s):>{width}}" for s in sizes))


def print_rss(rounds, configs, workloads):
    """Peak RSS and wall time of each run, medians over rounds, with the ratio of
    RSS to glibc's in the same round; "failed" where a run failed."""
    columns = [("bench", "hcops-mem-bench")] + [(w, WORKLOADS[w][0]) for w in workloads]

    def fig(x, col):  # (rss_kib, seconds) of one run, or None
        if col == "bench":
            return x["rss_kib"], None
        y = x["workloads"][col]
        return (y["rss_kib"], y["s"]) if y else None

    print(f"\npeak RSS (MB, ru_maxrss) and wall time; in brackets RSS / glibc RSS\n{'config':<15}"
          + "".join(f"{title:>28}" for _, title in columns))
    for name in configs:
        cells = []
        for col, _ in columns:
            ok = [r for r in rounds if fig(r[name], col) and fig(r["glibc"], col)]
            if not ok:
                cells.append("failed")
                continue
            rss = median_over(ok, lambda r: fig(r[name], col)[0]) / 1024
            cell = f"{rss:.0f} MB"
            if col != "bench":
                cell += f" {median_over(ok, lambda r: fig(r[name], col)[1]):.2f} s"
            if name != "glibc":
                cell += f" ({median_over(ok, lambda r: fig(r[name], col)[0] / fig(r['glibc'], col)[0]):.2f}x)"
            cells.append(cell)
        print(f"{name:<15}" + "".join(f"{c:>28}" for c in cells))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="shorter batches (noisier)")
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--bench", default=program("hcops-mem-bench"))
    ap.add_argument("--workloads", default=",".join(WORKLOADS), help="'' for none")
    ap.add_argument("--csv")
    args = ap.parse_args()
    wanted = args.configs.split(",")
    workloads = [w for w in args.workloads.split(",") if w]
    unknown = [w for w in workloads if w not in WORKLOADS]
    if unknown:
        error(f"unknown workload(s) {', '.join(unknown)}; known: {', '.join(WORKLOADS)}")
        return 2
    configs = [n for n in wanted if CONFIGS[n][0] is None or os.path.exists(CONFIGS[n][0])]
    if "glibc" not in configs:
        error("needs glibc in --configs: every figure is relative to it")
        return 2
    require(args.bench, LIBHCOPS_MEM)
    print(f"{args.rounds} rounds, order rotated each round; skipped (not installed): {not_installed(wanted, configs)}")
    with tempfile.TemporaryDirectory() as tmp:
        data = sort_input(tmp, args.quick) if "sort" in workloads else None
        try:
            rounds = run_rounds(args.rounds, configs,
                                lambda name: run_bench(args.bench, name, args.quick, workloads, data))
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
    print_rss(rounds, configs, workloads)
    print("added = median over rounds of (config ns - glibc ns); ratios = median over rounds of config / glibc")
    if args.csv:
        # One row per figure; max_rss_kib is the peak RSS of the process that
        # gave it (for the benchmark's tests, the whole benchmark run's).
        bench_rows = ([i, name, test, size, ns, x["rss_kib"]] for i, r in enumerate(rounds, 1)
                      for name, x in r.items() for test in TESTS for size, ns in x[test].items())
        workload_rows = ([i, name, w, "", round(y["s"] * 1e9) if y else "", y["rss_kib"] if y else ""]
                         for i, r in enumerate(rounds, 1) for name, x in r.items()
                         for w, y in x["workloads"].items())
        write_csv(args.csv, ["round", "config", "test", "bytes", "ns", "max_rss_kib"],
                  list(bench_rows) + list(workload_rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Replays the recorded DiT sgemm_ traces with bf16 operands (bf16 A and B, f32
alpha, beta and C: the recorded shapes, transpositions and strides) through
HCOps' sbgemm_ and oneDNN's two bf16 paths: dnnl_gemm_bf16bf16f32 ("dnnl") and
the matmul primitive with bf16 src/weights and f32 dst, created once per shape
and cached, memory objects per call, as PyTorch's ideep layer drives it
("dnnl-matmul"). Every (library, trace, threads) runs in its own process; the
library order rotates from trace to trace and round to round. Reports per
trace and thread count the median GFLOPS over rounds (whole trace, attention
products, Linear layers), its % of the bf16 peak hcops-peak measures on as many
threads, and HCOps' speedup over each peer as the median of the per-round
ratios peer time / HCOps time (> 1: HCOps faster).

  $PYTHON perf/bf16_replay.py [TRACE...] [--quick] [--rounds 3] [--threads 1,2] [--csv F] [--png F]

TRACE: default the four DiT traces of shared/workloads ($HCOPS_WORKLOADS).
Defaults: perf-results/bf16-replay.csv and .png under the current directory.
--quick: 12 small calls of each trace, 1 round, 1 pass: a check that it runs.
"""
import argparse
import os
import statistics
import sys
import tempfile

from benchlib import blas_peers, traces
from benchlib.build import program, require
from benchlib.child import RunError
from benchlib.report import cpu_model, error, load_average, not_installed, pyplot, save_plot, write_csv
from benchlib.rounds import rotated

PARTS = ("total", "attention", "linear")


def replay(args, lib, trace, threads):
    r = blas_peers.replay(args.replay, lib, trace, threads, "b", args.repeats)
    r["total_s"] = r["attention_s"] + r["linear_s"]
    r["total_gflop"] = r["attention_gflop"] + r["linear_gflop"]
    return r


def gflops(r, part):
    return r[f"{part}_gflop"] / r[f"{part}_s"] if r[f"{part}_s"] > 0 else None


def median_or_none(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def summarise(rounds, libs, cases, peak):
    """Rows of (trace, threads, lib, {part: GFLOPS}, % of peak (total), {part: hcops speedup}, impl)."""
    rows = []
    for trace, threads in cases:
        per_round = [r[trace, threads] for r in rounds]
        pk = peak.get(("bf16", threads))
        for lib in libs:
            g = {p: median_or_none(gflops(r[lib], p) for r in per_round) for p in PARTS}
            speedup = {p: median_or_none(r[lib][f"{p}_s"] / r["hcops"][f"{p}_s"] if r["hcops"][f"{p}_s"] > 0 else None
                                         for r in per_round) for p in PARTS}
            rows.append((trace, threads, lib, g, pk and g["total"] and 100 * g["total"] / pk, speedup,
                         per_round[-1][lib].get("impl", "")))
    return rows


def fmt(x, spec):
    return "n/a" if x is None else format(x, spec)


def print_tables(rows, libs, peak, threads_list):
    for threads in threads_list:
        pk = peak.get(("bf16", threads))
        print(f"\nbf16 A/B, f32 C, {threads} thread(s), measured bf16 peak {fmt(pk, '.1f')} GFLOPS; "
              "GFLOPS of the whole trace (% of peak), attention / Linear GFLOPS; hcops speedup over each peer")
        print(f"{'trace':<22}" + "".join(f"{lib:>30}" for lib in libs) +
              "".join(f"{'vs ' + lib:>17}" for lib in libs if lib != "hcops"))
        for trace, t, lib0, *_ in rows:
            if t != threads or lib0 != libs[0]:
                continue
            res = {lib: (g, pct, sp) for tr, tt, lib, g, pct, sp, _ in rows if (tr, tt) == (trace, t)}
            cells = "".join(f"{fmt(res[lib][0]['total'], '.1f'):>9} ({fmt(res[lib][1], '3.0f')}%) "
                            f"{fmt(res[lib][0]['attention'], '.0f'):>7}/{fmt(res[lib][0]['linear'], '.0f'):<6}"
                            for lib in libs)
            ratios = "".join(f"{fmt(res[lib][2]['total'], '.3f'):>16}x" for lib in libs if lib != "hcops")
            print(f"{traces.label(trace):<22}{cells}{ratios}")
    impls = sorted({impl for *_, impl in rows if impl and impl != "gemm"})
    print(f"\noneDNN matmul implementations: {', '.join(impls) or 'n/a'}")
    print("speedup = median over rounds of (peer time / hcops time) in the same round; > 1: hcops faster. "
          "Targets (issue 15): >= 1.10x dnnl-matmul, >= 1.0x dnnl, >= 85% of the bf16 peak on large products")


def write_rows(path, rows):
    write_csv(path, ["trace", "threads", "library", "gflops", "attention_gflops", "linear_gflops", "pct_bf16_peak",
                     "hcops_speedup", "hcops_speedup_attention", "hcops_speedup_linear", "impl"],
              ([os.path.basename(trace).removesuffix(".sgemm.csv"), threads, lib] +
               [fmt(g[p], ".2f") for p in PARTS] + [fmt(pct, ".1f")] + [fmt(sp[p], ".3f") for p in PARTS] + [impl]
               for trace, threads, lib, g, pct, sp, impl in rows))


def plot(path, rows, libs, peak, threads_list):
    plt = pyplot()
    if plt is None:
        return
    names = list(dict.fromkeys(trace for trace, *_ in rows))
    fig, axes = plt.subplots(1, len(threads_list), figsize=(5 * len(threads_list) + 2, 4), squeeze=False)
    width = 0.8 / len(libs)
    for ax, threads in zip(axes[0], threads_list):
        for i, lib in enumerate(libs):
            got = {trace: g["total"] for trace, t, lb, g, *_ in rows if (t, lb) == (threads, lib)}
            ax.bar([x + (i - (len(libs) - 1) / 2) * width for x in range(len(names))],
                   [got.get(n) or 0 for n in names], width, label=lib, color=f"C{i}")
        if ("bf16", threads) in peak:
            ax.axhline(peak["bf16", threads], linestyle="--", color="gray", label="measured bf16 peak")
        ax.set_title(f"bf16 trace replay, {threads} thread(s)")
        ax.set_ylabel("GFLOPS (2mnk / s)")
        ax.set_xticks(range(len(names)), [traces.label(n) for n in names], rotation=20, fontsize="small")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3, axis="y")
    axes[0, -1].legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))
    save_plot(fig, path, dpi=100, bbox_inches="tight")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("traces", nargs="*")
    ap.add_argument("--quick", action="store_true", help="12 small calls per trace, 1 round, 1 pass")
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--repeats", type=int, help="timed passes per process, after a warm-up (default 2; quick 1)")
    ap.add_argument("--threads", default="1,2")
    blas_peers.add_options(ap)
    ap.add_argument("--peak", default=program("hcops-peak"))
    ap.add_argument("--csv", default=os.path.join("perf-results", "bf16-replay.csv"))
    ap.add_argument("--png", default=os.path.join("perf-results", "bf16-replay.png"))
    args = ap.parse_args()
    rounds_n = args.rounds or (1 if args.quick else 3)
    args.repeats = args.repeats or (1 if args.quick else 2)
    args.libs = args.libs or blas_peers.default_libs(["b"])
    libs = [lib for lib in blas_peers.installed(args.libs) if blas_peers.serves(lib, "b")]
    threads_list = [int(t) for t in args.threads.split(",")]
    paths = args.traces or traces.default_traces()
    if not paths:
        error("no trace given and none found in shared/workloads (set HCOPS_WORKLOADS)")
        return 2
    require(args.replay, args.peak, blas_peers.DNNL_BF16, *paths)
    try:
        peak = blas_peers.measured_peak(args.peak)
    except RunError as e:
        error(e)
        return 2
    print(f"{len(paths)} trace(s) x threads {args.threads} x {len(libs)} libraries, {rounds_n} round(s); "
          f"skipped (not installed or no bf16): {not_installed(args.libs.split(','), libs)}; "
          f"CPU {cpu_model()}, load average {load_average()}", flush=True)

    rounds = []
    with tempfile.TemporaryDirectory() as tmp:
        if args.quick:
            paths = [traces.subset(p, tmp) for p in paths]
        cases = [(p, t) for p in paths for t in threads_list]
        try:
            for r in range(rounds_n):
                rounds.append({(p, t): {lib: replay(args, lib, p, t) for lib in rotated(libs, i + r)}
                               for i, (p, t) in enumerate(cases)})
                print(f"round {r + 1}/{rounds_n} done", flush=True)
        except RunError as e:
            error(e)
            return 2

    rows = summarise(rounds, libs, cases, peak)
    print_tables(rows, libs, peak, threads_list)
    print(f"load average at the end {load_average()}")
    for path in (args.csv, args.png):
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    write_rows(args.csv, rows)
    print(f"wrote {args.csv}")
    plot(args.png, rows, libs, peak, threads_list)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Replays the recorded DiT sgemm_ traces (the recorded shapes, transpositions
and strides) through HCOps and its peers, in f32 (sgemm_, oneDNN's dnnl_sgemm)
and with bf16 operands (bf16 A and B, f32 alpha, beta and C: HCOps' and
OpenBLAS's sbgemm_, MKL's cblas_gemm_bf16bf16f32, oneDNN's
dnnl_gemm_bf16bf16f32 ("dnnl", "onednn3") and oneDNN 2.6's matmul primitive with
bf16 src/weights and f32 dst, created once per shape and cached, memory objects
per call, as PyTorch 1.13's ideep layer drives it ("dnnl-matmul")). The peers:
Debian's OpenBLAS (also with OPENBLAS_CORETYPE=SkylakeX), BLIS and oneDNN 2.6,
and the anchors from the package index, MKL and oneDNN 3.x (benchlib/anchors.py:
installed at first use, about 2.6 GB; --no-anchors leaves them out). MKL's and
oneDNN 3's code paths on this CPU (their verbose headers) are printed.

Every (precision, library, trace, threads) runs in its own process; the library
order rotates from case to case and round to round. Reports per precision,
trace and thread count the median GFLOPS over rounds (whole trace, attention
products, Linear layers), its % of the peak hcops-peak measures for the
precision on as many threads, and HCOps' speedup over each peer as the median
of the per-round ratios peer time / HCOps time (> 1: HCOps faster), with the
fastest peer's.

  $PYTHON perf/gemm_replay.py [TRACE...] [--precisions f32,bf16] [--quick] [--rounds 3] [--threads 1,2]
                              [--csv F] [--png F]

TRACE: default the four DiT traces of perf/workloads ($HCOPS_WORKLOADS).
Defaults: perf-results/gemm-replay.csv and .png under the current directory.
--quick: 12 small calls of each trace, 1 round, 1 pass: a check that it runs.
"""
import argparse
import os
import statistics
import sys
import tempfile

from benchlib import anchors, blas_peers, traces
from benchlib.build import program, require
from benchlib.child import RunError
from benchlib.report import cpu_model, error, load_average, not_installed, pyplot, save_plot, write_csv
from benchlib.rounds import rotated

PARTS = ("total", "attention", "linear")
FLAG = {"f32": "s", "bf16": "b"}  # hcops-replay's --precision


def replay(args, precision, lib, trace, threads):
    r = blas_peers.replay(args.replay, lib, trace, threads, FLAG[precision], args.repeats)
    r["total_s"] = r["attention_s"] + r["linear_s"]
    r["total_gflop"] = r["attention_gflop"] + r["linear_gflop"]
    return r


def gflops(r, part):
    return r[f"{part}_gflop"] / r[f"{part}_s"] if r[f"{part}_s"] > 0 else None


def median_or_none(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def summarise(rounds, libs, cases, peak):
    """Rows of (precision, trace, threads, lib, {part: GFLOPS}, % of peak (total),
    {part: hcops speedup}, impl)."""
    rows = []
    for precision, trace, threads in cases:
        per_round = [r[precision, trace, threads] for r in rounds]
        pk = peak.get((precision, threads))
        for lib in libs[precision]:
            g = {p: median_or_none(gflops(r[lib], p) for r in per_round) for p in PARTS}
            speedup = {p: median_or_none(r[lib][f"{p}_s"] / r["hcops"][f"{p}_s"] if r["hcops"][f"{p}_s"] > 0 else None
                                         for r in per_round) for p in PARTS}
            rows.append((precision, trace, threads, lib, g, pk and g["total"] and 100 * g["total"] / pk, speedup,
                         per_round[-1][lib].get("impl", "")))
    return rows


def fmt(x, spec):
    return "n/a" if x is None else format(x, spec)


def print_tables(rows, libs, peak, cases):
    for precision, threads in dict.fromkeys((p, t) for p, _, t in cases):
        pk = peak.get((precision, threads))
        names = libs[precision]
        peers = [lib for lib in names if lib != "hcops"]
        print(f"\n{precision}{' A/B, f32 C' if precision == 'bf16' else ''}, {threads} thread(s), measured {precision} "
              f"peak {fmt(pk, '.1f')} GFLOPS; GFLOPS of the whole trace (% of peak), attention / Linear GFLOPS; "
              "hcops speedup over each peer and over the fastest")
        print(f"{'trace':<22}" + "".join(f"{lib:>30}" for lib in names) +
              "".join(f"{'vs ' + lib:>17}" for lib in peers) + f"{'vs fastest':>22}")
        for p, trace, t, lib0, *_ in rows:
            if (p, t) != (precision, threads) or lib0 != names[0]:
                continue
            res = {lib: (g, pct, sp) for pp, tr, tt, lib, g, pct, sp, _ in rows if (pp, tr, tt) == (p, trace, t)}
            cells = "".join(f"{fmt(res[lib][0]['total'], '.1f'):>9} ({fmt(res[lib][1], '3.0f')}%) "
                            f"{fmt(res[lib][0]['attention'], '.0f'):>7}/{fmt(res[lib][0]['linear'], '.0f'):<6}"
                            for lib in names)
            ratios = "".join(f"{fmt(res[lib][2]['total'], '.3f'):>16}x" for lib in peers)
            fastest = min(peers, key=lambda lib: res[lib][2]["total"] or float("inf"), default=None)
            best = f"{fmt(res[fastest][2]['total'], '.3f')}x ({fastest})" if fastest else "n/a"
            print(f"{traces.label(trace):<22}{cells}{ratios}{best:>22}")
    impls = sorted({impl for *_, impl in rows if impl and impl != "gemm"})
    print(f"\noneDNN 2.6 matmul implementations: {', '.join(impls) or 'n/a'}")
    print("speedup = median over rounds of (peer time / hcops time) in the same round; > 1: hcops faster. "
          "Target (issue 28): >= 1.0x the fastest peer, f32 and bf16, 1 and 2 threads")


def write_rows(path, rows):
    write_csv(path, ["precision", "trace", "threads", "library", "gflops", "attention_gflops", "linear_gflops",
                     "pct_peak", "hcops_speedup", "hcops_speedup_attention", "hcops_speedup_linear", "impl"],
              ([precision, os.path.basename(trace).removesuffix(".sgemm.csv"), threads, lib] +
               [fmt(g[p], ".2f") for p in PARTS] + [fmt(pct, ".1f")] + [fmt(sp[p], ".3f") for p in PARTS] + [impl]
               for precision, trace, threads, lib, g, pct, sp, impl in rows))


def plot(path, rows, libs, peak, cases):
    plt = pyplot()
    if plt is None:
        return
    names = list(dict.fromkeys(trace for _, trace, *_ in rows))
    precisions = list(dict.fromkeys(p for p, _, _ in cases))
    threads_list = list(dict.fromkeys(t for _, _, t in cases))
    fig, axes = plt.subplots(len(precisions), len(threads_list),
                             figsize=(5 * len(threads_list) + 2, 4 * len(precisions)), squeeze=False)
    everyone = list(dict.fromkeys(lib for p in precisions for lib in libs[p]))  # one colour per library
    for row, precision in enumerate(precisions):
        width = 0.8 / len(libs[precision])
        for ax, threads in zip(axes[row], threads_list):
            for i, lib in enumerate(libs[precision]):
                got = {trace: g["total"] for p, trace, t, lb, g, *_ in rows if (p, t, lb) == (precision, threads, lib)}
                ax.bar([x + (i - (len(libs[precision]) - 1) / 2) * width for x in range(len(names))],
                       [got.get(n) or 0 for n in names], width, label=lib, color=f"C{everyone.index(lib)}")
            if (precision, threads) in peak:
                ax.axhline(peak[precision, threads], linestyle="--", color="gray", label=f"measured {precision} peak")
            ax.set_title(f"{precision} trace replay, {threads} thread(s)")
            ax.set_ylabel("GFLOPS (2mnk / s)")
            ax.set_xticks(range(len(names)), [traces.label(n) for n in names], rotation=20, fontsize="small")
            ax.set_ylim(bottom=0)
            ax.grid(alpha=0.3, axis="y")
        axes[row, -1].legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.suptitle(f"{cpu_model()}", fontsize="small")
    save_plot(fig, path, dpi=100, bbox_inches="tight")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("traces", nargs="*")
    ap.add_argument("--precisions", default="f32,bf16", help="comma-separated, of f32 and bf16")
    ap.add_argument("--quick", action="store_true", help="12 small calls per trace, 1 round, 1 pass")
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--repeats", type=int, help="timed passes per process, after a warm-up (default 2; quick 1)")
    ap.add_argument("--threads", default="1,2")
    blas_peers.add_options(ap)
    ap.add_argument("--peak", default=program("hcops-peak"))
    ap.add_argument("--csv", default=os.path.join("perf-results", "gemm-replay.csv"))
    ap.add_argument("--png", default=os.path.join("perf-results", "gemm-replay.png"))
    args = ap.parse_args()
    precisions = args.precisions.split(",")
    if any(p not in FLAG for p in precisions):
        error(f"--precisions: of {', '.join(FLAG)}")
        return 2
    rounds_n = args.rounds or (1 if args.quick else 3)
    args.repeats = args.repeats or (1 if args.quick else 2)
    args.libs = args.libs or blas_peers.default_libs(precisions, args)
    found = blas_peers.installed(args.libs)
    libs = {p: [lib for lib in found if blas_peers.serves(lib, p)] for p in precisions}
    threads_list = [int(t) for t in args.threads.split(",")]
    paths = args.traces or traces.default_traces()
    if not paths:
        error("no trace given and none found in perf/workloads (set HCOPS_WORKLOADS)")
        return 2
    require(args.replay, args.peak, *paths)
    if "bf16" in precisions and {"dnnl", "dnnl-matmul"} & set(libs["bf16"]):
        require(blas_peers.DNNL_BF16)
    try:
        peak = blas_peers.measured_peak(args.peak)
    except RunError as e:
        error(e)
        return 2
    print(f"{len(paths)} trace(s) x threads {args.threads} x precisions {args.precisions}, {rounds_n} round(s); "
          f"skipped (not installed): {not_installed(args.libs.split(','), found)}; "
          f"CPU {cpu_model()}, load average {load_average()}", flush=True)
    print("peaks (hcops-peak): " + ", ".join(f"{p} {t} thread(s) {fmt(peak.get((p, t)), '.1f')} GFLOPS"
                                            for p in precisions for t in threads_list), flush=True)

    rounds = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, line in anchors.code_paths(args.replay, traces.subset(paths[0], tmp, calls=1), found).items():
            print(f"{name}: {line}", flush=True)
        if args.quick:
            paths = [traces.subset(p, tmp) for p in paths]
        cases = [(p, path, t) for p in precisions for path in paths for t in threads_list]
        try:
            for r in range(rounds_n):
                rounds.append({(p, path, t): {lib: replay(args, p, lib, path, t) for lib in rotated(libs[p], i + r)}
                               for i, (p, path, t) in enumerate(cases)})
                print(f"round {r + 1}/{rounds_n} done", flush=True)
        except RunError as e:
            error(e)
            return 2

    rows = summarise(rounds, libs, cases, peak)
    print_tables(rows, libs, peak, cases)
    print(f"load average at the end {load_average()}")
    for path in (args.csv, args.png):
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    write_rows(args.csv, rows)
    print(f"wrote {args.csv}")
    plot(args.png, rows, libs, peak, cases)
    return 0


if __name__ == "__main__":
    sys.exit(main())

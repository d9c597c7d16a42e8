#!/usr/bin/env python3
"""Sweeps single GEMM shapes through HCOps and the peers of gemm_replay.py:
squares 64..2048 (4096 with --full) and the DiT-S/2 and DiT-XL/2 forward Linear,
attention and adaLN (n = batch: skinny) shapes, each as NN, NT and TN (--only
NAME: those whose name contains NAME), in f32 and f64 (or bf16: bf16 A and
B, f32 C, HCOps' sbgemm_ against oneDNN's dnnl_gemm_bf16bf16f32 and matmul
primitive), on 1 and 2 threads.
Every (library, case) runs in its own process (build/tools/hcops-replay on a
one-shape trace); the library order rotates case by case and round by round.
Reports the median GFLOPS over rounds, the % of the peak measured by
hcops-peak on as many threads (FMA; bf16: the dot-product or AMX peak), and hcops' speedup over the fastest peer as the
median of the per-round ratios hcops GFLOPS / peer GFLOPS.

  $PYTHON perf/gemm_sweep.py [--quick | --full | --squares N,N,..] [--only NAME] [--rounds 3]
                             [--precisions f32,f64|bf16]
                             [--csv F] [--png F]

Defaults: perf-results/gemm-sweep.csv and .png under the current directory.
oneDNN 2.6 has no dnnl_dgemm, so dnnl is n/a in f64; the peak of bf16 is the
best of hcops-peak's bf16 rows (vdpbf16ps, AMX where present).
"""
import argparse
import os
import statistics
import sys
import tempfile

from benchlib import blas_peers
from benchlib.build import program, require
from benchlib.child import RunError
from benchlib.report import cpu_label, error, not_installed, pyplot, save_plot, write_csv
from benchlib.rounds import rotated

SQUARES = [64, 128, 256, 512, 1024, 2048]
# Forward Linear shapes (m = out features, n = tokens, k = in features) of
# perf/workloads dit-s2-bs8-step (2048 tokens) and dit-xl2-bs2-depth2-step
# (512 tokens), and the per-head attention products QK^T and AV.
DIT = [
    ("S/2 qkv", 1152, 2048, 384), ("S/2 proj", 384, 2048, 384),
    ("S/2 fc1", 1536, 2048, 384), ("S/2 fc2", 384, 2048, 1536),
    ("XL/2 qkv", 3456, 512, 1152), ("XL/2 proj", 1152, 512, 1152),
    ("XL/2 fc1", 4608, 512, 1152), ("XL/2 fc2", 1152, 512, 4608),
    ("attn 256x256x64", 256, 256, 64), ("attn 64x256x256", 64, 256, 256),
    # adaLN's modulation Linear on the conditioning vector: one row per sample
    # (n = batch), bound by streaming the weight (the skinny kernels).
    ("S/2 adaLN", 2304, 8, 384), ("XL/2 adaLN", 6912, 2, 1152),
]
QUICK = [("sq256", 256, 256, 256), ("S/2 fc1", 1536, 2048, 384), ("attn 256x256x64", 256, 256, 64)]
TRANS = ["NN", "NT", "TN"]
PASS_FLOP = 2e7     # small shapes repeat within a pass: replay prints times in microseconds
PROCESS_FLOP = 5e8  # passes per process, at least 2 after the warm-up


def cases(args):
    if args.squares:
        shapes = [(f"sq{s}", s, s, s) for s in args.squares]
    else:
        shapes = QUICK if args.quick else \
            [(f"sq{s}", s, s, s) for s in SQUARES + ([4096] if args.full else [])] + DIT
    return [(f"{name} {t}", t, m, n, k) for name, m, n, k in shapes for t in TRANS
            if not args.only or args.only in name]


def measure(args, trace, lib, case, precision, threads):
    """GFLOPS of one process replaying `case`; None if the library cannot run it."""
    _, (ta, tb), m, n, k = case
    flop = 2.0 * m * n * k
    copies = max(1, round(PASS_FLOP / flop))
    repeats = max(2, min(20, int(PROCESS_FLOP / (copies * flop))))
    lda, ldb = (m if ta == "N" else k), (k if tb == "N" else n)
    with open(trace, "w") as f:
        f.write(f"{ta},{tb},{m},{n},{k},1,{lda},{ldb},0,{m}\n" * copies)
    try:
        r = blas_peers.replay(args.replay, lib, trace, threads, PRECISION_FLAG[precision], repeats)
    except RunError as e:
        error(f"{lib} {case[0]} {precision}: {e}")
        return None
    return copies * flop * 1e-9 / (r["linear_s"] + r["attention_s"])


PRECISION_FLAG = {"f32": "s", "f64": "d", "bf16": "b"}


def available(lib, precision):
    return blas_peers.serves(lib, precision)


def summarise(rounds, libs, case_list, configs, peak):
    """Rows of (precision, threads, case, lib, median GFLOPS, % peak, hcops speedup)."""
    rows = []
    for prec, threads in configs:
        for case in case_list:
            per_round = [r[prec, threads, case[0]] for r in rounds]
            for lib in libs:
                got = [r[lib] for r in per_round if r.get(lib)]
                if not got:
                    rows.append((prec, threads, case, lib, None, None, None))
                    continue
                ratios = [r["hcops"] / r[lib] for r in per_round if r.get(lib) and r.get("hcops")]
                g = statistics.median(got)
                pk = peak.get((prec, threads))
                rows.append((prec, threads, case, lib, g, pk and 100 * g / pk,
                             statistics.median(ratios) if ratios else None))
    return rows


def print_tables(rows, libs, configs, peak):
    for prec, threads in configs:
        pk = peak.get((prec, threads))
        print(f"\n{prec}, {threads} thread(s), measured peak "
              f"{f'{pk:.1f} GFLOPS' if pk else 'n/a'}; each library: GFLOPS (% of peak)")
        print(f"{'case':<22}" + "".join(f"{lib:>17}" for lib in libs) + f"{'fastest peer':>15}{'hcops speedup':>15}")
        by_case = {}
        for p, t, case, lib, g, pct, ratio in rows:
            if (p, t) == (prec, threads):
                by_case.setdefault(case[0], {})[lib] = (g, pct, ratio)
        for name, res in by_case.items():
            cells = "".join(f"{'n/a':>17}" if res[lib][0] is None else
                            f"{res[lib][0]:>10.1f} ({fmt(res[lib][1], '3.0f')}%)" for lib in libs)
            peers = [lib for lib in libs if lib != "hcops" and res[lib][0] is not None]
            best = max(peers, key=lambda lib: res[lib][0], default=None)
            speedup = f"{res[best][2]:>14.2f}x" if best and res[best][2] else f"{'n/a':>15}"
            print(f"{name:<22}{cells}{best or 'none':>15}{speedup}")
    print("\nspeedup = median over rounds of (hcops GFLOPS / fastest peer's GFLOPS) in the same round; "
          "> 1: hcops faster")


def fmt(x, spec):
    return "n/a" if x is None else format(x, spec)


def write_rows(path, rows):
    write_csv(path, ["precision", "threads", "case", "transa", "transb", "m", "n", "k", "library",
                     "gflops", "pct_peak", "hcops_speedup"],
              ([prec, threads, name, trans[0], trans[1], m, n, k, lib, fmt(g, ".2f"), fmt(pct, ".1f"), fmt(ratio, ".3f")]
               for prec, threads, (name, trans, m, n, k), lib, g, pct, ratio in rows))


def plot(path, rows, libs, configs, peak):
    plt = pyplot()
    if plt is None:
        return
    names = list(dict.fromkeys(case[0] for _, _, case, *_ in rows))
    fig, axes = plt.subplots(len(configs), 1, figsize=(max(8, 0.3 * len(names) + 3), 3.2 * len(configs)),
                             sharex=True, squeeze=False)
    for ax, (prec, threads) in zip(axes[:, 0], configs):
        for lib in libs:
            pts = {case[0]: g for p, t, case, lb, g, *_ in rows if (p, t, lb) == (prec, threads, lib)}
            ys = [pts.get(n) for n in names]
            if any(y is not None for y in ys):
                ax.plot(range(len(names)), [float("nan") if y is None else y for y in ys],
                        marker="o", markersize=3, label=lib, color=f"C{libs.index(lib)}")
        if (prec, threads) in peak:
            ax.axhline(peak[prec, threads], linestyle="--", color="gray", label="measured peak")
        ax.set_title(f"{prec}, {threads} thread(s)")
        ax.set_ylabel("GFLOPS")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))
    axes[-1, 0].set_xticks(range(len(names)), names, rotation=90, fontsize="small")
    fig.suptitle(f"GEMM sweep on {cpu_label()}", fontsize="medium")
    save_plot(fig, path, dpi=100, bbox_inches="tight")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="3 shapes, 1 round: a check that it all runs")
    size.add_argument("--full", action="store_true", help="add 4096^3 (seconds per library and run)")
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--only", help="only the shapes whose name contains this (e.g. adaLN, attn, S/2)")
    size.add_argument("--squares", type=lambda v: [int(x) for x in v.split(",")],
                      help="only squares of these sizes (e.g. 48,64,80,96,128: where a second thread starts to pay)")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--precisions", default="f32,f64")
    blas_peers.add_options(ap)
    ap.add_argument("--peak", default=program("hcops-peak"))
    ap.add_argument("--csv", default=os.path.join("perf-results", "gemm-sweep.csv"))
    ap.add_argument("--png", default=os.path.join("perf-results", "gemm-sweep.png"))
    args = ap.parse_args()
    rounds_n = args.rounds or (1 if args.quick else 3)
    args.libs = args.libs or blas_peers.default_libs(args.precisions.split(","), args)
    libs = blas_peers.installed(args.libs)
    configs = [(p, int(t)) for p in args.precisions.split(",") for t in args.threads.split(",")]
    case_list = cases(args)
    require(args.replay, args.peak, *([blas_peers.DNNL_BF16] if "bf16" in args.precisions else []))
    try:
        peak = blas_peers.measured_peak(args.peak)
    except RunError as e:
        error(e)
        sys.exit(2)
    print(f"{len(case_list)} cases x {len(configs)} precision/threads x {len(libs)} libraries, "
          f"{rounds_n} round(s); skipped (not installed): {not_installed(args.libs.split(','), libs)}", flush=True)

    rounds = []
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "case.sgemm.csv")
        for r in range(rounds_n):
            results = {}
            for prec, threads in configs:
                for i, case in enumerate(case_list):
                    order = [lib for lib in rotated(libs, i + r) if available(lib, prec)]
                    results[prec, threads, case[0]] = {
                        lib: measure(args, trace, lib, case, prec, threads) for lib in order}
            rounds.append(results)
            print(f"round {r + 1}/{rounds_n} done", flush=True)

    rows = summarise(rounds, libs, case_list, configs, peak)
    print_tables(rows, libs, configs, peak)
    for path in (args.csv, args.png):
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    write_rows(args.csv, rows)
    print(f"wrote {args.csv}")
    plot(args.png, rows, libs, configs, peak)


if __name__ == "__main__":
    main()

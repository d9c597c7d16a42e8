#!/usr/bin/env python3
"""The bf16-autocast DiT-S/2 training step with HCOps as PyTorch's oneDNN.

Four configurations of perf/dit/dit.py, each run in a process of its own, the
order rotated round by round so that drift in machine load hits all alike:
  stock      stock PyTorch, --autocast bf16 (its matmuls in oneDNN's primitive)
  gemm       LD_PRELOAD=libhcops.so, --autocast bf16 (the matmul primitives in HCOps)
  gemm+ops   hcops-run, --autocast bf16 (GEMM plus HCOps' PyTorch operators)
  fp32       LD_PRELOAD=libhcops.so, no autocast (HCOps' own fp32 step: sgemm_)
Each process times --steps steps after --warmup; its figure is their median.
Speed-ups are medians over rounds of the per-round ratios (stock / config, and
fp32 / config); the bf16 configurations' losses must agree with stock's
within 1e-2 relative. One more step of gemm and of gemm+ops under
HCOPS_VERBOSE=1 counts the primitives HCOps ran (hcops_verbose,exec,cpu,matmul
lines) and the operators' lines.

  HCOPS_RUN=/abs/path/hcops-run $PYTHON perf/dnnl_dit_step.py [--quick] [--rounds 3] [--model S] [--batch 8]
                                                              [--threads 2] [--steps 2] [--warmup 1] [--csv F]

HCOPS_LIB (default: the build's libhcops.so) and HCOPS_RUN (default: the
build's tools/hcops-run; without it gemm+ops is left out, said so).
Targets (issue 16): gemm+ops >= 1.8x stock, >= 2.5x fp32. --quick: DiT-tiny,
batch 2, 1 round of 1 step after 1 warm-up: a check that it all runs.
Exit status: 0 ok, 1 losses disagree or HCOps ran no matmul, 2 run error.
"""
import argparse
import os
import statistics
import sys

from benchlib.build import BUILD, LIBHCOPS, PYTHON, require
from benchlib.child import RunError, child_env, json_result, run
from benchlib.report import cpu_model, error, load_average, write_csv
from benchlib.rounds import rel_diff, rotated

DIT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dit", "dit.py")
CONFIGS = ("stock", "gemm", "gemm+ops", "fp32")
AMP = {"stock": "bf16", "gemm": "bf16", "gemm+ops": "bf16", "fp32": "none"}
LOSS_RTOL = 1e-2
TARGET_STOCK, TARGET_FP32 = 1.8, 2.5
MATMUL_LINE = "hcops_verbose,exec,cpu,matmul,"


def launch(args, config, verbose=False):
    """(command prefix, environment) of a configuration."""
    env = child_env(args.threads, drop=["HCOPS_", "ONEDNN_", "DNNL_", "PYTHONPATH"])
    if verbose:
        env["HCOPS_VERBOSE"] = "1"
    if config == "gemm+ops":
        return [args.hcops_run], env
    if config != "stock":
        env["LD_PRELOAD"] = args.lib
    return [], env


def run_dit(args, config, steps, warmup, verbose=False):
    prefix, env = launch(args, config, verbose)
    cmd = [*prefix, PYTHON, DIT, "--model", args.model, "--batch", str(args.batch), "--steps", str(steps),
           "--warmup", str(warmup), "--threads", str(args.threads), "--seed", str(args.seed), "--autocast",
           AMP[config], "--json"]
    proc = run(cmd, env)
    return json_result(proc), proc.stderr


def verbose_counts(args, config):
    """(matmul primitives HCOps ran, operator lines) in one step under HCOPS_VERBOSE=1."""
    _, stderr = run_dit(args, config, 1, 0, verbose=True)
    lines = stderr.splitlines()
    matmuls = sum(line.startswith(MATMUL_LINE) for line in lines)
    ops = sum(line.startswith("hcops_verbose,exec,") and not line.startswith("hcops_verbose,exec,cpu,")
              and "gemm" not in line.split(",")[2] for line in lines)
    return matmuls, ops


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="DiT-tiny, batch 2, 1 round, 1 step after 1 warm-up")
    ap.add_argument("--rounds", type=int, help="default 3; --quick 1")
    ap.add_argument("--model", help="default S; --quick tiny")
    ap.add_argument("--batch", type=int, help="default 8; --quick 2")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, help="timed steps per process (default 2; --quick 1)")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--csv", default=os.path.join("perf-results", "dnnl-dit-step.csv"))
    args = ap.parse_args()
    args.rounds = args.rounds or (1 if args.quick else 3)
    args.model = args.model or ("tiny" if args.quick else "S")
    args.batch = args.batch or (2 if args.quick else 8)
    args.steps = args.steps or (1 if args.quick else 2)
    args.lib = os.environ.get("HCOPS_LIB", LIBHCOPS)
    args.hcops_run = os.environ.get("HCOPS_RUN", os.path.join(BUILD, "tools", "hcops-run"))
    require(args.lib)
    configs = list(CONFIGS)
    if not os.access(args.hcops_run, os.X_OK):
        print(f"hcops-run not found ({args.hcops_run}): gemm+ops left out")
        configs.remove("gemm+ops")
    print(f"DiT-{args.model}/2, batch {args.batch}, {args.threads} threads, {args.steps} timed step(s) after "
          f"{args.warmup} per process, {args.rounds} round(s); CPU {cpu_model()}; load average {load_average():.2f}")
    print(f"libhcops: {args.lib}; hcops-run: {args.hcops_run if 'gemm+ops' in configs else '-'}", flush=True)
    rounds = []
    try:
        for r in range(args.rounds):
            rounds.append({c: run_dit(args, c, args.steps, args.warmup)[0] for c in rotated(configs, r)})
            print(f"round {r + 1}: " + "  ".join(f"{c} {rounds[-1][c]['median_s']:.3f} s" for c in rounds[-1]),
                  flush=True)
        checks = {c: verbose_counts(args, c) for c in ("gemm", "gemm+ops") if c in configs}
    except RunError as e:
        error(e)
        return 2

    med = {c: statistics.median(r[c]["median_s"] for r in rounds) for c in configs}
    vs_stock = {c: statistics.median(r["stock"]["median_s"] / r[c]["median_s"] for r in rounds) for c in configs}
    vs_fp32 = {c: statistics.median(r["fp32"]["median_s"] / r[c]["median_s"] for r in rounds) for c in configs}
    print(f"\n{'configuration':<12}{'median s/step':>15}{'vs stock':>10}{'vs fp32':>10}  target")
    for c in configs:
        target = ""
        if c == "gemm+ops":
            target = (f"stock >= {TARGET_STOCK}x: {'met' if vs_stock[c] >= TARGET_STOCK else 'MISSED'}, "
                      f"fp32 >= {TARGET_FP32}x: {'met' if vs_fp32[c] >= TARGET_FP32 else 'MISSED'}")
        print(f"{c:<12}{med[c]:>15.3f}{vs_stock[c]:>9.3f}x{vs_fp32[c]:>9.3f}x  {target}")
    print("speed-ups: medians over rounds of the per-round ratios (> 1: the configuration is faster)")

    worst, agree = 0.0, True
    for r in rounds:
        for c in configs:
            if AMP[c] != "bf16" or c == "stock":
                continue
            d = max((rel_diff(x, y) for x, y in zip(r["stock"]["losses"], r[c]["losses"])), default=float("inf"))
            worst = max(worst, d)
    agree = worst <= LOSS_RTOL
    print(f"bf16 losses against stock: max relative difference {worst:.2e} (limit {LOSS_RTOL:g}): "
          f"{'AGREE' if agree else 'DISAGREE'}")
    ran = True
    for c, (matmuls, ops) in checks.items():
        print(f"{c}, one step under HCOPS_VERBOSE=1: {matmuls} matmul primitives ran in HCOps"
              + (f", {ops} operator lines" if c == "gemm+ops" else ""))
        ran = ran and matmuls > 0
    if not ran:
        error("HCOps ran no matmul primitive: is the oneDNN takeover in this build (HCOPS_DNNL)?")
    print(f"load average at the end {load_average():.2f}")

    os.makedirs(os.path.dirname(args.csv) or ".", exist_ok=True)
    write_csv(args.csv, ["round", "config", "position", "step", "time_s", "loss", "median_s", "speedup_vs_stock",
                         "speedup_vs_fp32", "model", "batch", "threads", "autocast"],
              ([i, c, list(r).index(c) + 1, s, f"{t:.6f}", repr(loss), f"{r[c]['median_s']:.6f}",
                f"{r['stock']['median_s'] / r[c]['median_s']:.4f}", f"{r['fp32']['median_s'] / r[c]['median_s']:.4f}",
                args.model, args.batch, args.threads, AMP[c]]
               for i, r in enumerate(rounds, 1) for c in r
               for s, (t, loss) in enumerate(zip(r[c]["step_times"], r[c]["losses"]))))
    print(f"wrote {args.csv}")
    return 0 if agree and ran else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""DiT training steps on a PyTorch 2.x wheel: stock eager against `hcops-run`
(the dispatcher GEMMs, operators and fused AdamW of libhcops_torch2.so), f32
and under bf16 autocast; with --compile, torch.compile'd stock steps too (the
anchor a 2.x user would try first: inductor's C++ for the CPU) and
torch.compile'd steps under hcops-run ("hcops+compile": its ratio to hcops
below 1 is that route's speed-up over hcops-run alone); with --ipex,
IPEX's (ipex.optimize with the optimizer, in torch 2.8's own venv: IPEX 2.8
runs on no other torch).

Runs perf/dit/dit.py (the authors' DiT; its attention is matmul + softmax,
which the dispatcher takes) with the venv's python, each configuration in a
process of its own, alternating the two in every round (A-B, B-A, ...), and
reports the median of the per-round ratios of median step times (each
variant's against hcops-run's), the losses (hcops-run's against stock eager's,
hcops-run + compile's against compile's, which must agree: f32 1e-4, bf16
1e-2 relative; compiled stock against eager is shown), the machine's
FLOP rate of the step against hcops-peak's, and where HCOps' step spends its
time (one verbose step read by hcops-prof).

  HCOPS_RUN=build/tools/hcops-run perf/dit/torch2_step.py --python build/torch2-venv/bin/python \
      [--model S] [--batch 8] [--rounds 5] [--steps 3] [--compile default[,max-autotune]] [--ipex]
      [--csv doc/perf/torch2_dit_S.csv] [--png F.png]
  perf/dit/torch2_step.py --replot doc/perf/torch2_dit_S.csv --png doc/perf/torch2_dit_S.png
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # perf/, for benchlib
from benchlib import ipex  # noqa: E402
from benchlib.build import BUILD  # noqa: E402
from benchlib.child import child_env, json_result, run  # noqa: E402
from benchlib.report import cpu_model, load_average, pyplot, read_csv_rows, save_plot, write_csv  # noqa: E402
from benchlib.rounds import alternated, rel_diff  # noqa: E402
from dit_config import CONFIGS, step_flops  # noqa: E402 - perf/dit, this script's folder

DIT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dit.py")
LOSS_RTOL = {"none": 1e-4, "bf16": 1e-2}
def peak_gflops(threads):
    """{"f32_gflops", "bf16_gflops"}: the best kernel family's rate at `threads`
    threads as hcops-peak measures it now (its own processes, this machine)."""
    peak = os.path.join(BUILD, "tools", "hcops-peak")
    try:
        out = subprocess.run([peak, "--json"], capture_output=True, text=True, timeout=600).stdout
        data = json.loads(out.splitlines()[-1])
    except Exception:  # noqa: BLE001 - the peak is context, not the measurement
        return None
    best = {}
    for fam in data.values():
        for dt, key in (("f32", "f32_gflops"), ("bf16", "bf16_gflops")):
            rate = fam.get(dt, {}).get(str(threads))
            if rate:
                best[key] = max(best.get(key, 0), rate)
    return best


def run_dit(python, variant, args, amp, env, steps, warmup):
    """dit.py's JSON result and error output for variant: (prefix, dit.py
    arguments, its own python or None for python's)."""
    prefix, extra, own_python = variant
    cmd = [*prefix, own_python or python, DIT, "--model", args.model, "--batch", str(args.batch), "--steps", str(steps),
           "--warmup", str(warmup), "--threads", str(args.threads), "--json", "--autocast", amp,
           "--attention", args.attention, *extra]
    proc = run(cmd, env)
    return json_result(proc), proc.stderr


# Steps before the profiled one. Under hcops-run the heap grows through the
# second step of a process (DiT-S/2 f32 on Zen 3, page faults per step:
# 3060, 279, 11, 0, 0; steps of 2.70, 2.25, 1.89, 1.86, 1.87 s), and that
# step's operators write fresh pages: gelu 4.4 ms a call there, 0.9 ms in
# the fourth step; the fc1 forward product at 68 % of the peak against 89 %.
# The profile is of a steady step.
PROFILE_WARMUP = 3

CSV_COLUMNS = ["model", "batch", "threads", "torch", "dtype", "round", "variant", "position", "step", "time_s", "loss",
               "round_ratio"]


def plot(rows, path, cpu):
    """Median step time of each variant per dtype (bars), hcops-run's last, with
    the median of the per-round ratios (variant time / hcops time) above each
    other variant's bar; rows as the CSV's (round_ratio: that variant's ratio;
    CSVs of two variants wrote stock's on both rows)."""
    plt = pyplot()
    if not plt:
        return
    col = {c: i for i, c in enumerate(CSV_COLUMNS)}
    dtypes = list(dict.fromkeys(r[col["dtype"]] for r in rows))
    names = [n for n in dict.fromkeys(r[col["variant"]] for r in rows) if n != "hcops"] + ["hcops"]
    width = 0.8 / len(names)
    colors = {"stock": "tab:gray", "hcops": "tab:blue", "compile": "tab:orange", "compile-max-autotune": "tab:green",
              "hcops+compile": "tab:cyan", "hcops+compile-max-autotune": "tab:olive",
              "ipex": "tab:purple"}
    fig, ax = plt.subplots(figsize=(2 + 2 * len(dtypes) * len(names) / 2, 4))
    for x, dt in enumerate(dtypes):
        mine = [r for r in rows if r[col["dtype"]] == dt]
        for i, name in enumerate(names):
            own = [r for r in mine if r[col["variant"]] == name]
            if not own:
                continue
            med = statistics.median(float(r[col["time_s"]]) for r in own)
            off = (i - (len(names) - 1) / 2) * width
            # A variant whose loss went NaN or infinite is no valid anchor: hatched.
            invalid = any(not math.isfinite(float(r[col["loss"]])) for r in own)
            ax.bar(x + off, med, width, color=colors.get(name, f"C{i}"), label=name if x == 0 else None,
                   hatch="//" if invalid else None, alpha=0.5 if invalid else 1.0)
            if invalid:
                ax.text(x + off, med, "NaN\nloss", ha="center", va="bottom", fontsize=8)
            elif name != "hcops":
                ratio = statistics.median({int(r[col["round"]]): float(r[col["round_ratio"]]) for r in own}.values())
                ax.text(x + off, med, f"hcops\n{ratio:.2f}x", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(dtypes)), dtypes)
    ax.set_ylabel("median step time (s)")
    first = rows[0]
    ax.set_title(f"DiT-{first[col['model']]}/2, batch {first[col['batch']]}, {first[col['threads']]} threads, "
                 f"torch {first[col['torch']]}\n{cpu}", fontsize=9)
    ax.legend()
    save_plot(fig, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--python", help="the venv's python (torch 2.x); required unless --replot")
    ap.add_argument("--model", choices=sorted(CONFIGS), default="S")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--amp", nargs="+", default=["none", "bf16"], choices=["none", "bf16"])
    ap.add_argument("--compile", default="", help="also torch.compile'd stock steps, in these modes (comma-separated: "
                    "default, max-autotune); the first --compile-warmup steps compile")
    ap.add_argument("--ipex", action="store_true",
                    help="also IPEX's steps: ipex.optimize(model, optimizer, dtype) in torch 2.8's venv "
                    "(benchlib/ipex.py installs it at first use, about 3.5 GB)")
    ap.add_argument("--compile-warmup", type=int, default=2,
                    help="untimed steps when there is a compiled variant, for every variant (default 2)")
    ap.add_argument("--attention", choices=("matmul", "sdpa"), default="sdpa",
                    help="dit.py's attention: sdpa (F.scaled_dot_product_attention, as timm's Attention in 2.x; "
                    "the default) or matmul")
    ap.add_argument("--csv")
    ap.add_argument("--png", help="a bar chart of the median step times")
    ap.add_argument("--replot", metavar="CSV", help="only draw --png from a CSV this script wrote")
    args = ap.parse_args()
    if args.replot:
        if not args.png:
            ap.error("--replot draws into --png")
        plot(read_csv_rows(args.replot), args.png, cpu_model())
        return 0
    if not args.python:
        ap.error("--python is required")
    hcops_run = os.environ.get("HCOPS_RUN", os.path.join(BUILD, "tools", "hcops-run"))
    env = child_env(args.threads, drop=["HCOPS_VERBOSE", "HCOPS_TORCH_LIB"])
    torch_version = subprocess.run([args.python, "-c", "import torch; print(torch.__version__)"],
                                   capture_output=True, text=True).stdout.strip()
    print(f"DiT-{args.model}/2, batch {args.batch}, {args.threads} threads, attention {args.attention}, "
          f"torch {torch_version} ({args.python})")
    print(f"CPU: {cpu_model()}, {os.cpu_count()} logical CPUs, 1-min load average at start {load_average():.2f}")
    peak = peak_gflops(args.threads)
    flops = step_flops(args.model, args.batch)
    variants = {"stock": ((), (), None), "hcops": ((hcops_run,), (), None)}
    for mode in filter(None, args.compile.split(",")):
        variants["compile" if mode == "default" else f"compile-{mode}"] = ((), ("--compile", mode), None)
    # hcops-run with torch.compile: HCOps' GEMMs and attention inside inductor's graphs (as extern
    # kernels and fallbacks), inductor's own code for the elementwise work between them.
    for mode in filter(None, args.compile.split(",")):
        variants["hcops+compile" if mode == "default" else f"hcops+compile-{mode}"] = (
            (hcops_run,), ("--compile", mode), None)
    torch_of = {}  # the CSV's torch column where a variant runs another torch than --python's
    if args.ipex:
        ipex_python = ipex.ensure()
        if ipex_python:
            variants["ipex"] = ((), ("--ipex",), ipex_python)
            torch_of["ipex"] = ipex.versions()
            print(f"IPEX: {torch_of['ipex']} ({ipex_python})")
    # Every variant times the same steps (their losses are compared step by
    # step): the compiled ones' warm-up for all when there are any.
    compiled = any("compile" in n for n in variants)
    warmup = max(args.warmup, args.compile_warmup) if compiled else args.warmup
    warmups = {n: warmup for n in variants}
    rows, ok = [], True
    for amp in args.amp:
        label = "f32" if amp == "none" else "bf16 autocast"
        print(f"\n== {label}: {', '.join(variants)}, {args.rounds} rounds alternated")
        others = [n for n in variants if n != "hcops"]
        ratios, times = {n: [] for n in others}, {n: [] for n in variants}
        losses = {}
        for r in range(args.rounds):
            order = alternated(list(variants), r)
            res = {name: run_dit(args.python, variants[name], args, amp, env, args.steps, warmups[name])[0]
                   for name in order}
            ratio = {n: res[n]["median_s"] / res["hcops"]["median_s"] for n in others}
            for n in others:
                ratios[n].append(ratio[n])
            for name in variants:
                times[name] += res[name]["step_times"]
                losses.setdefault(name, res[name]["losses"])
                for s, t in enumerate(res[name]["step_times"]):
                    rows.append([args.model, args.batch, args.threads, torch_of.get(name, torch_version), label,
                                 r + 1, name, order.index(name) + 1, s, f"{t:.6f}", repr(res[name]["losses"][s]),
                                 f"{ratio.get(name, 1.0):.4f}"])
            print(f"round {r + 1}: " + ", ".join(f"{n} {res[n]['median_s']:.3f} s" for n in variants) +
                  "; " + ", ".join(f"{n}/hcops {ratio[n]:.3f}" for n in others) + f" ({order[0]} first)", flush=True)
        med = {n: statistics.median(t) for n, t in times.items()}
        print("median step: " + ", ".join(f"{n} {med[n]:.3f} s" for n in variants) + "; hcops' speedup (median of "
              "per-round ratios) over " + ", ".join(f"{n} {statistics.median(ratios[n]):.3f}x" for n in others))
        # Each variant's losses against those computed the same way but for
        # HCOps: hcops-run + torch.compile against torch.compile in the same
        # mode, every eager variant against hcops-run. A compiled stock step
        # against eager is inductor's own numerics (its fused reductions and
        # optimizer, which DiT's 20 steps take 5e-4 apart in f32): shown, not
        # judged.
        for n in variants:
            if n == "hcops":
                continue
            ref = n.replace("hcops+", "", 1) if n.startswith("hcops+") else \
                "stock" if n.startswith("compile") else "hcops"  # every mode has both of its variants
            rel = max(rel_diff(a, b) for a, b in zip(losses[n], losses[ref]))
            judged = not n.startswith("compile")
            agree = rel <= LOSS_RTOL[amp]
            ok = ok and (agree or not judged)
            verdict = ("yes" if agree else "NO") if judged else "inductor's own numerics, not judged"
            print(f"losses of {n} and {ref} agree within {rel:.2e} (limit {LOSS_RTOL[amp]:g}): {verdict}")
        key = "f32_gflops" if amp == "none" else "bf16_gflops"
        if peak and key in peak:
            print(f"FLOP limit of the step: {flops / 1e9:.1f} GFLOP of GEMMs at hcops-peak's {peak[key]:.0f} GFLOPS = "
                  f"{flops / (peak[key] * 1e9):.3f} s")
        for n in variants:
            rate = flops / med[n] / 1e9
            of_peak = f", {100 * rate / peak[key]:.0f}% of the FLOP limit" if peak and key in peak else ""
            print(f"  {n}: {rate:.0f} GFLOPS of the step's GEMM flops{of_peak}")
        # Where HCOps' step goes: one verbose step, read by hcops-prof, after
        # PROFILE_WARMUP steps: the process's heap is still growing in its
        # second step, whose operators then write fresh pages.
        _, stderr = run_dit(args.python, variants["hcops"], args, amp, dict(env, HCOPS_VERBOSE="1"), 1, PROFILE_WARMUP)
        log = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"hcops-torch2-{args.model}-{amp}.log")
        with open(log, "w") as f:
            f.write(stderr)
        # Its last step, against the median hcops step's time.
        prof = subprocess.run([os.path.join(BUILD, "tools", "hcops-prof"), "--top", "12", "--skip-steps", str(PROFILE_WARMUP),
                               "--step-seconds", f"{med['hcops']:.6f}", log], capture_output=True, text=True)
        print(prof.stdout)
    if args.csv:
        write_csv(args.csv, CSV_COLUMNS, rows)
        print(f"wrote {args.csv}")
    if args.png:
        plot(rows, args.png, cpu_model())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""DiT sampling on a PyTorch 2.x wheel: the model's forward pass without
autograd, as the DiT authors' sample.py runs it (torch.set_grad_enabled(False),
model.eval(), one forward per denoising step with the same weights), in f32
or with the model in bf16. Stock eager against `hcops-run` with its weight
cache (HCOPS_WEIGHT_CACHE: each Linear's weight packed once, then read from
the cache at every step) and `hcops-run` with the cache off
(HCOPS_WEIGHT_CACHE=0: packed at every call), each configuration in a
process of its own, alternated round by round; the median over rounds of
each one's median step time, the ratios within each round, the forward's
GEMM rate against hcops-peak's, and the outputs of the last step compared
(hcops-run's with and without the cache must be bit for bit equal: the
panels are the same; stock's within f32 or bf16 accumulation-order bounds).

  HCOPS_RUN=build/tools/hcops-run perf/dit/sampling.py --python build/torch2-venv/bin/python \
      [--model S] [--batch 8] [--dtype f32,bf16] [--rounds 5] [--steps 10] [--csv F.csv] [--png F.png]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # perf/, for benchlib
from benchlib.build import BUILD  # noqa: E402
from benchlib.child import child_env, json_result, run  # noqa: E402
from benchlib.report import cpu_label, load_average, pyplot, save_plot, write_csv  # noqa: E402
from benchlib.rounds import alternated  # noqa: E402
from dit_config import CONFIGS, step_flops  # noqa: E402
from torch2_step import peak_gflops  # noqa: E402 - hcops-peak's best rates, as the step benchmark reads them

CONFIGS_RUN = ("stock", "hcops-run", "hcops-run, cache off")


def child(args):
    import torch
    sys.path.insert(0, HERE)
    from dit import DiT  # noqa: E402 - the authors' model, perf/dit/dit.py

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    torch.set_grad_enabled(False)
    hidden, depth, heads = CONFIGS[args.model]
    model = DiT(hidden, depth, heads).eval()
    # Trained weights are not zero where adaLN-Zero initialises them.
    for p in model.parameters():
        p.add_(torch.randn_like(p) * 0.02)
    dt = torch.bfloat16 if args.dtype == "bf16" else torch.float32
    model = model.to(dt)
    if dt != torch.float32:  # the timestep's sinusoidal features are computed in f32: cast at the Linears
        for m in model.modules():
            if isinstance(m, torch.nn.Linear):
                m.register_forward_pre_hook(lambda mod, inp: tuple(i.to(mod.weight.dtype) for i in inp))
    gen = torch.Generator().manual_seed(args.seed)
    x = torch.randn(args.batch, 4, 32, 32, generator=gen).to(dt)
    y = torch.randint(0, 1000, (args.batch,), generator=gen)
    times = []
    out = None
    for s in range(args.warmup + args.steps):
        t = torch.full((args.batch,), 999 - 4 * s, dtype=torch.long)  # a new timestep each step, as sampling
        t0 = time.perf_counter()
        out = model(x, t, y)
        times.append(time.perf_counter() - t0)
    out_path = args.out
    if out_path:
        torch.save(out.float(), out_path)
    print(json.dumps({"step_s": times[args.warmup:]}))


def driver(args):
    hcops_run = os.environ.get("HCOPS_RUN", os.path.join(BUILD, "tools", "hcops-run"))
    flops = step_flops(args.model, args.batch) / 3  # the forward's GEMM flops
    peak = (peak_gflops(args.threads) or {}) if args.peak else {}
    print(f"DiT-{args.model}/2 sampling, batch {args.batch}, {args.threads} threads, forward only under no_grad; "
          f"{cpu_label()}; load {load_average()}")
    rows = []
    import tempfile
    tmp = tempfile.mkdtemp()
    for dtype in args.dtype.split(","):
        per = {c: [] for c in CONFIGS_RUN}
        outs = {}
        for r in range(args.rounds):
            for c in alternated(CONFIGS_RUN, r):
                out = os.path.join(tmp, f"{dtype}-{CONFIGS_RUN.index(c)}.pt")
                cmd = [args.python, os.path.abspath(__file__), "--child", "--model", args.model, "--batch",
                       str(args.batch), "--steps", str(args.steps), "--warmup", str(args.warmup), "--threads",
                       str(args.threads), "--dtype", dtype, "--out", out]
                extra = {"HCOPS_WEIGHT_CACHE": "0"} if c.endswith("cache off") else {}
                env = child_env(args.threads, drop=("HCOPS_WEIGHT_CACHE",), **extra)
                if c != "stock":
                    cmd = [hcops_run] + cmd
                res = json_result(run(cmd, env))
                per[c].append(statistics.median(res["step_s"]))
                outs[c] = out
                print(f"  round {r + 1}/{args.rounds} {dtype} {c}: {per[c][-1] * 1e3:.1f} ms a step", flush=True)
        agree = compare_outputs(args.python, outs, dtype)
        base = per["hcops-run"]
        print(f"\n{dtype}: median step (ms), ratio to hcops-run per round (median), GFLOPS of the forward's GEMMs"
              + (f", peak {peak.get(dtype + '_gflops', 0):.0f} GFLOPS" if peak else ""))
        for c in CONFIGS_RUN:
            med = statistics.median(per[c])
            ratio = statistics.median(a / b for a, b in zip(per[c], base))
            gflops = flops / med / 1e9
            pk = peak.get(dtype + "_gflops")
            print(f"  {c:22s} {med * 1e3:8.1f} ms  {ratio:5.2f}x  {gflops:6.0f} GFLOPS"
                  + (f" ({100 * gflops / pk:.0f} % of peak)" if pk else ""))
            rows.append([cpu_label(), args.model, args.batch, args.threads, dtype, c, f"{med:.5f}", f"{ratio:.3f}",
                         f"{gflops:.1f}", f"{pk:.1f}" if pk else "", agree])
        print(f"  outputs: {agree}")
    if args.csv:
        write_csv(args.csv, ["machine", "model", "batch", "threads", "dtype", "config", "step_s",
                             "ratio_to_hcops_run", "gemm_gflops", "peak_gflops", "outputs"], rows)
    if args.png:
        plot(rows, args.png)


def compare_outputs(python, outs, dtype):
    code = ("import sys, torch\n"
            "s, h, n = (torch.load(p) for p in sys.argv[1:4])\n"
            "d = (h - s).abs().max().item() / max(s.abs().max().item(), 1e-30)\n"
            "print('cache on/off bit for bit ' + ('equal' if torch.equal(h, n) else 'DIFFERENT') + "
            "f'; hcops-run vs stock max rel {d:.1e}')\n")
    p = subprocess.run([python, "-c", code, outs["stock"], outs["hcops-run"], outs["hcops-run, cache off"]],
                       capture_output=True, text=True)
    return p.stdout.strip() or p.stderr.strip()[-200:]


def plot(rows, path):
    plt = pyplot()
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(7, 4))
    dtypes = sorted({r[4] for r in rows}, key=lambda d: d != "f32")
    width = 0.25
    for i, c in enumerate(CONFIGS_RUN):
        vals = [next(float(r[6]) * 1e3 for r in rows if r[4] == d and r[5] == c) for d in dtypes]
        ax.bar([j + (i - 1) * width for j in range(len(dtypes))], vals, width, label=c)
    ax.set_xticks(range(len(dtypes)))
    ax.set_xticklabels(dtypes)
    ax.set_ylabel("ms per denoising step (forward)")
    ax.set_title(f"DiT-{rows[0][1]}/2 sampling, batch {rows[0][2]}, {rows[0][3]} threads\n{rows[0][0]}", fontsize=9)
    ax.legend(fontsize=8)
    save_plot(fig, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--model", choices=sorted(CONFIGS), default="S")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--dtype", default="f32,bf16")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--peak", action="store_true", help="measure hcops-peak for the GFLOPS column's reference")
    ap.add_argument("--csv")
    ap.add_argument("--png")
    args = ap.parse_args()
    if args.child:
        child(args)
    else:
        driver(args)


if __name__ == "__main__":
    main()

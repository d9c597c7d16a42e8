#!/usr/bin/env python3
"""The sums autograd issues in a DiT step, through the PyTorch dispatcher:
HCOps (libhcops_torch2.so's sum, shim/torch/reduce.cpp) against the wheel's
own kernel, in one process, alternated call by call (hcops.torch.enabled
toggles the two).

The cases are those of a DiT-S/2 (or --model) step at --batch: each
Linear's bias gradient, dY (tokens x batch, out) summed over its rows, in
f32 and bf16 (autocast's dtype), and adaLN's modulation gradients, (batch,
tokens, hidden) summed over the tokens, in f32 and bf16. Two states of the
operand before each call: "warm", just written by the operator before it
(an in-place multiply, as dY is left by the backward that made it), and
"cold", after a write of twice the last-level cache (torch2_gemm.py's
flush). The result is allocated by the call. Per case, rounds x reps calls
of each side; medians reported, beside the call's memory bound: its bytes
(operand and result) at hcops-stream's triad bandwidth on as many threads.

  build/torch2-venv/bin/python perf/torch2_sum.py [--model S] [--batch 8] [--threads 1 2]
      [--rounds 3] [--reps 7] [--csv doc/perf/torch2-sum.csv] [--png doc/perf/torch2-sum.png] [--quick]
  python3 perf/torch2_sum.py --replot doc/perf/torch2-sum.csv --png doc/perf/torch2-sum.png

Exit status: 0; 1 when HCOps computed none of the calls (said why); 2 usage.
"""
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # benchlib, torch2_gemm
sys.path.insert(1, os.path.join(HERE, "dit"))  # dit_config
sys.path.insert(2, os.path.join(os.path.dirname(HERE), "python"))  # hcops

from benchlib import membound  # noqa: E402
from benchlib.report import cpu_label, paired_panels  # noqa: E402
from dit_config import CONFIGS, TOKENS  # noqa: E402
from torch2_gemm import Flusher, llc_bytes, measure  # noqa: E402

CSV_COLUMNS = ["model", "batch", "dtype", "threads", "case", "shape", "dims", "state", "stock_ms", "hcops_ms",
               "stock_over_hcops", "stock_gbs", "hcops_gbs", "bound_ms", "hcops_of_bound", "cpu"]


def cases(model, batch):
    """(name, shape, dims) of the step's sums: the bias gradients of the
    block's Linears (qkv, proj, fc1, fc2 and adaLN's own) and adaLN's
    modulation gradients."""
    h = CONFIGS[model][0]
    rows = batch * TOKENS
    out = [(f"bias {name}", (rows, n), (0,)) for name, n in (("qkv", 3 * h), ("proj", h), ("fc1", 4 * h))]
    out.append(("modulation", (batch, TOKENS, h), (1,)))
    return out


def plot(rows, path, title):
    col = {c: i for i, c in enumerate(CSV_COLUMNS)}
    paired_panels(path, title, rows, CSV_COLUMNS, lambda r: (r[col["threads"]], r[col["state"]]),
                  lambda r, side: float(r[col[f"{side}_gbs"]]), lambda r: f"{r[col['case']]} {r[col['dtype']]}",
                  lambda g: f"{g[0]} thr, {g[1]}: GB/s", "the wheel's own sum",
                  tick_args={"rotation": 20, "ha": "right"})


def main():
    args = membound.parse_args(__doc__)
    title = "DiT-{}/2 batch {}: autograd's sums through the dispatcher\n{}"
    if membound.replot(args, plot, title):
        return 0
    import torch  # noqa: PLC0415 - --replot needs none
    import hcops.torch as ht  # noqa: PLC0415
    cpu = cpu_label()
    print(f"DiT-{args.model}/2 batch {args.batch}: autograd's sums through the dispatcher, torch {torch.__version__}, "
          f"{cpu}; cold: caches flushed ({llc_bytes() >> 20} MiB last level)", flush=True)
    bandwidth = membound.bandwidths(args.threads)
    flush = Flusher()
    rows, computed = [], 0
    head = f"{'case':<14}{'shape':<16}{'dtype':<6}{'thr':>4}{'state':>6}{'stock ms':>10}{'hcops ms':>10}" \
           f"{'stock/hcops':>12}{'stock GB/s':>11}{'hcops GB/s':>11}{'bound ms':>10}{'of bound':>9}"
    for t in args.threads:
        torch.set_num_threads(t)
        print(f"\n{head}", flush=True)
        for state in ("warm", "cold"):
            for dt in (torch.float32, torch.bfloat16):
                dname = "f32" if dt == torch.float32 else "bf16"
                for name, shape, dims in cases(args.model, args.batch):
                    x = torch.randn(shape).to(dt)
                    nbytes = x.numel() * x.element_size() + x.numel() // x.shape[dims[0]] * x.element_size()
                    before = ht.call_counts("sum")[0]
                    prepare = flush if state == "cold" else (lambda: x.mul_(1.0))
                    times = measure(lambda hcops: x.sum(dims, keepdim=True), prepare, args.rounds, args.reps,
                                    ht.enabled)
                    computed += ht.call_counts("sum")[0] - before
                    s, h = statistics.median(times["stock"]), statistics.median(times["hcops"])
                    bw = bandwidth.get(t)
                    bound = nbytes / (bw * 1e9) if bw else float("nan")
                    shape_text = "x".join(map(str, shape))
                    print(f"{name:<14}{shape_text:<16}{dname:<6}{t:>4}{state:>6}{1e3 * s:>10.3f}{1e3 * h:>10.3f}"
                          f"{s / h:>11.2f}x{nbytes / s / 1e9:>11.1f}{nbytes / h / 1e9:>11.1f}{1e3 * bound:>10.3f}"
                          f"{100 * bound / h:>8.1f}%", flush=True)
                    rows.append([args.model, args.batch, dname, t, name, shape_text, ",".join(map(str, dims)), state,
                                 f"{1e3 * s:.4f}", f"{1e3 * h:.4f}", f"{s / h:.4f}", f"{nbytes / s / 1e9:.2f}",
                                 f"{nbytes / h / 1e9:.2f}", f"{1e3 * bound:.4f}", f"{bound / h:.4f}", cpu])
    return membound.finish(__file__, args, CSV_COLUMNS, rows,
                           lambda: plot(rows, args.png, title.format(args.model, args.batch, cpu)), bandwidth, computed)


if __name__ == "__main__":
    sys.exit(main())

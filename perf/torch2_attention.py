#!/usr/bin/env python3
"""DiT's attention through the PyTorch dispatcher, forward and backward
apart: HCOps (libhcops_torch2.so's _scaled_dot_product_flash_attention_for_cpu
and its backward: on AMX tiles for bf16 where the CPU has them) against the
wheel's own flash kernel, in one process, alternated call by call
(hcops.torch.enabled toggles the two).

The shapes are DiT's: S/2 (6 heads of 64) and XL/2 (16 heads of 72) at 256
tokens (256 x 256 latents) and XL/2 at 1024 (512 x 512), q, k and v as
timm's Attention makes them (views into one qkv tensor). Before each timed
call the caches are flushed (a write of twice the last-level cache), as
after the previous operator; each side's backward gets its own forward's
output and logsumexp. Per shape, rounds x reps calls of each side, the
median reported beside hcops-peak's peak for the precision and thread count
(flops: 4 B H L S E forward; 10 B H L S E backward, the scores recomputed
and four products).

  build/torch2-venv/bin/python perf/torch2_attention.py [--dtypes f32 bf16] [--threads 1 2]
      [--rounds 3] [--reps 5] [--shapes S-256,XL-256,XL-1024] [--batch-s 8] [--batch-xl 2]
      [--csv doc/perf/torch2-attention.csv] [--png doc/perf/torch2-attention.png] [--quick]
  python3 perf/torch2_attention.py --replot doc/perf/torch2-attention.csv --png doc/perf/torch2-attention.png

Exit status: 0; 1 when HCOps computed none of the calls (its library not
loaded or every call declined: HCOPS_VERBOSE=1 says why); 2 usage.
"""
import argparse
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # benchlib
sys.path.insert(1, os.path.join(HERE, "dit"))  # dit_config
sys.path.insert(2, os.path.join(os.path.dirname(HERE), "python"))  # hcops
from benchlib.build import built_tool  # noqa: E402
from benchlib.report import (cpu_label, paired_panels, preloaded_hcops_warning, read_csv_rows,  # noqa: E402
                             write_outputs)
from dit_config import CONFIGS  # noqa: E402
from hcops.prof.machine import Machine, MachineError  # noqa: E402
from torch2_gemm import Flusher, llc_bytes, measure  # noqa: E402

torch = ht = None
OP = "_scaled_dot_product_flash_attention_for_cpu"
DTYPES = ("f32", "bf16")
SHAPES = {"S-256": ("S", 256), "XL-256": ("XL", 256), "XL-1024": ("XL", 1024), "tiny-64": ("tiny", 64)}
CSV_COLUMNS = ["shape", "batch", "heads", "tokens", "head_dim", "dtype", "threads", "pass", "gflop", "stock_ms",
               "hcops_ms", "stock_over_hcops", "hcops_gflops", "hcops_of_peak", "stock_of_peak", "cpu"]


class Case:
    def __init__(self, name, batch, dtype):
        model, self.tokens = SHAPES[name]
        hidden, _, self.heads = CONFIGS[model]
        self.name, self.batch, self.dim = name, batch, hidden // self.heads
        dt = torch.bfloat16 if dtype == "bf16" else torch.float32
        B, H, L, E = batch, self.heads, self.tokens, self.dim
        # timm: qkv(x).reshape(B, N, 3, H, E).permute(2, 0, 3, 1, 4), then unbind.
        self.q, self.k, self.v = torch.randn(B, L, 3, H, E).to(dt).permute(2, 0, 3, 1, 4).unbind(0)
        self.g = torch.randn(B, L, H, E).to(dt).transpose(1, 2)  # the proj's input gradient, as a view
        self.saved = {}
        self.fwd_flops = 4 * B * H * L * L * E
        self.bwd_flops = 10 * B * H * L * L * E

    def forward(self):
        return torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(self.q, self.k, self.v)

    def backward(self, hcops):
        out, lse = self.saved[hcops]
        return torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward(
            self.g, self.q, self.k, self.v, out, lse, 0.0, False)


def plot(rows, path, title):
    col = {c: i for i, c in enumerate(CSV_COLUMNS)}
    paired_panels(path, title, rows, CSV_COLUMNS, lambda r: (r[col["dtype"]], r[col["threads"]]),
                  lambda r, side: 100 * float(r[col[f"{side}_of_peak"]]),
                  lambda r: f"{r[col['shape']]} {r[col['pass']]}", lambda g: f"{g[0]}, {g[1]} thr: % of peak",
                  "the wheel's flash attention", width=9)


def main():
    global torch, ht
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dtypes", nargs="+", default=list(DTYPES), choices=DTYPES)
    ap.add_argument("--threads", nargs="+", type=int, default=[1, os.cpu_count()])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--shapes", default="S-256,XL-256,XL-1024")
    ap.add_argument("--batch-s", type=int, default=8)
    ap.add_argument("--batch-xl", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="DiT-tiny's shape, 1 round of 1 call (tests)")
    ap.add_argument("--csv")
    ap.add_argument("--png")
    ap.add_argument("--replot", metavar="CSV", help="only draw --png from a CSV this script wrote")
    args = ap.parse_args()
    if args.replot:
        if not args.png:
            ap.error("--replot draws into --png")
        rows = read_csv_rows(args.replot)
        plot(rows, args.png, f"DiT's attention through the dispatcher\n{rows[0][-1]}")
        return 0
    shapes = args.shapes.split(",")
    if args.quick:
        shapes, args.rounds, args.reps = ["tiny-64"], 1, 1
    if not set(shapes) <= set(SHAPES):
        ap.error(f"--shapes: {', '.join(SHAPES)}")
    import torch as torch_module  # noqa: PLC0415
    torch = torch_module
    import hcops.torch as hcops_torch  # noqa: PLC0415
    ht = hcops_torch
    cpu = cpu_label()
    print(f"DiT's attention through the dispatcher, torch {torch.__version__}, {cpu}; caches flushed before each "
          f"call ({llc_bytes() >> 20} MiB last level)", flush=True)
    warning = preloaded_hcops_warning()
    if warning:
        print(warning, flush=True)
    peak = {}
    try:
        m = Machine(built_tool)
        for t in args.threads:
            for dt in args.dtypes:
                peak[(dt, t)] = m.peak(dt, t)
    except MachineError as e:
        print(f"no peak: {e}")
    flush = Flusher()
    rows, computed = [], 0
    head = f"{'shape (B x H x L x E)':<28}{'pass':<5}{'dtype':<6}{'thr':>4}{'stock ms':>10}{'hcops ms':>10}" \
           f"{'stock/hcops':>12}{'GFLOPS':>9}{'of peak':>9}{'stock of':>10}"
    for t in args.threads:
        torch.set_num_threads(t)
        for dt in args.dtypes:
            print(f"\n{head}", flush=True)
            for name in shapes:
                batch = args.batch_s if not name.startswith("XL") else args.batch_xl
                if args.quick:
                    batch = 2
                c = Case(name, batch, dt)
                for hcops in (False, True):
                    with ht.enabled(hcops):
                        out, lse = c.forward()
                    c.saved[hcops] = (out, lse)
                before = ht.call_counts(OP)[0] + ht.call_counts(OP + "_backward")[0]
                for kind, fn, flops in (("fwd", lambda hcops: c.forward(), c.fwd_flops),
                                        ("bwd", c.backward, c.bwd_flops)):
                    times = measure(fn, flush, args.rounds, args.reps, ht.enabled)
                    s, h = statistics.median(times["stock"]), statistics.median(times["hcops"])
                    pk = peak.get((dt, t))
                    rate = flops / h / 1e9
                    of = rate / pk if pk else float("nan")
                    of_stock = flops / s / 1e9 / pk if pk else float("nan")
                    label = f"{name} {c.batch}x{c.heads}x{c.tokens}x{c.dim}"
                    print(f"{label:<28}{kind:<5}{dt:<6}{t:>4}{1e3 * s:>10.3f}{1e3 * h:>10.3f}{s / h:>11.2f}x"
                          f"{rate:>9.1f}{100 * of:>8.1f}%{100 * of_stock:>9.1f}%", flush=True)
                    rows.append([name, c.batch, c.heads, c.tokens, c.dim, dt, t, kind, f"{flops / 1e9:.4f}",
                                 f"{1e3 * s:.4f}", f"{1e3 * h:.4f}", f"{s / h:.4f}", f"{rate:.2f}", f"{of:.4f}",
                                 f"{of_stock:.4f}", cpu])
                computed += ht.call_counts(OP)[0] + ht.call_counts(OP + "_backward")[0] - before
    if peak:
        print("\npeaks: " + ", ".join(f"{k[0]} {k[1]} thr {v:.0f} GFLOPS" for k, v in peak.items() if v))
    title = f"DiT's attention through the dispatcher\n{cpu}"
    write_outputs(__file__, args, CSV_COLUMNS, rows, lambda: plot(rows, args.png, title))
    if computed == 0:
        print("HCOps computed none of the calls (HCOPS_VERBOSE=1 says why)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

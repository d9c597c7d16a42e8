#!/usr/bin/env python3
"""DiT's LayerNorms through the PyTorch dispatcher: HCOps (libhcops_torch2.so's
native_layer_norm and its backward, shim/torch/layer_norm.cpp) against the
wheel's own kernel, in one process, alternated call by call
(hcops.torch.enabled toggles the two).

Under PyTorch 2.x DiT's residual stream keeps the patch embedding's
transpose: every LayerNorm's input is a (batch, tokens, hidden) tensor whose
last two dimensions are swapped from a contiguous one (strides (T H, 1, T)).
The wheel's kernel copies it contiguous first; HCOps reads it in place,
transposing bands of rows into a buffer of its own (ops/layer_norm.h's
_swapped calls). Cases: forward and backward (dx; dY contiguous, as the
modulation's backward leaves it), without weight and bias, as DiT's
LayerNorms (elementwise_affine=False: adaLN modulates after them), the input
"swapped" as in the step and "contiguous" for scale, f32 (what autocast runs
LayerNorm in) and bf16. Two states of x before each call: "warm", just
written by the operator before it (an in-place multiply, as the residual
add leaves it), and "cold", after a write of twice the last-level cache
(torch2_gemm.py's flush). Outputs are allocated by the call. Per case,
rounds x reps calls of each side; medians reported, beside the call's
memory bound: the bytes it must move (read x, write y; backward read dY and
x, write dX; the statistics) at hcops-stream's triad bandwidth on as many
threads.

  build/torch2-venv/bin/python perf/torch2_layer_norm.py [--model S] [--batch 8] [--threads 1 2]
      [--rounds 3] [--reps 7] [--csv doc/perf/torch2-layer-norm.csv] [--png doc/perf/torch2-layer-norm.png] [--quick]
  python3 perf/torch2_layer_norm.py --replot doc/perf/torch2-layer-norm.csv --png doc/perf/torch2-layer-norm.png

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

CSV_COLUMNS = ["model", "batch", "dtype", "threads", "dir", "layout", "shape", "state", "stock_ms", "hcops_ms",
               "stock_over_hcops", "stock_gbs", "hcops_gbs", "bound_ms", "hcops_of_bound", "cpu"]
EPS = 1e-6  # DiT's nn.LayerNorm(eps=1e-6)


def bytes_moved(direction, shape, elem):
    """What a call must read and write at the least: x and y (backward dY, x
    and dX) and the per-row mean and rstd (in the data's type, as PyTorch
    keeps them)."""
    n = shape[0] * shape[1] * shape[2]
    rows = n // shape[2]
    return ((2 if direction == "fwd" else 3) * n + 2 * rows) * elem


def plot(rows, path, title):
    col = {c: i for i, c in enumerate(CSV_COLUMNS)}
    paired_panels(path, title, rows, CSV_COLUMNS, lambda r: (r[col["threads"]], r[col["state"]]),
                  lambda r, side: float(r[col[f"{side}_gbs"]]),
                  lambda r: f"{r[col['dir']]} {r[col['layout']]} {r[col['dtype']]}",
                  lambda g: f"{g[0]} thr, {g[1]}: GB/s", "the wheel's own LayerNorm",
                  tick_args={"rotation": 20, "ha": "right"})


def main():
    args = membound.parse_args(__doc__)
    title = "DiT-{}/2 batch {}: LayerNorm on the residual stream through the dispatcher\n{}"
    if membound.replot(args, plot, title):
        return 0
    import torch  # noqa: PLC0415 - --replot needs none
    import hcops.torch as ht  # noqa: PLC0415
    cpu = cpu_label()
    print(f"DiT-{args.model}/2 batch {args.batch}: LayerNorm on the residual stream through the dispatcher, "
          f"torch {torch.__version__}, {cpu}; cold: caches flushed ({llc_bytes() >> 20} MiB last level)", flush=True)
    bandwidth = membound.bandwidths(args.threads)
    flush = Flusher()
    aten = torch.ops.aten
    hidden = CONFIGS[args.model][0]
    shape = (args.batch, TOKENS, hidden)
    shape_text = "x".join(map(str, shape))
    rows, computed = [], 0
    head = f"{'dir':<5}{'layout':<12}{'shape':<14}{'dtype':<6}{'thr':>4}{'state':>6}{'stock ms':>10}{'hcops ms':>10}" \
           f"{'stock/hcops':>12}{'stock GB/s':>11}{'hcops GB/s':>11}{'bound ms':>10}{'of bound':>9}"
    for t in args.threads:
        torch.set_num_threads(t)
        print(f"\n{head}", flush=True)
        for state in ("warm", "cold"):
            for dt in (torch.float32, torch.bfloat16):
                dname = "f32" if dt == torch.float32 else "bf16"
                gen = torch.Generator().manual_seed(3)
                # The residual stream as the patch embedding's transpose leaves it.
                base = torch.randn((shape[0], shape[2], shape[1]), generator=gen).to(dt)
                dy = torch.randn(shape, generator=gen).to(dt)
                for layout in ("swapped", "contiguous"):
                    x = base.transpose(1, 2) if layout == "swapped" else base.transpose(1, 2).contiguous()
                    written = base if layout == "swapped" else x
                    _, mean, rstd = aten.native_layer_norm(x, [hidden], None, None, EPS)
                    for direction in ("fwd", "bwd"):
                        if direction == "fwd":
                            op = "native_layer_norm"
                            call = lambda hcops, x=x: aten.native_layer_norm(x, [hidden], None, None, EPS)  # noqa: E731
                        else:
                            op = "native_layer_norm_backward"
                            call = lambda hcops, x=x, m=mean, r=rstd: aten.native_layer_norm_backward(  # noqa: E731
                                dy, x, [hidden], m, r, None, None, [True, False, False])
                        nbytes = bytes_moved(direction, shape, x.element_size())
                        before = ht.call_counts(op)[0]
                        prepare = flush if state == "cold" else (lambda t_=written: t_.mul_(1.0))
                        times = measure(call, prepare, args.rounds, args.reps, ht.enabled)
                        computed += ht.call_counts(op)[0] - before
                        s, h = statistics.median(times["stock"]), statistics.median(times["hcops"])
                        bw = bandwidth.get(t)
                        bound = nbytes / (bw * 1e9) if bw else float("nan")
                        print(f"{direction:<5}{layout:<12}{shape_text:<14}{dname:<6}{t:>4}{state:>6}{1e3 * s:>10.3f}"
                              f"{1e3 * h:>10.3f}{s / h:>11.2f}x{nbytes / s / 1e9:>11.1f}{nbytes / h / 1e9:>11.1f}"
                              f"{1e3 * bound:>10.3f}{100 * bound / h:>8.1f}%", flush=True)
                        rows.append([args.model, args.batch, dname, t, direction, layout, shape_text, state,
                                     f"{1e3 * s:.4f}", f"{1e3 * h:.4f}", f"{s / h:.4f}", f"{nbytes / s / 1e9:.2f}",
                                     f"{nbytes / h / 1e9:.2f}", f"{1e3 * bound:.4f}", f"{bound / h:.4f}", cpu])
    return membound.finish(__file__, args, CSV_COLUMNS, rows,
                           lambda: plot(rows, args.png, title.format(args.model, args.batch, cpu)), bandwidth, computed)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""DiT's GEMMs through the PyTorch dispatcher, one product at a time, as a
training step issues them: HCOps (libhcops_torch2.so's mm/addmm/bmm) against
the wheel's own kernels (MKL for f32, oneDNN for bf16), in one process,
alternated call by call (hcops.torch.enabled toggles the two).

Every product of a DiT block and its backward, with the operands a step
gives them: nn.Linear's forward addmm (bias, W transposed as a view), the
input gradient dY W (NN), the weight gradient dY^T X (a transposed view,
k = tokens x batch), adaLN's skinny products (rows = batch), and attention's
batched products where the model computes them with matmul. Before each
timed call the caches are flushed (a write of twice the last-level cache),
so the operands come from memory as they do after the previous operator;
C is allocated by the call, as in a step. Per product, rounds x reps calls
of each side; the median is reported, beside hcops-peak's peak for the
precision and thread count and the call's roofline: the longer of its flops
at that peak and its operands and result through memory at hcops-stream's
triad bandwidth (the operands are cold).

  build/torch2-venv/bin/python perf/torch2_gemm.py [--model S] [--batch 8] [--dtypes f32 bf16]
      [--threads 1 2] [--rounds 3] [--reps 5] [--only fwd,dgrad,wgrad,adaln,attn]
      [--csv doc/perf/torch2-gemm.csv] [--png doc/perf/torch2-gemm.png] [--quick]
  python3 perf/torch2_gemm.py --replot doc/perf/torch2-gemm.csv --png doc/perf/torch2-gemm.png

Exit status: 0; 1 when HCOps computed none of the calls it was given (its
library not loaded or every call declined: said why); 2 usage.
"""
import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # benchlib
sys.path.insert(1, os.path.join(HERE, "dit"))  # dit_config
sys.path.insert(2, os.path.join(os.path.dirname(HERE), "python"))  # hcops

from benchlib.build import built_tool  # noqa: E402
from benchlib.report import (cpu_label, paired_panels, preloaded_hcops_warning, read_csv_rows,  # noqa: E402
                             write_outputs)
from dit_config import CONFIGS, TOKENS  # noqa: E402
from hcops.prof.machine import Machine, MachineError  # noqa: E402

# torch and hcops.torch are imported by main() when it measures: --replot
# draws a CSV with any python that has matplotlib (the venv has none).
torch = ht = None
DTYPES = ("f32", "bf16")
KINDS = ("fwd", "dgrad", "wgrad", "adaln", "attn")


def llc_bytes(base="/sys/devices/system/cpu/cpu0/cache"):
    """The largest cache's size (sysfs cpu0/cache/index*/size), 32 MiB when
    none can be read. Each entry on its own: the folder also holds files
    (uevent), and one unreadable entry must not end the search (it did: a
    260 MiB L3 read as 32 MiB, and a flush of 64 MiB left operands in it)."""
    best = 0
    try:
        entries = [e for e in os.listdir(base) if e.startswith("index")]
    except OSError:
        entries = []
    for idx in entries:
        try:
            with open(os.path.join(base, idx, "size")) as f:
                text = f.read().strip()
            mult = {"K": 1 << 10, "M": 1 << 20}.get(text[-1:], 1)
            best = max(best, int(text.rstrip("KM")) * mult)
        except (OSError, ValueError):
            continue
    return best or 32 << 20


class Product:
    """One call: kind, layer, (m, n, k) in the model's row-major terms, batch
    count, flops, the operands, and call() computing it."""

    def __init__(self, kind, layer, m, n, k, dtype, batches=1, role=None):
        self.kind, self.layer, self.m, self.n, self.k, self.batches = kind, layer, m, n, k, batches
        role = role or kind  # which product of a Linear: adaLN's are the kind "adaln" in all three roles
        self.flops = 2 * m * n * k * batches
        self.bytes = (m * k + k * n + m * n) * batches * torch.tensor([], dtype=dtype).element_size()
        g = torch.Generator().manual_seed(m * 131 + n * 17 + k)

        def rnd(*shape):
            return torch.randn(*shape, generator=g).to(dtype)
        if role in ("fwd", "adaln"):      # x W^T + b: W stored [out, in], used as a transposed view
            x, w, b = rnd(m, k), rnd(n, k), rnd(n)
            self.call = lambda: torch.addmm(b, x, w.t())
        elif role == "dgrad":             # dX = dY W: dY [rows, out], W [out, in]
            dy, w = rnd(m, k), rnd(k, n)
            self.call = lambda: torch.mm(dy, w)
        elif role == "wgrad":             # dW = dY^T X: dY [rows, out] transposed, X [rows, in]
            dy, x = rnd(k, m), rnd(k, n)
            self.call = lambda: torch.mm(dy.t(), x)
        else:                             # attention: q k^T and p v, batched over batch x heads
            a, b = rnd(batches, m, k), rnd(batches, k, n)
            self.call = lambda: torch.bmm(a, b)

    def label(self):
        b = f"{self.batches}x" if self.batches > 1 else ""
        return f"{self.kind} {self.layer} {b}{self.m}x{self.n}x{self.k}"


def torch_dtype(name):
    return {"f32": torch.float32, "bf16": torch.bfloat16}[name]


def products(model, batch, dtype, kinds):
    h, _, heads = CONFIGS[model]
    rows = batch * TOKENS
    out = []
    linears = (("qkv", h, 3 * h), ("proj", h, h), ("fc1", h, 4 * h), ("fc2", 4 * h, h))
    for layer, fan_in, fan_out in linears:
        if "fwd" in kinds:
            out.append(Product("fwd", layer, rows, fan_out, fan_in, dtype))
        if "dgrad" in kinds:
            out.append(Product("dgrad", layer, rows, fan_in, fan_out, dtype))
        if "wgrad" in kinds:
            out.append(Product("wgrad", layer, fan_out, fan_in, rows, dtype))
    if "adaln" in kinds:  # the block's 6 modulations, from the conditioning vector, and their gradients
        out.append(Product("adaln", "adaLN", batch, 6 * h, h, dtype))
        out.append(Product("adaln", "adaLN-dX", batch, h, 6 * h, dtype, role="dgrad"))
        out.append(Product("adaln", "adaLN-dW", 6 * h, h, batch, dtype, role="wgrad"))
    if "attn" in kinds:
        d = h // heads
        out.append(Product("attn", "qk", TOKENS, TOKENS, d, dtype, batch * heads))
        out.append(Product("attn", "pv", TOKENS, d, TOKENS, dtype, batch * heads))
    return out


class Flusher:
    """A write of twice the last-level cache: the next call's operands come
    from memory, as after the previous operator (torch2_attention.py too)."""
    def __init__(self):
        import torch as torch_module  # noqa: PLC0415 - this module's torch is set by main() only
        self.buf = torch_module.empty(2 * llc_bytes() // 4, dtype=torch_module.float32)

    def __call__(self):
        self.buf.fill_(1.0)


def time_call(call, flush, hcops, enabled):
    with enabled(hcops):
        flush()
        t0 = time.perf_counter()
        call(hcops)
        return time.perf_counter() - t0


def measure(call, flush, rounds, reps, enabled):
    """{"stock": [s], "hcops": [s]} of call(hcops) under enabled(hcops)
    (hcops.torch.enabled): reps calls a side per round, the order
    alternating call by call and starting with the other side each round
    (torch2_attention.py too)."""
    for hcops in (False, True):  # warm: first-call set-up of either side is not a step's
        time_call(call, flush, hcops, enabled)
    out = {"stock": [], "hcops": []}
    for r in range(rounds):
        for i in range(reps):
            first = (r + i) % 2 == 0
            for hcops in (first, not first):
                out["hcops" if hcops else "stock"].append(time_call(call, flush, hcops, enabled))
    return out


def peaks(threads_list):
    m = Machine(built_tool)
    out = {}
    try:
        for t in threads_list:
            for dt in DTYPES:
                out[(dt, t)] = m.peak(dt, t)
            out[("bw", t)] = m.bandwidth(t)
    except MachineError as e:
        print(f"no peak: {e}")
    return out


CSV_COLUMNS = ["model", "batch", "dtype", "threads", "kind", "layer", "batches", "m", "n", "k", "gflop",
               "stock_ms", "hcops_ms", "stock_over_hcops", "hcops_gflops", "hcops_of_peak", "stock_of_peak",
               "hcops_of_bw_bound", "roofline_ms", "hcops_of_roofline", "stock_of_roofline", "cpu"]


def plot(rows, path, title):
    col = {c: i for i, c in enumerate(CSV_COLUMNS)}
    paired_panels(path, title, rows, CSV_COLUMNS, lambda r: (r[col["dtype"]], r[col["threads"]]),
                  lambda r, side: 100 * float(r[col[f"{side}_of_peak"]]),
                  lambda r: f"{r[col['kind']]} {r[col['layer']]}", lambda g: f"{g[0]}, {g[1]} thr: % of peak",
                  "wheel's own (MKL / oneDNN)", width=11, tick_args={"rotation": 30, "ha": "right"})


def main():
    global torch, ht
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="S", choices=sorted(CONFIGS))
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--dtypes", nargs="+", default=["f32", "bf16"], choices=sorted(DTYPES))
    ap.add_argument("--threads", nargs="+", type=int, default=[1, os.cpu_count()])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--only", default=",".join(KINDS), help="kinds of product (comma-separated): " + ", ".join(KINDS))
    ap.add_argument("--quick", action="store_true", help="DiT-tiny, batch 2, 1 round of 1 call (tests)")
    ap.add_argument("--csv")
    ap.add_argument("--png")
    ap.add_argument("--replot", metavar="CSV", help="only draw --png from a CSV this script wrote")
    args = ap.parse_args()
    if args.replot:
        if not args.png:
            ap.error("--replot draws into --png")
        rows = read_csv_rows(args.replot)
        plot(rows, args.png, f"DiT-{rows[0][0]}/2 batch {rows[0][1]}, its GEMMs through the dispatcher\n{rows[0][-1]}")
        return 0
    import torch as torch_module  # noqa: PLC0415
    torch = torch_module
    import hcops.torch as hcops_torch  # noqa: PLC0415
    ht = hcops_torch
    kinds = args.only.split(",")
    if not set(kinds) <= set(KINDS):
        ap.error(f"--only: kinds are {', '.join(KINDS)}")
    if args.quick:
        args.model, args.batch, args.rounds, args.reps = "tiny", 2, 1, 1
    cpu = cpu_label()
    print(f"DiT-{args.model}/2 batch {args.batch}: its GEMMs through the dispatcher, torch {torch.__version__}, "
          f"{cpu}; caches flushed before each call ({llc_bytes() >> 20} MiB last level)", flush=True)
    warning = preloaded_hcops_warning()
    if warning:
        print(warning, flush=True)
    peak = peaks(args.threads)
    flush = Flusher()
    rows, computed = [], 0
    head = f"{'product':<34}{'dtype':<6}{'thr':>4}{'stock ms':>10}{'hcops ms':>10}{'stock/hcops':>12}" \
           f"{'GFLOPS':>9}{'of peak':>9}{'stock of':>10}{'roofline':>10}{'of roof':>9}{'stock of':>10}"
    for t in args.threads:
        torch.set_num_threads(t)
        for dt in args.dtypes:
            print(f"\n{head}", flush=True)
            for p in products(args.model, args.batch, torch_dtype(dt), kinds):
                before = sum(ht.call_counts(op)[0] for op in ("mm", "addmm", "bmm"))
                times = measure(lambda hcops: p.call(), flush, args.rounds, args.reps, ht.enabled)
                computed += sum(ht.call_counts(op)[0] for op in ("mm", "addmm", "bmm")) - before
                s, h = statistics.median(times["stock"]), statistics.median(times["hcops"])
                pk = peak.get((dt, t))
                rate = p.flops / h / 1e9
                of = rate / pk if pk else float("nan")
                of_stock = p.flops / s / 1e9 / pk if pk else float("nan")
                bw = peak.get(("bw", t))
                of_bw = (p.bytes / h / 1e9) / bw if bw else float("nan")
                # The roofline of a cold call: its flops at the peak, or its
                # operands and result through memory at the triad bandwidth.
                roof = max(p.flops / (pk * 1e9) if pk else 0.0, p.bytes / (bw * 1e9) if bw else 0.0)
                print(f"{p.label():<34}{dt:<6}{t:>4}{1e3 * s:>10.3f}{1e3 * h:>10.3f}{s / h:>11.2f}x{rate:>9.1f}"
                      f"{100 * of:>8.1f}%{100 * of_stock:>9.1f}%{1e3 * roof:>8.3f}ms{100 * roof / h:>8.1f}%{100 * roof / s:>9.1f}%" + (f"  ({100 * of_bw:.0f}% of the memory bound)"
                                                                      if p.kind == "adaln" else ""), flush=True)
                rows.append([args.model, args.batch, dt, t, p.kind, p.layer, p.batches, p.m, p.n, p.k,
                             f"{p.flops / 1e9:.4f}", f"{1e3 * s:.4f}", f"{1e3 * h:.4f}", f"{s / h:.4f}",
                             f"{rate:.2f}", f"{of:.4f}", f"{of_stock:.4f}", f"{of_bw:.4f}", f"{1e3 * roof:.4f}",
                             f"{roof / h:.4f}", f"{roof / s:.4f}", cpu])
    if peak:
        print("\npeaks: " + ", ".join(f"{k[0]} {k[1]} thr {v:.0f} {'GB/s' if k[0] == 'bw' else 'GFLOPS'}"
                                      for k, v in peak.items() if v))
    title = f"DiT-{args.model}/2 batch {args.batch}, its GEMMs through the dispatcher\n{cpu}"
    write_outputs(__file__, args, CSV_COLUMNS, rows, lambda: plot(rows, args.png, title))
    if computed == 0:
        print("HCOps computed none of the calls (HCOPS_VERBOSE=1 says why)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

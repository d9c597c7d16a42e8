#!/usr/bin/env python3
"""DiT training steps on a PyTorch 2.x wheel with HCOps' dispatcher layer on
and off in one process, step by step: stock eager, HCOps eager, and with
--compile the torch.compile'd model stock and with HCOps (HCOps' GEMMs and
attention inside the compiled graphs' ATen calls; its fused AdamW in the
optimizer step, which runs eagerly).

Why one process: on a shared or virtual machine the speed of a process
moves by more than the gains measured (on the 2-core Intel guest of
doc/perf/torch2.md, 10-30 % between processes minutes apart), so
perf/dit/torch2_step.py's process-per-configuration rounds need many of
them to separate 5 %. Here each variant trains its own copy of one model
(same initial weights, its own AdamW, the same batches and label dropout
step by step), all in one process and OpenMP team; every round each
variant takes one step, in the orders of a balanced Latin square (each
variant follows every other equally often, so what a step leaves behind
in the caches and the allocator is not charged to one variant), and the
ratios are medians over rounds of step time against HCOps' step in the
same round (eager against eager, compiled against compiled). HCOps'
losses are compared with stock's. Per variant, the calls HCOps computed
are counted: none in a stock step, some in an HCOps one, or the run
measured nothing. A graph compiled during the timed rounds (a recompile)
is said. What this cannot show: what `hcops-run` adds beyond
`import hcops.torch` (the BLAS preload, the allocator's settings, the
start-up hook); perf/dit/torch2_step.py and `make demo` measure that.

The compiled graphs are compiled with HCOps loaded: where
HCOPS_INDUCTOR_OPS keeps GeLU as an ATen call (the avx2 family), the stock
compiled variant runs PyTorch's GeLU there, not inductor's fused code;
elsewhere the graphs are stock's. With --compile max-autotune, inductor
may choose its own GEMM templates, which call no ATen kernel (so neither
HCOps nor MKL) in either compiled variant.

  build/torch2-venv/bin/python perf/dit/torch2_step_ab.py [--model S] [--batch 8] [--threads 2]
      [--amp none bf16] [--compile default] [--rounds 6] [--warmup 2] [--csv F.csv] [--png F.png]
  python3 perf/dit/torch2_step_ab.py --replot F.csv --png F.png

Run it without hcops-run: under it the wheel's own BLAS calls would reach
HCOps through the preload, and "stock" would not be stock.
"""
import argparse
import math
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # dit, dit_config
sys.path.insert(1, os.path.dirname(HERE))  # perf/, for benchlib
sys.path.insert(2, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))  # hcops

from benchlib.build import built_tool  # noqa: E402
from benchlib.report import cpu_label, preloaded_hcops_warning, pyplot, read_csv_rows, save_plot, write_csv  # noqa: E402
from dit_config import CONFIGS, step_flops  # noqa: E402

CSV_COLUMNS = ["model", "batch", "threads", "torch", "dtype", "variant", "steps", "median_s", "min_s", "max_s",
               "hcops_over_variant", "ratio_min", "ratio_max", "gflops", "of_peak", "peak_gflops", "losses_finite", "cpu"]
COLORS = {"stock": "tab:gray", "hcops": "tab:blue", "compile": "tab:orange", "hcops+compile": "tab:cyan"}


def peak(dtype, threads):
    """hcops-peak's rate for the precision (bf16 autocast: the bf16 peak), or None."""
    try:
        from hcops.prof.machine import Machine, MachineError  # noqa: PLC0415
    except ImportError:
        return None
    try:
        return Machine(built_tool).peak("bf16" if dtype == "bf16" else "f32", threads)
    except MachineError as e:
        print(f"no peak: {e}")
        return None


# Orders of the variants, one per round, cycling: a balanced Latin square
# (Williams design) for an even count, each variant right after every other
# once per cycle; for an odd count its rows and their reverses.
def round_orders(names):
    n = len(names)
    seq = [0]
    for j in range(1, n):
        seq.append((j + 1) // 2 if j % 2 else n - j // 2)
    rows = [[names[(x + r) % n] for x in seq] for r in range(n)]
    return rows if n % 2 == 0 else rows + [row[::-1] for row in rows]


# What HCOps counts as computed, per step (a stock step must count none).
def computed(ht, optim):
    return sum(ht.call_counts(op)[0] for op in COUNTED_OPS) + sum(
        v for k, v in optim.calls.items() if k.endswith(":fused"))


def graphs_compiled(torch):
    try:
        from torch._dynamo.utils import counters  # noqa: PLC0415
    except ImportError:
        return 0
    return counters["stats"]["unique_graphs"]


def measure(args, amp, torch, ht, dit):
    """{variant: [step seconds per round]}, {variant: [loss per round]},
    {variant: calls HCOps computed in its timed steps}, graphs compiled
    during the timed rounds. Each variant trains its own copy of one model
    (same initial weights, its own AdamW) on the same batches, so that eager
    HCOps' losses follow stock eager's and compiled HCOps' the compiled
    stock's, and a variant whose loss goes NaN (stock torch.compile under
    bf16 autocast does on DiT) cannot poison the others."""
    import copy  # noqa: PLC0415
    from hcops.torch import optim  # noqa: PLC0415
    torch.manual_seed(args.seed)
    base = dit.DiT(*CONFIGS[args.model], variant="dit")
    names = ["stock", "hcops"] + (["compile", "hcops+compile"] if args.compile != "none" else [])
    state = {}
    for name in names:
        model = copy.deepcopy(base)
        model.train()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0)
        net = torch.compile(model, mode=args.compile) if "compile" in name else model
        state[name] = [net, opt, torch.Generator().manual_seed(args.seed), 0]
    abar = dit.alphas_cumprod()

    def step(name):
        st = state[name]
        net, opt, gen, i = st
        st[3] += 1
        ht.set_enabled("hcops" in name)
        data = dit.make_batch(gen, args.batch)
        # The label dropout draws from the global generator: the same numbers
        # at step i of every variant.
        torch.manual_seed(args.seed * 1000003 + i)
        before = computed(ht, optim)
        start = time.perf_counter()
        loss = dit.train_step(net, opt, abar, data, amp)
        return time.perf_counter() - start, loss, computed(ht, optim) - before

    for w in range(args.warmup):  # the first compiles the graphs
        for name in names:
            t, _, _ = step(name)
            print(f"  {amp}: warm-up {w + 1}/{args.warmup} {name}: {t:.3f} s", flush=True)
    graphs = graphs_compiled(torch)
    times = {n: [] for n in names}
    losses = {n: [] for n in names}
    calls = {n: 0 for n in names}
    orders = round_orders(names)
    for r in range(args.rounds):
        line = []
        for name in orders[r % len(orders)]:
            t, loss, c = step(name)
            times[name].append(t)
            losses[name].append(loss)
            calls[name] += c
            line.append(f"{name} {t:.3f}")
        print(f"  {amp}: round {r + 1}/{args.rounds}: " + ", ".join(line) + " s", flush=True)
    ht.set_enabled(True)
    return times, losses, calls, graphs_compiled(torch) - graphs


def loss_gap(losses, a, b):
    """Largest relative difference of a's losses from b's, step by step (NaN if either is not finite)."""
    gaps = [abs(x - y) / abs(y) if math.isfinite(x) and math.isfinite(y) and y else float("nan")
            for x, y in zip(losses[a], losses[b])]
    return max(gaps) if gaps and all(math.isfinite(g) for g in gaps) else float("nan")


def paired(times, a, b):
    """Median over rounds of a's step time over b's (b faster: > 1), with the range."""
    rs = [x / y for x, y in zip(times[a], times[b])]
    return statistics.median(rs), min(rs), max(rs)


# The operators whose calls HCOps computed are counted per variant and said
# at the end (a run in which HCOps computed none measured nothing of it).
COUNTED_OPS = ("mm", "addmm", "_scaled_dot_product_flash_attention_for_cpu", "native_layer_norm")

# The comparisons the targets name: (faster, slower).
PAIRS = (("hcops", "stock"), ("hcops", "compile"), ("hcops+compile", "compile"), ("hcops+compile", "hcops"),
         ("compile", "stock"))


def plot(rows, path):
    plt = pyplot()
    if not plt:
        return
    col = {c: i for i, c in enumerate(CSV_COLUMNS)}
    dtypes = list(dict.fromkeys(r[col["dtype"]] for r in rows))
    names = list(dict.fromkeys(r[col["variant"]] for r in rows))
    width = 0.8 / len(names)
    fig, ax = plt.subplots(figsize=(3 + 1.5 * len(dtypes) * len(names) / 2, 4))
    for x, dt in enumerate(dtypes):
        for i, name in enumerate(names):
            own = [r for r in rows if r[col["dtype"]] == dt and r[col["variant"]] == name]
            if not own:
                continue
            r = own[0]
            med = float(r[col["median_s"]])
            off = (i - (len(names) - 1) / 2) * width
            # A variant whose losses went NaN or infinite is no valid anchor: hatched.
            invalid = r[col["losses_finite"]] == "no"
            ax.bar(x + off, med, width, color=COLORS.get(name, f"C{i}"), label=name if x == 0 else None,
                   hatch="//" if invalid else None, alpha=0.5 if invalid else 1.0)
            if "hcops" not in name:
                mine = "hcops+compile" if "compile" in name else "hcops"
                label = f"{mine}\n{float(r[col['hcops_over_variant']]):.2f}x"
                ax.text(x + off, med, "NaN loss\n" + label if invalid else label, ha="center", va="bottom",
                        fontsize=8)
    ax.set_xticks(range(len(dtypes)), dtypes)
    ax.set_ylabel("median step time (s)")
    ax.set_ylim(0, 1.25 * max(float(r[col["median_s"]]) for r in rows))
    first = rows[0]
    ax.set_title(f"DiT-{first[col['model']]}/2, batch {first[col['batch']]}, {first[col['threads']]} threads, "
                 f"torch {first[col['torch']]}, one process, steps alternated\n{first[col['cpu']]}", fontsize=9)
    ax.legend(fontsize=8)
    save_plot(fig, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", choices=sorted(CONFIGS), default="S")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--amp", nargs="+", default=["none", "bf16"], choices=["none", "bf16"])
    ap.add_argument("--compile", default="default", choices=["none", "default", "max-autotune"])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--attention", choices=("matmul", "sdpa"), default="sdpa",
                    help="the model's attention: F.scaled_dot_product_attention (timm's default) or matmul + softmax")
    ap.add_argument("--csv")
    ap.add_argument("--png")
    ap.add_argument("--replot", metavar="CSV", help="only draw --png from a CSV this script wrote")
    args = ap.parse_args()
    if args.replot:
        if not args.png:
            ap.error("--replot needs --png")
        plot(read_csv_rows(args.replot), args.png)
        return 0
    if args.rounds < 1 or args.warmup < 1:
        ap.error("--rounds and --warmup: at least 1 (the first warm-up step compiles)")
    warning = preloaded_hcops_warning()
    if warning:
        print(warning)
    import torch  # noqa: PLC0415 - --replot runs with any python
    import dit  # noqa: PLC0415
    import hcops.torch as ht  # noqa: PLC0415
    torch.set_num_threads(args.threads)
    dit.Attention.fused = args.attention == "sdpa"
    cpu = cpu_label()
    print(f"DiT-{args.model}/2 batch {args.batch}, {args.threads} threads, torch {torch.__version__}, {cpu}; "
          f"{args.rounds} rounds after {args.warmup} warm-up steps, one process")
    rows, table, pairs_of, gaps, said = [], [], {}, [], []
    flop = step_flops(args.model, args.batch)
    for amp in args.amp:
        dtype = "bf16" if amp == "bf16" else "f32"
        times, losses, calls, recompiled = measure(args, amp, torch, ht, dit)
        pairs_of[dtype] = times
        said.append(f"{dtype}: HCOps computed per variant: " + ", ".join(f"{n} {c}" for n, c in calls.items()))
        if recompiled:
            said.append(f"{dtype}: {recompiled} graph(s) compiled during the timed rounds (a recompile: those "
                        "steps' times include it)")
        ratios = {n: [t / h for t, h in zip(ts, times["hcops+compile" if "compile" in n else "hcops"])]
                  for n, ts in times.items()}
        for a, b in (("hcops", "stock"), ("hcops+compile", "compile")):
            if a in losses:
                gap = loss_gap(losses, a, b)
                gaps.append(f"{dtype}: {a}'s losses within {gap:.1e} of {b}'s" if math.isfinite(gap) else
                            f"{dtype}: {a} or {b} had a loss that is not finite ({b}: "
                            f"{', '.join(f'{x:.4g}' for x in losses[b])})")
        pk = peak(dtype, args.threads)
        for name, ts in times.items():
            med = statistics.median(ts)
            rs = ratios[name]
            gflops = flop / med / 1e9
            rows.append([args.model, args.batch, args.threads, torch.__version__.split("+")[0], dtype, name, len(ts),
                         f"{med:.4f}", f"{min(ts):.4f}", f"{max(ts):.4f}", f"{statistics.median(rs):.3f}",
                         f"{min(rs):.3f}", f"{max(rs):.3f}", f"{gflops:.1f}", f"{gflops / pk:.3f}" if pk else "",
                         f"{pk:.1f}" if pk else "", "yes" if all(map(math.isfinite, losses[name])) else "no", cpu])
            table.append((dtype, name, med, statistics.median(rs), min(rs), max(rs), gflops, pk))
    print(f"\n{'dtype':5s} {'variant':14s} {'median s':>9s} {'HCOps over it':>14s} {'(rounds)':>13s} "
          f"{'GFLOPS':>7s} {'of peak':>8s}")
    for dtype, name, med, r, lo, hi, gflops, pk in table:
        share = f"{gflops / pk:7.1%}" if pk else "      -"
        print(f"{dtype:5s} {name:14s} {med:9.3f} {r:13.2f}x {lo:6.2f}-{hi:.2f} {gflops:7.1f} {share:>8s}")
    print("(HCOps over it: the variant's step time over HCOps' in the same round, eager against eager and compiled "
          "against compiled, median over rounds; GFLOPS: the step's GEMM and attention flops over its time)")
    for dtype, times in pairs_of.items():
        for a, b in PAIRS:
            if a in times and b in times:
                r, lo, hi = paired(times, b, a)
                print(f"{dtype}: {a} {r:.2f}x {b} (rounds {lo:.2f}-{hi:.2f})")
    for g in gaps + said:
        print(g)
    counted = {op: ht.call_counts(op)[0] for op in COUNTED_OPS}
    print("HCOps computed: " + ", ".join(f"{op} {n}" for op, n in counted.items()))
    if args.csv:
        write_csv(args.csv, CSV_COLUMNS, rows)
        print(f"wrote {args.csv}")
    if args.png:
        plot([[str(v) for v in r] for r in rows], args.png)
    return 0


if __name__ == "__main__":
    sys.exit(main())

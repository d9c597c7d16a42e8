#!/usr/bin/env python3
"""`make demo`: DiT training steps (perf/dit/dit.py, the authors' model) on the
PyTorch a user runs, without and with HCOps, in one run.

First the PyTorch 2.x wheel (the project's venv, build/torch2-venv: MKL and
oneDNN linked inside, where HCOps comes in through the dispatcher): stock
eager, torch.compile, hcops-run, and hcops-run + torch.compile. Then Debian's
PyTorch 1.13 (OpenBLAS): stock and hcops-run. Each in f32 and under bf16
autocast (where stock PyTorch can run it: said when not). Every
configuration runs in a process of its own; the variants of a PyTorch and
precision alternate round by round (A-B-C-D, then D-C-B-A), so that drift
in the machine's load hits all of them alike.

Where stock PyTorch's bf16 takes --slow-bf16 (4) times its f32's time or
more (a Linear's forward and backward, timed first: perf/dit/stock_bf16.py),
as on a CPU without bf16 instructions and without AVX-512, where its bf16
step takes a minute or more, that PyTorch's bf16 runs one round of one
timed step, said at the start and in the summary: the demo takes about 20
minutes there, not an hour.

It then checks, and the exit status says:
- that every HCOps variant's losses agree with stock eager's of the same
  PyTorch (f32 1e-4 relative, bf16 1e-2: other summation orders, inductor's
  fusions). Stock torch.compile's are checked the same way and a
  disagreement is printed in the table and at the end, as PyTorch's own: it
  does not fail the demo. Where torch.compile's own losses are not finite
  (inductor's bf16 code on a 2-core Intel Xeon without AMX, 2026-12-03: NaN
  from the second step), hcops-run + compile, built on the same graphs, is
  judged against them step by step instead. The fastest variant with and
  without HCOps are picked among those whose losses stayed finite;
- that HCOps ran: one step of each HCOps variant under HCOPS_VERBOSE=1, read
  with hcops-prof's log reader, must show HCOps' GEMMs (and lists its operators,
  with what it declined and why).
Last, one summary table: median step time, speedup over stock eager, the
step's GEMM rate against the machine's peak (hcops-peak, cached as
hcops-prof caches it), with a CSV and a PNG beside it.

  HCOPS_RUN=build/tools/hcops-run python3 perf/dit/demo.py --torch2-python build/torch2-venv/bin/python \\
      [--debian-python /usr/bin/python3] [--model S] [--batch 8] [--rounds 3] [--steps 3]
      [--slow-bf16 4] [--csv build/demo/dit-demo.csv] [--png build/demo/dit-demo.png] [--quick]
  python3 perf/dit/demo.py --replot build/demo/dit-demo.csv --png build/demo/dit-demo.png

--quick (make check): DiT-tiny, batch 2, one round (unless --rounds) of one step, every
variant and check as above, no timing judged (each HCOps variant's runs
are under HCOPS_VERBOSE=1, and its last is its verbose step). Exit status: 0
HCOps ran and every HCOps variant's losses agree; 1 one disagrees or an
HCOps variant ran no HCOps GEMM; 2 usage or a run failed.
"""
import argparse
import csv
import math
import os
import statistics
import sys
import time
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # perf/, for benchlib
sys.path.insert(1, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))  # hcops.prof's log reader
from benchlib.build import BUILD, built_tool  # noqa: E402
from benchlib.child import RunError, child_env, json_result, run  # noqa: E402
from benchlib.report import cpu_label, error, load_average, pyplot, save_plot, write_csv  # noqa: E402
from benchlib.rounds import alternated, rel_diff  # noqa: E402
from dit_config import CONFIGS, step_flops  # noqa: E402
from stock_bf16 import SPEED_SHAPE, SpeedProbeError, stock_bf16_error, stock_bf16_times  # noqa: E402
from hcops.prof import logparse, steps  # noqa: E402
from hcops.prof.machine import Machine, MachineError  # noqa: E402

DIT = os.path.join(HERE, "dit.py")
DTYPES = {"none": "f32", "bf16": "bf16"}
LOSS_RTOL = {"none": 1e-4, "bf16": 1e-2}
# Untimed steps of every variant of a PyTorch when one of them compiles: the
# first step compiles the forward and backward graphs, the second the
# optimizer's step.
COMPILE_WARMUP = 2
STOCK = "stock eager"
COMPILED = "torch.compile"
BF16_PROBE_TIMEOUT_S = 600  # a few seconds natively, a minute under QEMU


@dataclass
class Variant:
    name: str
    hcops: bool         # run under hcops-run
    compiled: bool      # torch.compile'd (inductor, mode default)


@dataclass
class Route:
    """One PyTorch: its interpreter, label and variants (stock eager first)."""
    label: str
    python: str
    attention: str      # sdpa where torch has it (timm's Attention in 2.x), else matmul
    variants: list
    amps: list          # the precisions stock PyTorch can run here (args.amp, less those it cannot)
    version: str = ""
    bf16_brief: str = ""  # why bf16 runs 1 round of 1 step (stock bf16 slow: bf16_is_slow), or ''

    results: dict = field(default_factory=dict)   # dtype -> [ {variant: dit.py result} per round ]
    checks: dict = field(default_factory=dict)    # (dtype, variant) -> HCOps' verbose step


def torch_version(python):
    """(torch.__version__, has SDPA, compiles, '' or why stock PyTorch cannot
    run bf16 autocast: perf/dit/stock_bf16.py) of python's torch, or None
    (said why) where it has none."""
    try:
        proc = run([python, "-c", "import torch, torch.nn.functional as F; "
                    "print(torch.__version__, int(hasattr(F, 'scaled_dot_product_attention')), "
                    "int(hasattr(torch, 'compile')))"], child_env(), check=False)
    except OSError as e:
        return None, f"{python}: {e.strerror}"
    if proc.returncode != 0:
        return None, f"{python} cannot import torch"
    version, sdpa, compiles = proc.stdout.split()
    return (version, sdpa == "1", compiles == "1", stock_bf16_error(python, BF16_PROBE_TIMEOUT_S)), None


def routes(args, env):
    """The PyTorch builds to compare, the 2.x wheel first; each one missing is
    said in one line and left out. env: the runs' environment."""
    out = []
    for label, python in (("PyTorch 2.x wheel", args.torch2_python), ("Debian's PyTorch", args.debian_python)):
        if not python:
            print(f"{label}: no interpreter given: left out", flush=True)
            continue
        info, why = torch_version(python)
        if not info:
            print(f"{label}: {why}: left out", flush=True)
            continue
        version, sdpa, compiles, no_bf16 = info
        name = f"torch {version} ({'wheel' if '2.x' in label else 'Debian'})"
        amps = list(args.amp)
        if no_bf16 and "bf16" in amps:
            amps.remove("bf16")
            print(f"{name}: bf16 autocast left out: stock PyTorch cannot run it here ({no_bf16})", flush=True)
        if not amps:
            continue
        brief = "bf16" in amps and bf16_is_slow(args, name, python, env)
        variants = [Variant(STOCK, False, False)]
        if compiles:
            variants.append(Variant("torch.compile", False, True))
        variants.append(Variant("hcops-run", True, False))
        if compiles:
            variants.append(Variant("hcops-run + compile", True, True))
        out.append(Route(name, python,
                         "sdpa" if sdpa else "matmul", variants, amps, version, brief))
    return out


# The quick mode's probe: the same layer kind, small (its runs are DiT-tiny).
QUICK_SPEED_SHAPE = (256, 384, 384)


def bf16_is_slow(args, name, python, env):
    """Why python's torch's bf16 runs briefly ('' where it does not): its
    stock bf16 takes args.slow_bf16 times f32's time or more (a Linear's
    forward and backward, timed in a child with env), said in a line; 0 is
    always and inf never, without timing. Where it could not be timed:
    brief if the probe ran out of time, else not (said)."""
    brief = "its bf16 runs 1 round of 1 timed step"
    if args.slow_bf16 in (0, float("inf")):
        if args.slow_bf16 == 0:
            print(f"{name}: --slow-bf16 0: {brief}", flush=True)
        return "--slow-bf16 0" if args.slow_bf16 == 0 else ""
    shape = QUICK_SPEED_SHAPE if args.quick else SPEED_SHAPE
    layer = f"a Linear {shape[1]} -> {shape[2]} on {shape[0]} rows, forward and backward"
    try:
        f32, bf16 = stock_bf16_times(python, env, BF16_PROBE_TIMEOUT_S, shape)
    except SpeedProbeError as e:
        print(f"{name}: stock bf16 against f32 not timed ({layer}: {e}): "
              + (brief if e.timed_out else "its bf16 runs every round, as f32"), flush=True)
        return "stock bf16's probe ran out of time" if e.timed_out else ""
    ratio = bf16 / f32
    slow = ratio >= args.slow_bf16
    print(f"{name}: stock bf16 autocast {bf16 * 1e3:.1f} ms, f32 {f32 * 1e3:.1f} ms ({layer}): {ratio:.2f}x the "
          f"f32 time" + (f", at least --slow-bf16's {args.slow_bf16:g}: {brief}" if slow else ""), flush=True)
    return f"stock bf16 takes {ratio:.1f}x f32's time here" if slow else ""


def plan(args, route, amp):
    """(rounds, timed steps) of route in amp."""
    return (1, 1) if amp == "bf16" and route.bf16_brief else (args.rounds, args.steps)


def dit_command(args, route, variant, amp, steps, warmup):
    prefix = [args.hcops_run] if variant.hcops else []
    return [*prefix, route.python, DIT, "--model", args.model, "--batch", str(args.batch), "--steps", str(steps),
            "--warmup", str(warmup), "--threads", str(args.threads), "--seed", str(args.seed), "--json",
            "--autocast", amp, "--attention", route.attention] + (["--compile", "default"] if variant.compiled else [])


def warmup_of(args, route):
    return max(args.warmup, COMPILE_WARMUP) if any(v.compiled for v in route.variants) else args.warmup


class Progress:
    """[done/total] lines with the elapsed time, flushed as each run ends."""

    def __init__(self, total):
        self.total, self.done, self.t0 = total, 0, time.monotonic()

    def say(self, text):
        self.done += 1
        print(f"[{self.done:>2}/{self.total}] {time.monotonic() - self.t0:6.0f} s  {text}", flush=True)


def time_route(args, route, env, progress):
    warmup = warmup_of(args, route)
    for amp in route.amps:
        rounds = route.results.setdefault(amp, [])
        n_rounds, n_steps = plan(args, route, amp)
        for r in range(n_rounds):
            res = {}
            for v in alternated(route.variants, r):
                # --quick judges no timing: an HCOps variant's runs are
                # under HCOPS_VERBOSE=1, the last its verbose step
                # (check_route's), a run fewer each.
                verbose = args.quick and v.hcops
                proc = run(dit_command(args, route, v, amp, n_steps, warmup),
                           dict(env, HCOPS_VERBOSE="1") if verbose else env)
                res[v.name] = json_result(proc)
                note = " (under HCOPS_VERBOSE=1)" if verbose else ""
                progress.say(f"{route.label} {DTYPES[amp]} round {r + 1}: {v.name} "
                             f"{res[v.name]['median_s']:.3f} s a step{note}")
                if verbose:
                    record_check(route, amp, v, proc, warmup)
            rounds.append(res)


@dataclass
class Ran:
    """What one HCOPS_VERBOSE=1 step of an HCOps variant shows HCOps ran."""
    gemms: int = 0
    gemm_ms: float = 0.0
    ops: dict = field(default_factory=dict)       # name -> (calls, ms)
    declines: dict = field(default_factory=dict)  # (op, reason) -> calls
    step_s: float = 0.0
    families: set = field(default_factory=set)
    whole_run: bool = False                       # steps not told apart: the warm-up's lines counted too


def read_verbose(stderr, warmup):
    """What the timed step's lines show: the warm-up steps' are dropped (the
    optimizer's lines close each step, as hcops-prof --skip-steps reads them);
    where they cannot be told apart, the whole run's (said)."""
    log = logparse.parse(stderr.splitlines(keepends=True))
    ran = Ran()
    try:
        log = steps.skip(log, warmup)
    except steps.StepError:
        ran.whole_run = True
    for rec in log.records:
        ran.families.add(rec.impl)
        if rec.part == "gemm":
            ran.gemms += 1
            ran.gemm_ms += rec.ms
        else:  # operators, and the oneDNN primitives HCOps ran
            calls, ms = ran.ops.get(rec.name, (0, 0.0))
            ran.ops[rec.name] = (calls + 1, ms + rec.ms)
    for (op, _dtype, _shape, reason), calls in log.fallbacks.items():
        ran.declines[(op, reason)] = ran.declines.get((op, reason), 0) + calls
    return ran


def record_check(route, amp, v, proc, warmup):
    """What a verbose run of HCOps variant v shows it ran: its first timed step."""
    ran = read_verbose(proc.stderr, warmup)
    ran.step_s = json_result(proc)["step_times"][0]
    route.checks[(amp, v.name)] = ran
    return ran


def check_route(args, route, env, progress):
    """One verbose step of each HCOps variant not yet checked (--quick's
    timed runs are their checks): warm-up steps as timed, then one."""
    for amp in route.amps:
        for v in (v for v in route.variants if v.hcops and (amp, v.name) not in route.checks):
            warmup = warmup_of(args, route)
            proc = run(dit_command(args, route, v, amp, 1, warmup), dict(env, HCOPS_VERBOSE="1"))
            ran = record_check(route, amp, v, proc, warmup)
            progress.say(f"{route.label} {DTYPES[amp]}: {v.name} under HCOPS_VERBOSE=1: {ran.gemms} HCOps GEMM "
                         f"calls, {sum(c for c, _ in ran.ops.values())} operator calls")


def medians(rounds, name):
    return statistics.median(t for rnd in rounds for t in rnd[name]["step_times"])


def speedup(rounds, name, over=STOCK):
    """Median over rounds of over's median step over name's: each round's load cancels."""
    return statistics.median(rnd[over]["median_s"] / rnd[name]["median_s"] for rnd in rounds)


def loss_gap(rounds, name, ref=STOCK):
    """The largest relative difference of name's losses from ref's (stock eager's), step by step, over rounds."""
    return max((rel_diff(a, b) for rnd in rounds for a, b in zip(rnd[name]["losses"], rnd[ref]["losses"])),
               default=0.0)


def fails_alike(rounds, name, ref, tol):
    """Whether name's losses follow ref's step by step where ref's are not
    all finite: not finite at the same steps, within tol where both are."""
    pairs = [(a, b) for rnd in rounds for a, b in zip(rnd[name]["losses"], rnd[ref]["losses"])]
    return any(not math.isfinite(b) for _, b in pairs) and all(
        math.isfinite(a) == math.isfinite(b) and (not math.isfinite(a) or rel_diff(a, b) <= tol) for a, b in pairs)


def first_bad_step(rounds, name):
    """The first step (from 1, warm-up steps not counted) whose loss is not finite in some round, or None."""
    bad = [i for rnd in rounds for i, x in enumerate(rnd[name]["losses"]) if not math.isfinite(x)]
    return min(bad) + 1 if bad else None


def peaks(args):
    """{amp: GFLOPS} of the machine at args.threads (hcops-peak's best family), or {} (said why)."""
    machine = Machine(built_tool)
    out = {}
    try:
        for amp, precision in (("none", "f32"), ("bf16", "bf16")):
            value = machine.peak(precision, args.threads)
            if value:
                out[amp] = value
    except MachineError as e:
        print(f"no peak: {e}", flush=True)
    return out


CSV_COLUMNS = ["torch", "dtype", "variant", "round", "position", "step", "time_s", "loss", "model", "batch",
               "threads", "cpu", "route"]


def csv_rows(args, all_routes, cpu):
    for route in all_routes:
        for amp, rounds in route.results.items():
            for r, rnd in enumerate(rounds, 1):
                order = list(rnd)
                for name, res in rnd.items():
                    for s, (t, loss) in enumerate(zip(res["step_times"], res["losses"])):
                        yield [route.version, DTYPES[amp], name, r, order.index(name) + 1, s, f"{t:.6f}", repr(loss),
                               args.model, args.batch, args.threads, cpu, route.label]


VARIANT_ORDER = [STOCK, "torch.compile", "hcops-run", "hcops-run + compile"]


def read_csv(path):
    """(args-like namespace, routes, cpu) from a CSV csv_rows wrote, for
    --replot; a CSV without the route column (before 2026-12-03) names
    each PyTorch by its version."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise ValueError(f"{path}: no rows")
    amp_of = {d: a for a, d in DTYPES.items()}
    by_label = {}
    for row in rows:
        label = row.get("route") or f"torch {row['torch']}"
        route = by_label.setdefault(label, Route(label, "", "", [], [], row["torch"]))
        amp = amp_of[row["dtype"]]
        rounds = route.results.setdefault(amp, [])
        r = int(row["round"]) - 1
        while len(rounds) <= r:
            rounds.append({})
        res = rounds[r].setdefault(row["variant"], {"step_times": [], "losses": []})
        res["step_times"].append(float(row["time_s"]))
        res["losses"].append(float(row["loss"]))
    for route in by_label.values():
        names = {name for rounds in route.results.values() for rnd in rounds for name in rnd}
        route.variants = [Variant(n, n.startswith("hcops-run"), n.endswith("compile")) for n in VARIANT_ORDER
                          if n in names]
        for rounds in route.results.values():
            for rnd in rounds:
                for res in rnd.values():
                    res["median_s"] = statistics.median(res["step_times"])
    first = rows[0]
    shown = argparse.Namespace(model=first["model"], batch=int(first["batch"]), threads=int(first["threads"]))
    return shown, list(by_label.values()), first["cpu"]


def summary(args, all_routes, peak, flops):
    """Prints the table; returns whether every HCOps variant's losses agree
    (with stock eager's, or, for hcops-run + compile where torch.compile's
    own are not finite, with torch.compile's step by step), and the stock
    variants whose losses do not agree with their eager's."""
    agree_all = True
    pytorch_disagrees = []
    head = f"{'PyTorch':<28}{'dtype':<7}{'variant':<22}{'median step':>12}{'vs stock':>10}{'GFLOPS':>9}" \
           f"{'of peak':>9}  losses vs stock"
    print(head)
    print("-" * len(head))
    for route in all_routes:
        for amp, rounds in route.results.items():
            for i, v in enumerate(route.variants):
                med = medians(rounds, v.name)
                rate = flops / med / 1e9
                of_peak = f"{100 * rate / peak[amp]:.1f}%" if amp in peak else "-"
                if v.name == STOCK:
                    losses = "(reference)"
                else:
                    gap = loss_gap(rounds, v.name)
                    ok = gap <= LOSS_RTOL[amp]
                    losses = f"{gap:.1e} {'agree' if ok else 'DISAGREE'} (limit {LOSS_RTOL[amp]:g})"
                    if not ok and not v.hcops:
                        # Stock PyTorch's own variant (torch.compile) against its
                        # eager: shown, and said at the end, but not HCOps' to answer.
                        bad = first_bad_step(rounds, v.name)
                        losses += " - PyTorch's own, without HCOps" + (
                            f" (not finite from timed step {bad})" if bad else "")
                        pytorch_disagrees.append(f"{route.label} {DTYPES[amp]} {v.name}")
                    elif not ok and v.compiled and COMPILED in rounds[0] and \
                            fails_alike(rounds, v.name, COMPILED, LOSS_RTOL[amp]):
                        # HCOps inside a compiled graph that stock's compile
                        # breaks in the same way: judged against that.
                        losses += f" - as {COMPILED}'s own, step by step"
                    else:
                        agree_all = agree_all and ok
                print(f"{route.label if i == 0 else '':<28}{DTYPES[amp] if i == 0 else '':<7}{v.name:<22}"
                      f"{med:>10.3f} s{speedup(rounds, v.name):>9.2f}x{rate:>9.1f}{of_peak:>9}  {losses}")
            if amp == "bf16" and route.bf16_brief:
                print(f"{'':<35}1 round of 1 timed step: {route.bf16_brief}")
            # Speed anchors among the variants that trained: one whose losses
            # went non-finite is no one's anchor (unless all did).
            def fastest(hcops):
                pool = [v for v in route.variants if v.hcops == hcops]
                sound = [v for v in pool if first_bad_step(rounds, v.name) is None] or pool
                return min(sound, key=lambda v: medians(rounds, v.name))
            best_stock, best_hcops = fastest(False), fastest(True)
            print(f"{'':<35}fastest with HCOps ({best_hcops.name}) over fastest without ({best_stock.name}): "
                  f"{speedup(rounds, best_hcops.name, best_stock.name):.2f}x")
    return agree_all, pytorch_disagrees


def print_checks(all_routes):
    """What HCOps ran in each verbose step; returns whether every HCOps variant ran HCOps' GEMMs."""
    ok = True
    for route in all_routes:
        for (amp, name), ran in route.checks.items():
            ops_ms = sum(ms for _, ms in ran.ops.values())
            ops = ", ".join(f"{op} x{calls}" for op, (calls, _) in sorted(ran.ops.items())) or "none"
            fine = ran.gemms > 0
            ok = ok and fine
            print(f"{route.label}, {DTYPES[amp]}, {name}: {ran.gemms} HCOps GEMM calls ({ran.gemm_ms / 1e3:.3f} s) "
                  f"and {sum(c for c, _ in ran.ops.values())} operator calls ({ops_ms / 1e3:.3f} s) in "
                  + ("the whole run (its steps could not be told apart), whose last step took" if ran.whole_run
                     else "a") + f" {ran.step_s:.3f} s step on {', '.join(sorted(ran.families)) or '-'}: "
                  f"{'OK' if fine else 'NO HCOps GEMM RAN'}")
            print(f"    operators: {ops}")
            if ran.declines:
                declined = ", ".join(f"{op} ({reason}) x{calls}"
                                     for (op, reason), calls in sorted(ran.declines.items()))
                print(f"    declined, left to PyTorch: {declined}")
    return ok


COLORS = {STOCK: "tab:gray", "torch.compile": "tab:orange", "hcops-run": "tab:blue",
          "hcops-run + compile": "tab:green"}


def plan_label(rounds):
    """'3 rounds of 3 steps': what one PyTorch and dtype ran, by its results."""
    steps = len(rounds[0][STOCK]["step_times"])
    return f"{len(rounds)} round{'s' * (len(rounds) != 1)} of {steps} step{'s' * (steps != 1)}"


def plot(args, all_routes, path, cpu):
    """Median step time per variant (bars), grouped by PyTorch and dtype, with
    the speedup over stock eager above each bar."""
    plt = pyplot()
    if not plt:
        return
    groups = [(route, amp) for route in all_routes for amp in route.results]
    fig, ax = plt.subplots(figsize=(3 + 2.2 * len(groups), 4.5))
    times = [medians(route.results[amp], v.name) for route, amp in groups for v in route.variants]
    # Stock bf16 without a fast path takes 20-40x an f32 step: on a linear
    # axis the other bars would be slivers.
    log = max(times) > 10 * min(times)
    if log:
        ax.set_yscale("log")
    width = 0.2
    seen = set()
    for x, (route, amp) in enumerate(groups):
        rounds = route.results[amp]
        n = len(route.variants)
        for i, v in enumerate(route.variants):
            med = medians(rounds, v.name)
            off = (i - (n - 1) / 2) * width
            ax.bar(x + off, med, width, color=COLORS.get(v.name, f"C{i}"), label=None if v.name in seen else v.name)
            seen.add(v.name)
            ax.text(x + off, med, f"{speedup(rounds, v.name):.2f}x", ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(groups)), [f"{route.label}\n{DTYPES[amp]}: {plan_label(route.results[amp])}"
                                       for route, amp in groups], fontsize=8)
    ax.set_ylabel("median step time (s)" + (", log scale" if log else ""))
    ax.set_title(f"DiT-{args.model}/2, batch {args.batch}, {args.threads} threads: speedup over stock eager above "
                 f"each bar\n{cpu}", fontsize=9)
    ax.legend(fontsize=8)
    save_plot(fig, path)


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--torch2-python", default=os.path.join(BUILD, "torch2-venv", "bin", "python"),
                    help="the PyTorch 2.x venv's python (default: the build's torch2-venv); '' leaves it out")
    ap.add_argument("--debian-python", default="/usr/bin/python3",
                    help="Debian's python3 with python3-torch; '' leaves it out")
    ap.add_argument("--model", default="S", choices=sorted(CONFIGS))
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--rounds", type=int, help="rounds of every variant (default 3; --quick: 1)")
    ap.add_argument("--steps", type=int, default=3, help="timed steps per run")
    ap.add_argument("--warmup", type=int, default=1, help="untimed steps per run (at least 2 with torch.compile)")
    ap.add_argument("--amp", nargs="+", default=["none", "bf16"], choices=["none", "bf16"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--slow-bf16", type=float, default=4.0, metavar="RATIO",
                    help="where stock bf16 takes RATIO times f32's time or more (a Linear, timed first), that "
                         "PyTorch's bf16 runs 1 round of 1 timed step (default 4; inf: never, 0: always; "
                         "neither times the Linear)")
    ap.add_argument("--quick", action="store_true",
                    help="DiT-tiny, batch 2, 1 round (unless --rounds) of 1 step (make check)")
    ap.add_argument("--csv", help="every step of every run")
    ap.add_argument("--png", help="a bar chart of the median step times")
    ap.add_argument("--replot", metavar="CSV", help="only draw --png from a CSV this script wrote")
    args = ap.parse_args()
    if args.replot:
        if not args.png:
            ap.error("--replot draws into --png")
        return args
    if args.quick:
        args.model, args.batch, args.steps = "tiny", 2, 1
    if args.rounds is None:
        args.rounds = 1 if args.quick else 3
    if min(args.rounds, args.steps, args.batch, args.threads) < 1 or args.warmup < 0:
        ap.error("--rounds, --steps, --batch and --threads must be at least 1, --warmup at least 0")
    if not args.slow_bf16 >= 0:  # NaN too
        ap.error(f"--slow-bf16 {args.slow_bf16:g}: a ratio, 0 or more (inf: never)")
    args.hcops_run = os.environ.get("HCOPS_RUN", os.path.join(BUILD, "tools", "hcops-run"))
    if not (os.path.isabs(args.hcops_run) and os.access(args.hcops_run, os.X_OK)):
        ap.error(f"HCOPS_RUN={args.hcops_run} is not an absolute path to an executable (build first: make)")
    return args


def main():
    args = parse_args()
    if args.replot:
        try:
            shown, all_routes, cpu = read_csv(args.replot)
        except (OSError, ValueError, KeyError) as e:
            error(f"--replot {args.replot}: {e}")
            return 2
        plot(shown, all_routes, args.png, cpu)
        return 0
    cpu = cpu_label()
    print(f"HCOps DiT demo: DiT-{args.model}/2, batch {args.batch}, {args.threads} threads, {args.steps} timed "
          f"step{'s' * (args.steps != 1)} per run, {args.rounds} round{'s' * (args.rounds != 1)} alternated, "
          + " and ".join("bf16 autocast" if a == "bf16" else "f32" for a in args.amp), flush=True)
    print(f"CPU: {cpu}; 1-min load average at start {load_average():.2f}", flush=True)
    env = child_env(args.threads, drop=["HCOPS_VERBOSE", "HCOPS_TORCH_LIB"])
    all_routes = routes(args, env)
    if not all_routes:
        error("no PyTorch to run: neither --torch2-python nor --debian-python imports torch")
        return 2
    peak = peaks(args)
    flops = step_flops(args.model, args.batch)
    if peak:
        print(f"peaks (hcops-peak, {args.threads} threads): " +
              ", ".join(f"{DTYPES[a]} {g:.0f} GFLOPS" for a, g in peak.items()), flush=True)
    total = sum(plan(args, r, amp)[0] * len(r.variants) + (0 if args.quick else sum(v.hcops for v in r.variants))
                for r in all_routes for amp in r.amps)
    progress = Progress(total)
    try:
        for route in all_routes:
            print(f"\n== {route.label}: {', '.join(v.name for v in route.variants)} ({route.python})", flush=True)
            time_route(args, route, env, progress)
            check_route(args, route, env, progress)
    except RunError as e:
        error(str(e))
        return 2
    print(f"\n== Summary: DiT-{args.model}/2, batch {args.batch}, {args.threads} threads, {cpu}")
    print(f"{flops / 1e9:.1f} GFLOP of GEMMs a step; GFLOPS is that over the median step"
          + (", of peak against hcops-peak's " + ", ".join(f"{DTYPES[a]} {g:.0f}" for a, g in peak.items())
             + " GFLOPS" if peak else ""))
    agree, pytorch_disagrees = summary(args, all_routes, peak, flops)
    print("\nWhat HCOps ran (one step of each HCOps variant under HCOPS_VERBOSE=1):")
    ran = print_checks(all_routes)
    if args.csv:
        os.makedirs(os.path.dirname(os.path.abspath(args.csv)), exist_ok=True)
        write_csv(args.csv, CSV_COLUMNS, csv_rows(args, all_routes, cpu))
        print(f"wrote {args.csv}")
    if args.png:
        os.makedirs(os.path.dirname(os.path.abspath(args.png)), exist_ok=True)
        plot(args, all_routes, args.png, cpu)
    verdict = "HCOps ran" if ran else "HCOps DID NOT RUN its GEMMs in every HCOps variant"
    if pytorch_disagrees:
        print(f"\nPyTorch's own variants whose losses disagree with its eager's, without HCOps: "
              f"{'; '.join(pytorch_disagrees)}. Not counted against HCOps; an HCOps variant in the same graphs "
              f"is judged against them step by step where they are not finite.")
    print(f"demo: {verdict}; HCOps' losses {'agree' if agree else 'DISAGREE'}"
          + (f"; PyTorch's own DISAGREE in {len(pytorch_disagrees)} variant(s)" if pytorch_disagrees else ""))
    return 0 if ran and agree else 1


if __name__ == "__main__":
    sys.exit(main())

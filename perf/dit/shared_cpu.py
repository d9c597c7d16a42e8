#!/usr/bin/env python3
"""HCOps on a CPU shared with other work: the DiT training step and the
GEMM trace replay, stock against HCOps, in three conditions:

  quiet       nothing else runs;
  busy        one busy process (a shell loop, standing in for an MPI
              progress thread or a helper of the same job), which this
              script starts before and stops after each run, in the
              script's session;
  busy-other  the same loop in a session of its own (setsid: a monitoring
              agent, another job). Linux's autogroups weigh each session
              alike, so this one gets a whole core and the step's threads
              share the other;
  dataloader  the step's latents come from a torch DataLoader with one worker
              process doing CPU-side augmentation (dit.py --loader-workers 1).

Each configuration runs in a process of its own; stock and HCOps alternate
within each round (A-B, B-A, ...). Reported: the median step per variant
and condition, HCOps' speed-up over stock in the same condition (median of
the per-round ratios), and each variant's slow-down against its own quiet
step. The replay (hcops-replay, the DiT-S/2 trace of perf/workloads)
runs libhcops.so and OpenBLAS, quiet and busy.

  HCOPS_RUN=build/tools/hcops-run perf/dit/shared_cpu.py --python build/torch2-venv/bin/python \\
      [--model S] [--rounds 3] [--steps 3] [--conditions quiet,busy,busy-other,dataloader] [--no-replay] \\
      [--csv doc/perf/shared_cpu_torch2.csv] [--png doc/perf/shared_cpu_torch2.png]
  perf/dit/shared_cpu.py --replot doc/perf/shared_cpu_torch2.csv --png doc/perf/shared_cpu_torch2.png
"""
import argparse
import contextlib
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # perf/, for benchlib
from benchlib.blas_peers import PEERS, REPLAY  # noqa: E402
from benchlib.build import BUILD  # noqa: E402
from benchlib.child import child_env, json_result, run  # noqa: E402
from benchlib.report import cpu_model, load_average, pyplot, read_csv_rows, save_plot, write_csv  # noqa: E402
from benchlib.rounds import alternated  # noqa: E402
from benchlib.traces import workloads_dir  # noqa: E402

DIT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dit.py")
TRACE = "dit-s2-bs8-step.sgemm.csv"
CONDITIONS = ("quiet", "busy", "busy-other", "dataloader")
CSV_COLUMNS = ["bench", "torch", "condition", "round", "variant", "position", "time_s"]


@contextlib.contextmanager
def condition_of(name):
    """The machine as condition `name` has it while the block runs: for
    "busy" and "busy-other", a shell busy loop, stopped afterwards."""
    busy = None
    if name.startswith("busy"):
        busy = subprocess.Popen(["sh", "-c", "while :; do :; done"], start_new_session=name == "busy-other")
    try:
        yield
    finally:
        if busy:
            busy.kill()
            busy.wait()


def dit_step(python, prefix, args, condition, env):
    cmd = [*prefix, python, DIT, "--model", args.model, "--batch", str(args.batch), "--steps", str(args.steps),
           "--warmup", str(args.warmup), "--threads", str(args.threads), "--json"]
    if condition == "dataloader":
        cmd += ["--loader-workers", "1"]
    with condition_of(condition):
        res = json_result(run(cmd, env))
    return res["median_s"], res["losses"]


def replay(lib, threads, condition):
    trace = os.path.join(workloads_dir(), TRACE)
    with condition_of(condition):
        res = json_result(run([REPLAY, lib, trace, "3"], child_env(threads)))
    return res["linear_s"] + res["attention_s"]


def summarize(rows, bench, variants):
    """{condition: {variant: median time}} and {condition: median per-round stock/hcops ratio}."""
    med, ratio = {}, {}
    for cond in dict.fromkeys(r[2] for r in rows if r[0] == bench):
        mine = [r for r in rows if r[0] == bench and r[2] == cond]
        med[cond] = {v: statistics.median(float(r[6]) for r in mine if r[4] == v) for v in variants}
        rounds = {}
        for r in mine:
            rounds.setdefault(r[3], {})[r[4]] = float(r[6])
        ratio[cond] = statistics.median(t[variants[0]] / t[variants[1]] for t in rounds.values() if len(t) == 2)
    return med, ratio


def print_table(title, med, ratio, variants):
    print(f"\n{title}")
    print(f"| condition | {variants[0]} | {variants[1]} | {variants[1]} vs {variants[0]} | "
          f"{variants[0]} slow-down | {variants[1]} slow-down |")
    print("| --- | --- | --- | --- | --- | --- |")
    quiet = med.get("quiet")
    for cond, m in med.items():
        slow = [f"{m[v] / quiet[v]:.2f}x" if quiet else "" for v in variants]
        print(f"| {cond} | {m[variants[0]]:.3f} s | {m[variants[1]]:.3f} s | {ratio[cond]:.2f}x | {slow[0]} | "
              f"{slow[1]} |")


def plot(rows, path, cpu):
    plt = pyplot()
    if not plt:
        return
    benches = list(dict.fromkeys(r[0] for r in rows))
    fig, axes = plt.subplots(1, len(benches), figsize=(6.5 * len(benches), 4), squeeze=False)
    for ax, bench in zip(axes[0], benches):
        variants = list(dict.fromkeys(r[4] for r in rows if r[0] == bench))
        med, ratio = summarize(rows, bench, variants)
        for x, cond in enumerate(med):
            for off, v, color in zip((-0.2, 0.2), variants, ("tab:gray", "tab:blue")):
                ax.bar(x + off, med[cond][v], 0.4, color=color, label=v if x == 0 else None)
            ax.text(x + 0.2, med[cond][variants[1]], f"{ratio[cond]:.2f}x", ha="center", va="bottom", fontsize=8)
        ax.set_xticks(range(len(med)), list(med))
        ax.set_ylabel("median time (s)")
        torch = next(r[1] for r in rows if r[0] == bench)
        ax.set_title(f"{bench}" + (f", torch {torch}" if torch else ""), fontsize=9)
        ax.legend(fontsize=8)
    fig.suptitle(f"2 threads; quiet, 1 core busy (same / other session), DataLoader worker: {cpu}", fontsize=9)
    save_plot(fig, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--python", help="the python whose torch runs the step (Debian's 1.13 or a 2.x venv)")
    ap.add_argument("--model", default="S")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--conditions", default=",".join(CONDITIONS))
    ap.add_argument("--no-replay", action="store_true", help="only the DiT step")
    ap.add_argument("--csv")
    ap.add_argument("--png")
    ap.add_argument("--replot", metavar="CSV", help="only draw --png from a CSV this script wrote")
    args = ap.parse_args()
    if args.replot:
        if not args.png:
            ap.error("--replot draws into --png")
        plot(read_csv_rows(args.replot), args.png, cpu_model())
        return 0
    if not args.python:
        ap.error("--python is required")
    conditions = [c for c in args.conditions.split(",") if c]
    unknown = set(conditions) - set(CONDITIONS)
    if unknown:
        ap.error(f"unknown conditions {', '.join(sorted(unknown))} (known: {', '.join(CONDITIONS)})")
    hcops_run = os.environ.get("HCOPS_RUN", os.path.join(BUILD, "tools", "hcops-run"))
    env = child_env(args.threads, drop=["HCOPS_VERBOSE", "HCOPS_TORCH_LIB"])
    torch_version = subprocess.run([args.python, "-c", "import torch; print(torch.__version__)"],
                                   capture_output=True, text=True).stdout.strip()
    print(f"DiT-{args.model}/2, batch {args.batch}, {args.threads} threads, torch {torch_version} ({args.python})")
    print(f"CPU: {cpu_model()}, {os.cpu_count()} logical CPUs, 1-min load average at start {load_average():.2f}")
    rows = []
    variants = {"stock": (), "hcops": (hcops_run,)}
    losses = {}
    for r in range(args.rounds):
        for cond in conditions:
            order = alternated(list(variants), r)
            line = []
            for pos, name in enumerate(order):
                t, loss = dit_step(args.python, variants[name], args, cond, env)
                losses.setdefault((cond, name), loss)
                rows.append(["dit_step", torch_version, cond, r + 1, name, pos + 1, f"{t:.6f}"])
                line.append(f"{name} {t:.3f} s")
            print(f"round {r + 1} {cond}: " + ", ".join(line), flush=True)
    step_variants = list(variants)
    med, ratio = summarize(rows, "dit_step", step_variants)
    print_table(f"DiT-{args.model}/2 step, median of {args.rounds} rounds x {args.steps} steps", med, ratio,
                step_variants)
    for cond in conditions:
        a, b = losses[(cond, "stock")], losses[(cond, "hcops")]
        worst = max(abs(x - y) / max(abs(x), 1e-30) for x, y in zip(a, b))
        print(f"  {cond}: losses of stock and hcops agree within {worst:.1e}")
    if not args.no_replay:
        libs = {"openblas": PEERS["openblas"][0], "hcops": PEERS["hcops"][0]}
        for r in range(args.rounds):
            for cond in [c for c in conditions if c != "dataloader"]:
                for pos, name in enumerate(alternated(list(libs), r)):
                    t = replay(libs[name], args.threads, cond)
                    rows.append(["gemm_replay", "", cond, r + 1, name, pos + 1, f"{t:.6f}"])
        med, ratio = summarize(rows, "gemm_replay", list(libs))
        print_table(f"GEMM trace replay ({TRACE}, f32, best of 3 passes), median of {args.rounds} rounds", med, ratio,
                    list(libs))
    if args.csv:
        write_csv(args.csv, CSV_COLUMNS, rows)
        print(f"wrote {args.csv}")
    if args.png:
        plot(rows, args.png, cpu_model())
    return 0


if __name__ == "__main__":
    sys.exit(main())

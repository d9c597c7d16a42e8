#!/usr/bin/env python3
"""The first training step against the steady one: what a short job, a
benchmark of a few steps or a restarted job pays before HCOps is at speed
(its threads and packing buffers, huge pages faulted in and zeroed under
--mem, the attention products' first calls). DiT (perf/dit/dit.py) from a
fresh process with no warm-up, stock and under each hcops-run mode,
alternated round by round; per configuration the median over rounds of the
first step's time, of the steady step's (the median of steps 2..N) and of
their per-round ratio. Target (issue 28): first <= 1.2x steady in every mode.

  $PYTHON perf/dit/first_step.py [--python PY] [--model S] [--batch 8] [--steps 4] [--rounds 3]
                                 [--modes stock,hcops,mem,automem] [--autocast none] [--csv F] [--png F]
  $PYTHON perf/dit/first_step.py --replot F.csv --png F.png

--python: the interpreter with torch (Debian's 1.13 by default; a venv's
python for 2.x). Each configuration runs in a process of its own.
"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # perf/, for benchlib
from benchlib.build import BUILD, PYTHON  # noqa: E402
from benchlib.child import child_env, json_result, run  # noqa: E402
from benchlib.report import cpu_model, load_average, pyplot, read_csv_rows, save_plot, write_csv  # noqa: E402
from benchlib.rounds import rotated  # noqa: E402

DIT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dit.py")
MODES = {"stock": None, "hcops": [], "mem": ["--mem"], "automem": ["--automem"]}
TARGET = 1.2
CSV_COLUMNS = ["model", "batch", "threads", "autocast", "mode", "first_s", "steady_s", "first_over_steady"]


def plot(rows, path, cpu, title):
    """Per mode, the first and the steady step's median time side by side,
    the median first/steady ratio above; rows as the CSV's."""
    plt = pyplot()
    if not plt:
        return
    col = {c: i for i, c in enumerate(CSV_COLUMNS)}
    fig, ax = plt.subplots(figsize=(1.5 + 1.4 * len(rows), 4))
    for x, r in enumerate(rows):
        first, steady = float(r[col["first_s"]]), float(r[col["steady_s"]])
        ax.bar(x - 0.2, first, 0.4, color="tab:red", label="first step" if x == 0 else None)
        ax.bar(x + 0.2, steady, 0.4, color="tab:blue", label="steady step" if x == 0 else None)
        ax.text(x, max(first, steady), f"{float(r[col['first_over_steady']]):.2f}x", ha="center", va="bottom",
                fontsize=9)
    ax.set_xticks(range(len(rows)), [r[col["mode"]] for r in rows])
    ax.set_ylabel("median step time (s)")
    ax.set_ylim(top=1.25 * max(float(r[col[c]]) for r in rows for c in ("first_s", "steady_s")))
    first = rows[0]
    # Three lines: with two modes the figure is narrower than one long line.
    ax.set_title(f"{title}DiT-{first[col['model']]}/2, batch {first[col['batch']]}, {first[col['threads']]} "
                 f"threads, autocast {first[col['autocast']]}\nfirst / steady step (target <= {TARGET}x)\n{cpu}",
                 fontsize=8)
    ax.legend(loc="upper right", ncols=2)
    save_plot(fig, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--python", default=PYTHON)
    ap.add_argument("--model", default="S")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=4, help="steps per process, the first included (at least 2)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--autocast", default="none", choices=("none", "bf16"))
    ap.add_argument("--attention", default="sdpa", choices=("matmul", "sdpa"))
    ap.add_argument("--csv")
    ap.add_argument("--png", help="a bar chart of the first and steady steps per mode")
    ap.add_argument("--title", default="", help="what the chart's title begins with (e.g. the torch version)")
    ap.add_argument("--replot", metavar="CSV", help="only draw --png from a CSV this script wrote")
    args = ap.parse_args()
    if args.replot:
        if not args.png:
            ap.error("--replot draws into --png")
        plot(read_csv_rows(args.replot), args.png, cpu_model(), args.title)
        return 0
    modes = args.modes.split(",")
    bad = [m for m in modes if m not in MODES]
    if bad or args.steps < 2:
        ap.error(f"--modes of {', '.join(MODES)}; --steps at least 2")
    hcops_run = os.environ.get("HCOPS_RUN", os.path.join(BUILD, "tools", "hcops-run"))
    env = child_env(args.threads, drop=["HCOPS_VERBOSE", "HCOPS_TORCH_LIB"])
    print(f"DiT-{args.model}/2, batch {args.batch}, {args.threads} threads, autocast {args.autocast}, "
          f"{args.python}; CPU {cpu_model()}, load average {load_average()}", flush=True)
    got = {m: [] for m in modes}  # per round: (first s, steady s)
    for r in range(args.rounds):
        for mode in rotated(modes, r):
            prefix = [] if MODES[mode] is None else [hcops_run, *MODES[mode]]
            cmd = [*prefix, args.python, DIT, "--model", args.model, "--batch", str(args.batch), "--steps",
                   str(args.steps), "--warmup", "0", "--threads", str(args.threads), "--autocast", args.autocast,
                   "--attention", args.attention, "--json"]
            times = json_result(run(cmd, env))["step_times"]
            got[mode].append((times[0], statistics.median(times[1:])))
            print(f"round {r + 1}: {mode}: first {times[0]:.3f} s, steady {statistics.median(times[1:]):.3f} s",
                  flush=True)
    print(f"\n{'mode':<9} {'first s':>8} {'steady s':>9} {'first/steady':>13}  target <= {TARGET}")
    rows = []
    for mode in modes:
        first = statistics.median(f for f, _ in got[mode])
        steady = statistics.median(s for _, s in got[mode])
        ratio = statistics.median(f / s for f, s in got[mode])
        rows.append([args.model, args.batch, args.threads, args.autocast, mode, f"{first:.4f}", f"{steady:.4f}",
                     f"{ratio:.3f}"])
        note = "" if mode == "stock" else ("met" if ratio <= TARGET else "MISSED")
        print(f"{mode:<9} {first:>8.3f} {steady:>9.3f} {ratio:>12.2f}x  {note}")
    print(f"load average at the end {load_average()}")
    if args.csv:
        write_csv(args.csv, CSV_COLUMNS, rows)
        print(f"wrote {args.csv}")
    if args.png:
        plot(rows, args.png, cpu_model(), args.title)
    return 0


if __name__ == "__main__":
    sys.exit(main())

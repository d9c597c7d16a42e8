#!/usr/bin/env python3
"""Iallreduce/compute overlap with plain MPI versus libhcops_mpi.so (LD_PRELOAD).

Runs build/perf/hcops-mpi-overlap (perf/mpi_overlap.c, OSU osu_iallreduce method)
under mpirun with 2 ranks, once per configuration and round, alternating the order
of the configurations from round to round (A-B, then B-A, ...) so that drift in
machine load hits all of them alike. Configurations: plain MPI or the wrapper,
each with mpirun's default binding (a core per rank) and/or --bind-to none.
Each run measures both compute kinds (busy: CPU-bound loop; idle: sleep).

Prints, per binding, one table of medians over the rounds: overlap % plain vs
hcops for idle and for busy compute; the time of Iallreduce + compute + Wait of
hcops over plain with the same compute for both (plain's pure comm time, from a
reference run first); and the pure-comm time (Iallreduce + Wait), plain, hcops
and their ratio. The OSU overlap % alone can flatter a configuration whose comm
is slow: its compute is calibrated to its own, longer, comm time. Checks the target: with the wrapper, idle compute hides at
least 90 % of the allreduce from 1 MiB up.

  /usr/bin/python3 perf/mpi_overlap.py [--rounds 3] [--bind both|core|none]
      [--csv rounds.csv] [--png overlap.png] [--max-size BYTES] [--budget S]

Environment: HCOPS_BUILD (default: build/ beside perf/), MPIRUN (mpirun).
Exit status: 0 done (whether or not the target is met; it is printed),
1 --strict and the target missed, 2 usage or run error.
"""
import argparse
import statistics
import sys
import time

from benchlib import mpi
from benchlib.build import LIBHCOPS_MPI, program, require
from benchlib.child import RunError, child_env, lines_starting, run
from benchlib.report import error, load_average, pyplot, save_plot, size_label, write_csv
from benchlib.rounds import alternated

BENCH = program("hcops-mpi-overlap")
FIELDS = ["kind", "bytes", "iters", "pure_med_us", "pure_min_us", "target_us", "compute_us", "overall_us",
          "exposed_us", "overlap_pct", "wrapper", "fixed_target_us", "fixed_compute_us", "fixed_overall_us"]
TARGET_PCT = 90.0
TARGET_FROM = 1 << 20


def mpirun_cmd(args, hcops, bind, fixed=None):
    cmd = mpi.mpirun(args.np, bind)
    if hcops:
        cmd += ["-x", "LD_PRELOAD=" + LIBHCOPS_MPI, "-x", "HCOPS_MPI_VERBOSE=1"]
    cmd += [BENCH, "--csv", "--budget", str(args.budget), "--min-size", str(args.min_size), "--max-size",
            str(args.max_size), "--factor", str(args.factor)]
    if fixed:
        cmd += ["--fixed-us", ",".join(f"{x:.1f}" for x in fixed)]
    return cmd


def run_once(args, hcops, bind, fixed=None):
    cmd = mpirun_cmd(args, hcops, bind, fixed)
    load0 = load_average()
    t0 = time.monotonic()
    proc = run(cmd, child_env(drop=["HCOPS_MPI_VERBOSE"]))
    elapsed = time.monotonic() - t0
    rows = []
    header = [l for l in proc.stdout.splitlines() if l.startswith("# hcops-mpi-overlap") or l.startswith("# CPUs")]
    for line in proc.stdout.splitlines():
        if not line.startswith("csv,"):
            continue
        parts = line.split(",")[1:]
        row = dict(zip(FIELDS, parts))
        for k in FIELDS[1:]:
            row[k] = float(row[k])
        row["bytes"] = int(row["bytes"])
        rows.append(row)
    if not rows:
        raise RunError(f"{' '.join(cmd)} printed no csv line")
    wrapped = {int(r["wrapper"]) for r in rows}
    if wrapped != {1 if hcops else 0}:
        raise RunError(f"{' '.join(cmd)}: libhcops_mpi.so {'not ' if hcops else ''}loaded as expected")
    return rows, header, lines_starting(proc, mpi.STATS_PREFIX), elapsed, load0, load_average()


def size_axis(ax, sizes):
    """A log2 x axis with a tick per message size."""
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes)
    ax.set_xticklabels([size_label(s) for s in sizes], rotation=45, fontsize=8)


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    mpi.add_options(ap, ["both", "core", "none"], "both")
    ap.add_argument("--min-size", type=int, default=4 << 10)
    ap.add_argument("--max-size", type=int, default=64 << 20)
    ap.add_argument("--factor", type=int, default=4)
    ap.add_argument("--budget", type=float, default=0.4, help="seconds per phase and size in each run")
    ap.add_argument("--csv", help="write every round's rows here")
    ap.add_argument("--png", help="plot overlap and pure-comm time per size (matplotlib)")
    ap.add_argument("--strict", action="store_true", help="exit 1 if the target is missed")
    args = ap.parse_args()
    require(BENCH, LIBHCOPS_MPI)
    binds = ["core", "none"] if args.bind == "both" else [args.bind]
    configs = [(hcops, bind) for bind in binds for hcops in (False, True)]
    name = {False: "plain", True: "hcops"}
    bind_label = {"core": "mpirun default binding (--bind-to core for 2 ranks)", "none": "--bind-to none"}

    all_rows = []
    t_start = time.monotonic()
    # Equal-compute comparison: the OSU overlap % of each configuration is taken
    # with compute as long as its own pure comm time; the "fixed" phase runs every
    # configuration with the same compute times: plain MPI's pure comm times,
    # from one reference run (plain, first binding).
    try:
        ref_rows = run_once(args, False, binds[0])[0]
    except RunError as e:
        error(e)
        return 2
    ref_sizes = sorted({r["bytes"] for r in ref_rows})
    fixed = [statistics.median(r["pure_med_us"] for r in ref_rows if r["bytes"] == b) for b in ref_sizes]
    print("reference run (plain, bind=" + binds[0] + "): fixed compute per size, us: "
          + ", ".join(f"{size_label(b)} {x:.1f}" for b, x in zip(ref_sizes, fixed)), flush=True)
    print(f"mpi_overlap.py: {args.np} ranks, {args.rounds} rounds, configurations "
          + ", ".join(f"{name[h]}/{b}" for h, b in configs) + "; order reversed every other round", flush=True)
    for rnd in range(args.rounds):
        for hcops, bind in alternated(configs, rnd):
            try:
                rows, header, stats, elapsed, l0, l1 = run_once(args, hcops, bind, fixed)
            except RunError as e:
                print(f"mpi_overlap.py: {e}", file=sys.stderr)
                return 2
            print(f"  round {rnd + 1} {name[hcops]:5s} bind={bind:4s} {elapsed:5.1f} s, load {l0:.2f}->{l1:.2f}"
                  + (f"  [{header[1][2:]}]" if len(header) > 1 else ""), flush=True)
            for s in stats:
                print("    " + s, flush=True)
            for r in rows:
                r.update(round=rnd + 1, config=name[hcops], bind=bind, load_before=l0, load_after=l1)
                all_rows.append(r)
    total = time.monotonic() - t_start

    sizes = sorted({r["bytes"] for r in all_rows})

    def pick(config, bind, kind, size, field):
        return [r[field] for r in all_rows
                if r["config"] == config and r["bind"] == bind and r["kind"] == kind and r["bytes"] == size]

    target_ok = {}
    summary = {}
    for bind in binds:
        print(f"\nBinding: {bind_label[bind]}. Medians over {args.rounds} rounds. ovl: overlap % (OSU: compute as "
              f"long as the configuration's own pure comm); eq: Iallreduce+compute+Wait time, hcops/plain, with the "
              f"same compute (plain's pure comm time) for both; pure: Iallreduce+Wait median time, us.")
        print(f"{'':>8} | {'idle compute':^26} | {'busy compute':^26} | {'pure comm':^27}")
        print(f"{'size':>8} | {'ovl plain':>9} {'ovl hcops':>9} {'eq':>6} | {'ovl plain':>9} {'ovl hcops':>9} {'eq':>6} | "
              f"{'plain us':>8} {'hcops us':>8} {'ratio':>9}")
        ok = None if sizes[-1] < TARGET_FROM else True
        for size in sizes:
            o = {(c, k): med(pick(c, bind, k, size, "overlap_pct")) for c in ("plain", "hcops") for k in ("idle", "busy")}
            # Pure comm: both kinds' sections measure it; the median over all of them.
            pp = med(pick("plain", bind, "idle", size, "pure_med_us") + pick("plain", bind, "busy", size, "pure_med_us"))
            ph = med(pick("hcops", bind, "idle", size, "pure_med_us") + pick("hcops", bind, "busy", size, "pure_med_us"))
            eq = {k: med(pick("hcops", bind, k, size, "fixed_overall_us")) / med(pick("plain", bind, k, size, "fixed_overall_us"))
                  for k in ("idle", "busy")}
            summary[(bind, size)] = (o, pp, ph, eq)
            print(f"{size_label(size):>8} | {o['plain', 'idle']:9.1f} {o['hcops', 'idle']:9.1f} {eq['idle']:6.2f} | "
                  f"{o['plain', 'busy']:9.1f} {o['hcops', 'busy']:9.1f} {eq['busy']:6.2f} | "
                  f"{pp:8.1f} {ph:8.1f} {ph / pp:9.2f}")
            if size >= TARGET_FROM and not o["hcops", "idle"] >= TARGET_PCT:
                ok = False
        target_ok[bind] = ok
        print(f"target (hcops, idle compute, >= {TARGET_PCT:.0f}% overlap from {size_label(TARGET_FROM)} up): "
              + {True: "met", False: "NOT met", None: "not measured (no size that large)"}[ok])
    print(f"\ntotal runtime {total:.0f} s")

    if args.csv:
        cols = ["round", "config", "bind", "load_before", "load_after"] + FIELDS
        write_csv(args.csv, cols, ([r[c] for c in cols] for r in all_rows))
        print(f"wrote {args.csv}")
    plt = pyplot() if args.png else None
    if plt:
        fig, axes = plt.subplots(len(binds), 3, figsize=(17, 4.4 * len(binds)), squeeze=False)
        styles = {("plain", "idle"): "C0--o", ("hcops", "idle"): "C0-o", ("plain", "busy"): "C3--s",
                  ("hcops", "busy"): "C3-s"}
        for i, bind in enumerate(binds):
            ax = axes[i][0]
            for (c, k), st in styles.items():
                ax.plot(sizes, [summary[(bind, s)][0][c, k] for s in sizes], st, label=f"{c}, {k} compute")
            ax.axhline(TARGET_PCT, color="grey", lw=0.8, ls=":")
            size_axis(ax, sizes)
            ax.set_ylim(-3, 103)
            ax.set_ylabel("overlap %")
            ax.set_title(f"Iallreduce overlap, {args.np} ranks, {bind_label[bind]}", fontsize=9)
            ax.legend(fontsize=8)
            ax = axes[i][1]
            ax.plot(sizes, [summary[(bind, s)][1] for s in sizes], "k--o", label="plain")
            ax.plot(sizes, [summary[(bind, s)][2] for s in sizes], "k-o", label="hcops")
            size_axis(ax, sizes)
            ax.set_yscale("log")
            ax.set_ylabel("pure comm (Iallreduce+Wait), us")
            ax.set_title(f"pure comm time, median, {bind_label[bind]}", fontsize=9)
            ax.legend(fontsize=8)
            ax = axes[i][2]
            ax.plot(sizes, [summary[(bind, s)][3]["idle"] for s in sizes], "C0-o", label="idle compute")
            ax.plot(sizes, [summary[(bind, s)][3]["busy"] for s in sizes], "C3-s", label="busy compute")
            ax.axhline(1.0, color="grey", lw=0.8, ls=":")
            size_axis(ax, sizes)
            ax.set_yscale("log")
            ax.set_ylabel("hcops / plain")
            ax.set_title("Iallreduce+compute+Wait at equal compute, hcops/plain (<1: faster)", fontsize=9)
            ax.legend(fontsize=8)
        save_plot(fig, args.png, dpi=110)
    if args.strict and not all(v is not False for v in target_ok.values()):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Data-parallel DiT step time with and without libhcops_mpi.so (async allreduce).

Runs perf/dit/ddp.py under mpirun (mpi4py, 2 ranks by default), both variants with
libhcops.so preloaded (HCOps BLAS), one of them with libhcops_mpi.so preloaded as
well, alternating the order in every round (A-B, then B-A, ...) so that drift in
machine load hits both alike. Reports each round's median step times, the median
over all rounds and the median of the per-round ratios, and checks that both
variants computed the same losses (the wrapper runs the same MPI allreduce, on a
duplicate communicator, so they should agree to rounding).

  /usr/bin/python3 perf/dit/ddp_bench.py [--model S] [--batch 8] [--steps 5]
      [--warmup 1] [--threads 1] [--bucket-mb N] [--rounds 3] [--bind core|none]
      [--csv rounds.csv]

ddp.py --json prints, on rank 0, one JSON line with "step_times" (s) and "losses"
(and "median_s", "wait_times", "param_checksum", "in_sync", "buckets", reported
when present).

Environment: HCOPS_BUILD (default: build/ beside perf/), MPIRUN, PYTHON
(/usr/bin/python3).
Exit status: 0 ok, 1 losses disagree, 2 usage or run error.
"""
import argparse
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # perf/, for benchlib
from benchlib import mpi  # noqa: E402
from benchlib.build import LIBHCOPS, LIBHCOPS_MPI, PYTHON, require  # noqa: E402
from benchlib.child import RunError, child_env, json_result, lines_starting, run  # noqa: E402
from benchlib.report import error, load_average, write_csv  # noqa: E402
from benchlib.rounds import alternated, rel_diff  # noqa: E402

DDP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ddp.py")
PLAIN = "libhcops.so"
ASYNC = "libhcops.so + libhcops_mpi.so"
LOSS_RTOL = 1e-4


def say(msg):
    print(msg, flush=True)


def mpirun_cmd(args, with_mpi):
    cmd = mpi.mpirun(args.np, args.bind)
    preload = LIBHCOPS + (" " + LIBHCOPS_MPI if with_mpi else "")
    threads = str(args.threads)
    cmd += ["-x", "LD_PRELOAD=" + preload, "-x", "OMP_NUM_THREADS=" + threads, "-x", "OPENBLAS_NUM_THREADS=" + threads]
    if with_mpi:
        cmd += ["-x", "HCOPS_MPI_VERBOSE=1"]
    cmd += [PYTHON, DDP, "--model", args.model, "--batch", str(args.batch), "--steps", str(args.steps),
            "--warmup", str(args.warmup), "--threads", threads, "--json"]
    if args.bucket_mb is not None:
        cmd += ["--bucket-mb", str(args.bucket_mb)]
    if args.seed is not None:
        cmd += ["--seed", str(args.seed)]
    return cmd + args.extra


def run_once(args, with_mpi):
    cmd = mpirun_cmd(args, with_mpi)
    t0 = time.monotonic()
    proc = run(cmd, child_env(drop=["HCOPS_MPI_VERBOSE", "HCOPS_VERBOSE"]), tail_lines=20)
    wall = time.monotonic() - t0
    result = json_result(proc)
    if "step_times" not in result or "losses" not in result:
        raise RunError(f"ddp.py's JSON has no step_times/losses: keys {sorted(result)}")
    result.setdefault("median_s", statistics.median(result["step_times"]))
    result["wall_s"] = wall
    stats = lines_starting(proc, mpi.STATS_PREFIX)
    if with_mpi and not stats:
        raise RunError("libhcops_mpi.so printed no statistics (HCOPS_MPI_VERBOSE=1): was it loaded?")
    if not with_mpi and stats:
        raise RunError("libhcops_mpi.so statistics in the run without it")
    result["hcops_mpi"] = stats
    return result, cmd


def fmt_times(times):
    return " ".join(f"{t:.3f}" for t in times)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="S")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1, help="compute threads per rank")
    ap.add_argument("--bucket-mb", type=float, default=None, help="passed to ddp.py (its default if not given)")
    ap.add_argument("--seed", type=int, default=None, help="passed to ddp.py if it takes --seed")
    mpi.add_options(ap, ["core", "none"], "core")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--csv", help="write one row per round and variant")
    ap.add_argument("extra", nargs="*", help="further ddp.py arguments (after --)")
    args = ap.parse_args()
    require(LIBHCOPS, LIBHCOPS_MPI)
    t_start = time.monotonic()
    say(f"ddp_bench.py: DiT-{args.model} batch {args.batch}/rank, {args.np} ranks x {args.threads} threads, "
        f"{args.steps} steps after {args.warmup} warm-up, bucket {args.bucket_mb if args.bucket_mb is not None else 'default'} MB, "
        f"binding {args.bind}; {args.rounds} rounds, load average {load_average():.2f}")
    rounds = []
    try:
        for r in range(args.rounds):
            order = alternated([PLAIN, ASYNC], r)
            res = {}
            for name in order:
                res[name], cmd = run_once(args, name == ASYNC)
                if r == 0:
                    say(f"  {name}: {' '.join(cmd)}")
            rounds.append({"order": order, "results": res})
            a, b = res[PLAIN], res[ASYNC]
            say(f"  round {r + 1} ({'plain' if order[0] == PLAIN else 'async'} first): {PLAIN}: {fmt_times(a['step_times'])} s"
                f" | {ASYNC}: {fmt_times(b['step_times'])} s | ratio {a['median_s'] / b['median_s']:.3f}")
            for s in b["hcops_mpi"]:
                say("    " + s)
    except RunError as e:
        error(e)
        return 2

    med_a = statistics.median(t for rd in rounds for t in rd["results"][PLAIN]["step_times"])
    med_b = statistics.median(t for rd in rounds for t in rd["results"][ASYNC]["step_times"])
    ratios = [rd["results"][PLAIN]["median_s"] / rd["results"][ASYNC]["median_s"] for rd in rounds]
    speedup = statistics.median(ratios)
    say("")
    say(f"median step time over {args.rounds} rounds x {args.steps} steps: {PLAIN}: {med_a:.3f} s; {ASYNC}: {med_b:.3f} s")
    say(f"speedup of {ASYNC} (median of per-round ratios): {speedup:.3f}x "
        f"(per round: {', '.join(f'{x:.3f}' for x in ratios)})")
    if all("wait_times" in rd["results"][n] for rd in rounds for n in (PLAIN, ASYNC)):
        wa = statistics.median(t for rd in rounds for t in rd["results"][PLAIN]["wait_times"])
        wb = statistics.median(t for rd in rounds for t in rd["results"][ASYNC]["wait_times"])
        say(f"median wait for gradients after backward (final Waitall): {PLAIN}: {wa * 1e3:.1f} ms; "
            f"{ASYNC}: {wb * 1e3:.1f} ms")
    first = rounds[0]["results"][PLAIN]
    if "buckets" in first:
        say(f"{first.get('params', '?')} parameters in {first['buckets']} buckets, MPI thread level reported "
            f"{first.get('mpi_thread_level', '?')} / {rounds[0]['results'][ASYNC].get('mpi_thread_level', '?')}")
    out_of_sync = [f"round {i + 1} {n}" for i, rd in enumerate(rounds) for n in (PLAIN, ASYNC)
                   if rd["results"][n].get("in_sync") is False]
    if out_of_sync:
        say("RANKS OUT OF SYNC (parameters differ between ranks): " + ", ".join(out_of_sync))

    # Losses: every run against the first run without the wrapper.
    ref = rounds[0]["results"][PLAIN]["losses"]
    worst = 0.0
    bitwise = True
    for rd in rounds:
        for name in (PLAIN, ASYNC):
            losses = rd["results"][name]["losses"]
            if len(losses) != len(ref):
                worst = math.inf
                continue
            worst = max([worst] + [rel_diff(x, y) for x, y in zip(losses, ref)])
            bitwise = bitwise and losses == ref
    agree = worst <= LOSS_RTOL
    say(f"losses: {' '.join(f'{l:.6f}' for l in ref)} (first run); largest relative difference over all runs "
        f"{worst:.2e} ({'identical' if bitwise else 'agree' if agree else 'DISAGREE'}, tolerance {LOSS_RTOL:g})")
    sums = {rd["results"][n].get("param_checksum") for rd in rounds for n in (PLAIN, ASYNC)}
    if None not in sums:
        say(f"final parameter checksum: {'the same in every run' if len(sums) == 1 else f'{len(sums)} different values'}"
            f" ({', '.join(repr(x) for x in sorted(sums))})")
    agree = agree and not out_of_sync
    say(f"total runtime {time.monotonic() - t_start:.0f} s")
    if args.csv:
        write_csv(args.csv, ["round", "variant", "position", "median_s", "step_times", "losses", "wait_times", "wall_s"],
                  ([i + 1, name, rd["order"].index(name) + 1, f"{x['median_s']:.4f}",
                    " ".join(f"{t:.4f}" for t in x["step_times"]), " ".join(repr(l) for l in x["losses"]),
                    " ".join(f"{t:.4f}" for t in x.get("wait_times", [])), f"{x['wall_s']:.1f}"]
                   for i, rd in enumerate(rounds) for name, x in ((n, rd["results"][n]) for n in (PLAIN, ASYNC))))
        say(f"wrote {args.csv}")
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())

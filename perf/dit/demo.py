#!/usr/bin/env python3
"""DiT-S/2 training steps with Debian's default BLAS versus HCOps (LD_PRELOAD).

Runs perf/dit/dit.py as separate processes, alternating the two BLAS in every round
(A-B, then B-A, ...) so that drift in machine load hits both alike, then checks that
both computed the same losses and that HCOps' GEMM really ran (HCOPS_VERBOSE=1).

  HCOPS_LIB=/abs/path/libhcops.so $PYTHON perf/dit/demo.py [--csv rounds.csv]

Exit status: 0 ok, 1 losses disagree or no HCOps GEMM ran, 2 usage or run error.
"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # perf/, for benchlib
from benchlib.build import PYTHON  # noqa: E402
from benchlib.child import RunError, child_env, json_result, run  # noqa: E402
from benchlib.report import cpu_model, error, load_average, write_csv  # noqa: E402
from benchlib.rounds import alternated, rel_diff  # noqa: E402

DIT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dit.py")
DEFAULT = "default BLAS (Debian libblas.so.3)"
HCOPS = "HCOps (LD_PRELOAD)"
LOSS_RTOL = 1e-4
VERBOSE_SGEMM = "hcops_verbose,exec,sgemm_,"


def fail(message):
    error(message)
    sys.exit(2)


def dit_env(threads, preload=None, verbose=False):
    """dit.py's environment: the same thread count for OpenBLAS, OpenMP and HCOps,
    whichever each one reads; preload (libhcops.so) or the default BLAS."""
    env = child_env(threads, drop=["HCOPS_VERBOSE"])
    if preload:
        env["LD_PRELOAD"] = preload
    if verbose:
        env["HCOPS_VERBOSE"] = "1"
    return env


def run_dit(args, env, steps, warmup):
    cmd = [PYTHON, DIT, "--model", args.model, "--batch", str(args.batch), "--steps", str(steps),
           "--warmup", str(warmup), "--threads", str(args.threads), "--seed", str(args.seed), "--json"]
    proc = run(cmd, env)
    return json_result(proc), proc.stderr


def machine_note():
    """What the timings depend on: CPU, other load, and the kernels Debian's OpenBLAS picked."""
    # OpenBLAS names its kernel choice at load time; other libblas.so.3 print nothing here.
    probe = run([PYTHON, "-c", "import numpy"], dict(dit_env(1), OPENBLAS_VERBOSE="2"), check=False)
    core = next((line.split(":", 1)[1].strip() for line in probe.stderr.splitlines() if line.startswith("Core:")),
                None)
    note = f"CPU: {cpu_model()}, {os.cpu_count()} logical CPUs, 1-min load average at start {load_average():.2f}"
    return note + (f"; Debian's OpenBLAS uses its {core} kernels" if core else "")


def run_rounds(args, lib):
    """Yields each round as it finishes: the run order and each variant's dit.py result."""
    variants = {DEFAULT: dit_env(args.threads), HCOPS: dit_env(args.threads, preload=lib)}
    for r in range(args.rounds):
        order = alternated([DEFAULT, HCOPS], r)
        yield {"order": order, "results": {name: run_dit(args, variants[name], args.steps, args.warmup)[0]
                                           for name in order}}


def verbose_check(args, lib):
    """One step under HCOPS_VERBOSE=1.

    Returns the sgemm_ line count, the ms HCOps reported in them, the thread counts
    it reported (to confirm it used as many threads as the baseline) and the step time.
    """
    result, stderr = run_dit(args, dit_env(args.threads, preload=lib, verbose=True), steps=1, warmup=0)
    lines = [line.split(",") for line in stderr.splitlines() if line.startswith(VERBOSE_SGEMM)]
    total_ms, threads = 0.0, set()
    for fields in lines:
        try:
            total_ms += float(fields[14])
            threads.add(fields[13])
        except (IndexError, ValueError):
            pass  # a malformed line still proves the call ran; its time is just not counted
    return len(lines), total_ms, sorted(threads), result["step_times"][0]


def fmt_times(times):
    return " ".join(f"{t:6.3f}" for t in times) + " s"


def column_width(args):
    return max(len(DEFAULT), len(HCOPS), 8 * args.steps + 2) + 3


def print_round(args, i, rnd):
    """One table row; returns the round's speedup (ratio of the two runs' median step times)."""
    a, b = rnd["results"][DEFAULT], rnd["results"][HCOPS]
    ratio = a["median_s"] / b["median_s"]
    first = "default first" if rnd["order"][0] == DEFAULT else "HCOps first"
    w = column_width(args)
    print(f"{i:<7}{fmt_times(a['step_times']):<{w}}{fmt_times(b['step_times']):<{w}}{ratio:.3f}  ({first})")
    return ratio


def print_summary(rounds, ratios):
    med_a = statistics.median(t for r in rounds for t in r["results"][DEFAULT]["step_times"])
    med_b = statistics.median(t for r in rounds for t in r["results"][HCOPS]["step_times"])
    speedup = statistics.median(ratios)
    verdict = "HCOps faster" if speedup > 1 else "HCOps slower" if speedup < 1 else "no difference"
    print()
    print(f"median step time: {DEFAULT}: {med_a:.3f} s;  {HCOPS}: {med_b:.3f} s")
    print(f"speedup (median of per-round ratios): {speedup:.3f}x  ({verdict})")


def print_losses(rounds):
    """Step-by-step loss comparison; returns whether every step agrees within LOSS_RTOL."""
    print("losses per timed step (same seed in every run):")
    print(f"{'round':<7}{'step':<6}{'default':>14}{'HCOps':>14}{'rel diff':>12}")
    max_rel = 0.0
    for i, rnd in enumerate(rounds, 1):
        la, lb = rnd["results"][DEFAULT]["losses"], rnd["results"][HCOPS]["losses"]
        for s, (x, y) in enumerate(zip(la, lb)):
            d = rel_diff(x, y)
            max_rel = max(max_rel, d)
            print(f"{i:<7}{s:<6}{x:>14.8f}{y:>14.8f}{d:>12.2e}")
    agree = max_rel <= LOSS_RTOL
    verdict = "AGREE" if agree else "DISAGREE"
    print(f"max relative loss difference: {max_rel:.2e} (limit {LOSS_RTOL:g}): {verdict}")
    return agree


def print_gemm_check(sgemm_lines, gemm_ms, threads, step_s):
    """Whether HCOps' sgemm_ ran at all in the verbose step."""
    ran = sgemm_lines > 0
    print(f"HCOps GEMM check (1 step, HCOPS_VERBOSE=1): {sgemm_lines} '{VERBOSE_SGEMM.rstrip(',')}' lines "
          f"(threads: {','.join(threads) or '-'}); HCOps reports {gemm_ms / 1000:.3f} s of GEMM "
          f"in a {step_s:.3f} s step: {'OK' if ran else 'NO HCOps GEMM RAN'}")
    return ran


def write_rounds(path, args, rounds, ratios):
    write_csv(path, ["round", "variant", "position", "step", "time_s", "loss", "round_ratio",
                     "model", "batch", "threads", "seed"],
              ([i, "default" if name == DEFAULT else "hcops", rnd["order"].index(name) + 1, s, f"{t:.6f}", repr(loss),
                f"{ratios[i - 1]:.6f}", args.model, args.batch, args.threads, args.seed]
               for i, rnd in enumerate(rounds, 1) for name in rnd["order"]
               for s, (t, loss) in enumerate(zip(rnd["results"][name]["step_times"], rnd["results"][name]["losses"]))))


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="S", choices=["tiny", "S", "B"])
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=2, help="timed steps per run")
    ap.add_argument("--warmup", type=int, default=1, help="untimed steps per run")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--csv", help="also write the per-step results of every round to this file")
    args = ap.parse_args()
    if args.rounds < 1 or args.steps < 1:
        ap.error("--rounds and --steps must be at least 1")
    return args


def main():
    args = parse_args()
    lib = os.environ.get("HCOPS_LIB")
    if not lib:
        fail("set HCOPS_LIB to the absolute path of libhcops.so")
    if not os.path.isabs(lib) or not os.path.isfile(lib):
        fail(f"HCOPS_LIB={lib} is not an absolute path to an existing file")
    print(f"HCOps DiT demo: DiT-{args.model}/2, batch {args.batch}, {args.threads} threads, "
          f"{args.rounds} rounds x {args.steps} timed steps after {args.warmup} warm-up, seed {args.seed}")
    print(f"HCOps library: {lib}")
    print(machine_note())
    print()
    w = column_width(args)
    print(f"{'round':<7}{DEFAULT:<{w}}{HCOPS:<{w}}speedup (default/HCOps)")
    rounds, ratios = [], []
    try:
        for rnd in run_rounds(args, lib):
            rounds.append(rnd)
            ratios.append(print_round(args, len(rounds), rnd))
        gemm_check = verbose_check(args, lib)
    except RunError as e:
        fail(str(e))
    print_summary(rounds, ratios)
    print()
    losses_agree = print_losses(rounds)
    print()
    gemm_ran = print_gemm_check(*gemm_check)
    if args.csv:
        write_rounds(args.csv, args, rounds, ratios)
        print(f"rounds written to {args.csv}")
    sys.exit(0 if losses_agree and gemm_ran else 1)


if __name__ == "__main__":
    main()

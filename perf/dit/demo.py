#!/usr/bin/env python3
"""DiT-S/2 training steps with Debian's default BLAS versus HCOps (LD_PRELOAD), then
HCOps' GEMM alone versus HCOps' GEMM plus its PyTorch operators, fp32 and under
bf16 autocast.

Runs perf/dit/dit.py as separate processes, alternating the two configurations of a
comparison in every round (A-B, then B-A, ...) so that drift in machine load hits
both alike, then checks that both computed the same losses and that HCOps' GEMM and
operators really ran (HCOPS_VERBOSE=1). The operators are loaded the way a user
would: `hcops-run python3 dit.py` (the script unchanged), against
`hcops-run --no-ops` for GEMM alone.

  HCOPS_LIB=/abs/path/libhcops.so HCOPS_RUN=/abs/path/hcops-run $PYTHON perf/dit/demo.py [--csv rounds.csv]

Without HCOPS_RUN the operator comparisons are left out (said so). Exit status: 0 ok,
1 losses disagree or no HCOps GEMM or operator ran, 2 usage or run error.
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
GEMM = "HCOps GEMM only"
GEMM_OPS = "HCOps GEMM + operators"
SHORT = {DEFAULT: "default", HCOPS: "hcops", GEMM: "gemm", GEMM_OPS: "gemm+ops"}
# Losses of the BLAS comparison: a different summation order; of the operator
# comparisons: the bounds (fp32 kernels within a few ulp, bf16 within one bf16 ulp).
LOSS_RTOL = {"blas": 1e-4, "none": 1e-5, "bf16": 1e-2}
VERBOSE_SGEMM = "hcops_verbose,exec,sgemm_,"
VERBOSE_EXEC = "hcops_verbose,exec,"


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


def run_dit(args, env, steps, warmup, prefix=(), amp="none"):
    """prefix: the launcher in front of the interpreter (hcops-run and its options)."""
    cmd = [*prefix, PYTHON, DIT, "--model", args.model, "--batch", str(args.batch), "--steps", str(steps),
           "--warmup", str(warmup), "--threads", str(args.threads), "--seed", str(args.seed), "--json",
           "--autocast", amp]
    proc = run(cmd, env)
    return json_result(proc), proc.stderr


def comparisons(args, lib, hcops_run):
    """(title, amp, loss tolerance, {name: (launcher prefix, environment)}) of each comparison."""
    out = [("Debian's default BLAS vs HCOps GEMM, fp32", "none", LOSS_RTOL["blas"],
            {DEFAULT: ((), dit_env(args.threads)), HCOPS: ((), dit_env(args.threads, preload=lib))})]
    if hcops_run:
        for amp, label in (("none", "fp32"), ("bf16", "bf16 autocast")):
            out.append((f"HCOps GEMM only vs GEMM + PyTorch operators (hcops-run), {label}", amp, LOSS_RTOL[amp],
                        {GEMM: ((hcops_run, "--no-ops"), dit_env(args.threads)),
                         GEMM_OPS: ((hcops_run,), dit_env(args.threads))}))
    return out


def machine_note():
    """What the timings depend on: CPU, other load, and the kernels Debian's OpenBLAS picked."""
    # OpenBLAS names its kernel choice at load time; other libblas.so.3 print nothing here.
    probe = run([PYTHON, "-c", "import numpy"], dict(dit_env(1), OPENBLAS_VERBOSE="2"), check=False)
    core = next((line.split(":", 1)[1].strip() for line in probe.stderr.splitlines() if line.startswith("Core:")),
                None)
    note = f"CPU: {cpu_model()}, {os.cpu_count()} logical CPUs, 1-min load average at start {load_average():.2f}"
    return note + (f"; Debian's OpenBLAS uses its {core} kernels" if core else "")


def run_rounds(args, variants, amp, rounds):
    """Yields each round as it finishes: the run order and each variant's dit.py result."""
    names = list(variants)
    for r in range(rounds):
        order = alternated(names, r)
        yield {"order": order, "results": {name: run_dit(args, variants[name][1], args.steps, args.warmup,
                                                         variants[name][0], amp)[0] for name in order}}


def verbose_check(args, lib, hcops_run):
    """One fp32 step under HCOPS_VERBOSE=1, with the operators when hcops_run is given.

    Returns the sgemm_ line count, the ms HCOps reported in them, the thread counts
    it reported (to confirm it used as many threads as the baseline), the step time,
    and {operator: (calls, ms)} of the operators' lines.
    """
    if hcops_run:
        result, stderr = run_dit(args, dit_env(args.threads, verbose=True), 1, 0, (hcops_run,))
    else:
        result, stderr = run_dit(args, dit_env(args.threads, preload=lib, verbose=True), steps=1, warmup=0)
    lines = [line.split(",") for line in stderr.splitlines() if line.startswith(VERBOSE_SGEMM)]
    total_ms, threads = 0.0, set()
    for fields in lines:
        try:
            total_ms += float(fields[14])
            threads.add(fields[13])
        except (IndexError, ValueError):
            pass  # a malformed line still proves the call ran; its time is just not counted
    ops = {}
    # hcops_verbose,exec,op,dtype,shape,threads,ms,impl,details (GEMM lines have more fields)
    for fields in (line.split(",") for line in stderr.splitlines() if line.startswith(VERBOSE_EXEC)):
        if fields[2].endswith("gemm_") or len(fields) < 7:
            continue
        calls, ms = ops.get(fields[2], (0, 0.0))
        try:
            ms += float(fields[6])
        except ValueError:
            pass
        ops[fields[2]] = (calls + 1, ms)
    return len(lines), total_ms, sorted(threads), result["step_times"][0], ops


def fmt_times(times):
    return " ".join(f"{t:6.3f}" for t in times) + " s"


def column_width(args, names):
    return max(*(len(n) for n in names), 8 * args.steps + 2) + 3


def print_round(args, names, i, rnd):
    """One table row; returns the round's speedup (ratio of the two runs' median step times)."""
    a, b = rnd["results"][names[0]], rnd["results"][names[1]]
    ratio = a["median_s"] / b["median_s"]
    w = column_width(args, names)
    print(f"{i:<7}{fmt_times(a['step_times']):<{w}}{fmt_times(b['step_times']):<{w}}{ratio:.3f}  "
          f"({SHORT[rnd['order'][0]]} first)")
    return ratio


def print_summary(names, rounds, ratios):
    med_a = statistics.median(t for r in rounds for t in r["results"][names[0]]["step_times"])
    med_b = statistics.median(t for r in rounds for t in r["results"][names[1]]["step_times"])
    speedup = statistics.median(ratios)
    verdict = f"{SHORT[names[1]]} faster" if speedup > 1 else f"{SHORT[names[1]]} slower" if speedup < 1 \
        else "no difference"
    print()
    print(f"median step time: {names[0]}: {med_a:.3f} s;  {names[1]}: {med_b:.3f} s")
    print(f"speedup (median of per-round ratios): {speedup:.3f}x  ({verdict})")
    return speedup


def print_losses(names, rounds, rtol):
    """Step-by-step loss comparison; returns whether every step agrees within rtol."""
    print("losses per timed step (same seed in every run):")
    print(f"{'round':<7}{'step':<6}{SHORT[names[0]]:>14}{SHORT[names[1]]:>14}{'rel diff':>12}")
    max_rel = 0.0
    for i, rnd in enumerate(rounds, 1):
        la, lb = rnd["results"][names[0]]["losses"], rnd["results"][names[1]]["losses"]
        for s, (x, y) in enumerate(zip(la, lb)):
            d = rel_diff(x, y)
            max_rel = max(max_rel, d)
            print(f"{i:<7}{s:<6}{x:>14.8f}{y:>14.8f}{d:>12.2e}")
    agree = max_rel <= rtol
    verdict = "AGREE" if agree else "DISAGREE"
    print(f"max relative loss difference: {max_rel:.2e} (limit {rtol:g}): {verdict}")
    return agree


def print_gemm_check(sgemm_lines, gemm_ms, threads, step_s, ops, with_ops):
    """Whether HCOps' sgemm_ (and, with_ops, its operators) ran at all in the verbose step."""
    ran = sgemm_lines > 0
    print(f"HCOps GEMM check (1 step, HCOPS_VERBOSE=1): {sgemm_lines} '{VERBOSE_SGEMM.rstrip(',')}' lines "
          f"(threads: {','.join(threads) or '-'}); HCOps reports {gemm_ms / 1000:.3f} s of GEMM "
          f"in a {step_s:.3f} s step: {'OK' if ran else 'NO HCOps GEMM RAN'}")
    if not with_ops:
        return ran
    ops_ms = sum(ms for _, ms in ops.values())
    listed = ", ".join(f"{op} x{calls}" for op, (calls, _) in sorted(ops.items())) or "none"
    print(f"HCOps operator check (same step, under hcops-run): {listed}; {ops_ms / 1000:.3f} s of operators: "
          f"{'OK' if ops else 'NO HCOps OPERATOR RAN'}")
    return ran and bool(ops)


def write_rounds(path, args, sections):
    """sections: (amp, rounds, ratios) of each comparison."""
    write_csv(path, ["round", "variant", "position", "step", "time_s", "loss", "round_ratio",
                     "model", "batch", "threads", "seed", "autocast"],
              ([i, SHORT[name], rnd["order"].index(name) + 1, s, f"{t:.6f}", repr(loss),
                f"{ratios[i - 1]:.6f}", args.model, args.batch, args.threads, args.seed, amp]
               for amp, rounds, ratios in sections
               for i, rnd in enumerate(rounds, 1) for name in rnd["order"]
               for s, (t, loss) in enumerate(zip(rnd["results"][name]["step_times"], rnd["results"][name]["losses"]))))


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="S", choices=["tiny", "S", "B"])
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3, help="rounds of the BLAS comparison")
    ap.add_argument("--ops-rounds", type=int, default=2, help="rounds of each operator comparison")
    ap.add_argument("--steps", type=int, default=2, help="timed steps per run")
    ap.add_argument("--warmup", type=int, default=1, help="untimed steps per run")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--csv", help="also write the per-step results of every round to this file")
    args = ap.parse_args()
    if args.rounds < 1 or args.ops_rounds < 1 or args.steps < 1:
        ap.error("--rounds, --ops-rounds and --steps must be at least 1")
    return args


def run_comparison(args, title, amp, rtol, variants, rounds_wanted):
    """Runs and prints one comparison; returns (rounds, ratios, losses agree)."""
    names = list(variants)
    w = column_width(args, names)
    print(f"== {title}: {rounds_wanted} rounds")
    print(f"{'round':<7}{names[0]:<{w}}{names[1]:<{w}}speedup ({SHORT[names[0]]}/{SHORT[names[1]]})")
    rounds, ratios = [], []
    for rnd in run_rounds(args, variants, amp, rounds_wanted):
        rounds.append(rnd)
        ratios.append(print_round(args, names, len(rounds), rnd))
    print_summary(names, rounds, ratios)
    print()
    agree = print_losses(names, rounds, rtol)
    print()
    return rounds, ratios, agree


def main():
    args = parse_args()
    lib = os.environ.get("HCOPS_LIB")
    if not lib:
        fail("set HCOPS_LIB to the absolute path of libhcops.so")
    if not os.path.isabs(lib) or not os.path.isfile(lib):
        fail(f"HCOPS_LIB={lib} is not an absolute path to an existing file")
    hcops_run = os.environ.get("HCOPS_RUN")
    if hcops_run and not (os.path.isabs(hcops_run) and os.access(hcops_run, os.X_OK)):
        fail(f"HCOPS_RUN={hcops_run} is not an absolute path to an executable")
    print(f"HCOps DiT demo: DiT-{args.model}/2, batch {args.batch}, {args.threads} threads, "
          f"{args.steps} timed steps after {args.warmup} warm-up per run, seed {args.seed}")
    print(f"HCOps library: {lib}")
    print(f"hcops-run: {hcops_run}" if hcops_run else "hcops-run: not given (HCOPS_RUN): operator comparisons left out")
    print(machine_note())
    print()
    sections, all_agree = [], True
    try:
        for i, (title, amp, rtol, variants) in enumerate(comparisons(args, lib, hcops_run)):
            rounds, ratios, agree = run_comparison(args, title, amp, rtol, variants,
                                                   args.rounds if i == 0 else args.ops_rounds)
            sections.append((amp, rounds, ratios))
            all_agree = all_agree and agree
        gemm_check = verbose_check(args, lib, hcops_run)
    except RunError as e:
        fail(str(e))
    ran = print_gemm_check(*gemm_check, with_ops=bool(hcops_run))
    if args.csv:
        write_rounds(args.csv, args, sections)
        print(f"rounds written to {args.csv}")
    sys.exit(0 if all_agree and ran else 1)


if __name__ == "__main__":
    main()

"""The command line of hcops-prof (see tools/hcops-prof.in and hcops-prof(1))."""
import argparse
import csv
import os
import sys

from . import cost, logparse, machine, project, report, steps, torchtrace

PROG = "hcops-prof"
USAGE_ERROR = 2


class Failure(Exception):
    pass


def _say(msg):
    print(f"{PROG}: {msg}", file=sys.stderr)


def _args(argv):
    ap = argparse.ArgumentParser(
        prog=PROG, description="Where the time of a run goes, from its HCOPS_VERBOSE or ONEDNN_VERBOSE log, "
        "and (--project) what the calls would take on HCOps and its peers.")
    ap.add_argument("log", help="the log file (stderr of a run with HCOPS_VERBOSE=1 and/or ONEDNN_VERBOSE=1), or - "
                    "for standard input; or a torch.profiler Chrome trace (JSON, recorded with record_shapes=True): "
                    "then every operator of the step, HCOps' and PyTorch's, with its flops, bytes and roofline limit")
    ap.add_argument("--steps", type=int, default=1, metavar="N", help="a trace: the number of training steps it "
                    "holds (figures are given per step; default 1)")
    ap.add_argument("--csv", metavar="FILE", help="write the profile by shape as CSV")
    ap.add_argument("--png", metavar="FILE", help="draw the breakdown as a PNG chart")
    ap.add_argument("--title", help="the chart's title (default: the log's name)")
    ap.add_argument("--top", type=int, default=25, help="shapes shown in the by-shape table (0: all; default 25)")
    ap.add_argument("--threads", type=int, help="threads of calls whose line does not say (oneDNN primitives); "
                    "default: the GEMM lines' most common count, else OMP_NUM_THREADS, else the CPUs")
    ap.add_argument("--peak-gflops", type=float, metavar="G", help="use G GFLOPS as the peak instead of measuring")
    ap.add_argument("--bandwidth", type=float, metavar="B", help="use B GB/s as the bandwidth instead of measuring")
    ap.add_argument("--no-peak", action="store_true", help="measure no peak: no %%peak column")
    ap.add_argument("--skip-steps", type=int, default=0, metavar="N", help="leave out the first N training steps "
                    "(warm-up), told apart by the fused optimizer's lines")
    ap.add_argument("--step-seconds", type=float, metavar="S", help="the measured wall time of one step: the "
                    "FLOP-limit line then gives the step's fraction of its limit")
    ap.add_argument("--project", action="store_true", help="replay every distinct call through HCOps and the "
                    "installed peers (OpenBLAS, BLIS, oneDNN) and report what each would take")
    ap.add_argument("--anchors", metavar="DIR",
                    help="--project: also MKL and oneDNN 3.x from this venv of the package index's mkl and onednn "
                    "(default $HCOPS_ANCHORS_VENV; perf/gemm_replay.py sets one up in build/anchors-venv)")
    ap.add_argument("--rounds", type=int, default=3, help="--project's rounds, libraries alternated (default 3)")
    ap.add_argument("--quick", action="store_true", help="--project with one repetition per call (a check, not a "
                    "measurement)")
    ap.add_argument("--project-csv", metavar="FILE", help="write --project's per-call times as CSV")
    ap.add_argument("--progress", action="store_true", help="report progress on stderr (default: when it is a "
                    "terminal)")
    return ap.parse_args(argv)


def _read(path, progress):
    try:
        stream = sys.stdin if path == "-" else open(path, encoding="utf-8", errors="replace")
    except OSError as e:
        raise Failure(f"{path}: cannot read: {e.strerror}") from None
    try:
        with stream:
            return logparse.parse(stream, progress)
    except logparse.LogError as e:
        raise Failure(f"{'<stdin>' if path == '-' else path}:{e.lineno}: {e.what}") from None
    except OSError as e:
        raise Failure(f"{path}: read error: {e.strerror}") from None


def _threads(args, log):
    if args.threads:
        return args.threads
    counts = {}
    for r in log.records:
        if r.part == "gemm" and r.threads:
            counts[r.threads] = counts.get(r.threads, 0) + 1
    if counts:
        return max(counts, key=counts.get)
    try:
        return int(os.environ.get("OMP_NUM_THREADS", "").split(",")[0])
    except ValueError:
        return len(os.sched_getaffinity(0))


def _project(args, prof, finder, libhcops, progress, out):
    if not libhcops:
        raise Failure("--project: libhcops.so not found (build or install HCOps)")
    anchors = args.anchors
    if anchors and not os.path.isdir(anchors):
        raise Failure(f"--anchors {anchors}: no such directory")
    if not anchors:  # the environment's venv may not be made yet: then its anchors are absent
        anchors = os.environ.get("HCOPS_ANCHORS_VENV") or None
    pj = project.Projector(finder, libhcops, prof.threads, args.rounds, args.quick, progress, anchors)
    rows = list(prof.rows.values())
    gemm_calls, gemm_t = pj.project_gemm([r for r in rows if r.part == "gemm"])
    prims, dnnl_t = pj.project_dnnl([r for r in rows if r.part == "dnnl"])
    libs = ["hcops", "onednn", "openblas", "blis"] + pj.anchors_found
    parts = {}  # part -> {"log": ms, lib: [seconds, covered log ms], "flops", "peak_s"}

    def part_of(name):
        return parts.setdefault(name, {"log": 0.0, "flops": 0.0, "peak_s": 0.0, **{l: [0.0, 0.0] for l in libs}})

    per_call = []
    for (precision, call), c in gemm_calls.items():
        p = part_of("gemm")
        log_ms = sum(c["ms"])
        p["log"] += log_ms
        m, n, k = (int(x) for x in call.split(",")[2:5])
        flops = cost.gemm_flops(m, n, k) * c["calls"]
        for lib, t in gemm_t[(precision, call)].items():
            p[lib][0] += t * c["calls"]
            p[lib][1] += log_ms
        if "hcops" in gemm_t[(precision, call)]:
            peak = prof.machine.peak(report.precision_of({"s": "f32", "d": "f64", "b": "bf16"}[precision]),
                                     prof.threads) if prof.machine else None
            p["flops"] += flops
            if peak:
                p["peak_s"] += flops / (peak * 1e9)
        per_call.append(["gemm", precision, call, c["calls"], log_ms] + [
            gemm_t[(precision, call)].get(l, "") for l in libs])
    skipped = {}  # primitive kind -> calls hcops-dnnl-replay cannot rebuild: their logged time is carried
    skipped_ms = 0.0
    for key, pdata in prims.items():
        log_ms = sum(pdata["ms"])
        t = dnnl_t[key]
        if "skipped" in t:
            kind = key.split(",")[0]
            skipped[kind] = skipped.get(kind, 0) + pdata["calls"]
            skipped_ms += log_ms
            per_call.append(["dnnl", "", key, pdata["calls"], log_ms] + ["" for _ in libs])
            continue
        p = part_of("dnnl")
        p["log"] += log_ms
        kind, problem = key.split(",")[0], key.split(",")[-1]
        flops = (cost.matmul_flops(problem) if kind == "matmul" else cost.ip_flops(problem)) * pdata["calls"]
        for lib in ("hcops", "onednn"):
            if lib in t:
                p[lib][0] += t[lib] * pdata["calls"]
                p[lib][1] += log_ms
        if "hcops" in t and flops:
            p["flops"] += flops
            dt = "bf16" if "bf16" in key else "f32"
            peak = prof.machine.peak(dt, prof.threads) if prof.machine else None
            if peak:
                p["peak_s"] += flops / (peak * 1e9)
        per_call.append(["dnnl", "", key, pdata["calls"], log_ms] + [t.get(l, "") for l in libs])
    carried = sum(r.ms for r in rows if r.part in ("operator", "mpi")) + skipped_ms
    print(f"\nProjection: each distinct call replayed on {prof.machine.model if prof.machine else 'this machine'}, "
          f"{prof.threads} threads, {pj.rounds} round{'s' if pj.rounds > 1 else ''} "
          f"(libraries alternated; medians){' -- QUICK: a check, not a measurement' if args.quick else ''}", file=out)
    print(f"{'part':<20} {'log ms':>10}" + "".join(f"{l + ' ms':>14}" for l in libs) + f"{'hcops %peak':>13}",
          file=out)
    totals = {l: 0.0 for l in libs}
    covered_all = {l: True for l in libs}
    log_total = 0.0
    for name, p in parts.items():
        log_total += p["log"]
        cells = []
        for l in libs:
            secs, cov = p[l]
            if cov <= 0:
                cells.append(f"{'-':>14}")
                covered_all[l] = False
                continue
            star = "" if cov >= p["log"] - 1e-9 else "*"
            if star:
                covered_all[l] = False
            cells.append(f"{1e3 * secs:>13.2f}{star or ' '}")
            totals[l] += 1e3 * secs
        eff = f"{100 * p['peak_s'] / p['hcops'][0]:12.0f}%" if p["hcops"][0] and p["peak_s"] else f"{'':>13}"
        print(f"{report.PART_TITLE[name]:<20} {p['log']:>10.2f}" + "".join(cells) + eff, file=out)
    if carried:
        print(f"{'not replayed':<20} {carried:>10.2f}" + "".join(f"{carried:>13.2f} " for _ in libs) +
              "   (the log's time, carried: operators, MPI" + (", oneDNN " + ", ".join(
                  f"{k} x{n}" for k, n in sorted(skipped.items())) if skipped else "") + ")", file=out)
    log_total += carried
    # A whole-log figure only for a library that serves every replayed call.
    print(f"{'whole log':<20} {log_total:>10.2f}" + "".join(
        f"{totals[l] + carried:>13.2f} " if covered_all[l] else f"{'-':>14}" for l in libs), file=out)
    h = totals["hcops"] + carried
    if h > 0 and covered_all["hcops"]:
        print(f"{'time / hcops time':<20} {log_total / h:>10.3f}" + "".join(
            f"{(totals[l] + carried) / h:>13.3f} " if covered_all[l] else f"{'-':>14}" for l in libs), file=out)
    print("*: the library serves only part of the part's calls (a precision or primitive it lacks), and its figure "
          "is of those; '-': none, or (whole log) not all", file=out)
    if skipped:
        print("oneDNN primitives hcops-dnnl-replay does not rebuild (it rebuilds matmul in plain layouts), carried: "
              + ", ".join(f"{k} ({n} calls)" for k, n in sorted(skipped.items())), file=out)
    for note in pj.notes:
        print(note, file=out)
    if pj.absent:
        print("peers not installed: " + ", ".join(pj.absent), file=out)
    if args.project_csv:
        try:
            with open(args.project_csv, "w", newline="") as f:
                w = csv.writer(f)
                w.writerow(["part", "precision", "call", "calls", "log_ms"] + [f"{l}_s_per_call" for l in libs])
                w.writerows(per_call)
        except OSError as e:
            raise Failure(f"{args.project_csv}: cannot write: {e.strerror}") from None


def _trace(args, finder):
    """hcops-prof on a torch.profiler trace (torchtrace.py)."""
    if args.steps < 1:
        _say("--steps must be at least 1")
        return USAGE_ERROR
    try:
        events = torchtrace.load(args.log)
        mach = None if args.no_peak else machine.Machine(finder, args.peak_gflops, args.bandwidth)
        threads = _threads(args, logparse.Log())  # --threads, else OMP_NUM_THREADS, else the CPUs
        peaks = {}

        def peak_of(precision):
            if precision not in peaks:
                peaks[precision] = mach.peak(precision, threads) if mach else None
            return peaks[precision]

        bw = mach.bandwidth(threads) if mach else None
        rows = torchtrace.profile(events, peak_of, bw)
        text = (f"{mach.model}, {threads} threads: f32 peak {peak_of('f32') or '-'} GFLOPS, bf16 "
                f"{peak_of('bf16') or '-'}, bandwidth {bw or '-'} GB/s" if mach else "no peak measured")
        torchtrace.print_report(rows, sys.stdout, args.top, args.steps, peak_of, bw, text, args.step_seconds)
        if args.csv:
            torchtrace.write_csv(rows, args.csv, args.steps)
    except torchtrace.TraceError as e:
        _say(str(e))
        return USAGE_ERROR
    except machine.MachineError as e:
        _say(str(e))
        return 1
    except OSError as e:
        _say(f"{args.csv}: cannot write: {e.strerror}")
        return USAGE_ERROR
    return 0


def main(argv=None, find_program=None, libhcops=None):
    """Exit status: 0, 1 (a replay failed or computed wrongly), 2 (bad input or usage)."""
    args = _args(argv)
    show = args.progress or sys.stderr.isatty()

    def progress(msg):
        if show:
            print(f"\r{PROG}: {msg}\033[K" if sys.stderr.isatty() else f"{PROG}: {msg}", end="" if sys.stderr.isatty()
                  else "\n", file=sys.stderr, flush=True)

    finder = find_program or (lambda name: None)
    if args.log != "-" and torchtrace.is_trace(args.log):
        return _trace(args, finder)
    try:
        log = _read(args.log, (lambda n: progress(f"{n} lines read")) if show else None)
        if show and sys.stderr.isatty():
            print(file=sys.stderr)
        if log.truncated:
            _say(f"warning: {args.log}:{log.truncated}: the last line is truncated; left out")
        if not log.records:
            raise Failure(f"{args.log}: nothing to profile: no HCOPS_VERBOSE or ONEDNN_VERBOSE exec line in "
                          f"{log.lines} lines (run with HCOPS_VERBOSE=1 or ONEDNN_VERBOSE=1)")
        try:
            log = steps.skip(log, args.skip_steps)
        except steps.StepError as e:
            raise Failure(f"{args.log}: {e}") from None
        mach = None
        if not args.no_peak:
            mach = machine.Machine(finder, args.peak_gflops, args.bandwidth)
        prof = report.Profile(log, mach, _threads(args, log))
        report.print_tables(prof, sys.stdout, args.top)
        whole = steps.complete(log)  # per-step figures: the complete steps only
        report.print_limit(prof, sys.stdout, len(steps.ends(log)), args.skip_steps, args.step_seconds,
                           report.Profile(whole, mach, prof.threads) if whole else None)
        if args.csv:
            try:
                report.write_csv(prof, args.csv)
            except OSError as e:
                raise Failure(f"{args.csv}: cannot write: {e.strerror}") from None
        if args.png:
            try:
                report.write_png(prof, args.png, args.title or os.path.basename(args.log))
            except OSError as e:
                raise Failure(f"{args.png}: cannot write: {e.strerror}") from None
            except RuntimeError as e:
                raise Failure(str(e)) from None
        if args.project:
            _project(args, prof, finder, libhcops, progress, sys.stdout)
    except Failure as e:
        _say(str(e))
        return USAGE_ERROR
    except (machine.MachineError, project.ProjectError) as e:
        _say(str(e))
        return 1
    except KeyboardInterrupt:
        _say("interrupted")
        return 130
    return 0

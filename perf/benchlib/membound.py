"""The scaffold shared by the per-call benchmarks of memory-bound operators
through the PyTorch dispatcher (perf/torch2_sum.py, perf/torch2_layer_norm.py):
their options, --replot, the triad bandwidth per thread count and the end
of a run. Each script keeps its cases, its table and its plot. The scripts
put perf/dit (dit_config) and python/ (hcops) on sys.path first."""
import argparse
import os

from benchlib.build import built_tool
from benchlib.report import read_csv_rows, write_outputs
from dit_config import CONFIGS
from hcops.prof.machine import Machine, MachineError


def parse_args(doc):
    """The options every such benchmark takes."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="S", choices=sorted(CONFIGS))
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--threads", nargs="+", type=int, default=[1, os.cpu_count()])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="DiT-tiny, batch 2, 1 round of 1 call (tests)")
    ap.add_argument("--csv")
    ap.add_argument("--png")
    ap.add_argument("--replot", metavar="CSV", help="only draw --png from a CSV this script wrote")
    args = ap.parse_args()
    if args.replot and not args.png:
        ap.error("--replot draws into --png")
    if args.quick:
        args.model, args.batch, args.rounds, args.reps = "tiny", 2, 1, 1
    return args


def replot(args, plot, title):
    """--replot: plot(rows, path, title) from the CSV, whose rows start with
    the model and the batch and end with the CPU; True when it was asked."""
    if not args.replot:
        return False
    rows = read_csv_rows(args.replot)
    plot(rows, args.png, title.format(rows[0][0], rows[0][1], rows[0][-1]))
    return True


def bandwidths(threads):
    """{threads: hcops-stream's triad GB/s}; empty, said why, without the tool."""
    out = {}
    try:
        machine = Machine(built_tool)
        for t in threads:
            out[t] = machine.bandwidth(t)
    except MachineError as e:
        print(f"no bandwidth: {e}")
    return out


def finish(script, args, columns, rows, plot, bandwidth, computed):
    """The run's last lines, its CSV and PNG; the exit status (1 when HCOps
    computed none of the calls)."""
    if bandwidth:
        print("\ntriad bandwidth: " + ", ".join(f"{t} thr {v:.1f} GB/s" for t, v in bandwidth.items() if v))
    write_outputs(script, args, columns, rows, plot)
    if computed == 0:
        print("HCOps computed none of the calls (HCOPS_VERBOSE=1 says why)")
        return 1
    return 0

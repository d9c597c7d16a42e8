#!/usr/bin/env python3
"""AutoMem's cost on a DiT training step: the unmodified perf/dit/dit.py under
`hcops-run --mem` (AutoMem off) against `hcops-run --automem`, each in its own
process, alternated round by round; the median over rounds of each step-time
ratio to "off" in the same round.

Modes:
  off         hcops-run --mem: libhcops_mem placement, no AutoMem
  no-fast     --automem on this machine as it is: no fast tier, so AutoMem
              installs nothing (its cost where there is nothing to do)
  fits        --automem with node 0 named fast (HCOPS_MEM_FAST_NODES=0) and the
              default budget (the node's size): every hook runs, the plan keeps
              everything resident, nothing moves after the first step
  tight       the same with a budget of --tight of the parameters' bytes: the
              window slides, tensors are prefetched and offloaded every step
              (between node 0 and node 0: the kernel walks the page tables and
              changes the policies, copying nothing; a real move's copy runs on
              the helper core, off the compute cores)

Also checks that every mode gives the same losses and parameters, bitwise.

The hooks' own cost, too small to see in step times on a shared 2-core
machine, is measured apart (--hooks, default on): a Linear followed by N Tanh
layers on a tiny input, forward and backward, with and without AutoMem (fast
tier forced, everything fits), alternated; the difference per layer call,
times the layer calls of a DiT step, against the step's time.

  HCOPS_RUN=build/tools/hcops-run $PYTHON perf/automem_bench.py --models S,B --rounds 3 --csv out.csv
Exit status: 0 ok, 1 a mode's results differ, 2 usage or run error.
"""
import argparse
import os
import re
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # perf/, for benchlib
from benchlib.build import PYTHON  # noqa: E402
from benchlib.child import RunError, child_env, json_result, run  # noqa: E402
from benchlib.report import cpu_model, error, load_average, write_csv  # noqa: E402
from benchlib.rounds import alternated  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DIT = os.path.join(HERE, "dit", "dit.py")
MODES = ("off", "no-fast", "fits", "tight")
PARAMS = {"tiny": 0.12e6, "mini": 5.0e6, "S": 33.0e6, "B": 130.5e6, "L": 458e6, "XL": 675e6}  # fp32 parameters


HOOK_CHILD = r"""
import json, statistics, sys, time
sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[2])
import torch
from torch import nn
from hcops import automem
import dit
torch.set_num_threads(1)
N, REPS, ROUNDS = 200, 50, 7

def chain():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(1024, 1024), *[nn.Tanh() for _ in range(N)])  # 4 MiB: one tracked tensor

def step(m, x):
    m(x).sum().backward()

plain, hooked = chain(), chain()
am = automem.enable(hooked)
x = torch.randn(2, 1024)
for m in (plain, hooked):
    for _ in range(3):
        step(m, x)  # the first one records AutoMem's plan
per = {"plain": [], "hooked": []}
for r in range(ROUNDS):
    for name, m in ((("plain", plain), ("hooked", hooked)) if r % 2 == 0 else (("hooked", hooked), ("plain", plain))):
        t0 = time.perf_counter()
        for _ in range(REPS):
            step(m, x)
        per[name].append((time.perf_counter() - t0) / REPS)
cost = statistics.median(h - p for h, p in zip(per["hooked"], per["plain"])) / (N + 1)
calls = {}
for model in sys.argv[3].split(","):
    net = dit.DiT(*dit.CONFIGS[model])
    counted = [0]
    def count(module, inputs):
        counted[0] += 1
    handles = [mod.register_forward_pre_hook(count) for name, mod in net.named_modules()
               if name and (next(mod.children(), None) is None or any(True for _ in mod.parameters(recurse=False))
                            or any(True for _ in mod.buffers(recurse=False)))]
    with torch.no_grad():
        net(torch.randn(1, 4, 32, 32), torch.tensor([1]), torch.tensor([1]))
    calls[model] = counted[0]
print(json.dumps({"enabled": am is not None and am.plan is not None, "cost_s": cost, "calls": calls,
                  "plain_s": statistics.median(per["plain"]), "hooked_s": statistics.median(per["hooked"])}))
"""


def hook_cost(hcops_run, models):
    env = child_env(1, drop=["HCOPS_VERBOSE", "HCOPS_AUTOMEM_FAST_BYTES"])
    env["HCOPS_MEM_FAST_NODES"] = "0"
    proc = run([hcops_run, "--mem", PYTHON, "-c", HOOK_CHILD, os.path.join(HERE, "..", "python"),
                os.path.dirname(DIT), ",".join(models)], env)
    return json_result(proc)


def mode_env(mode, threads, model, tight, stats_file):
    env = child_env(threads, drop=["HCOPS_VERBOSE", "HCOPS_MEM_FAST_NODES", "HCOPS_AUTOMEM_FAST_BYTES"])
    env["HCOPS_MEM_STATS"] = stats_file
    if mode in ("fits", "tight"):
        env["HCOPS_MEM_FAST_NODES"] = "0"
    if mode == "tight":
        env["HCOPS_AUTOMEM_FAST_BYTES"] = str(int(PARAMS[model] * 4 * tight))
    return env


def parse_stats(text):
    """The hcops_automem report's figures: MiB prefetched/offloaded, ms waited, moves."""
    out = {}
    m = re.search(r"prefetched ([\d.]+) MiB in (\d+) moves, fetched on demand ([\d.]+) MiB in (\d+), "
                  r"offloaded ([\d.]+) MiB in (\d+)", text)
    if m:
        out.update(prefetched=float(m[1]), prefetches=int(m[2]), fetched=float(m[3]), offloaded=float(m[5]))
    m = re.search(r"compute waited ([\d.]+) ms for (\d+) prefetches", text)
    if m:
        out.update(waited_ms=float(m[1]))
    m = re.search(r"fast-tier high-water ([\d.]+) MiB", text)
    if m:
        out.update(high_water=float(m[1]))
    out["active"] = "hcops_automem: inactive" not in text and bool(out)
    return out


def run_mode(args, hcops_run, model, mode):
    with tempfile.TemporaryDirectory() as tmp:
        stats_file = os.path.join(tmp, "stats")
        cmd = [hcops_run, "--mem" if mode == "off" else "--automem", PYTHON, DIT, "--model", model,
               "--batch", str(args.batch), "--steps", str(args.steps), "--warmup", str(args.warmup),
               "--threads", str(args.threads), "--seed", "0", "--json"]
        proc = run(cmd, mode_env(mode, args.threads, model, args.tight, stats_file))
        result = json_result(proc)
        text = open(stats_file).read() if os.path.exists(stats_file) else ""
    result["automem"] = parse_stats(text)
    steps = args.steps + args.warmup
    result["per_step"] = {k: v / steps for k, v in result["automem"].items()
                          if k in ("prefetched", "offloaded", "fetched", "waited_ms")}
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="S,B", help="comma list of dit.py models (default S,B)")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=3, help="timed steps per process")
    ap.add_argument("--warmup", type=int, default=2, help="untimed steps first (AutoMem records the first)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--tight", type=float, default=0.25, help="tight budget as a fraction of parameter bytes")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--csv", help="write one row per model, mode and round")
    ap.add_argument("--no-hooks", action="store_true", help="skip the measurement of the hooks' own cost")
    args = ap.parse_args()
    hcops_run = os.environ.get("HCOPS_RUN")
    if not hcops_run or not os.access(hcops_run, os.X_OK):
        error("HCOPS_RUN must name hcops-run (e.g. build/tools/hcops-run)")
        return 2
    models = [m for m in args.models.split(",") if m]
    modes = [m for m in args.modes.split(",") if m]
    if any(m not in PARAMS for m in models) or any(m not in MODES for m in modes) or "off" not in modes:
        error(f"models from {sorted(PARAMS)}; modes from {MODES}, 'off' among them")
        return 2
    print(f"# AutoMem on a DiT step. {cpu_model()}, {os.cpu_count()} logical CPUs, load {load_average():.2f}; "
          f"batch {args.batch}, {args.threads} threads, {args.steps} timed steps after {args.warmup}, "
          f"{args.rounds} rounds alternated; tight budget {args.tight:.0%} of the parameters")
    rows, status = [], 0
    medians = {}
    for model in models:
        rounds = []
        for r in range(args.rounds):
            order = alternated(modes, r)
            try:
                rounds.append({m: run_mode(args, hcops_run, model, m) for m in order})
            except RunError as e:
                error(str(e))
                return 2
            for m in order:
                res = rounds[-1][m]
                rows.append([model, m, r, res["median_s"], res["automem"].get("waited_ms", 0),
                             res["automem"].get("prefetched", 0), res["automem"].get("offloaded", 0),
                             res["param_sha256"]])
        print(f"\nDiT-{model}/2 (~{PARAMS[model] * 4 / 2**20:.0f} MiB of fp32 parameters)")
        print(f"{'mode':8} {'median s/step':>13} {'vs off':>8} {'waited ms/step':>15} "
              f"{'prefetched MiB/step':>20} {'offloaded MiB/step':>19}  active  same result")
        ref = rounds[0]["off"]
        medians[model] = statistics.median(rd["off"]["median_s"] for rd in rounds)
        for m in modes:
            med = statistics.median(rd[m]["median_s"] for rd in rounds)
            ratio = statistics.median(rd[m]["median_s"] / rd["off"]["median_s"] for rd in rounds)
            ps = rounds[-1][m]["per_step"]
            same = all(rd[m]["param_sha256"] == ref["param_sha256"] and rd[m]["losses"] == ref["losses"]
                       for rd in rounds)
            status = status or (0 if same else 1)
            print(f"{m:8} {med:13.3f} {ratio:8.4f} {ps.get('waited_ms', 0):15.2f} {ps.get('prefetched', 0):20.1f} "
                  f"{ps.get('offloaded', 0):19.1f}  {'yes' if rounds[-1][m]['automem'].get('active') else 'no':6}"
                  f"  {'yes' if same else 'NO'}")
    if not args.no_hooks:
        try:
            h = hook_cost(hcops_run, models)
        except RunError as e:
            error(str(e))
            return 2
        print(f"\nHooks' own cost (fast tier forced, everything fits; 1 thread): "
              f"{h['cost_s'] * 1e6:.1f} us per layer call, forward and backward "
              f"(chain of 201 layers: {h['plain_s'] * 1e3:.2f} ms without, {h['hooked_s'] * 1e3:.2f} ms with)")
        for model in models:
            calls = h["calls"][model]
            share = calls * h["cost_s"] / medians[model]
            print(f"  DiT-{model}/2: {calls} layer calls a step -> {calls * h['cost_s'] * 1e3:.2f} ms, "
                  f"{100 * share:.3f}% of its {medians[model]:.3f} s step (off, median)")
            rows.append([model, "hooks", "", calls * h["cost_s"], "", "", "", ""])
    if args.csv:
        write_csv(args.csv, ["model", "mode", "round", "median_s", "waited_ms", "prefetched_mib", "offloaded_mib",
                             "param_sha256"], rows)
    if status:
        error("a mode's losses or parameters differ from 'off'")
    return status


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Projected data-parallel scaling of DiT training, 1 to 1024 nodes, from
inputs measured here and a network model.

  measure   one rank's DiT training step at a few batch sizes, the backward
            timeline (when each parameter's gradient is ready), the gradient
            buckets as PyTorch DDP forms them -> a JSON of inputs
  project   weak and strong scaling, with and without the asynchronous
            allreduce, on a network preset or given alpha/beta -> table, CSV, PNG
  validate  the 2-rank prediction on this machine (alpha/beta fitted to an
            mpirun allreduce sweep here) against a measured 2-rank DDP step
            (perf/dit/ddp_bench.py), with and without libhcops_mpi.so

  $PYTHON perf/scaling_model.py measure --model S --batches 1,2,4,8 --threads 2 --out inputs.json
  $PYTHON perf/scaling_model.py project --inputs inputs.json --network ib-hdr --csv s.csv --png s.png
  $PYTHON perf/scaling_model.py project --inputs inputs.json --overlap-ddp doc/perf/torch_ddp_1gbit.csv \
          --overlap-backend gloo     (the overlap a DDP backend reached in a measured step)
  $PYTHON perf/scaling_model.py validate --model S --batch 8

The model (every assumption is printed with the results):
- one rank per node; a node's compute is the measured rank's step, times
  --compute-scale (1: a node as fast as this machine); the reduction inside
  a node is not modelled;
- allreduce of n bytes over p nodes, latency alpha and per-node bandwidth
  beta: ring 2(p-1)alpha + 2(p-1)/p n/beta; recursive doubling
  log2(p)(alpha + n/beta); Rabenseifner (recursive halving reduce-scatter +
  doubling allgather) 2 log2(p) alpha + 2(p-1)/p n/beta; the reduction's
  arithmetic is not charged; buckets go one after another on the link;
- without the asynchronous allreduce every bucket's allreduce is exposed after
  backward (MPI progresses only when the application calls it); with it, each
  bucket starts when its last gradient is ready (or when the previous bucket
  ends) and overlaps the rest of backward; of the communication backward
  could hide, the measured overlap efficiency is hidden (perf/mpi_overlap.py,
  or with --overlap-ddp a torch.distributed backend's overlap in a real DDP
  step, perf/dit/torch_ddp_bench.py);
- weak scaling: the per-node batch stays the measured one, efficiency =
  T(1 node) / T(p nodes); strong scaling: the global batch is fixed, each node
  computes global/p samples at the time measured for that batch (linear
  between measured batch sizes, proportional above the largest, not
  extrapolated below the smallest), efficiency = T(1 node, global batch) /
  (p T(p nodes)).
"""
import argparse
import bisect
import csv
import json
import math
import os
import statistics
import subprocess
import sys
import time

PERF = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, PERF)  # benchlib, when imported as a module (tests)
from benchlib.inputs import read_json  # noqa: E402
from benchlib.report import write_records  # noqa: E402
NETWORKS = {  # name: (alpha in s, beta in bytes/s per node, where the figures come from)
    "ib-hdr": (1.5e-6, 25e9, "InfiniBand HDR: 200 Gb/s = 25 GB/s per port; 1.5 us MPI latency "
               "(small-message latency reported for HDR: 1-2 us)"),
    "dit-hc": (1.5e-6, 48e9, "DiT-HC paper's per-node link: 48 GB/s; latency taken as InfiniBand's 1.5 us"),
}
PAPER_NODES, PAPER_EFFICIENCY = 256, 0.906
DDP_FIRST_BUCKET = 1 << 20     # torch.distributed's _DEFAULT_FIRST_BUCKET_BYTES
DDP_BUCKET = 25 << 20          # DDP's bucket_cap_mb=25 default
NODES = [2**i for i in range(11)]


class InputError(Exception):
    pass


# ----------------------------------------------------------------- the network

def allreduce_time(nbytes, p, alpha, beta, algorithm="ring"):
    """Seconds for an allreduce of nbytes over p nodes."""
    if p <= 1 or nbytes <= 0:
        return 0.0
    if algorithm == "ring":
        return 2 * (p - 1) * alpha + 2 * (p - 1) / p * nbytes / beta
    steps = math.ceil(math.log2(p))
    if algorithm == "recursive-doubling":
        return steps * (alpha + nbytes / beta)
    if algorithm == "rabenseifner":
        return 2 * steps * alpha + 2 * (p - 1) / p * nbytes / beta
    raise ValueError(f"unknown allreduce algorithm {algorithm!r}")


# ----------------------------------------------------------------- buckets

def ddp_buckets(param_bytes, first_cap=DDP_FIRST_BUCKET, cap=DDP_BUCKET):
    """Buckets of parameter indices as DDP forms them: parameters in reverse
    order (the order backward tends to produce them), a bucket closed once it
    holds at least its cap (the first bucket's cap is 1 MB, the others 25 MB)."""
    buckets, cur, size = [], [], 0
    for i in reversed(range(len(param_bytes))):
        cur.append(i)
        size += param_bytes[i]
        if size >= (first_cap if not buckets else cap):
            buckets.append(cur)
            cur, size = [], 0
    if cur:
        buckets.append(cur)
    return buckets


def capped_buckets(param_bytes, cap):
    """Buckets as perf/dit/ddp.py forms them: reverse order, a bucket closed
    before a parameter would take it past cap."""
    buckets, cur, size = [], [], 0
    for i in reversed(range(len(param_bytes))):
        if cur and size + param_bytes[i] > cap:
            buckets.append(cur)
            cur, size = [], 0
        cur.append(i)
        size += param_bytes[i]
    if cur:
        buckets.append(cur)
    return buckets


def with_buckets(inp, buckets):
    """inp with its buckets replaced by these (lists of parameter indices)."""
    pb, ready = inp["param_bytes"], inp["timeline"]["ready_s"]
    return dict(inp, buckets=[{"params": len(b), "bytes": sum(pb[i] for i in b), "ready_s": max(ready[i] for i in b)}
                              for b in buckets])


# ----------------------------------------------------------------- one step

def step_time(inp, compute, p, alpha, beta, algorithm, overlap, asynchronous):
    """(step seconds, exposed communication seconds) of one node of p.
    compute: {"forward", "backward", "optimizer"} seconds; the timeline of
    bucket ready times is inp's, scaled to this backward."""
    total = compute["forward"] + compute["backward"] + compute["optimizer"]
    if p <= 1:
        return total, 0.0
    scale = compute["backward"] / inp["timeline"]["backward_s"]
    comm = [allreduce_time(b["bytes"], p, alpha, beta, algorithm) for b in inp["buckets"]]
    if not asynchronous:
        exposed = sum(comm)
    else:
        end = 0.0
        for b, t in zip(inp["buckets"], comm):
            end = max(b["ready_s"] * scale, end) + t
        ideal = max(0.0, end - compute["backward"])
        exposed = ideal + (1 - overlap) * (sum(comm) - ideal)
    return total + exposed, exposed


def compute_at(inp, batch, compute_scale):
    """{"forward", "backward", "optimizer"} at batch samples per node: linear
    between the measured batch sizes, proportional to the batch above the
    largest, None below the smallest. The measured times are first made
    non-decreasing in the batch (a running maximum: a larger batch is not
    faster; guards against noise). The optimizer's time does not depend on
    the batch: the median of the measured ones."""
    pts = sorted((m["batch"], m) for m in inp["steps"])
    sizes = [b for b, _ in pts]
    if batch < sizes[0] - 1e-9:
        return None
    fb = {}
    for k in ("forward", "backward"):
        run, vals = 0.0, []
        for _, m in pts:
            run = max(run, m[k])
            vals.append(run)
        fb[k] = vals
    out = {}
    for k, vals in fb.items():
        if batch >= sizes[-1]:
            v = vals[-1] * batch / sizes[-1]
        else:
            i = bisect.bisect_right(sizes, batch)
            b0, b1 = sizes[i - 1], sizes[i]
            v = vals[i - 1] + (batch - b0) / (b1 - b0) * (vals[i] - vals[i - 1])
        out[k] = compute_scale * v
    out["optimizer"] = compute_scale * statistics.median(m["optimizer"] for _, m in pts)
    return out


def project(inp, alpha, beta, algorithm, overlap, compute_scale, global_batch, nodes=NODES):
    """Rows of the projection: nodes, weak and strong step times and efficiencies, sync and async."""
    local = inp["timeline"]["batch"]
    weak1 = compute_at(inp, local, compute_scale)
    t1_weak = step_time(inp, weak1, 1, alpha, beta, algorithm, overlap, False)[0]
    strong1 = compute_at(inp, global_batch, compute_scale)
    t1_strong = step_time(inp, strong1, 1, alpha, beta, algorithm, overlap, False)[0]
    rows = []
    for p in nodes:
        row = {"nodes": p}
        for mode in ("sync", "async"):
            t, exposed = step_time(inp, weak1, p, alpha, beta, algorithm, overlap, mode == "async")
            row[f"weak_{mode}_s"], row[f"weak_{mode}_exposed_s"] = t, exposed
            row[f"weak_{mode}_eff"] = t1_weak / t
            c = compute_at(inp, global_batch / p, compute_scale)
            if c is None:
                row[f"strong_{mode}_s"] = row[f"strong_{mode}_eff"] = None
                continue
            t = step_time(inp, c, p, alpha, beta, algorithm, overlap, mode == "async")[0]
            row[f"strong_{mode}_s"] = t
            row[f"strong_{mode}_eff"] = t1_strong / (p * t)
        rows.append(row)
    return rows


# ----------------------------------------------------------------- measure

def measure(args):
    import torch
    sys.path.insert(0, os.path.join(PERF, "dit"))
    import dit

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = dit.DiT(*dit.CONFIGS[args.model])
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0)
    abar = dit.alphas_cumprod()
    gen = torch.Generator().manual_seed(0)
    params = list(model.parameters())
    batches = sorted(int(b) for b in args.batches.split(","))
    steps = []
    timeline = None
    for batch in batches:
        runs = []
        for i in range(args.warmup + args.steps):
            data = dit.make_batch(gen, batch)
            ready = [None] * len(params)
            handles = []
            t0 = time.perf_counter()
            loss = dit.diffusion_loss(model, abar, data)
            t1 = time.perf_counter()
            for j, p in enumerate(params):
                def hook(grad, j=j):
                    ready[j] = time.perf_counter()
                    return grad
                handles.append(p.register_hook(hook))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            t2 = time.perf_counter()
            opt.step()
            t3 = time.perf_counter()
            for h in handles:
                h.remove()
            if i >= args.warmup:
                runs.append({"forward": t1 - t0, "backward": t2 - t1, "optimizer": t3 - t2,
                             "ready": [(r - t1) if r is not None else t2 - t1 for r in ready]})
        med = sorted(runs, key=lambda r: r["forward"] + r["backward"] + r["optimizer"])[len(runs) // 2]
        steps.append({"batch": batch, "forward": med["forward"], "backward": med["backward"],
                      "optimizer": med["optimizer"], "step": med["forward"] + med["backward"] + med["optimizer"]})
        if batch == max(batches):
            timeline = {"batch": batch, "backward_s": med["backward"], "ready_s": med["ready"]}
    param_bytes = [p.numel() * 4 for p in params]
    buckets = [{"params": len(b), "bytes": sum(param_bytes[i] for i in b),
                "ready_s": max(timeline["ready_s"][i] for i in b)} for b in ddp_buckets(param_bytes)]
    with open("/proc/cpuinfo") as f:
        cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "unknown")
    out = {"model": f"DiT-{args.model}/2", "threads": args.threads, "machine": cpu,
           "preload": os.environ.get("LD_PRELOAD", ""), "date": time.strftime("%Y-%m-%d"),
           "gradient_bytes": sum(param_bytes), "param_bytes": param_bytes, "steps": steps, "timeline": timeline, "buckets": buckets}
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
    print(f"DiT-{args.model}/2, {args.threads} threads on {cpu}: " + ", ".join(
        f"batch {s['batch']} {s['step']:.3f} s" for s in steps) +
        f"; {len(buckets)} buckets, {sum(param_bytes) / 2**20:.1f} MiB of gradients -> {args.out}")
    return 0


# ----------------------------------------------------------------- inputs

def load_inputs(path):
    inp = read_json(path, ("steps", "timeline", "buckets", "model"), "scaling_model.py measure", InputError)
    if not inp["steps"] or not inp["buckets"] or inp["timeline"].get("backward_s", 0) <= 0:
        raise InputError(f"{path}: empty measurements")
    for s in inp["steps"]:
        if not all(isinstance(s.get(k), (int, float)) and s[k] >= 0 for k in ("batch", "forward", "backward",
                                                                               "optimizer")):
            raise InputError(f"{path}: a step without batch/forward/backward/optimizer times: {s}")
    return inp


def overlap_from_csv(path, kind):
    """The median overlap % libhcops_mpi achieved on the largest message of
    perf/mpi_overlap.py's CSV, for compute kind 'idle' (a core free for the
    progress thread) or 'busy' (none)."""
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["config"] == "hcops" and r["kind"] == kind]
    if not rows:
        raise InputError(f"{path}: no hcops/{kind} rows")
    size = max(int(r["bytes"]) for r in rows)
    return statistics.median(float(r["overlap_pct"]) for r in rows if int(r["bytes"]) == size) / 100, size


def overlap_from_ddp_csv(path, backend):
    """The overlap a torch.distributed backend achieved in perf/dit/
    torch_ddp_bench.py's DDP step (its CSV: one row per link, model, batch
    and backend; the median over the rows of that backend), and a note
    saying where it comes from."""
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(line for line in f if not line.startswith("#"))
                if r.get("backend") == backend and r.get("overlap")]
    if not rows:
        raise InputError(f"{path}: no row of backend {backend!r} with an overlap")
    overlap = statistics.median(float(r["overlap"]) for r in rows)
    where = ", ".join(sorted({f"{r['link']} DiT-{r['model']} batch {r['batch']}" for r in rows}))
    return overlap, (f"the overlap of the torch.distributed backend {backend!r} in a measured 2-rank DDP step "
                     f"({where}; {os.path.basename(path)})")


# ----------------------------------------------------------------- project

def assumptions(inp, args, alpha, beta, net_note, overlap, overlap_note):
    return [
        f"inputs: {inp['model']}, measured on {inp.get('machine', '?')} with {inp.get('threads', '?')} threads"
        f"{' under ' + os.path.basename(inp['preload']) if inp.get('preload') else ''} ({inp.get('date', '?')}); "
        f"{inp['gradient_bytes'] / 2**20:.1f} MiB of f32 gradients in {len(inp['buckets'])} DDP buckets "
        f"(first 1 MiB, then 25 MiB)",
        f"one rank per node; node compute = the measured step x {args.compute_scale:g}; reduction inside a node "
        "not modelled",
        f"network: {net_note}; alpha {alpha * 1e6:.2f} us, beta {beta / 1e9:.1f} GB/s per node; "
        f"allreduce {args.algorithm}; buckets one after another; reduction arithmetic not charged",
        "without async allreduce: all buckets' allreduces exposed after backward",
        f"with async allreduce: each bucket starts when its last gradient is ready; {100 * overlap:.0f}% of what "
        f"backward could hide is hidden ({overlap_note})",
        f"weak scaling: {inp['timeline']['batch']} samples per node; strong scaling: global batch "
        f"{args.global_batch}, step time linear between the measured batch sizes "
        f"{', '.join(str(s['batch']) for s in sorted(inp['steps'], key=lambda s: s['batch']))}, proportional "
        "above the largest, not below the smallest",
        f"DiT-HC paper: {100 * PAPER_EFFICIENCY:.1f}% scaling efficiency at {PAPER_NODES} nodes (as the issue "
        "quotes it), drawn for reference: a different machine, model size and network",
    ]


def run_project(args):
    inp = load_inputs(args.inputs)
    if args.network == "custom":
        if not (args.alpha_us and args.bandwidth_gbs):
            raise InputError("--network custom needs --alpha-us and --bandwidth-gbs")
        alpha, beta, net_note = args.alpha_us * 1e-6, args.bandwidth_gbs * 1e9, "given"
    else:
        alpha, beta, net_note = NETWORKS[args.network]
        alpha = args.alpha_us * 1e-6 if args.alpha_us else alpha
        beta = args.bandwidth_gbs * 1e9 if args.bandwidth_gbs else beta
    if args.overlap is not None:
        overlap, overlap_note = args.overlap, "given with --overlap"
    elif args.overlap_ddp:
        overlap, overlap_note = overlap_from_ddp_csv(args.overlap_ddp, args.overlap_backend)
        args.async_label = f"torch.distributed {args.overlap_backend}"
    else:
        overlap, size = overlap_from_csv(args.overlap_csv, args.overlap_kind)
        overlap_note = (f"libhcops_mpi's median overlap at {size >> 20} MiB, compute '{args.overlap_kind}', "
                        f"{os.path.basename(args.overlap_csv)}")
    if not 0 <= overlap <= 1:
        raise InputError(f"overlap {overlap} is not within [0, 1]")
    args.global_batch = args.global_batch or inp["timeline"]["batch"] * 256
    rows = project(inp, alpha, beta, args.algorithm, overlap, args.compute_scale, args.global_batch)
    notes = assumptions(inp, args, alpha, beta, net_note, overlap, overlap_note)
    print(f"Projected scaling of {inp['model']} data-parallel training ({args.network})")
    for n in notes:
        print(f"  - {n}")
    fmt = lambda x: f"{100 * x:7.1f}%" if x is not None else f"{'-':>8}"  # noqa: E731
    print(f"\n{'nodes':>6} {'weak step s':>12} {'weak sync':>9} {'weak async':>10} {'strong sync':>11} "
          f"{'strong async':>12}")
    for r in rows:
        print(f"{r['nodes']:>6} {r['weak_async_s']:>12.3f} {fmt(r['weak_sync_eff']):>9} {fmt(r['weak_async_eff']):>10} "
              f"{fmt(r['strong_sync_eff']):>11} {fmt(r['strong_async_eff']):>12}")
    if args.csv:
        write_records(args.csv, rows, notes)
    if args.png:
        plot(rows, inp, args, args.png)
    return 0


def plot(rows, inp, args, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 5))
    x = [r["nodes"] for r in rows]
    who = getattr(args, "async_label", "libhcops_mpi")
    for key, label, style in (("weak_async_eff", f"weak, async allreduce ({who})", "-o"),
                              ("weak_sync_eff", "weak, blocking allreduce", "--o"),
                              ("strong_async_eff", f"strong (global batch {args.global_batch}), async", "-s"),
                              ("strong_sync_eff", f"strong (global batch {args.global_batch}), blocking", "--s")):
        pts = [(r["nodes"], 100 * r[key]) for r in rows if r[key] is not None]
        ax.plot([p for p, _ in pts], [e for _, e in pts], style, label=label, ms=4)
    ax.plot([PAPER_NODES], [100 * PAPER_EFFICIENCY], "r*", ms=14, label="DiT-HC paper: 90.6% at 256 nodes")
    ax.set_xscale("log", base=2)
    ax.set_xticks(x)
    ax.set_xticklabels([str(n) for n in x])
    ax.set_ylim(0, 105)
    ax.set_xlabel("nodes (one rank each)")
    ax.set_ylabel("scaling efficiency (%)")
    node = "" if args.compute_scale == 1 else f" x {args.compute_scale:g}"
    ax.set_title(f"{inp['model']}, projected on {args.network} ({args.algorithm} allreduce); node compute = the step "
                 f"measured on {inp.get('machine', '?')[:24]}{node}", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ----------------------------------------------------------------- validate

SWEEP = r"""
import json, sys, time
import numpy as np
from mpi4py import MPI
c = MPI.COMM_WORLD
out = {}
for n in [int(x) for x in sys.argv[1].split(",")]:
    buf = np.ones(n // 4, dtype=np.float32)
    res = np.empty_like(buf)
    reps = max(3, min(200, int(2e7 // max(n, 1))))
    c.Allreduce(buf, res)
    ts = []
    for _ in range(reps):
        c.Barrier()
        t = time.perf_counter()
        c.Allreduce(buf, res)
        ts.append(time.perf_counter() - t)
    out[n] = sorted(ts)[len(ts) // 2]
if c.rank == 0:
    print(json.dumps(out))
"""


def fit_alpha_beta(times):
    """Least squares of t = 2 alpha + n / beta (the ring of 2 ranks) over
    {n: t}, in relative error (weights 1/t^2), so that small messages count
    as much as large ones."""
    pts = [(n, t) for n, t in times.items() if t > 0]
    w = [1 / t**2 for _, t in pts]
    sw = sum(w)
    mx = sum(wi * n for wi, (n, _) in zip(w, pts)) / sw
    my = sum(wi * t for wi, (_, t) in zip(w, pts)) / sw
    slope = sum(wi * (n - mx) * (t - my) for wi, (n, t) in zip(w, pts)) / sum(
        wi * (n - mx) ** 2 for wi, (n, _) in zip(w, pts))
    intercept = my - slope * mx
    return max(intercept / 2, 1e-9), 1 / slope


def validate(args):
    sys.path.insert(0, PERF)
    from benchlib import mpi as bmpi
    from benchlib.build import LIBHCOPS, PYTHON
    env = dict(os.environ, OMP_NUM_THREADS="1", LD_PRELOAD=LIBHCOPS)
    tmp = args.out_prefix
    print("1. one rank, 1 thread: step and backward timeline", flush=True)
    subprocess.run([PYTHON, os.path.abspath(__file__), "measure", "--model", args.model, "--batches",
                    str(args.batch), "--threads", "1", "--steps", str(args.steps), "--warmup", "3",
                    "--out", f"{tmp}-1rank.json"],
                   env=env, check=True)
    # ddp.py's buckets (--bucket-mb, default 4 MB), not DDP's
    inp = load_inputs(f"{tmp}-1rank.json")
    inp = with_buckets(inp, capped_buckets(inp["param_bytes"], int(args.bucket_mb * 2**20)))
    print("2. allreduce sweep, 2 ranks (alpha, beta of this machine)", flush=True)
    # Up to 16 MiB: the buckets' sizes (ddp.py's 4 MB). Beyond, shared-memory
    # allreduce here falls off a cliff (64 MiB: 0.34 GB/s against 3.6 at 16 MiB).
    sizes = "4096,65536,262144,1048576,4194304,16777216"
    p = subprocess.run(bmpi.mpirun(2, "core") + [PYTHON, "-c", SWEEP, sizes], capture_output=True, text=True,
                       env=dict(os.environ, OMP_NUM_THREADS="1"), check=True)
    times = {int(k): v for k, v in json.loads(p.stdout.strip().splitlines()[-1]).items()}
    alpha, beta = fit_alpha_beta(times)
    print(f"   alpha {alpha * 1e6:.2f} us, beta {beta / 1e9:.2f} GB/s (fitted to " + ", ".join(
        f"{n >> 10} KiB {1e6 * t:.0f} us" for n, t in sorted(times.items())) + ")")
    print("3. measured 2-rank DDP step (perf/dit/ddp_bench.py)", flush=True)
    csv_path = f"{tmp}-ddp.csv"
    subprocess.run([PYTHON, os.path.join(PERF, "dit", "ddp_bench.py"), "--model", args.model, "--batch",
                    str(args.batch), "--steps", str(args.steps), "--warmup", "3", "--rounds", str(args.rounds),
                    "--threads", "1",
                    "--bucket-mb", str(args.bucket_mb), "--csv", csv_path], check=True)
    with open(csv_path, newline="") as f:
        rows = list(csv.DictReader(f))
    measured = {v: statistics.median(float(r["median_s"]) for r in rows if r["variant"] == v)
                for v in {r["variant"] for r in rows}}
    overlap = args.overlap if args.overlap is not None else overlap_from_csv(args.overlap_csv, "busy")[0]
    c = compute_at(inp, args.batch, 1.0)
    pred = {"libhcops.so": step_time(inp, c, 2, alpha, beta, "ring", overlap, False)[0],
            "libhcops.so + libhcops_mpi.so": step_time(inp, c, 2, alpha, beta, "ring", overlap, True)[0]}
    one = step_time(inp, c, 1, alpha, beta, "ring", overlap, False)[0]
    print(f"\nValidation on {inp.get('machine')}: {inp['model']}, batch {args.batch} per rank, 1 thread per rank")
    print(f"  1 rank: predicted {one:.3f} s = measured {inp['steps'][0]['step']:.3f} s (the input itself)")
    result = {"alpha_s": alpha, "beta_Bps": beta, "overlap": overlap, "one_rank_s": one, "cases": []}
    for v in pred:
        m = measured.get(v)
        err = (pred[v] - m) / m if m else float("nan")
        print(f"  2 ranks, {v:<31}: predicted {pred[v]:.3f} s, measured {m:.3f} s, error {100 * err:+.1f}%")
        result["cases"].append({"variant": v, "predicted_s": pred[v], "measured_s": m, "error": err})
    with open(f"{tmp}-validation.json", "w") as f:
        json.dump(result, f, indent=1)
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure")
    m.add_argument("--model", default="S")
    m.add_argument("--batches", default="1,2,4,8")
    m.add_argument("--threads", type=int, default=2)
    m.add_argument("--steps", type=int, default=3)
    # Three: a DiT step's forward gets faster over its first three steps here (glibc's
    # mmap threshold adapting to the activations' sizes: fewer page faults each step).
    m.add_argument("--warmup", type=int, default=3)
    m.add_argument("--out", required=True)
    pj = sub.add_parser("project")
    pj.add_argument("--inputs", required=True)
    pj.add_argument("--network", choices=sorted(NETWORKS) + ["custom"], default="ib-hdr")
    pj.add_argument("--alpha-us", type=float)
    pj.add_argument("--bandwidth-gbs", type=float)
    pj.add_argument("--algorithm", choices=["ring", "recursive-doubling", "rabenseifner"], default="ring")
    pj.add_argument("--overlap", type=float, help="overlap efficiency in [0, 1] instead of the CSV's")
    pj.add_argument("--overlap-csv", default=os.path.join(PERF, "..", "doc", "perf", "mpi-overlap.csv"))
    pj.add_argument("--overlap-kind", choices=["idle", "busy"], default="idle",
                    help="idle: a core free for the progress thread (a node with cores to spare, as libhcops_mpi "
                    "is meant to run); busy: none (this 2-core machine)")
    pj.add_argument("--overlap-ddp", metavar="CSV",
                    help="the overlap measured in a DDP step by perf/dit/torch_ddp_bench.py (doc/perf/torch_ddp_*.csv)")
    pj.add_argument("--overlap-backend", default="hcops", help="the backend of --overlap-ddp's rows (hcops, gloo)")
    pj.add_argument("--compute-scale", type=float, default=1.0)
    pj.add_argument("--global-batch", type=int, help="strong scaling's global batch (default 256 nodes' worth)")
    pj.add_argument("--csv")
    pj.add_argument("--png")
    v = sub.add_parser("validate")
    v.add_argument("--model", default="S")
    v.add_argument("--batch", type=int, default=8)
    v.add_argument("--steps", type=int, default=3)
    v.add_argument("--rounds", type=int, default=2)
    v.add_argument("--bucket-mb", type=float, default=4.0, help="ddp.py's bucket cap (its default 4)")
    v.add_argument("--overlap", type=float)
    v.add_argument("--overlap-csv", default=os.path.join(PERF, "..", "doc", "perf", "mpi-overlap.csv"))
    v.add_argument("--out-prefix", default="scaling")
    args = ap.parse_args(argv)
    try:
        return {"measure": measure, "project": run_project, "validate": validate}[args.cmd](args)
    except InputError as e:
        print(f"scaling_model.py: {e}", file=sys.stderr)
        return 2
    except subprocess.CalledProcessError as e:
        print(f"scaling_model.py: {os.path.basename(str(e.cmd[0]))} failed with status {e.returncode}",
              file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

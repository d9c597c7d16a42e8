#!/usr/bin/env python3
"""The optimizer step: HCOps's fused AdamW against the fused ones a user of
PyTorch 2.x would pick, on the parameters of DiT-S/2 and DiT-XL/2 (perf/dit's
models; random gradients), f32 or bf16 parameters, 1 and 2 threads.

  $PYTHON perf/adam_bench.py --python VENV_PYTHON [--models S,XL] [--dtypes f32] [--threads 1,2]
                             [--rounds 3] [--steps 5] [--libs ...] [--csv F] [--png F] [--quick]

Libraries (each configuration in a process of its own, the order rotated
from case to case and round to round; medians over rounds):
  hcops          torch.optim.AdamW (foreach=False) under hcops-run: HCOps's fused step
  torch          stock AdamW, foreach=False (the single-tensor loop)
  torch-foreach  stock AdamW, foreach=True (2.x's default)
  torch-fused    stock AdamW, fused=True (PyTorch's own fused CPU kernel)
  deepspeed      DeepSpeed's DeepSpeedCPUAdam(adamw_mode=True): its C++ op is
                 built at first use with the system compiler; the package
                 (deepspeed==0.19.8) is installed into the venv of --python
                 when missing
All with lr 1e-4, betas (0.9, 0.999), eps 1e-8, weight decay 0.01. Before
timing, each process checks its first step on three parameter tensors
against AdamW's formula computed in f64: the largest difference in units of
the datatype's epsilon at the parameter's magnitude (max(|p|, |ref|)) is
printed and in the CSV; above 8 for f32 the run fails (the peers must
compute one function).

The bound of a step is the bytes it must move (f32: read p, g, m, v and write
p, m, v: 28 bytes per parameter; bf16 parameters with bf16 state: 14) at the
STREAM triad bandwidth hcops-stream measures on as many threads. The target
(issue 28): HCOps >= 1.2x the faster of torch-fused and deepspeed.
--quick: DiT-tiny's parameters, 1 round, 2 steps: a check that it all runs.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

PERF = os.path.dirname(os.path.abspath(__file__))
LIBS = ("hcops", "torch", "torch-foreach", "torch-fused", "deepspeed")
DEEPSPEED = "deepspeed==0.19.8"
HYPER = {"lr": 1e-4, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.01}
BYTES_PER_PARAM = {"f32": 28, "bf16": 14}
TARGET = 1.2
MAX_ULPS = 8  # f32: a correctly rounded step is within 1; sqrt and division orders add a few


# ---- the child: one library, one model, one datatype ----------------------------

def reference_step(p, g, dtype_f64):
    """AdamW's first step (m = v = 0, step 1) in f64: what p becomes."""
    import torch
    b1, b2 = HYPER["betas"]
    p64, g64 = p.to(dtype_f64), g.to(dtype_f64)
    m = (1 - b1) * g64
    v = (1 - b2) * g64 * g64
    m_hat, v_hat = m / (1 - b1), v / (1 - b2)
    return p64 * (1 - HYPER["lr"] * HYPER["weight_decay"]) - HYPER["lr"] * m_hat / (torch.sqrt(v_hat) + HYPER["eps"])


def optimizer(lib, params):
    import torch
    if lib == "deepspeed":
        from deepspeed.ops.adam import DeepSpeedCPUAdam
        return DeepSpeedCPUAdam(params, adamw_mode=True, **HYPER)
    kw = {"hcops": {"foreach": False}, "torch": {"foreach": False}, "torch-foreach": {"foreach": True},
          "torch-fused": {"fused": True}}[lib]
    return torch.optim.AdamW(params, **HYPER, **kw)


def child(spec):
    import torch
    sys.path.insert(1, os.path.join(PERF, "dit"))
    from dit import CONFIGS, DiT
    torch.set_num_threads(spec["threads"])
    dt = {"f32": torch.float32, "bf16": torch.bfloat16}[spec["dtype"]]
    torch.manual_seed(0)
    params = [p.detach().to(dt).requires_grad_() for p in DiT(*CONFIGS[spec["model"]]).parameters()]
    for p in params:
        p.grad = torch.randn_like(p) * 1e-3
    # The three largest tensors with nonzero values (DiT's largest, adaLN's,
    # start at zero, where weight decay would go unchecked).
    nonzero = [p for p in params if p.detach().abs().max().item() > 0]
    sample = [(p, p.detach().clone(), p.grad.clone()) for p in sorted(nonzero, key=lambda p: -p.numel())[:3]]
    opt = optimizer(spec["lib"], params)
    opt.step()  # the first step: checked, and the state made
    err = 0.0
    info = torch.finfo(dt)
    for p, p0, g in sample:
        ref = reference_step(p0, g, torch.float64)
        scale = torch.maximum(p0.double().abs(), ref.abs()).clamp_min(info.tiny) * info.eps
        e = ((p.detach().double() - ref).abs() / scale).max().item()
        err = e if e != e else max(err, e)  # a NaN is kept (max() would drop it)
    times = []
    for _ in range(spec["steps"]):
        t0 = time.perf_counter()
        opt.step()
        times.append(time.perf_counter() - t0)
    print(json.dumps({"s": statistics.median(times), "params": sum(p.numel() for p in params), "err": err,
                      "torch": torch.__version__}))


# ---- the parent ------------------------------------------------------------------

sys.path.insert(0, PERF)
from benchlib.build import BUILD, program, require  # noqa: E402
from benchlib.child import RunError, child_env, json_result, run  # noqa: E402
from benchlib.report import cpu_model, error, load_average, pyplot, save_plot, write_csv  # noqa: E402
from benchlib.rounds import rotated  # noqa: E402


def ensure_deepspeed(python):
    """True when the venv of python can import deepspeed (installed if missing)."""
    if subprocess.run([python, "-c", "import deepspeed"], capture_output=True).returncode == 0:
        return True
    print(f"installing {DEEPSPEED} into the venv of {python} (first time)", flush=True)
    proc = subprocess.run([python, "-m", "pip", "install", "--progress-bar", "off", DEEPSPEED])
    return proc.returncode == 0 and subprocess.run([python, "-c", "import deepspeed"],
                                                   capture_output=True).returncode == 0


def measure(args, lib, model, dtype, threads):
    spec = {"lib": lib, "model": model, "dtype": dtype, "threads": threads, "steps": args.steps}
    cmd = [args.python, os.path.abspath(__file__), "--child", json.dumps(spec)]
    if lib == "hcops":
        cmd = [args.hcops_run] + cmd
    # DeepSpeed's op is built and cached under the user's torch extensions dir.
    r = json_result(run(cmd, child_env(threads=threads, drop=["HCOPS_VERBOSE", "HCOPS_TORCH_LIB"]), tail_lines=25))
    if dtype == "f32" and not r["err"] <= MAX_ULPS:  # NaN fails too
        raise RunError(f"{lib} {model} {dtype}: its first step is {r['err']:.1f} ulps off AdamW's formula")
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--python", help="the venv's python (torch 2.x: torch-fused needs it)")
    ap.add_argument("--models", default="S,XL")
    ap.add_argument("--dtypes", default="f32")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--steps", type=int, help="timed steps per process, after the checked first (default 5)")
    ap.add_argument("--libs", default=",".join(LIBS))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--csv", default=os.path.join("perf-results", "adam-bench.csv"))
    ap.add_argument("--png", default=os.path.join("perf-results", "adam-bench.png"))
    args = ap.parse_args()
    if args.child:
        child(json.loads(args.child))
        return 0
    if not args.python:
        ap.error("--python is required")
    args.hcops_run = os.environ.get("HCOPS_RUN", os.path.join(BUILD, "tools", "hcops-run"))
    stream = program("hcops-stream")
    require(args.hcops_run, stream)
    models = ["tiny"] if args.quick else args.models.split(",")
    rounds_n = args.rounds or (1 if args.quick else 3)
    args.steps = args.steps or (2 if args.quick else 5)
    libs = [lib for lib in args.libs.split(",") if lib]
    bad = [lib for lib in libs if lib not in LIBS]
    if bad:
        ap.error(f"--libs: unknown {', '.join(bad)}; known: {', '.join(LIBS)}")
    if "deepspeed" in libs and not ensure_deepspeed(args.python):
        error("deepspeed could not be installed or imported: left out")
        libs.remove("deepspeed")
    threads_list = [int(t) for t in args.threads.split(",")]
    cases = [(m, d, t) for m in models for d in args.dtypes.split(",") for t in threads_list]
    print(f"AdamW step, {len(cases)} cases x {len(libs)} libraries, {rounds_n} round(s), {args.steps} timed steps "
          f"each; CPU {cpu_model()}, load average {load_average()}", flush=True)
    rounds = []
    try:
        for r in range(rounds_n):
            res = {"triad": {t: json_result(run([stream], child_env(threads=t)))["triad_gbs_best"]
                             for t in threads_list}}
            for i, case in enumerate(cases):
                res[case] = {}
                for lib in rotated(libs, i + r):
                    res[case][lib] = measure(args, lib, *case)
                    print(f"  round {r + 1}: {case[0]} {case[1]} {case[2]}T {lib}: "
                          f"{1e3 * res[case][lib]['s']:.1f} ms", flush=True)
            rounds.append(res)
    except RunError as e:
        error(e)
        return 2
    rows = []
    for case in cases:
        model, dtype, threads = case
        params = rounds[0][case][libs[0]]["params"]
        nbytes = params * BYTES_PER_PARAM[dtype]
        triad = statistics.median(r["triad"][threads] for r in rounds)
        for lib in libs:
            s = statistics.median(r[case][lib]["s"] for r in rounds)
            speedup = (statistics.median(r[case][lib]["s"] / r[case]["hcops"]["s"] for r in rounds)
                       if "hcops" in libs else None)
            rows.append({"model": model, "dtype": dtype, "threads": threads, "lib": lib, "params": params, "s": s,
                         "gbs": nbytes / s / 1e9, "triad": triad, "pct_bound": 100 * nbytes / s / 1e9 / triad,
                         "speedup": speedup, "err": max(r[case][lib]["err"] for r in rounds)})
    print(f"\n{'model':<6} {'dtype':<5} {'thr':>3} {'library':<14} {'ms/step':>9} {'GB/s':>7} {'% triad':>8} "
          f"{'hcops x':>8} {'1st step ulps':>14}")
    for row in rows:
        sp = f"{row['speedup']:.2f}x" if row["speedup"] else "n/a"
        print(f"{row['model']:<6} {row['dtype']:<5} {row['threads']:>3} {row['lib']:<14} {1e3 * row['s']:>9.1f} "
              f"{row['gbs']:>7.1f} {row['pct_bound']:>7.0f}% {sp:>8} {row['err']:>14.2f}")
    for case in cases:
        fused = [r for r in rows if (r["model"], r["dtype"], r["threads"]) == case and r["lib"] in
                 ("torch-fused", "deepspeed")]
        if fused and "hcops" in libs:
            best = min(fused, key=lambda r: r["s"])
            print(f"{case[0]} {case[1]} {case[2]} thread(s): hcops {best['speedup']:.2f}x the faster fused peer "
                  f"({best['lib']}); target {TARGET}x: {'met' if best['speedup'] >= TARGET else 'MISSED'}")
    print(f"bound: {BYTES_PER_PARAM} bytes per parameter at hcops-stream's triad (GB/s column 'triad' in the CSV); "
          f"hcops x = median over rounds of (library time / hcops time); load average at the end {load_average()}")
    for path in (args.csv, args.png):
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    write_csv(args.csv, ["model", "dtype", "threads", "library", "params", "s_per_step", "gbs", "triad_gbs",
                         "pct_triad", "hcops_speedup", "first_step_ulps"],
              ([r["model"], r["dtype"], r["threads"], r["lib"], r["params"], f"{r['s']:.6f}", f"{r['gbs']:.2f}",
                f"{r['triad']:.2f}", f"{r['pct_bound']:.1f}", "" if r["speedup"] is None else f"{r['speedup']:.3f}",
                f"{r['err']:.2f}"] for r in rows))
    print(f"wrote {args.csv}")
    plot(args.png, rows, cases, libs)
    return 0


def plot(path, rows, cases, libs):
    plt = pyplot()
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(2 + 1.6 * len(cases), 4))
    width = 0.8 / len(libs)
    for i, lib in enumerate(libs):
        got = {(r["model"], r["dtype"], r["threads"]): r["pct_bound"] for r in rows if r["lib"] == lib}
        ax.bar([x + (i - (len(libs) - 1) / 2) * width for x in range(len(cases))], [got[c] for c in cases], width,
               label=lib, color=f"C{i}")
    ax.axhline(100, linestyle="--", color="gray", label="triad bandwidth")
    ax.set_xticks(range(len(cases)), [f"DiT-{m}/2 {d}\n{t} thread(s)" for m, d, t in cases], fontsize="small")
    ax.set_ylabel("% of the memory bound (bytes moved / triad)")
    ax.set_title(f"AdamW step, {cpu_model()}", fontsize="small")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))
    save_plot(fig, path, dpi=100, bbox_inches="tight")


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""DDP DiT step on torch.distributed: gloo against HCOps' backend "hcops",
2 ranks of one core each, on this machine's shared memory or between two
network namespaces joined by a veth pair shaped to 1 or 10 Gbit/s
(tests/torch2/netns_pair.sh: an orted in each, Open MPI and gloo over TCP),
so that the gradients' allreduce costs what it costs between two nodes.

  perf/dit/torch_ddp_bench.py [--link shm|1gbit|10gbit] [--model S] [--batch 4]
      [--steps 4] [--rounds 3] [--bucket-mb 25] [--csv FILE]
      [--extra "NAME=mpirun arguments" ...]

Each round runs three jobs of perf/dit/torch_ddp.py in a rotated order:
gloo, hcops, and none (the hcops group with DDP communicating nothing: the
compute alone). Per variant: the median step; exposed communication = step -
compute-only step; the gradients' allreduce alone (allreduce_s: what an
overlap-free step would add); overlap = 1 - exposed / allreduce alone.
Ratios are of medians over the rounds. Losses and parameters of gloo and
hcops must agree (bit for bit on 2 ranks). --extra adds a variant on the
hcops backend with more mpirun arguments (MCA parameters, `-x VAR=value`),
alternated with the others: e.g. --extra "tcpthread=--mca
btl_tcp_progress_thread 1".

Needs root for the namespaces (--link shm does not). Environment: PYTHON (a
torch 2.x python; default the venv of configure --with-torch-python),
HCOPS_C10D_LIB, MPIRUN.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
WORKER = os.path.join(HERE, "torch_ddp.py")
PAIR = os.path.join(TOP, "tests", "torch2", "netns_pair.sh")
AGENT = os.path.join(TOP, "tests", "torch2", "netns_agent.sh")
VARIANTS = ("gloo", "hcops", "none")


def machine():
    name = "unknown CPU"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    return f"{name}, {os.cpu_count()} CPUs"


def mpirun(link, ns, tmp):
    env_names = ["PYTHONPATH", "HCOPS_C10D_LIB", "OMP_NUM_THREADS", "GLOO_SOCKET_IFNAME"]
    base = [os.environ.get("MPIRUN", "mpirun"), "-np", "2", "--mca", "pml", "ob1"]
    for n in env_names:
        base += ["-x", n]
    if link == "shm":
        return base + ["--bind-to", "core", "--mca", "btl", "self,vader"]
    return (["ip", "netns", "exec", f"{ns}0"] + base
            + ["--host", f"{ns}0:1,{ns}1:1", "--mca", "plm_rsh_agent", AGENT, "--mca", "plm_rsh_no_tree_spawn", "1",
               "--bind-to", "none",
               "--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "hc0", "--mca", "oob_tcp_if_include", "hc0"])


def run_job(cmd, env):
    out = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=1800)
    for line in out.stdout.splitlines():
        if line.startswith("{"):
            return json.loads(line)
    sys.stderr.write(out.stderr[-3000:])
    raise RuntimeError(f"no result from {' '.join(cmd[-12:])} (exit {out.returncode})")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--link", choices=("shm", "1gbit", "10gbit"), default="1gbit")
    ap.add_argument("--model", default="S")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--bucket-mb", type=float, default=25.0)
    ap.add_argument("--csv")
    ap.add_argument("--extra", action="append", default=[], metavar="NAME=ARGS",
                    help="a variant on the hcops backend with these mpirun arguments")
    args = ap.parse_args()
    extras = {}
    for e in args.extra:
        name, _, more = e.partition("=")
        if not name or name in VARIANTS or not more.split():
            ap.error(f"--extra {e!r}: NAME=mpirun arguments, NAME not one of {', '.join(VARIANTS)}")
        extras[name] = more.split()
    variants = VARIANTS + tuple(extras)
    python = os.environ.get("PYTHON") or os.path.join(TOP, "build", "torch2-venv", "bin", "python")
    env = dict(os.environ)
    env.setdefault("HCOPS_C10D_LIB", os.path.join(TOP, "build", "shim", "torch_dist", ".libs", "hcops_c10d_torch2.so"))
    env["PYTHONPATH"] = os.path.join(TOP, "python") + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["OMP_NUM_THREADS"] = "1"
    env["GLOO_SOCKET_IFNAME"] = "lo" if args.link == "shm" else "hc0"
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    ns = f"hcb{os.getpid()}"
    tmp = None
    if args.link != "shm":
        import tempfile
        tmp = tempfile.mkdtemp(prefix="hcops-ddp-")
        env["TMPDIR"] = tmp
        subprocess.run(["sh", PAIR, "down", ns], check=False)
        subprocess.run(["sh", PAIR, "up", ns, args.link, "198"], check=True)
    results = {v: [] for v in variants}
    worker = [python, WORKER, "--model", args.model, "--batch", str(args.batch), "--steps", str(args.steps),
              "--warmup", str(args.warmup), "--bucket-mb", str(args.bucket_mb)]
    print(f"DDP DiT-{args.model}/2, batch {args.batch}/rank, 2 ranks x 1 thread, link {args.link}; {machine()}; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", flush=True)
    try:
        for r in range(args.rounds):
            k = r % len(variants)
            for v in variants[k:] + variants[:k]:
                res = run_job(mpirun(args.link, ns, tmp) + extras.get(v, []) + worker
                              + ["--backend", "hcops" if v in extras else v]
                              + ([] if args.link == "shm" else ["--pin"]), env)
                results[v].append(res)
                print(f"round {r + 1} {v:5s}: steps {' '.join(f'{t:.3f}' for t in res['step_times'])} s"
                      + (f"; allreduce alone {statistics.median(res['allreduce_s']):.3f} s" if res["allreduce_s"] else ""),
                      flush=True)
    finally:
        if args.link != "shm":
            subprocess.run(["sh", PAIR, "down", ns], check=False)
            subprocess.run(["rm", "-rf", tmp], check=False)
    status = 0
    g = results["gloo"]
    for name in ("hcops",) + tuple(extras):
        for a, b in zip(g, results[name]):
            if a["losses"] != b["losses"] or a["param_sum"] != b["param_sum"]:
                print(f"MISMATCH: gloo losses {a['losses']} sum {a['param_sum']}, {name} {b['losses']} sum "
                      f"{b['param_sum']}")
                status = 1
    step = {v: statistics.median(statistics.median(x["step_times"]) for x in results[v]) for v in variants}
    alone = {v: statistics.median(statistics.median(x["allreduce_s"]) for x in results[v])
             for v in variants if v != "none"}
    rows = []
    print(f"\n{'backend':8s} {'step s':>8s} {'exposed s':>10s} {'allreduce alone s':>18s} {'overlap':>8s}")
    for v in ("gloo", "hcops") + tuple(extras) + ("none",):
        exposed = step[v] - step["none"] if v != "none" else 0.0
        ar = alone.get(v)
        overlap = 1 - exposed / ar if ar else None
        rows.append((v, step[v], exposed, ar, overlap))
        print(f"{v:8s} {step[v]:8.3f} {exposed:10.3f} {ar if ar else float('nan'):18.3f} "
              f"{(f'{overlap * 100:7.0f}%' if overlap is not None else '       -')}")
    print(f"\nhcops step {step['gloo'] / step['hcops']:.2f}x gloo's; exposed communication "
          f"{(step['hcops'] - step['none']) / max(1e-9, step['gloo'] - step['none']) * 100:.0f} % of gloo's "
          f"({args.rounds} rounds, medians; gradients {g[0]['grad_bytes'] / 1e6:.1f} MB)")
    for v in extras:
        print(f"{v}: step {step['gloo'] / step[v]:.2f}x gloo's, exposed "
              f"{(step[v] - step['none']) / max(1e-9, step['gloo'] - step['none']) * 100:.0f} % of gloo's")
    if args.csv:
        with open(args.csv, "w") as f:
            f.write("link,model,batch,backend,step_s,exposed_s,allreduce_alone_s,overlap\n")
            for v, s, e, ar, o in rows:
                f.write(f"{args.link},{args.model},{args.batch},{v},{s:.4f},{e:.4f},"
                        f"{'' if ar is None else f'{ar:.4f}'},{'' if o is None else f'{o:.3f}'}\n")
    return status


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Times a DiT training step (perf/dit/dit.py) and one large SGEMM
(build/perf/hcops-replay on a one-shape trace) with HCOps' BLAS under different
allocators, alternating them round by round (each run in its own process, the
order rotated every round). Reports medians over rounds and, per round, the
ratio to libhcops.so alone; the huge-page effect is the ratio base / thp of the
same round. The DiT losses and parameter checksum must be bit-identical in every
run: an allocator changes where memory is, never a result.

  $PYTHON perf/mem_dit.py [--rounds 3] [--steps 3] [--sgemm 3072,3072,3072] [--csv F]

Configurations (libhcops.so preloaded in all of them):
  hcops        libhcops.so alone (glibc malloc: large blocks on base pages, as
               THP is "madvise" here and glibc does not madvise)
  mem-thp      + libhcops_mem.so, HCOPS_MEM_POLICY=fast,thp
  mem-base     + libhcops_mem.so, HCOPS_MEM_POLICY=fast,base
  memtier      + memkind's libmemtier.so, one DRAM tier
"""
import argparse
import csv
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

from blas_replay import BUILD
from mem_bench import MEM, MEMTIER, MEMTIER_ENV, clean_env

HERE = os.path.dirname(os.path.abspath(__file__))
HCOPS = os.path.join(BUILD, "shim", ".libs", "libhcops.so")
CONFIGS = {  # name: (preloads after libhcops.so, extra environment)
    "hcops": ([], {}),
    "mem-thp": ([MEM], {"HCOPS_MEM_POLICY": "fast,thp", "HCOPS_MEM_STATS": "1"}),
    "mem-base": ([MEM], {"HCOPS_MEM_POLICY": "fast,base", "HCOPS_MEM_STATS": "1"}),
    "memtier": ([MEMTIER], MEMTIER_ENV),
}


warned = set()  # configurations whose non-zero exit status was reported once


def run(cmd, name, threads):
    preloads, extra = CONFIGS[name]
    env = dict(clean_env(), OMP_NUM_THREADS=str(threads), LD_PRELOAD=":".join([HCOPS] + preloads), **extra)
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    try:
        r = json.loads(p.stdout.splitlines()[-1])
    except (IndexError, ValueError):
        sys.exit(f"mem_dit.py: {name}: {' '.join(cmd[:2])} failed: {p.stderr.strip()[-500:]}")
    if p.returncode and name not in warned:
        # memtier + torch aborts at exit ("cannot allocate memory for
        # thread-local data"), after the result line: keep the result, say so.
        warned.add(name)
        print(f"mem_dit.py: {name}: exit status {p.returncode} after the result: {p.stderr.strip()[-200:]}",
              file=sys.stderr)
    # HCOPS_MEM_STATS: which page kinds the large blocks really got.
    r["pages"] = " ".join(re.findall(r"(?:thp|base|hugetlb) \d+ MiB", p.stderr)) or "-"
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=3, help="timed DiT steps per run (after 1 warm-up)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--sgemm", default="3072,3072,3072", help="M,N,K of the SGEMM (NN)")
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--csv")
    args = ap.parse_args()
    wanted = args.configs.split(",")
    configs = [n for n in wanted if all(os.path.exists(p) for p in CONFIGS[n][0])]
    if "hcops" not in configs or not os.path.exists(HCOPS) or not os.path.exists(MEM):
        sys.exit("mem_dit.py: needs hcops in --configs and a built libhcops.so and libhcops_mem.so (make)")
    m, n, k = (int(x) for x in args.sgemm.split(","))
    trace = tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False)
    trace.write(f"N,N,{m},{n},{k},1,{m},{k},0,{m}\n")
    trace.close()
    dit = [sys.executable, os.path.join(HERE, "dit", "dit.py"), "--model", "S", "--batch", "8",
           "--steps", str(args.steps), "--warmup", "1", "--threads", str(args.threads), "--json"]
    # replay dlopens the library already preloaded: every configuration has the same one
    sgemm = [os.path.join(BUILD, "perf", "hcops-replay"), HCOPS, trace.name, "5"]
    print(f"DiT-S/2 batch 8 ({args.steps} steps), SGEMM NN {m}x{n}x{k}; {args.threads} threads, "
          f"{args.rounds} rounds, order rotated; skipped (not installed): "
          f"{', '.join(x for x in wanted if x not in configs) or 'none'}", flush=True)
    rounds = []
    for r in range(args.rounds):
        order = configs[r % len(configs):] + configs[:r % len(configs)]
        rounds.append({name: {"dit": run(dit, name, args.threads), "sgemm": run(sgemm, name, args.threads)}
                       for name in order})
    os.unlink(trace.name)

    def med(f):
        return statistics.median(f(x) for x in rounds)

    def sgemm_s(x):
        return x["sgemm"]["linear_s"] + x["sgemm"]["attention_s"]

    gflop = 2e-9 * m * n * k
    print(f"\n{'config':<10}{'DiT s/step':>12}{'vs hcops':>10}{'SGEMM s':>10}{'GFLOPS':>8}{'vs hcops':>10}"
          f"   large blocks (HCOPS_MEM_STATS, DiT)")
    for name in configs:
        d = med(lambda x: x[name]["dit"]["median_s"])
        dr = med(lambda x: x[name]["dit"]["median_s"] / x["hcops"]["dit"]["median_s"])
        s = med(lambda x: sgemm_s(x[name]))
        sr = med(lambda x: sgemm_s(x[name]) / sgemm_s(x["hcops"]))
        print(f"{name:<10}{d:>12.3f}{dr:>9.3f}x{s:>10.3f}{gflop / s:>8.1f}{sr:>9.3f}x"
              f"   {rounds[-1][name]['dit']['pages']}")
    if "mem-thp" in configs and "mem-base" in configs:
        print(f"\nhuge pages: time base / time thp, median of rounds: DiT "
              f"{med(lambda x: x['mem-base']['dit']['median_s'] / x['mem-thp']['dit']['median_s']):.3f}x, SGEMM "
              f"{med(lambda x: sgemm_s(x['mem-base']) / sgemm_s(x['mem-thp'])):.3f}x (> 1: huge pages faster)")
    print("vs hcops = median over rounds of (config time / hcops time) in the same round; < 1: faster")
    results = {(x[name]["dit"]["param_checksum"], tuple(x[name]["dit"]["losses"])) for x in rounds for name in x}
    print(f"DiT losses and parameter checksum: {'identical in every run' if len(results) == 1 else 'DIFFER'}"
          + "".join(f"\n  checksum {c!r} losses {list(l)}" for c, l in sorted(results)))
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["round", "config", "dit_median_s", "dit_step_times", "dit_losses", "param_checksum",
                        "sgemm_s", "sgemm_gflop"])
            for i, r in enumerate(rounds, 1):
                for name, x in r.items():
                    d = x["dit"]
                    w.writerow([i, name, d["median_s"], " ".join(map(str, d["step_times"])),
                                " ".join(map(repr, d["losses"])), repr(d["param_checksum"]), sgemm_s(x), gflop])
    if len(results) != 1:
        sys.exit(1)


if __name__ == "__main__":
    main()

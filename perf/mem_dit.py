#!/usr/bin/env python3
"""Times a DiT training step (perf/dit/dit.py) and one large SGEMM
(build/tools/hcops-replay on a one-shape trace) with HCOps' BLAS under different
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
import os
import re
import sys
import tempfile

from benchlib.allocators import MEMTIER, MEMTIER_ENV, allocator_env
from benchlib.build import LIBHCOPS, LIBHCOPS_MEM, PERF, program, require
from benchlib.child import RunError, json_result, run
from benchlib.report import error, not_installed, write_csv
from benchlib.rounds import median_over, run_rounds

CONFIGS = {  # name: (preloads after libhcops.so, extra environment)
    "hcops": ([], {}),
    "mem-thp": ([LIBHCOPS_MEM], {"HCOPS_MEM_POLICY": "fast,thp", "HCOPS_MEM_STATS": "1"}),
    "mem-base": ([LIBHCOPS_MEM], {"HCOPS_MEM_POLICY": "fast,base", "HCOPS_MEM_STATS": "1"}),
    "memtier": ([MEMTIER], MEMTIER_ENV),
}


warned = set()  # configurations whose non-zero exit status was reported once


def run_config(cmd, name, threads):
    preloads, extra = CONFIGS[name]
    p = run(cmd, allocator_env([LIBHCOPS] + preloads, threads, **extra), check=False)
    try:
        r = json_result(p)
    except RunError as e:
        raise RunError(f"{name}: {e}") from None
    if p.returncode and name not in warned:
        # memtier + torch aborts at exit ("cannot allocate memory for
        # thread-local data"), after the result line: keep the result, say so.
        warned.add(name)
        error(f"{name}: exit status {p.returncode} after the result: {p.stderr.strip()[-200:]}")
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
    if "hcops" not in configs:
        error("needs hcops in --configs: every ratio is relative to it")
        return 2
    require(LIBHCOPS, LIBHCOPS_MEM)
    m, n, k = (int(x) for x in args.sgemm.split(","))
    trace = tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False)
    trace.write(f"N,N,{m},{n},{k},1,{m},{k},0,{m}\n")
    trace.close()
    dit = [sys.executable, os.path.join(PERF, "dit", "dit.py"), "--model", "S", "--batch", "8",
           "--steps", str(args.steps), "--warmup", "1", "--threads", str(args.threads), "--json"]
    # replay dlopens the library already preloaded: every configuration has the same one
    sgemm = [program("hcops-replay"), LIBHCOPS, trace.name, "5"]
    print(f"DiT-S/2 batch 8 ({args.steps} steps), SGEMM NN {m}x{n}x{k}; {args.threads} threads, "
          f"{args.rounds} rounds, order rotated; skipped (not installed): {not_installed(wanted, configs)}", flush=True)
    try:
        rounds = run_rounds(args.rounds, configs, lambda name: {"dit": run_config(dit, name, args.threads),
                                                                "sgemm": run_config(sgemm, name, args.threads)})
    except RunError as e:
        error(e)
        return 2
    finally:
        os.unlink(trace.name)

    def med(f):
        return median_over(rounds, f)

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
        write_csv(args.csv, ["round", "config", "dit_median_s", "dit_step_times", "dit_losses", "param_checksum",
                             "sgemm_s", "sgemm_gflop"],
                  ([i, name, x["dit"]["median_s"], " ".join(map(str, x["dit"]["step_times"])),
                    " ".join(map(repr, x["dit"]["losses"])), repr(x["dit"]["param_checksum"]), sgemm_s(x), gflop]
                   for i, r in enumerate(rounds, 1) for name, x in r.items()))
    return 0 if len(results) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Data-parallel DiT training (perf/dit/ddp.py, mpi4py) with and without libhcops_mpi.so.

  HCOPS_LIB=/abs/libhcops.so HCOPS_MPI_LIB=/abs/libhcops_mpi.so $PYTHON tests/integration/test_ddp.py

Trains the tiny DiT for a few steps on 2 ranks (one thread each, per-rank data
shards, gradients averaged by per-bucket Iallreduce started from backward hooks)
three times, all with libhcops.so preloaded (HCOps BLAS, one thread): plain;
with libhcops_mpi.so too (HCOPS_MPI_VERBOSE=1); and with libhcops_mpi.so but
HCOPS_MPI=0. Checks that every run completes in time with its ranks' parameters
in sync, that all three give the same losses (relative 1e-5), that the wrapper
offloaded exactly one Iallreduce per bucket and step on every rank, and that the
plain and HCOPS_MPI=0 runs show no wrapper statistics.

Exit status: 0 all passed, 1 something failed, 77 torch or mpi4py missing (skip),
99 no HCOPS_LIB / HCOPS_MPI_LIB.
"""
import json
import math
import os
import sys

import harness
import mpi_harness

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.environ.get("HCOPS_TEST_SRCDIR") or os.path.join(HERE, "..", "..")
DDP = os.path.join(SRCDIR, "perf", "dit", "ddp.py")
NP, STEPS, WARMUP, BATCH, BUCKET_MB = 2, 3, 1, 4, 0.25
LOSS_RTOL = 1e-5


def run(blas, mpi_lib, extra_env):
    env = {"OMP_NUM_THREADS": "1", "HCOPS_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    env.update(extra_env)
    preload = blas + (" " + mpi_lib if mpi_lib else "")
    return mpi_harness.mpirun(NP, [harness.PYTHON, DDP, "--model", "tiny", "--batch", str(BATCH), "--steps", str(STEPS),
                                   "--warmup", str(WARMUP), "--threads", "1", "--bucket-mb", str(BUCKET_MB),
                                   "--json"], preload=preload, env=env)


def result_of(report, label, res):
    if not mpi_harness.check_job(report, label, res):
        return None
    lines = [line for line in res["stdout"] if line.startswith("{")]
    report.check(len(lines) == 1, f"{label}: rank 0 printed one JSON line", f"{len(lines)} lines")
    if not lines:
        return None
    r = json.loads(lines[-1])
    ok = len(r["losses"]) == STEPS and all(math.isfinite(x) for x in r["losses"])
    report.check(ok, f"{label}: {STEPS} finite losses", f"{r['losses']}")
    report.check(r["in_sync"], f"{label}: every rank ends with the same parameters")
    report.check(r["ranks"] == NP and r["buckets"] > 1, f"{label}: {NP} ranks, gradients in several buckets",
                 f"{r['buckets']} buckets")
    return r if ok else None


def rel_diff(a, b):
    return abs(a - b) / max(abs(a), abs(b), 1e-30)


def main():
    try:
        import torch  # noqa: F401
        import mpi4py  # noqa: F401
    except ImportError as e:
        print(f"SKIP: {e} (Debian packages python3-torch, python3-mpi4py)")
        return 77
    blas = harness.library_or_exit()
    mpi_lib = mpi_harness.mpi_library_or_exit()
    if not os.path.isfile(DDP):
        print(f"ERROR: {DDP} missing")
        return 99
    report = harness.Report()
    plain = run(blas, None, {})
    wrapped = run(blas, mpi_lib, {"HCOPS_MPI_VERBOSE": "1"})
    off = run(blas, mpi_lib, {"HCOPS_MPI": "0", "HCOPS_MPI_VERBOSE": "1"})
    results = {}
    for label, res in (("plain", plain), ("libhcops_mpi", wrapped), ("libhcops_mpi, HCOPS_MPI=0", off)):
        results[label] = result_of(report, label, res)
    if results["plain"]:
        mpi_harness.check_not_offloaded(report, "plain", plain)
    if results["libhcops_mpi, HCOPS_MPI=0"]:
        mpi_harness.check_not_offloaded(report, "libhcops_mpi, HCOPS_MPI=0", off)
    w = results["libhcops_mpi"]
    if w:
        per_rank = ((STEPS + WARMUP) * w["buckets"], 0)  # the loss's Allreduce is 8 bytes: not offloaded
        mpi_harness.check_offloaded(report, "libhcops_mpi", wrapped, NP, {r: per_rank for r in range(NP)})
    ref = results["plain"]
    for label in ("libhcops_mpi", "libhcops_mpi, HCOPS_MPI=0"):
        r = results[label]
        if ref and r:
            worst = max(rel_diff(a, b) for a, b in zip(ref["losses"], r["losses"]))
            report.check(worst <= LOSS_RTOL, f"{label}: same losses as plain",
                         f"largest relative difference {worst:.2e}; {r['losses']} vs {ref['losses']}")
            report.check(rel_diff(ref["param_checksum"], r["param_checksum"]) <= LOSS_RTOL,
                         f"{label}: same final parameters as plain (checksum)",
                         f"{r['param_checksum']!r} vs {ref['param_checksum']!r}")
    if ref and w:
        print(f"step times (s): plain {ref['step_times']}, libhcops_mpi {w['step_times']}")
    return report.finish()


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""mpi4py under LD_PRELOAD of libhcops_mpi.so gives plain MPI's results.

  HCOPS_MPI_LIB=/abs/path/libhcops_mpi.so $PYTHON tests/integration/test_mpi4py.py

Runs this script with --child under mpirun on 2 and on 3 ranks, once plain and
once with LD_PRELOAD=$HCOPS_MPI_LIB HCOPS_MPI_VERBOSE=1. A child reduces numpy
float32 and float64 arrays (1 element to 16 Mi, both sides of the 64 KiB offload
threshold; small-integer and random values) with comm.Iallreduce (req.Wait, a
req.Test loop, MPI.Request.Waitall over several outstanding) and comm.Allreduce,
also in place (MPI.IN_PLACE), on COMM_WORLD and a Dup of it, checks each result
against the sum (max) it computes itself, and rank 0 saves them all. The parent
checks that the preloaded results equal the plain ones (Iallreduce bit for bit;
Allreduce bit for bit on integer values and to rounding on random ones, since an
offloaded MPI_Allreduce runs Open MPI's Iallreduce algorithm), that every rank
of the preloaded run offloaded exactly the reductions it counted, and that the
plain run shows no libhcops_mpi statistics.

Exit status: 0 all passed, 1 something failed, 77 mpi4py or numpy missing (skip),
99 no HCOPS_MPI_LIB.
"""
import hashlib
import json
import os
import sys
import tempfile

import harness
import mpi_harness

OFFLOAD_MIN = 64 << 10
RTOL = {"float32": 1e-5, "float64": 1e-12}


# ---------------------------------------------------------------- child side

def child(outfile):
    import numpy as np
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    results, failures = {}, []
    counts = {"nonblocking": 0, "blocking": 0}

    def data(r, n, dtype, kind, key):
        rng = np.random.default_rng([key, r])
        if kind == "int":
            return rng.integers(-50, 50, n).astype(dtype)
        return rng.standard_normal(n).astype(dtype)

    def check(name, got, x_all, op, kind):
        want = np.max(x_all, axis=0) if op == "max" else np.sum(np.asarray(x_all, dtype=np.float64), axis=0)
        if kind == "int" or op == "max":
            ok = np.array_equal(got, want.astype(got.dtype))
        else:
            ok = np.allclose(got, want, rtol=RTOL[got.dtype.name], atol=RTOL[got.dtype.name] * size)
        if not ok:
            failures.append(name)
        results[name] = got

    def iallreduce(c, send, recv, op=MPI.SUM):
        counts["nonblocking"] += 1
        return c.Iallreduce(send, recv, op=op)

    def allreduce(c, send, recv, nbytes, op=MPI.SUM):
        if nbytes >= OFFLOAD_MIN:
            counts["blocking"] += 1
        c.Allreduce(send, recv, op=op)

    dup = comm.Dup()
    key = 0
    for dtype in (np.float32, np.float64):
        b = OFFLOAD_MIN // np.dtype(dtype).itemsize
        sizes = [1, 1000, b - 1, b, b + 1, (1 << 20) // np.dtype(dtype).itemsize * 4]
        for n in sizes:
            for kind in ("int", "rand"):
                key += 1
                c, cname = (dup, "dup") if key % 3 == 0 else (comm, "world")
                x_all = [data(r, n, dtype, kind, key) for r in range(size)]
                x = x_all[rank].copy()
                base = f"{np.dtype(dtype).name}/{n}/{kind}/{cname}"
                out = np.empty_like(x)
                iallreduce(c, x, out).Wait()
                check(base + "/Iallreduce", out, x_all, "sum", kind)
                out = np.empty_like(x)
                allreduce(c, x, out, x.nbytes)
                check(base + "/Allreduce", out, x_all, "sum", kind)
                buf = x.copy()
                req = iallreduce(c, MPI.IN_PLACE, buf)
                while not req.Test():
                    pass
                check(base + "/Iallreduce in place", buf, x_all, "sum", kind)
                buf = x.copy()
                allreduce(c, MPI.IN_PLACE, buf, x.nbytes)
                check(base + "/Allreduce in place", buf, x_all, "sum", kind)
                if not np.array_equal(x, x_all[rank]):
                    failures.append(base + ": send buffer modified")

    # Several outstanding at once, completed together.
    xs, outs, reqs = [], [], []
    for j in range(8):
        key += 1
        x_all = [data(r, 50000, np.float32, "rand", key) for r in range(size)]
        xs.append(x_all)
        outs.append(np.empty(50000, dtype=np.float32))
        reqs.append(iallreduce(comm, x_all[rank], outs[-1], op=MPI.MAX))
    MPI.Request.Waitall(reqs)
    for j in range(8):
        check(f"outstanding/{j}/Iallreduce max", outs[j], xs[j], "max", "rand")

    # 16 Mi float32, once each way.
    key += 1
    n = 16 << 20
    x = np.full(n, rank + 1, dtype=np.float32)
    x[::7] = -rank
    out = np.empty_like(x)
    iallreduce(comm, x, out).Wait()
    want = np.full(n, size * (size + 1) // 2, dtype=np.float32)
    want[::7] = -size * (size - 1) // 2
    if not np.array_equal(out, want):
        failures.append("16Mi/Iallreduce")
    results["16Mi/Iallreduce"] = out[:1 << 16].copy()
    allreduce(comm, MPI.IN_PLACE, x, x.nbytes)
    if not np.array_equal(x, want):
        failures.append("16Mi/Allreduce in place")
    dup.Free()

    digest = hashlib.sha256(b"".join(v.tobytes() for _, v in sorted(results.items()))).hexdigest()
    same = all(d == digest for d in comm.allgather(digest))
    if rank == 0:
        np.savez(outfile, **{k.replace("/", "|"): v for k, v in results.items()})
    provided = MPI.Query_thread()
    record = {"rank": rank, "failures": failures[:10], "nfail": len(failures), "cases": len(results),
              "same_everywhere": same, "query_thread": provided,
              "expect": [counts["nonblocking"], counts["blocking"]]}
    # One process prints every record: mpirun forwards each rank's output in
    # chunks, and lines printed by several ranks at once can interleave.
    records = comm.gather(record, root=0)
    if rank == 0:
        print("\n".join(json.dumps(r) for r in records), flush=True)
    return 0


# ---------------------------------------------------------------- parent side

def ranks_records(res):
    return {r["rank"]: r for r in (json.loads(line) for line in res["stdout"] if line.startswith("{"))}


def check_child(report, label, res, np_):
    if not mpi_harness.check_job(report, label, res):
        return None
    recs = ranks_records(res)
    report.check(sorted(recs) == list(range(np_)), f"{label}: every rank reported", f"ranks {sorted(recs)}")
    for r, rec in sorted(recs.items()):
        report.check(rec["nfail"] == 0, f"{label}: rank {r}: {rec['cases']} results equal the sums it computed",
                     f"{rec['nfail']} wrong: {rec['failures']}")
        report.check(rec["same_everywhere"], f"{label}: rank {r}: same bits as every other rank")
        report.check(rec["query_thread"] == 3, f"{label}: rank {r}: MPI.Query_thread() is THREAD_MULTIPLE "
                     "(what mpi4py asks for)", f"got {rec['query_thread']}")
    return recs


def compare(report, label, plain_file, pre_file):
    import numpy as np

    with np.load(plain_file) as a, np.load(pre_file) as b:
        report.check(sorted(a.files) == sorted(b.files), f"{label}: same cases in both runs")
        exact_bad, close_bad, rounding = [], [], 0
        for k in a.files:
            if k not in b.files:
                continue
            x, y = a[k], b[k]
            if np.array_equal(x, y):
                continue
            name = k.replace("|", "/")
            if "/Allreduce" in name and "/rand/" in name:  # Open MPI's Allreduce vs Iallreduce algorithm
                rounding += 1
                if not np.allclose(x, y, rtol=RTOL[x.dtype.name], atol=RTOL[x.dtype.name] * 4):
                    close_bad.append(name)
            else:
                exact_bad.append(name)
        report.check(not exact_bad, f"{label}: preloaded results bit for bit the plain run's ({len(a.files)} arrays; "
                     f"{rounding} random-valued Allreduce differ in rounding only)",
                     f"{len(exact_bad)} differ: {exact_bad[:5]}")
        report.check(not close_bad, f"{label}: random-valued Allreduce agree to rounding", f"{close_bad[:5]}")


def main():
    try:
        import numpy  # noqa: F401
        import mpi4py  # noqa: F401
    except ImportError as e:
        print(f"SKIP: {e} (Debian packages python3-numpy, python3-mpi4py)")
        return 77
    lib = mpi_harness.mpi_library_or_exit()
    report = harness.Report()
    script = os.path.abspath(__file__)
    with tempfile.TemporaryDirectory() as tmp:
        for np_ in (2, 3):
            plain_file, pre_file = os.path.join(tmp, f"plain{np_}.npz"), os.path.join(tmp, f"pre{np_}.npz")
            plain = mpi_harness.mpirun(np_, [harness.PYTHON, script, "--child", plain_file],
                                       env={"OMP_NUM_THREADS": "1"})
            pre = mpi_harness.mpirun(np_, [harness.PYTHON, script, "--child", pre_file], preload=lib,
                                     env={"OMP_NUM_THREADS": "1", "HCOPS_MPI_VERBOSE": "1"})
            plain_recs = check_child(report, f"{np_} ranks, plain", plain, np_)
            pre_recs = check_child(report, f"{np_} ranks, LD_PRELOAD", pre, np_)
            if plain_recs is not None:
                mpi_harness.check_not_offloaded(report, f"{np_} ranks, plain", plain)
            if pre_recs is not None:
                mpi_harness.check_offloaded(report, f"{np_} ranks, LD_PRELOAD", pre, np_,
                                            {r: tuple(rec["expect"]) for r, rec in pre_recs.items()})
            if plain_recs is not None and pre_recs is not None:
                compare(report, f"{np_} ranks", plain_file, pre_file)
    return report.finish()


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        sys.exit(child(sys.argv[2]))
    sys.exit(main())

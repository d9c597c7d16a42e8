"""mpirun side shared by the libhcops_mpi integration tests (test_mpi4py.py, test_ddp.py).

Jobs run under `timeout` (a hang fails the test instead of blocking make check),
with ranks allowed to outnumber cores and shared memory as the only transport;
as root, Open MPI is told that is intended. LD_PRELOAD reaches the ranks through
`mpirun -x`, so mpirun itself never loads the wrapper.
"""
import os
import re
import subprocess
import sys

from harness import PYTHON  # noqa: F401  (re-exported for the tests)
import time_limits  # noqa: E402  (harness put tests/ on the path)

MPIRUN = os.environ.get("MPIRUN", "mpirun")
JOB_TIMEOUT_S = 180  # natively; time_limits scales it, and those the tests give
STATS = re.compile(r"^hcops_mpi: rank (\d+): (\d+) allreduce offloaded \((\d+) nonblocking, (\d+) blocking\)")
# What the caller's environment must not change in the ranks.
SCRUB = ("LD_PRELOAD", "HCOPS_VERBOSE", "HCOPS_MPI", "HCOPS_MPI_VERBOSE", "HCOPS_MPI_CORES",
         "HCOPS_MPI_OFFLOAD_MIN", "HCOPS_MPI_EXCLUSIVE")


def mpi_library_or_exit():
    """The absolute path in HCOPS_MPI_LIB; exits 99 (automake hard error) when it names no file."""
    lib = os.environ.get("HCOPS_MPI_LIB")
    if not lib or not os.path.isfile(lib):
        print(f"ERROR: HCOPS_MPI_LIB must name the libhcops_mpi.so to test (got {lib!r})")
        sys.exit(99)
    return os.path.abspath(lib)


def mpirun(np, argv, preload=None, env=None, timeout=JOB_TIMEOUT_S):
    """Runs argv on np ranks; preload: LD_PRELOAD of the ranks; env: more variables for them.

    Returns {"rc", "stdout", "stderr"} (lists of lines); rc 124 is the timeout's.
    """
    timeout = time_limits.limit(timeout)
    cmd = ["timeout", "-k", "10", str(timeout), MPIRUN, "-np", str(np), "--oversubscribe",
           "--mca", "pml", "ob1", "--mca", "btl", "self,vader"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    if preload:
        cmd += ["-x", "LD_PRELOAD=" + preload]
    full_env = {k: v for k, v in os.environ.items() if k not in SCRUB}
    full_env.update(env or {})
    try:
        proc = subprocess.run(cmd + list(argv), env=full_env, capture_output=True, text=True, timeout=timeout + 30)
        rc, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as e:
        rc, out, err = 124, e.stdout or "", e.stderr or ""
        out, err = [s.decode(errors="replace") if isinstance(s, bytes) else s for s in (out, err)]
    return {"rc": rc, "stdout": out.splitlines(), "stderr": err.splitlines(), "cmd": " ".join(cmd + list(argv))}


def offload_stats(lines):
    """{rank: (total, nonblocking, blocking)} from HCOPS_MPI_VERBOSE's lines."""
    stats = {}
    for line in lines:
        m = STATS.match(line)
        if m:
            stats[int(m.group(1))] = tuple(int(g) for g in m.groups()[1:])
    return stats


def check_job(report, label, res):
    """The job exited 0; otherwise shows the end of its output."""
    rc = res["rc"]
    report.check(rc == 0, f"{label}: job completed", "timed out (hung?)" if rc == 124 else f"exit {rc}")
    if rc != 0:
        print(f"    {res['cmd']}")
        for line in (res["stdout"] + res["stderr"])[-25:]:
            print(f"    {line}")
    return rc == 0


def check_offloaded(report, label, res, np, expect=None):
    """Every rank's HCOPS_MPI_VERBOSE line shows N > 0 offloads; expect: {rank: (nonblocking, blocking)}."""
    stats = offload_stats(res["stderr"])
    missing = [r for r in range(np) if stats.get(r, (0,))[0] <= 0]
    report.check(not missing, f"{label}: libhcops_mpi offloaded on every rank",
                 f"no 'hcops_mpi: rank R: N allreduce offloaded' with N > 0 for ranks {missing}" if missing
                 else "; ".join(f"rank {r}: {stats[r][0]}" for r in sorted(stats)))
    if expect is not None:
        wrong = {r: (stats.get(r, (0, 0, 0))[1:], want) for r, want in expect.items()
                 if stats.get(r, (0, 0, 0))[1:] != tuple(want)}
        report.check(not wrong, f"{label}: offloaded exactly the expected (nonblocking, blocking) counts",
                     "; ".join(f"rank {r}: got {g}, expected {w}" for r, (g, w) in wrong.items()))


def check_not_offloaded(report, label, res):
    lines = [line for line in res["stderr"] if line.startswith("hcops_mpi:")]
    report.check(not lines, f"{label}: no libhcops_mpi statistics", lines[0] if lines else "")

"""Parent side shared by the integration tests: run the test script again as a
child (optionally under LD_PRELOAD of HCOps with HCOPS_VERBOSE=1), read the JSON
records it prints on stdout and the library's verbose lines on stderr, and report
PASS/FAIL lines ending in "N passed, M failed" (what make check's log shows).

A child prints {"start": name} before each check and {"name", "routine", "dims",
"err_ratio"} after it, dims being the (m, n, k) of every GEMM the check issues,
and, when the caller in this build computes it without BLAS, "dnnl" ([kind,
problem, count]: the oneDNN primitives HCOps' oneDNN layer must run) or
"elsewhere" (why it is not HCOps')."""
import collections
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # time_limits
import time_limits  # noqa: E402

PYTHON = os.environ.get("PYTHON", "/usr/bin/python3")
CHILD_TIMEOUT_S = time_limits.limit(120)
VERBOSE_FIELDS = 18  # hcops_verbose,exec,routine,transa,transb,m,n,k,alpha,lda,ldb,beta,ldc,threads,ms,gflops,impl,details


def emit(record):
    print(json.dumps(record), flush=True)


class Report:
    def __init__(self):
        self.passed = self.failed = 0

    def check(self, ok, name, detail=""):
        print(f"{'PASS' if ok else 'FAIL'}: {name}" + (f"  [{detail}]" if detail else ""))
        if ok:
            self.passed += 1
        else:
            self.failed += 1

    def finish(self):
        print(f"{self.passed} passed, {self.failed} failed")
        return 0 if self.failed == 0 else 1


def library_or_exit():
    """The absolute path in HCOPS_LIB; exits 99 (automake hard error) when it names no file."""
    lib = os.environ.get("HCOPS_LIB")
    if not lib or not os.path.isfile(lib):
        print(f"ERROR: HCOPS_LIB must name the libhcops.so to test (got {lib!r})")
        sys.exit(99)
    return os.path.abspath(lib)


def numpy_main(child, parent):
    """The main() of a numpy test: `child()` in the child process (--child),
    else `parent(library, Report())`, or an automake skip (77) when this
    python3 cannot import numpy."""
    if sys.argv[1:2] == ["--child"]:
        return child()
    try:
        import numpy  # noqa: F401
    except ImportError as e:
        print(f"SKIP: numpy cannot be imported by {sys.executable}: {e}")
        return 77
    return parent(library_or_exit(), Report())


def run_child(script, args, lib, threads):
    """Runs `script --child ARGS`, preloading `lib` (None: no preload) with HCOPS_VERBOSE=1."""
    env = dict(os.environ)
    for var in ("LD_PRELOAD", "HCOPS_VERBOSE"):
        env.pop(var, None)
    env["OMP_NUM_THREADS"] = str(threads)
    if lib:
        env.update(LD_PRELOAD=lib, HCOPS_VERBOSE="1")
    try:
        proc = subprocess.run([PYTHON, os.path.abspath(script), "--child", *args], env=env,
                              capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)
        rc, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as e:
        rc, out, err = f"timeout after {CHILD_TIMEOUT_S} s", e.stdout or "", e.stderr or ""
        out, err = [s.decode(errors="replace") if isinstance(s, bytes) else s for s in (out, err)]
    records = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return {"rc": rc, "records": records, "stdout": out.splitlines(), "stderr": err.splitlines()}


def check_completed(report, label, res):
    ok = res["rc"] == 0
    detail = f"exit {res['rc']}"
    if not ok:
        started = [r["start"] for r in res["records"] if "start" in r]
        finished = {r["name"] for r in res["records"] if "name" in r}
        if started and started[-1] not in finished:
            detail += f" during '{started[-1]}'"
    report.check(ok, f"{label} child completed", detail)
    if not ok:
        for line in [s for s in res["stderr"] if not s.startswith("hcops")][-15:]:
            print(f"    {line}")


def verbose_gemms(stderr):
    """Counter of (routine, min(m,n), max(m,n), k) over well-formed exec lines, and the malformed ones.

    m and n are compared unordered: the library reports column-major arguments,
    which swap them relative to the row-major view of torch and numpy.
    """
    calls, malformed = collections.Counter(), []
    for line in stderr:
        if not line.startswith("hcops_verbose,exec,") or line.startswith("hcops_verbose,exec,cpu,"):
            continue  # cpu: the oneDNN layer's primitives (verbose_dnnl)
        f = line.split(",")
        try:
            if len(f) != VERBOSE_FIELDS:
                raise ValueError
            m, n, k = int(f[5]), int(f[6]), int(f[7])
        except ValueError:
            malformed.append(line)
            continue
        calls[(f[2], min(m, n), max(m, n), k)] += 1
    return calls, malformed


def verbose_dnnl(stderr):
    """Counter of (primitive kind, problem) over the oneDNN layer's exec lines
    (hcops_verbose,exec,cpu,KIND,hcops:FAMILY,...,PROBLEM,ms)."""
    calls = collections.Counter()
    for line in stderr:
        if line.startswith("hcops_verbose,exec,cpu,"):
            f = line.split(",")
            if len(f) >= 4:
                calls[(f[3], f[-2])] += 1
    return calls


def check_records(report, res):
    """Each record's result matches its float64 reference and each of its GEMMs left a verbose line."""
    calls, malformed = verbose_gemms(res["stderr"])
    report.check(not malformed and sum(calls.values()) > 0,
                 f"verbose exec lines present and well-formed ({sum(calls.values())} lines)",
                 f"{len(malformed)} malformed, first: {malformed[0]!r}" if malformed else "")
    for r in (r for r in res["records"] if "name" in r):
        ratio = r["err_ratio"]
        report.check(ratio <= 1.0, f"{r['name']}: matches float64 reference", f"err/tol = {ratio:.3g}")
        if r.get("dnnl"):  # the caller runs it as a oneDNN primitive, which HCOps' oneDNN layer takes
            kind, problem, count = r["dnnl"]
            got = verbose_dnnl(res["stderr"])[(kind, problem)]
            report.check(got >= count, f"{r['name']}: ran in HCOps (oneDNN {kind} verbose line)",
                         f"{got} lines of {problem}, {count} expected")
            continue
        if r.get("elsewhere"):  # this build of the library's caller does not call BLAS for it
            print(f"NOTE: {r['name']}: no BLAS call expected: {r['elsewhere']}")
            continue
        wanted = collections.Counter((r["routine"], min(m, n), max(m, n), k) for m, n, k in r["dims"])
        missing = [f"{key[0]} m,n={key[1]},{key[2]} k={key[3]} x{cnt - calls[key]}"
                   for key, cnt in wanted.items() if calls[key] < cnt]
        report.check(not missing, f"{r['name']}: ran in HCOps ({r['routine']} verbose line)",
                     "missing " + "; ".join(missing) if missing else "")

"""What the AutoMem tests share: their `ok`/`FAIL` lines, and a child process
of the test script itself in a clean environment (the caller's AutoMem and
placement variables removed, the source tree's python/ first on PYTHONPATH,
one OpenMP thread) whose last JSON line is its result."""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))  # time_limits
import time_limits  # noqa: E402

SRC_PYTHON = os.path.join(HERE, "..", "..", "python")
PYTHON = os.environ.get("PYTHON", sys.executable or "/usr/bin/python3")
# Variables of the caller's that would change what the children see.
CLEARED = ("HCOPS_MEM_FAST_NODES", "HCOPS_AUTOMEM_FAST_BYTES", "HCOPS_MEM_FAST_LIMIT", "HCOPS_MEM_STATS",
           "HCOPS_VERBOSE", "HWLOC_XMLFILE", "HWLOC_THISSYSTEM", "LD_PRELOAD")

failures = []


def check(ok, what, detail=""):
    print(("ok   " if ok else "FAIL ") + what + (f"  [{detail}]" if detail and not ok else ""), flush=True)
    if not ok:
        failures.append(what)


def run_child(script, args, env_extra, timeout, tail=2000):
    """(the child's JSON result, its stderr), or (None, why it failed);
    `timeout`: the native limit, scaled by time_limits."""
    timeout = time_limits.limit(timeout)
    env = {k: v for k, v in os.environ.items() if k not in CLEARED}
    env.update(env_extra)
    env["PYTHONPATH"] = os.pathsep.join([SRC_PYTHON] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.setdefault("OMP_NUM_THREADS", "1")
    try:
        p = subprocess.run([PYTHON, os.path.abspath(script), *args], env=env, capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"timeout after {timeout} s"
    lines = [line for line in p.stdout.splitlines() if line.startswith("{")]
    if p.returncode != 0 or not lines:
        return None, f"exit {p.returncode}: {p.stderr.strip()[-tail:]}"
    return json.loads(lines[-1]), p.stderr

#!/usr/bin/env python3
"""scipy's complex SVD and least squares under LD_PRELOAD of libhcops_mem.so:
Debian's OpenBLAS 0.3.21 (zgemv_n_HASWELL, OpenBLAS issue 4013) reads past
the end of the matrices these calls allocate, which glibc tolerates and
libhcops_mem must too (its readable slack after every block). Each case runs
in a child of its own, so a SIGSEGV fails that case only; the results are
compared with the same call without the preload. Skips loudly (77) when this
python3 has no scipy. Prints "N passed, M failed"."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
from integration.harness import PYTHON, Report  # noqa: E402
import time_limits  # noqa: E402

# name -> (extra environment, Python printing the singular values or solution)
CASES = {
    "svdvals(hilbert(300) complex)": ({}, """
import numpy as np, scipy.linalg as la
print(repr(la.svdvals(la.hilbert(300).astype(complex))[:8].tolist()))"""),
    "svd(complex 300x300, compute_uv=False)": ({}, """
import numpy as np, scipy.linalg as la
a = (np.arange(90000).reshape(300, 300) % 17 + 1j * (np.arange(90000).reshape(300, 300) % 13)) / 17.0
print(repr(la.svd(a, compute_uv=False)[:8].tolist()))"""),
    "lstsq(complex) with HCOPS_MEM_THRESHOLD=4K": ({"HCOPS_MEM_THRESHOLD": "4K"}, """
import numpy as np, scipy.linalg as la
i = np.arange(400 * 300).reshape(400, 300)
a = ((i % 29) + 1j * (i % 31)) / 29.0 + 10 * np.eye(400, 300)
b = ((np.arange(400 * 3).reshape(400, 3) % 7) + 1j) / 7.0
x = la.lstsq(a, b)[0]
print(repr(np.round(x[:4], 10).tolist()))"""),
}


def run(code, env):
    proc = subprocess.run([PYTHON, "-c", code], env=env, capture_output=True, text=True, timeout=time_limits.limit(300))
    return proc.returncode, proc.stdout.strip(), proc.stderr.strip()


def main():
    lib = os.environ.get("HCOPS_MEM_LIB")
    if not lib or not os.path.isfile(lib):
        print(f"ERROR: HCOPS_MEM_LIB must name the libhcops_mem.so to test (got {lib!r})")
        return 99
    probe = subprocess.run([PYTHON, "-c", "import scipy.linalg"], capture_output=True, text=True)
    if probe.returncode != 0:
        print(f"SKIP: scipy cannot be imported by {PYTHON} (Debian: python3-scipy, see build-aux/install-deps.sh): "
              f"{probe.stderr.strip().splitlines()[-1:]}")
        return 77
    base = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith("HCOPS_MEM_")}
    r = Report()
    for name, (extra, code) in CASES.items():
        want = run(code, base)
        got = run(code, dict(base, LD_PRELOAD=os.path.abspath(lib), **extra))
        r.check(want[0] == 0, f"{name}: runs without the preload", want[0] and want[2][-300:])
        r.check(got[0] == 0, f"{name}: runs under libhcops_mem",
                got[0] and f"exit {got[0]}{' (SIGSEGV)' if got[0] == -11 else ''} {got[2][-300:]}")
        same = got[0] != 0 or got[1] == want[1]
        r.check(same, f"{name}: same result as without the preload", not same and f"{got[1]} vs {want[1]}")
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())

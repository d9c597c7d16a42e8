#!/usr/bin/env python3
"""numpy's own LAPACK error handler keeps working with HCOps preloaded.

  HCOPS_LIB=/abs/path/libhcops.so $PYTHON tests/integration/test_lapack_xerbla.py

numpy's lapack_lite module, which Python opens RTLD_LOCAL, defines xerbla_ to raise
ValueError; its LAPACK finds that handler through the module's local scope, behind the
global scope where a preloaded libhcops (which exports xerbla_) sits first. A child
(this script with --child) calls lapack_lite.dorgqr and dgeqrf with an illegal leading
dimension, as numpy's test_xerbla_override does; each must raise ValueError naming the
routine and the argument, under LD_PRELOAD=$HCOPS_LIB exactly as without it (run too,
as the reference of numpy's own behaviour).

Exit status: 0 all passed, 1 something failed, 77 numpy missing (skip), 99 no HCOPS_LIB.
"""
import sys

import harness
from harness import emit

try:
    import numpy as np
except ImportError:  # harness.numpy_main turns this into an automake skip
    np = None


# ---------------------------------------------------------------- child side

def bad_calls():
    """(name, call) pairs, each passing one illegal argument (lda < max(1, m))."""
    from numpy.linalg import lapack_lite
    a = np.zeros((4,), dtype=np.float64)
    return [
        ("dorgqr lda=0", lambda: lapack_lite.dorgqr(1, 1, 1, a, 0, a, a, 0, 0)),
        ("dgeqrf lda=0", lambda: lapack_lite.dgeqrf(2, 1, a, 0, a, a, 4, 0)),
    ]


def child():
    for name, call in bad_calls():
        emit({"start": name})
        try:
            call()
            outcome = "returned"
        except ValueError as e:
            outcome = f"ValueError: {e}"
        emit({"name": name, "outcome": outcome})
    return 0


# --------------------------------------------------------------- parent side

EXPECTED = {
    "dorgqr lda=0": "ValueError: On entry to DORGQR parameter number 5 had an illegal value",
    "dgeqrf lda=0": "ValueError: On entry to DGEQRF parameter number 4 had an illegal value",
}


def outcomes(res):
    return {r["name"]: r["outcome"] for r in res["records"] if "name" in r}


def parent(lib, report):
    plain = harness.run_child(__file__, [], None, 1)
    harness.check_completed(report, "without HCOps", plain)
    preloaded = harness.run_child(__file__, [], lib, 1)
    harness.check_completed(report, "preloaded", preloaded)
    without, with_hcops = outcomes(plain), outcomes(preloaded)
    for name, want in EXPECTED.items():
        report.check(without.get(name) == want, f"{name} without HCOps: numpy raises", f"got {without.get(name)!r}")
        report.check(with_hcops.get(name) == want, f"{name} under LD_PRELOAD: numpy still raises",
                     f"got {with_hcops.get(name)!r}")
    return report.finish()


if __name__ == "__main__":
    sys.exit(harness.numpy_main(child, parent))

#!/usr/bin/env python3
"""Unmodified numpy running its matrix products in HCOps through LD_PRELOAD.

  HCOPS_LIB=/abs/path/libhcops.so $PYTHON tests/integration/test_numpy.py

A child (this script with --child) computes np.dot and @ in float32 and float64 with
C-ordered, F-ordered, transposed and sliced operands under LD_PRELOAD=$HCOPS_LIB
HCOPS_VERBOSE=1, and compares each with a float64 reference built from broadcasting
multiply and sum (no BLAS).  The parent checks that the library's verbose lines name
a cblas_sgemm/cblas_dgemm call of every product's shape.  Matrix-vector products are
not tested: HCOps forwards gemv.

Exit status: 0 all passed, 1 something failed, 77 numpy missing (skip), 99 no HCOPS_LIB.
"""
import sys

import harness
from harness import emit

try:
    import numpy as np
except ImportError:  # harness.numpy_main turns this into an automake skip
    np = None

THREADS = 2


# ---------------------------------------------------------------- child side

def reference_mm(a, b, rows_per_chunk=32):
    """a @ b in float64 by broadcast-multiply-and-sum, chunked to bound memory."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    return np.concatenate([(a[i:i + rows_per_chunk, :, None] * b[None]).sum(axis=1)
                           for i in range(0, a.shape[0], rows_per_chunk)])


def err_ratio(got, a, b):
    """max |got - ref| / ((k+2)·eps·|A||B|): <= 1 passes.

    (k+2)·eps is about twice the worst-case rounding bound of a k-term dot product
    (γ_k ≈ k·eps/2), so any correct summation order passes, while a kernel computing
    in lower precision or reading a wrong element fails.
    """
    eps = np.finfo(got.dtype).eps
    bound = reference_mm(np.abs(a), np.abs(b))
    err = np.abs(got.astype(np.float64) - reference_mm(a, b))
    return float((err / ((a.shape[1] + 2) * eps * bound + 1e-300)).max())


def operand(rng, rows, cols, dtype, how):
    """C-ordered ("C"), Fortran-ordered ("F"), transposed view ("T") or column slice ("S": lda > cols)."""
    if how == "T":
        return rng.standard_normal((cols, rows)).astype(dtype).T
    if how == "S":
        return rng.standard_normal((rows, cols + 5)).astype(dtype)[:, :cols]
    x = rng.standard_normal((rows, cols)).astype(dtype)
    return np.asfortranarray(x) if how == "F" else x


def check(rng, m, k, n, dtype, layout="CC", op="dot"):
    name = f"{op} {m}x{k}x{n} {layout} {np.dtype(dtype).name}"
    emit({"start": name})
    a, b = operand(rng, m, k, dtype, layout[0]), operand(rng, k, n, dtype, layout[1])
    got = np.dot(a, b) if op == "dot" else a @ b
    routine = "cblas_dgemm" if dtype == np.float64 else "cblas_sgemm"
    emit({"name": name, "routine": routine, "dims": [[m, n, k]], "err_ratio": err_ratio(got, a, b)})


def child():
    rng = np.random.default_rng(20240601)
    f32, f64 = np.float32, np.float64
    check(rng, 64, 48, 80, f32)
    check(rng, 17, 33, 9, f32, op="@")
    check(rng, 257, 129, 65, f32)
    check(rng, 31, 2048, 23, f32, op="@")
    check(rng, 600, 500, 400, f32, op="@")
    check(rng, 45, 27, 38, f32, "FF")
    check(rng, 39, 52, 21, f32, "CF", op="@")
    check(rng, 13, 71, 50, f32, "FC")
    check(rng, 35, 61, 44, f32, "TC", op="@")
    check(rng, 28, 19, 57, f32, "CT")
    check(rng, 43, 36, 29, f32, "TT", op="@")
    check(rng, 26, 47, 31, f32, "SC")
    check(rng, 45, 70, 33, f64)
    check(rng, 37, 24, 53, f64, "FC", op="@")
    check(rng, 29, 66, 51, f64, "TT")
    check(rng, 21, 34, 27, f64, "CS", op="@")
    return 0


# --------------------------------------------------------------- parent side

def parent(lib, report):
    res = harness.run_child(__file__, [], lib, THREADS)
    harness.check_completed(report, "preloaded", res)
    harness.check_records(report, res)
    return report.finish()


if __name__ == "__main__":
    sys.exit(harness.numpy_main(child, parent))

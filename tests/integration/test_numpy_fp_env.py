#!/usr/bin/env python3
"""numpy's first product under the preload raises no floating-point error.

  HCOPS_LIB=/abs/path/libhcops.so $PYTHON tests/integration/test_numpy_fp_env.py

numpy reports every exception flag raised during a product: a flag left by
HCOps's own set-up (hwloc's XML loader raises divide-by-zero and invalid when
HWLOC_XMLFILE is set) turned the first `a @ a` into "divide by zero
encountered in matmul", and into FloatingPointError under
np.errstate(all='raise'). A child (this script with --child) makes its first
float64 and float32 products, on small integers whose arithmetic is exact,
under np.errstate(all='raise'), then one more with numpy's default warnings;
it runs without HCOps and under LD_PRELOAD, with HWLOC_XMLFILE set to this
machine's XML (written by lstopo), to a missing file, and unset.

Exit status: 0 all passed, 1 something failed, 77 numpy missing (skip), 99 no HCOPS_LIB.
"""
import os
import subprocess
import sys
import tempfile

import harness
from harness import emit

try:
    import numpy as np
except ImportError:  # harness.numpy_main turns this into an automake skip
    np = None

N = 96


# ---------------------------------------------------------------- child side

def child():
    import warnings
    for dtype in ("float64", "float32"):
        a = (np.arange(N * N).reshape(N, N) % 7 - 3).astype(dtype)
        name = f"first {dtype} a @ a under errstate(all='raise')"
        emit({"start": name})
        try:
            with np.errstate(all="raise"):
                c = a @ a
            want = (a.astype(np.int64) @ a.astype(np.int64)).astype(dtype)
            outcome = "ok" if np.array_equal(c, want) else "wrong product"
        except FloatingPointError as e:
            outcome = f"FloatingPointError: {e}"
        emit({"name": name, "outcome": outcome})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        a = (np.arange(N * N).reshape(N, N) % 5).astype(np.float64)
        a @ a.T
    emit({"name": "warnings of a third product", "outcome": "; ".join(str(w.message) for w in caught) or "none"})
    return 0


# --------------------------------------------------------------- parent side

def outcomes(res):
    return {r["name"]: r["outcome"] for r in res["records"] if "name" in r}


def parent(lib, report):
    with tempfile.TemporaryDirectory() as tmp:
        xml = os.path.join(tmp, "this-machine.xml")
        made = subprocess.run(["lstopo-no-graphics", "--of", "xml", xml], capture_output=True).returncode == 0
        report.check(made, "lstopo-no-graphics writes this machine's XML")
        for label, value in (("this machine's XML", xml), ("a missing file", os.path.join(tmp, "missing.xml")),
                             ("unset", None)):
            os.environ.pop("HWLOC_XMLFILE", None)
            if value:
                os.environ["HWLOC_XMLFILE"] = value
            for who, run_lib in (("without HCOps", None), ("under LD_PRELOAD", lib)):
                res = harness.run_child(__file__, [], run_lib, 2)
                harness.check_completed(report, f"{who}, HWLOC_XMLFILE {label}", res)
                got = outcomes(res)
                for dtype in ("float64", "float32"):
                    name = f"first {dtype} a @ a under errstate(all='raise')"
                    report.check(got.get(name) == "ok", f"{who}, HWLOC_XMLFILE {label}: {name}",
                                 f"got {got.get(name)!r}")
                name = "warnings of a third product"
                report.check(got.get(name) == "none", f"{who}, HWLOC_XMLFILE {label}: {name}", f"got {got.get(name)!r}")
        os.environ.pop("HWLOC_XMLFILE", None)
    return report.finish()


if __name__ == "__main__":
    sys.exit(harness.numpy_main(child, parent))

"""The anchors a user would pick from the Python package index: MKL (`mkl`:
libmkl_rt's sgemm_ and cblas_gemm_bf16bf16f32) and oneDNN 3.x (`onednn`:
libdnnl.so.3's dnnl_sgemm and dnnl_gemm_bf16bf16f32). The benchmarks install
them into a venv of their own, $HCOPS_ANCHORS_VENV or build/anchors-venv, at
first use: about 2.6 GB, most of it the Intel compiler and SYCL runtimes the
onednn wheel depends on. Versions are pinned so that figures can be compared
between sessions."""
import os
import re

from . import pip_venv
from .build import BUILD
from .child import child_env, run

VENV = os.environ.get("HCOPS_ANCHORS_VENV", os.path.join(BUILD, "anchors-venv"))
PACKAGES = ("mkl==2026.2.0", "onednn==2026.1.0")
LIB = os.path.join(VENV, "lib")
MKL_RT = os.path.join(LIB, "libmkl_rt.so.3")  # mkl 2026's soname
DNNL3 = os.path.join(LIB, "libdnnl.so.3")


def environment():
    """What a child needs to load them: the onednn wheel's libdnnl.so.3 finds
    its runtimes (libsvml, libimf, libsycl, ...) only through the loader path."""
    old = os.environ.get("LD_LIBRARY_PATH")
    return {"LD_LIBRARY_PATH": LIB + (":" + old if old else "")}


def ensure():
    """Installs the anchors into VENV unless they are there; True when they are
    (after this call). Progress goes to the terminal; a failure is reported and
    gives False, so a benchmark goes on without them."""
    if os.path.exists(MKL_RT) and os.path.exists(DNNL3):
        return True
    print(f"setting up the anchors {', '.join(PACKAGES)} in {VENV} (first time: downloads about 2.6 GB)",
          flush=True)
    return pip_venv.install(VENV, PACKAGES, "the anchors") and os.path.exists(MKL_RT) and os.path.exists(DNNL3)


def code_paths(replay, trace, names):
    """One line per anchor among names: the code path it reports choosing on
    this CPU (MKL decides by CPU vendor as well as features). From
    MKL_VERBOSE's and ONEDNN_VERBOSE's headers on a one-call replay of trace."""
    lines = {}
    for name, lib, var, pattern in (("mkl", MKL_RT, "MKL_VERBOSE", r"MKL_VERBOSE (oneMKL|Intel\(R\) MKL)[^\n]*"),
                                    ("onednn3", "dnnl:" + DNNL3, "ONEDNN_VERBOSE",
                                     r"onednn_verbose,[^\n]*info,cpu,isa:[^\n]*")):
        if name not in names or not os.path.exists(lib.removeprefix("dnnl:")):
            continue
        proc = run([replay, lib, trace, "1"], child_env(threads=1, **environment(), **{var: "1"}), check=False)
        found = re.search(pattern, proc.stdout + proc.stderr)
        lines[name] = found.group(0).strip() if found else f"(no {var} header; exit {proc.returncode})"
    return lines

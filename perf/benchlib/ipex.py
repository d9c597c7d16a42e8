"""IPEX, the anchor an Intel-CPU PyTorch user would pick for training:
intel-extension-for-pytorch 2.8.0 with the torch it is built for (2.8.0; it
refuses any other). Both go into a venv of their own, $HCOPS_IPEX_VENV or
build/ipex-venv, at first use: the index's default torch 2.8 wheel is its
CUDA build, about 3.5 GB with its nvidia-* wheels (it runs on the CPU).
Pinned so that figures compare between sessions."""
import os
import subprocess

from . import pip_venv
from .build import BUILD
from .report import error

VENV = os.environ.get("HCOPS_IPEX_VENV", os.path.join(BUILD, "ipex-venv"))
PACKAGES = ("torch==2.8.0", "intel-extension-for-pytorch==2.8.0", "numpy", "psutil")
PYTHON = os.path.join(VENV, "bin", "python")
PROBE = "import torch, intel_extension_for_pytorch as ipex; print(torch.__version__, ipex.__version__)"


def versions():
    """'torch X ipex Y' when VENV's python imports both, else None."""
    if not os.path.exists(PYTHON):
        return None
    proc = subprocess.run([PYTHON, "-c", PROBE], capture_output=True, text=True)
    if proc.returncode != 0:
        return None
    torch_v, ipex_v = proc.stdout.split()[-2:]
    return f"torch {torch_v}, ipex {ipex_v}"


def ensure():
    """VENV's python once torch and IPEX import there (installed if missing),
    else None after saying why: a benchmark then goes on without IPEX."""
    if versions():
        return PYTHON
    print(f"setting up the IPEX anchor {', '.join(PACKAGES)} in {VENV} "
          "(first time: downloads about 3.5 GB)", flush=True)
    if not pip_venv.install(VENV, PACKAGES, "IPEX"):
        return None
    if not versions():
        error(f"torch and intel_extension_for_pytorch do not import in {VENV}")
        return None
    return PYTHON

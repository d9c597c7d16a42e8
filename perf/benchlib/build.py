"""Where the build is: $HCOPS_BUILD, or build/ beside perf/ (the top Makefile's)."""
import os
import sys

from .report import error

PERF = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("HCOPS_BUILD", os.path.join(os.path.dirname(PERF), "build"))
LIBHCOPS = os.path.join(BUILD, "shim", ".libs", "libhcops.so")
LIBHCOPS_MEM = os.path.join(BUILD, "shim", "mem", ".libs", "libhcops_mem.so")
LIBHCOPS_MPI = os.path.join(BUILD, "shim", "mpi", ".libs", "libhcops_mpi.so")
# Debian's multiarch folder: the peer libraries of the comparisons.
MULTIARCH = "/usr/lib/x86_64-linux-gnu"
# The interpreter of child Python scripts: Debian's, which has torch and mpi4py.
PYTHON = os.environ.get("PYTHON", "/usr/bin/python3")


def program(name):
    """A benchmark program built in build/perf/ (hcops-replay, hcops-peak, ...)."""
    return os.path.join(BUILD, "perf", name)


def require(*paths):
    """Exits with status 2 (run error) naming the first of paths that is not built."""
    for path in paths:
        if not os.path.exists(path):
            error(f"{path} missing (build first: make)")
            sys.exit(2)

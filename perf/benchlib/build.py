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


# The measuring programs hcops-prof runs too (hcops-replay, hcops-peak,
# hcops-stream, hcops-dnnl-replay) are built in build/tools/, the others in
# build/perf/.
TOOLS_PROGRAMS = ("hcops-replay", "hcops-peak", "hcops-stream", "hcops-dnnl-replay")


def program(name):
    """A benchmark program of the build (build/perf/ or build/tools/)."""
    return os.path.join(BUILD, "tools" if name in TOOLS_PROGRAMS else "perf", name)


def built_tool(name):
    """A measuring program of build/tools/ when it is built, else None: the
    finder hcops.prof.machine.Machine takes for hcops-peak and hcops-stream."""
    path = os.path.join(BUILD, "tools", name)
    return path if os.access(path, os.X_OK) else None


def require(*paths):
    """Exits with status 2 (run error) naming the first of paths that is not built."""
    for path in paths:
        if not os.path.exists(path):
            error(f"{path} missing (build first: make)")
            sys.exit(2)

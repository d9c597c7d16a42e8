"""The BLAS libraries compared with libhcops.so, and hcops-replay, which runs a
trace of sgemm_/dgemm_ calls through one of them (dlopened: no LD_PRELOAD)."""
import os
import sys

from .build import LIBHCOPS, MULTIARCH, program
from .child import child_env, json_result, run
from .report import error

PEERS = {  # name: (library hcops-replay loads, extra environment)
    "hcops": (LIBHCOPS, {}),
    "openblas": (f"{MULTIARCH}/libblas.so.3", {}),
    "openblas-skx": (f"{MULTIARCH}/openblas-pthread/libblas.so.3", {"OPENBLAS_CORETYPE": "SkylakeX"}),
    "blis": (f"{MULTIARCH}/blis-openmp/libblas.so.3", {}),
    "dnnl": (f"dnnl:{MULTIARCH}/libdnnl.so.2", {}),  # replay calls dnnl_sgemm, not sgemm_
}
REPLAY = program("hcops-replay")


def add_options(ap):
    """--libs and --replay."""
    ap.add_argument("--libs", default=",".join(PEERS), help="comma-separated, of the libraries above; default: all")
    ap.add_argument("--replay", default=REPLAY, help="the replay program (default: the build's)")


def installed(names):
    """The peers among names (comma-separated) that are installed; exits if
    libhcops.so is not among them."""
    found = [n for n in names.split(",") if os.path.exists(PEERS[n][0].removeprefix("dnnl:"))]
    if "hcops" not in found:
        error(f"{LIBHCOPS} not found: build first (make)")
        sys.exit(2)
    return found


def replay(binary, name, trace, threads, precision=None, repeats=None):
    """hcops-replay's JSON result for trace through peer name, in a process of its
    own: seconds and GFLOP of the attention and the Linear calls. precision "d"
    replays the calls through dgemm_; repeats passes over the trace (after 1 warm-up)."""
    lib, extra = PEERS[name]
    cmd = [binary] + (["--precision", precision] if precision else []) + [lib, trace]
    if repeats is not None:
        cmd.append(str(repeats))
    return json_result(run(cmd, child_env(threads=threads, **extra)))

"""The BLAS libraries compared with libhcops.so, and hcops-replay, which runs a
trace of sgemm_/dgemm_/sbgemm_ calls through one of them (dlopened: no
LD_PRELOAD); in bf16 oneDNN's peers run in hcops-dnnl-bf16 instead."""
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
    # oneDNN's matmul primitive, bf16 only (hcops-dnnl-bf16 matmul): PyTorch's path
    "dnnl-matmul": (f"dnnl:{MULTIARCH}/libdnnl.so.2", {}),
}
# Precisions (hcops-replay's --precision: s f32, d f64, b bf16 A and B with f32
# C) each peer serves: oneDNN 2.6 has no dnnl_dgemm; Debian's OpenBLAS 0.3.21
# and BLIS export no sbgemm_; the matmul primitive is driven in bf16 only.
SERVES = {"hcops": "sdb", "openblas": "sd", "openblas-skx": "sd", "blis": "sd", "dnnl": "sb", "dnnl-matmul": "b"}
REPLAY = program("hcops-replay")
DNNL_BF16 = program("hcops-dnnl-bf16")


def add_options(ap):
    """--libs and --replay."""
    ap.add_argument("--libs", help="comma-separated, of " + ", ".join(PEERS) +
                    "; default: all that serve the precision(s) measured")
    ap.add_argument("--replay", default=REPLAY, help="the replay program (default: the build's)")


def serves(name, precision):
    """Whether peer name runs precision ("s", "d", "b"; or "f32", "f64", "bf16")."""
    return {"f32": "s", "f64": "d", "bf16": "b"}.get(precision, precision) in SERVES[name]


def default_libs(precisions):
    """--libs' default: the peers that serve one of precisions, comma-separated."""
    return ",".join(n for n in PEERS if any(serves(n, p) for p in precisions))


def installed(names):
    """The peers among names (comma-separated) that are installed; exits if
    libhcops.so is not among them."""
    unknown = [n for n in names.split(",") if n not in PEERS]
    if unknown:
        error(f"unknown libraries {', '.join(unknown)} (known: {', '.join(PEERS)})")
        sys.exit(2)
    found = [n for n in names.split(",") if os.path.exists(PEERS[n][0].removeprefix("dnnl:"))]
    if "hcops" not in found:
        error(f"{LIBHCOPS} not found: build first (make)")
        sys.exit(2)
    return found


def replay(binary, name, trace, threads, precision=None, repeats=None, extra_env=None):
    """hcops-replay's JSON result for trace through peer name, in a process of its
    own: seconds and GFLOP of the attention and the Linear calls. precision "d"
    replays the calls through dgemm_, "b" with bf16 A and B (sbgemm_; oneDNN's
    dnnl_gemm_bf16bf16f32 or matmul primitive through hcops-dnnl-bf16); repeats
    passes over the trace (after 1 warm-up). extra_env: set for the child (e.g.
    HCOPS_FP32_MATH)."""
    lib, extra = PEERS[name]
    if precision == "b" and name.startswith("dnnl"):
        cmd = [DNNL_BF16, "matmul" if name == "dnnl-matmul" else "gemm", trace]
    else:
        cmd = [binary] + (["--precision", precision] if precision else []) + [lib, trace]
    if repeats is not None:
        cmd.append(str(repeats))
    return json_result(run(cmd, child_env(threads=threads, **extra, **(extra_env or {}))))


def measured_peak(binary):
    """{(precision, threads): GFLOPS} from hcops-peak --json: for each precision
    the best of the ISA families that run it (bf16: vdpbf16ps, or AMX)."""
    peak = {}
    for isa in json_result(run([binary, "--json"], None)).values():
        for prec, by_threads in isa.items():
            for t, g in by_threads.items():
                peak[prec, int(t)] = max(g, peak.get((prec, int(t)), 0))
    return peak

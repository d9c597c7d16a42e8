"""The BLAS libraries compared with libhcops.so, and hcops-replay, which runs a
trace of sgemm_/dgemm_/sbgemm_ calls through one of them (dlopened: no
LD_PRELOAD); oneDNN 2.6's bf16 peers run in hcops-dnnl-bf16 instead. MKL and
oneDNN 3.x come from the package index (anchors.py), installed at first use."""
import os
import sys

from . import anchors
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
    # The anchors from the package index: MKL's sgemm_/dgemm_ and
    # cblas_gemm_bf16bf16f32, oneDNN 3.x's dnnl_sgemm and dnnl_gemm_bf16bf16f32.
    "mkl": (anchors.MKL_RT, anchors.environment()),
    "onednn3": ("dnnl:" + anchors.DNNL3, anchors.environment()),
}
ANCHORS = ("mkl", "onednn3")
# Precisions (hcops-replay's --precision: s f32, d f64, b bf16 A and B with f32
# C) each peer serves: oneDNN has no dnnl_dgemm; Debian's OpenBLAS 0.3.21
# and BLIS export no sbgemm_; the matmul primitive is driven in bf16 only.
SERVES = {"hcops": "sdb", "openblas": "sd", "openblas-skx": "sd", "blis": "sd", "dnnl": "sb", "dnnl-matmul": "b",
          "mkl": "sdb", "onednn3": "sb"}
REPLAY = program("hcops-replay")
DNNL_BF16 = program("hcops-dnnl-bf16")


def add_options(ap):
    """--libs, --no-anchors and --replay."""
    ap.add_argument("--libs", help="comma-separated, of " + ", ".join(PEERS) +
                    "; default: all that serve the precision(s) measured")
    ap.add_argument("--no-anchors", action="store_true",
                    help=f"leave {' and '.join(ANCHORS)} out of the default --libs (they are installed into "
                    f"{anchors.VENV} at first use: about 2.6 GB)")
    ap.add_argument("--replay", default=REPLAY, help="the replay program (default: the build's)")


def serves(name, precision):
    """Whether peer name runs precision ("s", "d", "b"; or "f32", "f64", "bf16")."""
    return {"f32": "s", "f64": "d", "bf16": "b"}.get(precision, precision) in SERVES[name]


def default_libs(precisions, args=None):
    """--libs' default: the peers that serve one of precisions, comma-separated
    (without the anchors when args.no_anchors)."""
    leave_out = ANCHORS if args is not None and args.no_anchors else ()
    return ",".join(n for n in PEERS if any(serves(n, p) for p in precisions) and n not in leave_out)


def installed(names):
    """The peers among names (comma-separated) that are installed, the anchors
    installed first if named; exits if libhcops.so is not among them."""
    unknown = [n for n in names.split(",") if n not in PEERS]
    if unknown:
        error(f"unknown libraries {', '.join(unknown)} (known: {', '.join(PEERS)})")
        sys.exit(2)
    if any(n in ANCHORS for n in names.split(",")):
        anchors.ensure()
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
    if precision == "b" and name in ("dnnl", "dnnl-matmul"):
        cmd = [DNNL_BF16, "matmul" if name == "dnnl-matmul" else "gemm", trace]
    else:
        cmd = [binary] + (["--precision", precision] if precision else []) + [lib, trace]
    if repeats is not None:
        cmd.append(str(repeats))
    cpus = sorted(os.sched_getaffinity(0))
    if name == "onednn3" and threads is not None and threads < len(cpus):
        # The onednn wheel threads with TBB, which reads no thread count from
        # the environment but keeps to the CPU mask: the first `threads` CPUs
        # of this process's own.
        cmd = ["taskset", "-c", ",".join(map(str, cpus[:threads]))] + cmd
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

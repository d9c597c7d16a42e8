"""Run by test_one_engine.sh with LD_LIBRARY_PATH=<prefix>/lib/hcops (what
`module load hcops` puts first) and HCOPS_VERBOSE=1: numpy's matmul goes
through libblas.so.3, a bf16 torch Linear through PyTorch's oneDNN
(libdnnl.so.2), both lib/hcops's; and under hcops-run (or with
ONE_ENGINE_OPS=1, which imports hcops.torch itself) an f32 and a bf16
torch.mm through the dispatcher, on libhcops_torch's operators. Prints, one
`key value` a line, what the script checks: the mapped files that hold
HCOps's engine, the libhcops_torch loaded, the object that each library
name's HCOps entry point lives in, the workspaces each engine reports having
made, the reference libraries forwarding goes to.

  one_engine.py PREFIX
"""
import ctypes
import os
import sys

prefix = sys.argv[1]

try:
    import numpy as np
except ImportError:  # a venv without numpy: the dispatcher route only
    np = None
    print("numpy none")
# Products of 1024 rows, 10 MFLOP: more than one thread's worth, so that
# the engine plans them and takes a workspace (smaller ones run as one
# block on the calling thread, without).
if np is not None:
    a = np.arange(1024 * 80, dtype=np.float32).reshape(1024, 80) / 10000
    b = np.ones((80, 64), dtype=np.float32)
    c = a @ b
    assert abs(float(c[5, 7]) - float(a[5].sum())) < 1e-3, "numpy's product is wrong"
    # A routine HCOps forwards to the reference BLAS (cblas_sdot).
    v = np.ones(1000, dtype=np.float32)
    assert float(v @ v) == 1000.0, "numpy's dot is wrong"

try:
    import torch
except ImportError:
    torch = None
    print("torch none")
if torch is not None:
    torch.manual_seed(0)
    # bf16 Linear: PyTorch 1.13 sends it to oneDNN's matmul primitive (AVX-512
    # CPUs; see tests/torch/test_dnnl_torch.py). Run twice: the engine reuses
    # its one workspace.
    lin = torch.nn.Linear(80, 64).to(torch.bfloat16)
    x = torch.randn(1024, 80).to(torch.bfloat16)
    for _ in range(2):
        y = lin(x)
    ref = x.float() @ lin.weight.float().t() + lin.bias.float()
    assert float((y.float() - ref).abs().max()) < 0.1, "torch's Linear is wrong"
    print("torch", torch.__version__)
    if os.environ.get("ONE_ENGINE_OPS") == "1":
        import hcops.torch  # noqa: F401  (hcops-run's start-up hook does this)
    if hasattr(torch.ops, "hcops") and hasattr(torch.ops.hcops, "call_counts"):
        # The dispatcher's products on libhcops_torch, f32 and bf16, twice:
        # the engine behind them is the one numpy's went to.
        for dt in (torch.float32, torch.bfloat16):
            p = torch.randn(1024, 80).to(dt)
            q = torch.randn(80, 64).to(dt)
            for _ in range(2):
                r = torch.mm(p, q)
            assert float((r.float() - p.float() @ q.float()).abs().max()) < 0.2, "torch.mm is wrong"
        print("dispatcher_mm", torch.ops.hcops.call_counts("mm")[0])

# The mappings, to tell which file an address lies in.
maps = []
for line in open("/proc/self/maps"):
    f = line.split()
    if len(f) >= 6 and f[5].startswith("/"):
        lo, hi = (int(x, 16) for x in f[0].split("-"))
        maps.append((lo, hi, f[5]))


def file_of(addr):
    for lo, hi, path in maps:
        if lo <= addr < hi:
            return os.path.realpath(path)
    return "?"


# Every mapped file that holds the engine: the text of hcops-info's f32 mode
# line is in the GEMM engine's own code (src/gemm/engine_info.cpp), which a
# library linking the engine statically would carry too. One copy, one engine.
MARKER = b"fp32 math (HCOPS_FP32_MATH"
for path in sorted({os.path.realpath(p) for _, _, p in maps}):
    try:
        if os.path.getsize(path) < 256 << 20:
            with open(path, "rb") as fh:
                if MARKER in fh.read():
                    print("engine_file", path)
    except OSError:
        pass

libc = ctypes.CDLL(None)
libc.fopen.restype = ctypes.c_void_p
libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
libc.fclose.argtypes = [ctypes.c_void_p]
for path in sorted({os.path.realpath(p) for _, _, p in maps if "libhcops_torch" in os.path.basename(p)}):
    print("torch_layer", path)

# The libraries numpy and PyTorch loaded, by the names they were linked
# with, and the one libhcops_torch needs.
for name in ("libblas.so.3", "libdnnl.so.2", "libhcops.so.0"):
    try:
        lib = ctypes.CDLL(name, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
    except OSError as e:
        print("not_loaded", name, e)
        continue
    try:
        entry = ctypes.cast(lib.hcops_print_info, ctypes.c_void_p).value
    except AttributeError:  # the system's own library (hcops-run without the module)
        print("entry", name, "none")
        continue
    print("entry", name, file_of(entry))
    # The engine that entry point reports on: its workspaces so far.
    lib.hcops_print_info.argtypes = [ctypes.c_void_p, ctypes.c_long, ctypes.c_long, ctypes.c_long]
    out = os.path.join(os.environ.get("TMPDIR", "/tmp"), "one_engine.%d.info" % os.getpid())
    fh = libc.fopen(out.encode(), b"w")
    lib.hcops_print_info(fh, 0, 0, 0)
    libc.fclose(fh)
    with open(out) as f:
        for line in f:
            if line.startswith("workspaces:"):
                print("workspaces", name, line.split()[1])
            if line.startswith("underlying BLAS"):
                print("underlying_blas", name, os.path.realpath(line.split(": ", 1)[1].strip()))
    os.unlink(out)
    try:
        fn = lib.hcops_underlying_dnnl
    except AttributeError:  # a libblas.so.3 without HCOps's oneDNN layer
        print("underlying_dnnl", name, "none")
        continue
    fn.restype = ctypes.c_char_p
    ref = fn()
    print("underlying_dnnl", name, os.path.realpath(ref.decode()) if ref else "none")
print("threads", len(os.listdir("/proc/self/task")))

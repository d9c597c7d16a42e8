"""PyTorch's own tests (those of the installed python3-torch, from Debian's
source package) for the operators HCOps replaces and the GEMMs it takes,
run stock and under HCOps by each route a user has to it, every test
compared with the stock run (linalg_suites.py: a test that passes stock and
fails, errors, crashes, hangs or goes missing under HCOps fails the run).

The routes:
  hcops-run      tools/hcops-run python3 -m pytest ...: libhcops.so preloaded
                 and the operators of libhcops_torch.so (hcops-run's hook)
  hcops-run:ISA  the same with HCOPS_ISA=ISA, for each kernel family this
                 CPU runs (hcops-info --families)
  preload        LD_PRELOAD=libhcops.so: the BLAS and oneDNN GEMMs alone
  libdir         LD_LIBRARY_PATH=PREFIX/lib/hcops after `make install` into a
                 throw-away DESTDIR: the libblas.so.3 and libdnnl.so.2 copies
                 found by the dynamic loader instead of the system's

FULL and QUICK below say which tests, under which routes: `full` for make
check-external, `quick` for make check. Before the tests, a short probe
under each route checks that HCOps is really in the process (and the family
asked for runs), so a route that loads nothing cannot pass unseen.

    HCOPS_LIB=... HCOPS_RUN=... HCOPS_TORCH_LIB=... HCOPS_TEST_BUILDDIR=...
    HCOPS_TEST_TOP_BUILDDIR=... HCOPS_TEST_PREFIX=... python3 torch_suite.py quick|full [GROUP...] [ROUTE...]

GROUP (nn, ops, linalg...) and ROUTE narrow the run to those named.

The source is fetched once into $HCOPS_TEST_BUILDDIR/torch-suite-src
(debian_source.py, ~18 MB); where it cannot be, one line says so and the
exit status is 77 (skip). Exit status: 0 all passed, 1 a test regressed or a
run went wrong, 77 skip, 99 the build tree is incomplete."""
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import debian_source
import linalg_suites
from linalg_suites import PYTHON, Config, Suite

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = "python3-torch"

# The operators libhcops_torch.so replaces, by the names of PyTorch's tests
# and OpInfos (-k is case-insensitive and matches substrings: "softmax"
# takes log_softmax, _softmax_backward_data, masked_softmax, Softmax2d;
# softmin and cross_entropy run on softmax and log_softmax).
OPS = "gelu or silu or softmax or softmin or layer_norm or layernorm or cross_entropy"
# Attention and transformers: GEMMs, softmax, layer_norm and gelu together.
ATTENTION = "transformer or multihead or multi_head or mha or attn or attention"
# The GEMM family that libhcops.so takes (sgemm_/dgemm_, the oneDNN matmuls).
GEMM = ("addmm or bmm or matmul or test_mm or einsum or tensordot or multi_dot or dot or addmv or addr or "
        "linear_algebra_scalar")
NOT_CUDA = "not cuda and not cublas"

Group = collections.namedtuple("Group", "name file k routes")
# name: how the report calls the group; file: one of PyTorch's test files (in
# test/; each runs in a session of its own, as PyTorch's run_test.py runs
# them: test_nn.py's tests rely on the default dtype its import sets,
# float64, which does not hold with another file collected beside it);
# k: pytest's -k; routes: those it runs under (None: every route, and
# hcops-run with each kernel family).
FULL = (  # make check-external
    Group("nn", "test_nn.py", f"({OPS}) and {NOT_CUDA}", None),
    Group("nn-attention", "test_nn.py", f"({ATTENTION}) and {NOT_CUDA}", None),
    Group("transformers", "test_transformers.py", NOT_CUDA, None),
    Group("ops", "test_ops.py", f"({OPS}) and {NOT_CUDA}", None),
    Group("ops-gradients", "test_ops_gradients.py", f"({OPS}) and {NOT_CUDA}", None),
    Group("ops-jit", "test_ops_jit.py", f"({OPS}) and {NOT_CUDA}", None),
    Group("decomp", "test_decomp.py", f"({OPS}) and {NOT_CUDA}", None),
    Group("autocast", "test_autocast.py", "cpu", None),
    Group("optim", "test_optim.py", "adam", None),
    Group("linalg", "test_linalg.py", f"({GEMM}) and {NOT_CUDA}", None),
)
# make check: about 4 minutes on a busy 2-core machine. The replaced
# operators themselves, in test_nn and as OpInfos (not their masked_ and
# _refs variants, softmin, cross_entropy: importing test_ops's OpInfos is
# already half the time), under hcops-run; a few GEMMs under the preload.
QUICK_OPS = f"(gelu or silu or softmax or layer_norm or layernorm) and not masked and not _refs and {NOT_CUDA}"
QUICK = (
    Group("nn", "test_nn.py", QUICK_OPS, ["hcops-run"]),
    Group("ops", "test_ops.py", QUICK_OPS, ["hcops-run"]),
    Group("linalg", "test_linalg.py", f"(test_mm or test_bmm or addmm_sizes) and {NOT_CUDA}", ["preload"]),
)


# Run under each route, before the tests: what of HCOps the process holds.
# An f32 and a bf16 GEMM: the bf16 one (oneDNN's matmul) is where the amx
# and avx512_bf16 families run, the f32 one going to the family below.
PROBE = r"""
import json, torch, torch.nn.functional as F
x = torch.randn(64, 256)
F.gelu(x)
torch.mm(x, x.t())
xb = x.bfloat16()
torch.mm(xb, xb.t())
try:
    gelu = list(torch.ops.hcops.call_counts("gelu"))
except Exception:
    gelu = None
libs = sorted({l.split()[-1] for l in open("/proc/self/maps") if "hcops" in l})
print(json.dumps({"libs": libs, "gelu": gelu}))
"""


def env_or_exit(var, is_file=True):
    value = os.environ.get(var)
    if not value or (is_file and not os.path.exists(value)):
        print(f"ERROR: {var} must name {'a file of the build tree' if is_file else 'a value'} (got {value!r})")
        sys.exit(99)
    return os.path.abspath(value) if is_file else value


def families():
    """The kernel families this CPU runs, in hcops-info's order."""
    info = os.path.join(env_or_exit("HCOPS_TEST_TOP_BUILDDIR"), "tools", "hcops-info")
    proc = subprocess.run([info, "--families"], capture_output=True, text=True)
    return proc.stdout.split() if proc.returncode == 0 else []


def install_prefix():
    """`make install` of the build tree into a throw-away DESTDIR, as
    tests/modules does; the installed prefix, or None (said why)."""
    top, prefix = env_or_exit("HCOPS_TEST_TOP_BUILDDIR"), env_or_exit("HCOPS_TEST_PREFIX", is_file=False)
    dest = os.path.join(env_or_exit("HCOPS_TEST_BUILDDIR"), "torch_suite_dest")
    shutil.rmtree(dest, ignore_errors=True)
    proc = subprocess.run(linalg_suites.tree_make("-s", "-C", top, "install", f"DESTDIR={dest}"), capture_output=True,
                          text=True)
    if proc.returncode != 0:
        print("hcops: make install into a throw-away DESTDIR failed:", *proc.stderr.splitlines()[-10:], sep="\n    ")
        return None
    return dest + prefix


def routes(wanted):
    """The Config of each route name in `wanted`, and what its probe must see:
    (config, libraries that must be loaded, whether the operators run, ISA)."""
    blas, run, ops_lib = env_or_exit("HCOPS_LIB"), env_or_exit("HCOPS_RUN"), env_or_exit("HCOPS_TORCH_LIB")
    # hcops-run finds the build tree's libhcops.so; its hook imports
    # hcops.torch, which is told the build tree's libhcops_torch.so.
    hooked = {"HCOPS_TORCH_LIB": ops_lib}
    out = {}
    for name in wanted:
        if name == "hcops-run":
            out[name] = (Config("hcops-run", "hcops-run", [run], hooked), [blas, ops_lib], True, None)
        elif name.startswith("hcops-run:"):
            isa = name.split(":", 1)[1]
            out[name] = (Config(f"hcops-run with HCOPS_ISA={isa}", f"hcops-run-{isa}", [run],
                                dict(hooked, HCOPS_ISA=isa)), [blas, ops_lib], True, isa)
        elif name == "preload":
            out[name] = (Config("LD_PRELOAD=libhcops.so", "preload", [], {"LD_PRELOAD": blas}), [blas], False, None)
        elif name == "libdir":
            root = install_prefix()
            if root is None:
                return None
            lib = os.path.join(root, "lib", "hcops")
            out[name] = (Config("LD_LIBRARY_PATH=PREFIX/lib/hcops", "libdir", [], {"LD_LIBRARY_PATH": lib}),
                         [os.path.join(lib, "libblas.so.3")], False, None)
    return out


def probe(report, name, route, workdir, order):
    """Checks that `route` has HCOps in the process, as it should (`order`:
    the kernel families, most preferred first)."""
    config, libs, ops, isa = route
    env = linalg_suites.child_env(config, os.devnull, os.devnull)
    env["HCOPS_VERBOSE"] = "1"
    proc = subprocess.run(list(config.prefix) + [PYTHON, "-c", PROBE], cwd=workdir, env=env, capture_output=True,
                          text=True, timeout=600)
    facts = next((s for s in proc.stdout.splitlines() if s.startswith("{")), None)
    if proc.returncode != 0 or facts is None:
        report.check(False, f"route {name} runs PyTorch", "; ".join(proc.stderr.strip().splitlines()[-3:]))
        return
    facts = json.loads(facts)
    missing = [lib for lib in libs if os.path.realpath(lib) not in facts["libs"]]
    report.check(not missing, f"route {name} loads {', '.join(libs)}",
                 ", ".join(facts["libs"]) or "no HCOps library")
    if ops:
        report.check(bool(facts["gelu"]) and facts["gelu"][0] > 0, f"route {name}: HCOps computes gelu",
                     f"calls taken, left: {facts['gelu']}")
    if isa:
        # HCOPS_ISA skips the families above it: each call runs on the first
        # from it down that serves it (f32 GEMM on avx512 under amx).
        ran = set(re.findall(r"(?:,hcops:|\bisa=)([a-z0-9_]+)", "\n".join(
            s for s in proc.stderr.splitlines() if s.startswith(("hcops_verbose,exec,", "hcops_verbose,info,")))))
        below = order[order.index(isa):] if isa in order else [isa]
        report.check(isa in ran and ran <= set(below), f"route {name}: {isa} runs, no family above it",
                     "verbose lines say " + (", ".join(sorted(ran)) or "nothing"))


def plan(mode, wanted):
    """[(group, [route names])] for `mode`; group and route names in `wanted`
    narrow either."""
    every = ["hcops-run"] + [f"hcops-run:{f}" for f in families()] + ["preload", "libdir"]
    groups = FULL if mode == "full" else QUICK
    want_groups = [w for w in wanted if w in {g.name for g in groups}]
    want_routes = [w for w in wanted if w not in want_groups]
    out = []
    for g in groups:
        names = [n for n in (g.routes or every) if not want_routes or n in want_routes]
        if names and (not want_groups or g.name in want_groups):
            out.append((g, names))
    return out


def main(argv):
    sys.path.insert(0, os.path.join(HERE, ".."))
    from integration.harness import Report

    if not argv or argv[0] not in ("quick", "full"):
        print(__doc__)
        return 99
    mode, wanted = argv[0], argv[1:]
    todo = plan(mode, wanted)
    if not todo:
        print(f"ERROR: nothing of {mode} is {' '.join(wanted)} (groups and routes are in {__file__})")
        return 99
    probe_env = linalg_suites.child_env(linalg_suites.BASELINE, "", "")
    proc = subprocess.run([PYTHON, "-c", "import pytest, torch, hypothesis"], env=probe_env, capture_output=True,
                          text=True)
    if proc.returncode != 0:
        print(f"SKIP: {PYTHON} cannot import pytest, torch and hypothesis: {proc.stderr.strip().splitlines()[-1:]}")
        return 77
    start = time.monotonic()
    cache = os.path.join(env_or_exit("HCOPS_TEST_BUILDDIR"), "torch-suite-src")
    try:
        top = debian_source.fetch(PACKAGE, cache, ["test", "pytest.ini"])
    except debian_source.FetchError as e:
        print(f"SKIP: hcops: PyTorch's own tests cannot be had: {e}")
        return 77
    fetched = time.monotonic() - start
    # Debian 12 does not package expecttest, which PyTorch's tests import.
    has = subprocess.run([PYTHON, "-c", "import expecttest"], env=probe_env, capture_output=True).returncode == 0
    support = [] if has else [os.path.join(HERE, "torch_support")]
    names = sorted({n for _, ns in todo for n in ns}, key=lambda n: (n.startswith("hcops-run:"), n))
    configs = routes(names)
    if configs is None:
        return 1
    print(f"PyTorch's tests of {top} ({mode}; the source in {fetched:.0f} s{'' if has else ', expecttest stand-in'})")
    for g, ns in todo:
        print(f"    {g.name}: {g.file} -k '{g.k}' under {', '.join(ns)}")
    report = Report()
    workdir = tempfile.mkdtemp(prefix="hcops-torch-suite-")
    try:
        order = families()
        for name in names:
            probe(report, name, configs[name], workdir, order)
        stock = Config("stock PyTorch", "stock", [], {})
        for g, ns in todo:
            suite = Suite(g.name, [g.file, "-k", g.k], os.path.join(top, "test"), support)
            print()
            base = linalg_suites.baseline(report, suite, workdir, stock)
            for n in ns:
                linalg_suites.compare(report, suite, base, configs[n][0],
                                      linalg_suites.run_suite(suite, configs[n][0], workdir))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"\nPyTorch's tests ({mode}) took {time.monotonic() - start:.0f} s in all")
    return report.finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

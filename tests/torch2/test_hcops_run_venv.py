"""hcops-run with a venv's python (PyTorch 2.x wheel): the start-up hook loads
libhcops_torch2.so into that interpreter with no change to the script; the
GEMMs of nn.Linear and matmul, the operators and AdamW then run on HCOps
(verbose lines with api=aten, counters); five steps of a small DiT-style
transformer block (LayerNorm, attention through matmul/softmax, GeLU MLP,
AdamW) give losses within f32 / bf16-autocast tolerance of stock PyTorch
(hcops-run --no-ops); a torch.compile'd function still runs and matches;
a library built for another torch (HCOPS_TORCH_LIB naming the 1.13 build)
gets one `hcops: warning:` line naming the versions, and the script runs on
PyTorch's own kernels.

Run by tests/torch2/test_hcops_run_venv.sh (PYTHON: the venv's python).
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # block_model
sys.path.insert(1, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # time_limits
from block_model import training_source  # noqa: E402
import time_limits  # noqa: E402

PYTHON = os.environ["PYTHON"]
RUN = os.environ.get("HCOPS_RUN", "../tools/hcops-run")
LIB2 = os.environ["HCOPS_TORCH_LIB"]
LIB1 = os.environ.get("HCOPS_TORCH1_LIB", "")

STEPS = r'''
import json, os, sys, torch
import torch.nn as nn
import torch.nn.functional as F
torch.manual_seed(0)
dtype = sys.argv[1]

''' + training_source("matmul") + r'''
out = {"losses": losses, "torch": torch.__version__}
try:
    import hcops.torch as ht
    out["library"] = ht.library or ""
    out["counts"] = {op: ht.call_counts(op) for op in ("mm", "addmm", "bmm", "native_layer_norm", "_softmax", "gelu")}
except Exception as e:  # not loaded (--no-ops)
    out["library"] = None
print(json.dumps(out))
'''

COMPILED = r'''
import json, torch
torch.manual_seed(0)
lin = torch.nn.Linear(64, 32)
def f(x):
    return torch.nn.functional.gelu(lin(x)).softmax(-1)
x = torch.randn(16, 64)
eager = f(x)
compiled = torch.compile(f)(x)
print(json.dumps({"err": (eager - compiled).abs().max().item()}))
'''


def run(args, code, argv=(), extra_env=None, timeout=900):
    env = dict(os.environ)
    for k in ("HCOPS_TORCH_LIB", "HCOPS_VERBOSE", "HCOPS_OPS"):
        env.pop(k, None)
    env.update(extra_env or {})
    return subprocess.run([RUN] + args + ["--", PYTHON, "-c", code] + list(argv), env=env, capture_output=True,
                          text=True, timeout=time_limits.limit(timeout))


def last_json(text):
    for line in reversed(text.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return None


def main():
    passed = failed = 0

    def check(ok, name, detail=""):
        nonlocal passed, failed
        print(f"{'PASS' if ok else 'FAIL'}: {name}" + (f"  [{detail}]" if detail and not ok else ""), flush=True)
        passed, failed = passed + bool(ok), failed + (not ok)

    for dtype, tol in (("f32", 2e-4), ("bf16", 3e-2)):
        ours = run([], STEPS, [dtype], {"HCOPS_VERBOSE": "1"})
        stock = run(["--no-ops"], STEPS, [dtype])
        o, s = last_json(ours.stdout), last_json(stock.stdout)
        check(ours.returncode == 0 and o is not None, f"{dtype}: 5 steps under hcops-run", ours.stderr[-1500:])
        check(stock.returncode == 0 and s is not None, f"{dtype}: 5 steps under hcops-run --no-ops", stock.stderr[-800:])
        if not (o and s):
            continue
        check(os.path.basename(o["library"]).startswith("libhcops_torch2.so"),
              f"{dtype}: the hook loaded libhcops_torch2 into torch {o['torch']}", o["library"])
        check(s["library"] is None or s["library"] == "", f"{dtype}: --no-ops loads no operators", str(s["library"]))
        for op in ("mm", "addmm", "native_layer_norm", "_softmax", "gelu"):
            check(o["counts"][op][0] > 0, f"{dtype}: {op} taken by HCOps", str(o["counts"][op]))
        check("api=aten" in ours.stderr and "hcops_verbose,exec,aten::addmm" in ours.stderr,
              f"{dtype}: verbose lines of the dispatcher GEMMs")
        check("hcops_verbose,exec,adam_step_" in ours.stderr, f"{dtype}: AdamW steps fused")
        rel = max(abs(a - b) / max(abs(b), 1e-6) for a, b in zip(o["losses"], s["losses"]))
        check(rel <= tol, f"{dtype}: losses within {tol:g} of stock", f"{o['losses']} vs {s['losses']} ({rel:.3g})")
        print(f"   {dtype} losses hcops {['%.6f' % v for v in o['losses']]}")
        print(f"   {dtype} losses stock {['%.6f' % v for v in s['losses']]}")

    p = run([], COMPILED, timeout=1200)
    r = last_json(p.stdout)
    check(p.returncode == 0 and r is not None and r["err"] <= 1e-5, "torch.compile'd code runs under hcops-run",
          p.stderr[-1500:] if r is None else f"err {r['err']}")

    if LIB1 and os.path.isfile(LIB1):
        p = run([], STEPS, ["f32"], {"HCOPS_TORCH_LIB": LIB1})
        warn = [l for l in p.stderr.splitlines() if l.startswith("hcops: warning:")]
        r = last_json(p.stdout)
        check(p.returncode == 0 and r is not None, "a library built for another torch: the script still runs",
              p.stderr[-800:])
        check(len(warn) == 1 and "built for torch" in warn[0] and "stay in use" in warn[0],
              "... with one warning line naming the versions", "\n".join(warn) or p.stderr[-400:])
    else:
        print("SKIP: no 1.13 build to load into torch 2.x (HCOPS_TORCH1_LIB)")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

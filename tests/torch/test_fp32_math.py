"""HCOPS_FP32_MATH through the PyTorch dispatcher: the engine owns f32's
compute mode, so the f32 GEMMs HCOps takes from PyTorch (mm, addmm with its
bias epilogue, bmm) and, under PyTorch 2.x, attention's f32 products follow
it as sgemm_ does (tests/abi/test_fp32_math.sh). Under whichever torch runs
this script (Debian's 1.13 with libhcops_torch.so, a 2.x wheel with
libhcops_torch2.so: tests/torch2/test_fp32_math.sh).

One child per mode (HCOPS_FP32_MATH unset, strict, bf16, bf16x3), each with
HCOPS_VERBOSE=1 on the same seeded operands, saves its results; then:
- every aten:: line a child printed names the mode in effect (math=bf16, or
  math=strict(bf16 asked: <why>) where no bf16 family at least as preferred
  as f32's serves it), unset and strict say math=strict;
- unset and strict agree bit for bit, and within (k + 4) 2^-23 S of f64
  (S = sum |a||b| + |bias|);
- a mode in effect is not strict's bits and keeps its bound against f64:
  bf16 (2^-7 + 2^-15 + (k + 4) 2^-23) S, bf16x3 (2^-14 + (3k + 4) 2^-23) S;
  a mode refused gives strict's bits;
- attention (2.x): a mode in effect changes the output and keeps it within
  0.03 of f64 (unit-variance q, k, v: the scores' bf16 rounding moves the
  weights by about 2^-8 |s|), strict within 1e-5.
"""
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(1, os.path.join(HERE, ".."))  # time_limits
import time_limits  # noqa: E402

SKIP = 77
U = 2.0**-23


def child(out_path):
    import torch
    import hcops.torch  # noqa: F401  (registers the kernels)

    torch.manual_seed(7)
    res = {}
    a = torch.randn(67, 129)
    b = torch.randn(129, 45)
    res["mm"] = torch.mm(a, b)
    w = torch.randn(45, 129)
    bias = torch.randn(45)
    res["addmm"] = torch.nn.functional.linear(a, w, bias)
    x = torch.randn(3, 33, 70)
    y = torch.randn(3, 70, 41)
    res["bmm"] = torch.bmm(x, y)
    if hasattr(torch.nn.functional, "scaled_dot_product_attention"):
        q, k, v = (torch.randn(2, 3, 64, 32) for _ in range(3))
        res["sdpa"] = torch.nn.functional.scaled_dot_product_attention(q, k, v)
        res["sdpa_inputs"] = (q, k, v)
    res["inputs"] = (a, b, w, bias, x, y)
    torch.save(res, out_path)
    return 0


def modes_said(lines):
    """The math= details of verbose lines: math=bf16, math=strict(bf16 asked: <why>)."""
    said = set()
    for ln in lines:
        m = re.search(r" (math=(?:strict\([^)]*\)|\S+))", ln)
        said.add(m.group(1) if m else None)
    return said


def main():
    lib = os.environ.get("HCOPS_TORCH_LIB", "")
    if not lib or not os.path.isfile(lib):
        print(f"SKIP: libhcops_torch not built (HCOPS_TORCH_LIB={lib!r})")
        return SKIP
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        return child(sys.argv[2])
    import torch

    tmp = tempfile.mkdtemp()
    runs, lines = {}, {}
    ok = True

    def check(cond, what):
        nonlocal ok
        print(f"{'PASS' if cond else 'FAIL'}: {what}", flush=True)
        ok = ok and bool(cond)

    for mode in ("unset", "strict", "bf16", "bf16x3"):
        env = dict(os.environ, HCOPS_VERBOSE="1", OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "2"))
        env.pop("HCOPS_OPS", None)
        env.pop("HCOPS_FP32_MATH", None)
        if mode != "unset":
            env["HCOPS_FP32_MATH"] = mode
        path = os.path.join(tmp, mode + ".pt")
        p = subprocess.run([sys.executable, __file__, "--child", path], env=env, capture_output=True, text=True,
                           timeout=time_limits.limit(600))
        if p.returncode != 0:
            check(False, f"{mode}: child exited {p.returncode}: {p.stderr[-2000:]}")
            return 1
        runs[mode] = torch.load(path)
        lines[mode] = [ln for ln in p.stderr.splitlines() if ln.startswith("hcops_verbose,exec,aten::")]
        errors = [ln for ln in p.stderr.splitlines() if ln.startswith("hcops:")]
        check(not errors, f"{mode}: no error or warning ({errors[:2]})")

    a, b, w, bias, x, y = runs["strict"]["inputs"]
    d = torch.float64
    exact = {
        "mm": (a.to(d) @ b.to(d), a.abs().to(d) @ b.abs().to(d), 129),
        "addmm": (a.to(d) @ w.to(d).t() + bias.to(d), a.abs().to(d) @ w.abs().to(d).t() + bias.abs().to(d), 129),
        "bmm": (x.to(d) @ y.to(d), x.abs().to(d) @ y.abs().to(d), 70),
    }

    def bound(mode, s, k):
        if mode == "bf16":
            return (2.0**-7 + 2.0**-15 + (k + 4) * U) * s
        if mode == "bf16x3":
            return (2.0**-14 + (3 * k + 4) * U) * s
        return (k + 4) * U * s

    def within(mode, name):
        want, s, k = exact[name]
        err = (runs[mode][name].to(d) - want).abs()
        return bool((err <= bound(mode, s, k)).all()), float((err / s).max())

    for mode in ("unset", "strict"):
        maths = modes_said(lines[mode])
        check(len(lines[mode]) >= 3 and maths == {"math=strict"}, f"{mode}: every aten:: line says math=strict "
              f"({len(lines[mode])} lines, {maths})")
    for name in exact:
        check(torch.equal(runs["unset"][name], runs["strict"][name]), f"{name}: unset and strict agree bit for bit")
        good, rel = within("strict", name)
        check(good, f"{name}: strict within (k + 4) 2^-23 S of f64 (max {rel:.2e} S)")

    for mode in ("bf16", "bf16x3"):
        maths = modes_said(lines[mode])
        check(len(lines[mode]) >= 3 and len(maths) == 1, f"{mode}: every aten:: line names one mode ({maths})")
        said = next(iter(maths)) if len(maths) == 1 else None
        if said == f"math={mode}":
            for name in exact:
                check(not torch.equal(runs[mode][name], runs["strict"][name]), f"{mode}: {name} is not strict's bits")
                good, rel = within(mode, name)
                check(good, f"{mode}: {name} within its bound of f64 (max {rel:.2e} S)")
            if "sdpa" in runs[mode]:
                q, k, v = (t.to(d) for t in runs["strict"]["sdpa_inputs"])
                ref = torch.softmax(q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5, -1) @ v
                e_mode = float((runs[mode]["sdpa"].to(d) - ref).abs().max())
                e_strict = float((runs["strict"]["sdpa"].to(d) - ref).abs().max())
                check(not torch.equal(runs[mode]["sdpa"], runs["strict"]["sdpa"]),
                      f"{mode}: attention's f32 products follow the mode")
                check(e_mode <= 0.03 and e_strict <= 1e-5,
                      f"{mode}: attention within 0.03 of f64 ({e_mode:.2e}; strict {e_strict:.2e})")
        elif said and said.startswith(f"math=strict({mode} asked: "):
            print(f"NOTE: {mode} not in effect here: {said}")
            for name in list(exact) + (["sdpa"] if "sdpa" in runs[mode] else []):
                check(torch.equal(runs[mode][name], runs["strict"][name]), f"{mode} refused: {name} is strict's bits")
        else:
            check(False, f"{mode}: the lines say {said!r}")
    print(f"{'PASS' if ok else 'FAIL'}: HCOPS_FP32_MATH through the dispatcher ({sys.executable})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

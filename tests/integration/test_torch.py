#!/usr/bin/env python3
"""Unmodified PyTorch running its GEMMs in HCOps through LD_PRELOAD.

  HCOPS_LIB=/abs/path/libhcops.so $PYTHON tests/integration/test_torch.py

A child (this script with --child) runs torch.mm/addmm/bmm, nn.Linear forward and
backward in fp32 and torch.mm in fp64 under LD_PRELOAD=$HCOPS_LIB HCOPS_VERBOSE=1,
and compares each result with a float64 reference built from broadcasting multiply
and sum, so the reference never goes through BLAS.  The parent checks that the
library's verbose lines name every one of those GEMMs, and that five tiny-DiT
training steps give the same losses as in a second child without the preload.

Exit status: 0 all passed, 1 something failed, 77 torch missing (skip), 99 no HCOPS_LIB.
"""
import math
import os
import sys

import harness
from harness import emit

try:
    import torch
except ImportError as e:  # the parent turns this into an automake skip
    torch, TORCH_IMPORT_ERROR = None, e

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "perf", "dit"))
THREADS = 2
LOSS_RTOL = 1e-4
# Zero-initialised DiT output makes the first steps' losses nearly GEMM-independent;
# five steps give a bf16-rounding GEMM a visible loss difference.
DIT_BATCH, DIT_STEPS = 2, 5


# ---------------------------------------------------------------- child side

def reference_mm(a, b, rows_per_chunk=32):
    """a @ b in float64 by broadcast-multiply-and-sum, chunked to bound memory."""
    a, b = a.double(), b.double()
    return torch.cat([(a[i:i + rows_per_chunk, :, None] * b[None]).sum(1)
                      for i in range(0, a.shape[0], rows_per_chunk)])


def err_ratio(got, a, b, alpha=1.0, beta=0.0, c0=None):
    """max |got - ref| / tol, tol = (k+2)·eps·(|alpha||A||B| + |beta||C0|): <= 1 passes.

    (k+2)·eps is about twice the worst-case rounding bound of a k-term dot product
    (γ_k ≈ k·eps/2), so any correct summation order passes, while a kernel computing
    in lower precision (bf16, tf32) or reading a wrong element fails.
    """
    k = a.shape[1]
    eps = torch.finfo(got.dtype).eps
    ref = alpha * reference_mm(a, b)
    bound = abs(alpha) * reference_mm(a.abs(), b.abs())
    if c0 is not None:
        ref = ref + beta * c0.double()
        bound = bound + abs(beta) * c0.double().abs()
    err = (got.double() - ref).abs()
    ratio = float((err / ((k + 2) * eps * bound + 1e-300)).max())
    return math.inf if math.isnan(ratio) else ratio  # callers take Python max(), which drops NaN


def run_check(name, routine, dims, compute, route=None):
    """dims: (m, n, k) of every GEMM the check must issue, in torch's row-major terms;
    route: {"dnnl": [kind, problem, count]} or {"elsewhere": why} where this torch
    issues none of them to BLAS (harness.check_records)."""
    emit({"start": name})
    emit({"name": name, "routine": routine, "dims": dims, "err_ratio": compute(), **(route or {})})


def bmm_route(batch, m, k, n):
    """None where torch's fp32 bmm calls BLAS per batch; else where it goes.

    PyTorch 1.13 on AArch64 built with oneDNN (Debian's arm64 torch, make
    check-aarch64) sends it to one oneDNN matmul (use_mkldnn_matmul), which
    HCOps' oneDNN layer takes where libhcops.so has it (hcops_underlying_dnnl).
    """
    import ctypes
    import platform
    if platform.machine() != "aarch64" or not torch.backends.mkldnn.is_available():
        return None
    if not hasattr(ctypes.CDLL(None), "hcops_underlying_dnnl"):
        return {"elsewhere": "torch's bmm on AArch64 runs oneDNN's matmul, and this libhcops has no oneDNN layer"}
    return {"dnnl": ["matmul", f"{batch}x{m}x{k}:{batch}x{k}x{n}:{batch}x{m}x{n}", 1]}


def check_mm(m, k, n, fp64=False, layout="NN"):
    """mm whose operands are plain, transposed views ("T") or column slices ("S": lda > k)."""
    dtype = torch.float64 if fp64 else torch.float32

    def operand(rows, cols, how):
        if how == "T":
            return torch.randn(cols, rows, dtype=dtype).t()
        if how == "S":
            return torch.randn(rows, cols + 7, dtype=dtype)[:, :cols]
        return torch.randn(rows, cols, dtype=dtype)

    a, b = operand(m, k, layout[0]), operand(k, n, layout[1])
    routine = "dgemm_" if fp64 else "sgemm_"
    name = f"mm {m}x{k}x{n} {layout} {'fp64' if fp64 else 'fp32'}"
    run_check(name, routine, [[m, n, k]], lambda: err_ratio(torch.mm(a, b), a, b))


def check_addmm():
    m, k, n = 23, 41, 19
    a, b, c0 = torch.randn(m, k), torch.randn(k, n), torch.randn(m, n)
    run_check("addmm alpha=2 beta=0.5 23x41x19", "sgemm_", [[m, n, k]],
              lambda: err_ratio(torch.addmm(c0, a, b, beta=0.5, alpha=2.0), a, b, 2.0, 0.5, c0))


def check_bmm(batch, m, k, n, transposed_b):
    a = torch.randn(batch, m, k)
    b = torch.randn(batch, n, k).transpose(1, 2) if transposed_b else torch.randn(batch, k, n)

    def compute():
        got = torch.bmm(a, b)
        return max(err_ratio(got[i], a[i], b[i]) for i in range(batch))

    name = f"bmm {batch}x({m}x{k}x{n}){' b transposed' if transposed_b else ''}"
    run_check(name, "sgemm_", [[m, n, k]] * batch, compute, bmm_route(batch, m, k, n))


def check_linear():
    lead, tokens, fin, fout = 3, 7, 37, 29
    rows = lead * tokens
    layer = torch.nn.Linear(fin, fout)
    x = torch.randn(lead, tokens, fin).requires_grad_()
    grad_out = torch.randn(lead, tokens, fout)
    w, bias = layer.weight.detach(), layer.bias.detach()
    x2, g2 = x.detach().reshape(rows, fin), grad_out.reshape(rows, fout)
    y = None

    def forward():
        nonlocal y
        y = layer(x)
        return err_ratio(y.detach().reshape(rows, fout), x2, w.t(), 1.0, 1.0, bias.expand(rows, fout))

    def backward():
        (y * grad_out).sum().backward()
        return max(err_ratio(x.grad.reshape(rows, fin), g2, w),
                   err_ratio(layer.weight.grad, g2.t(), x2),
                   err_ratio(layer.bias.grad[None], torch.ones(1, rows), g2))

    run_check("nn.Linear forward 3x7x37 -> 29", "sgemm_", [[rows, fout, fin]], forward)
    # grad_input = grad_out @ W, grad_weight = grad_out^T @ x (grad_bias is a plain sum).
    run_check("nn.Linear backward (input, weight, bias grads)", "sgemm_",
              [[rows, fin, fout], [fout, fin, rows]], backward)


def dit_losses():
    from dit import run
    result = run("tiny", DIT_BATCH, DIT_STEPS, 0, THREADS, seed=0)
    emit({"dit_losses": result["losses"]})


def child(mode):
    torch.set_num_threads(THREADS)
    torch.manual_seed(20240601)
    if mode == "preload":
        check_mm(64, 48, 80)
        check_mm(17, 33, 9)
        check_mm(257, 129, 65)
        check_mm(31, 2048, 23)
        check_mm(600, 500, 400)
        check_mm(45, 27, 38, layout="TN")
        check_mm(39, 52, 21, layout="NT")
        check_mm(13, 71, 50, layout="TT")
        check_mm(35, 61, 44, layout="SN")
        check_addmm()
        check_bmm(6, 33, 17, 45, transposed_b=False)
        check_bmm(4, 40, 16, 40, transposed_b=True)
        check_linear()
        check_mm(45, 70, 33, fp64=True)
        check_mm(29, 66, 51, fp64=True, layout="TN")
    dit_losses()
    return 0


# --------------------------------------------------------------- parent side

def rel_diff(x, y):
    """Relative difference; infinite when either is NaN/inf, so a NaN loss can never agree."""
    if not (math.isfinite(x) and math.isfinite(y)):
        return math.inf
    return abs(x - y) / max(abs(x), abs(y), 1e-30)


def check_dit(report, pre, plain):
    from dit import CONFIGS, LATENT_SIZE, PATCH
    hidden, depth, _ = CONFIGS["tiny"]
    rows = DIT_BATCH * (LATENT_SIZE // PATCH) ** 2
    calls, _ = harness.verbose_gemms(pre["stderr"])
    qkv = ("sgemm_", min(rows, 3 * hidden), max(rows, 3 * hidden), hidden)
    wanted = DIT_STEPS * depth
    report.check(calls[qkv] >= wanted, "tiny DiT: attention qkv GEMMs ran in HCOps",
                 f"{calls[qkv]} calls, {wanted} expected")
    lp = next((r["dit_losses"] for r in pre["records"] if "dit_losses" in r), None)
    lq = next((r["dit_losses"] for r in plain["records"] if "dit_losses" in r), None)
    if lp is None or lq is None or len(lp) != len(lq):
        report.check(False, "tiny DiT: losses with and without HCOps agree", f"losses {lp} vs {lq}")
        return
    rel = max(rel_diff(x, y) for x, y in zip(lp, lq))
    report.check(rel <= LOSS_RTOL, f"tiny DiT: {len(lp)} steps' losses with and without HCOps agree",
                 f"max rel diff {rel:.2e}, limit {LOSS_RTOL:g}; HCOps {lp}")


def check_silent(report, plain):
    noisy = [s for s in plain["stdout"] + plain["stderr"] if s.startswith("hcops")]
    report.check(not noisy, "child without preload printed no 'hcops' lines",
                 f"{len(noisy)} lines, first: {noisy[0]!r}" if noisy else "")


def main():
    if sys.argv[1:2] == ["--child"]:
        return child(sys.argv[2])
    if torch is None:
        print(f"SKIP: torch cannot be imported by {sys.executable}: {TORCH_IMPORT_ERROR}")
        return 77
    lib = harness.library_or_exit()
    report = harness.Report()
    pre, plain = (harness.run_child(__file__, [mode], preload, THREADS)
                  for mode, preload in (("preload", lib), ("plain", None)))
    harness.check_completed(report, "preloaded", pre)
    harness.check_completed(report, "non-preloaded", plain)
    harness.check_records(report, pre)
    check_dit(report, pre, plain)
    check_silent(report, plain)
    return report.finish()


if __name__ == "__main__":
    sys.exit(main())

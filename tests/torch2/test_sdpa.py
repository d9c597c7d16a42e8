"""PyTorch 2.x's CPU flash attention (aten::_scaled_dot_product_flash_attention_for_cpu
and its backward, what F.scaled_dot_product_attention runs) on libhcops_torch2
against the wheel's own kernel in the same process: f32 and bf16; (B, H, L, E)
contiguous, timm's q/k/v views into one qkv tensor, transposed rows (E not
contiguous: copied), L != S, L and S not multiples of the query block, a
custom scale, is_causal; NaN in a query; the output, its strides, the
logsumexp and the gradients of q, k and v. f32: within 2e-6 of stock relative
to the tensor's largest value (both sum in f32 in different orders; the
output's bound times sqrt(S / 256) beyond 256 keys, below); bf16:
within 2^-6 relative (with bf16 GEMM instructions both round the
probabilities and their gradients to bf16 for their products and sum in f32,
in different orders and blocks; without them, or where the bf16 GEMMs'
kernels widen bf16 onto the f32 FMAs, HCOps widens the slice to f32 once).
test_sdpa.sh runs it as the CPU chooses (with AMX: slices of whole tiles of
keys fused on the tiles, the others on the engine's bf16 GEMMs), on the
AVX512_BF16 family's GEMMs where the CPU has AMX, and forced to a family
without bf16 GEMM instructions; the verbose lines say which products ran. Left to
PyTorch, counted, with the reason under HCOPS_VERBOSE: dropout (which the
wheel's kernel rejects), an attention mask, is_causal with L != S, f64. Deliberately not stock's (shim/torch/attention.cpp): a
strided last dimension (the wheel's kernel is wrong there: the reference is
its result on contiguous copies) and a NaN query (a NaN row, not 0).
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(1, HERE)  # checks
sys.path.insert(2, os.path.join(HERE, ".."))  # time_limits
from checks import Checks  # noqa: E402
import time_limits  # noqa: E402
OP = "_scaled_dot_product_flash_attention_for_cpu"


def child():
    import torch
    import torch.nn.functional as F
    import hcops.torch as ht

    torch.manual_seed(0)
    check = Checks()

    def operands(B, H, L, S, E, dt, layout):
        if layout == "qkv_view":  # timm: qkv(x).reshape(B, N, 3, H, E).permute(2, 0, 3, 1, 4)
            qkv = torch.randn(B, L, 3, H, E).to(dt).permute(2, 0, 3, 1, 4)
            q, k, v = qkv.unbind(0)
        elif layout == "e_strided":  # E not contiguous
            q, k, v = (torch.randn(B, H, E, n).to(dt).transpose(-1, -2) for n in (L, S, S))
        else:
            q, k, v = torch.randn(B, H, L, E).to(dt), torch.randn(B, H, S, E).to(dt), torch.randn(B, H, S, E).to(dt)
        return [t.detach().requires_grad_() for t in (q, k, v)] if layout != "qkv_view" else \
            [t.requires_grad_() for t in (q.detach(), k.detach(), v.detach())]

    def run(q, k, v, g, on, **kw):
        with ht.enabled(on):
            for t in (q, k, v):
                t.grad = None
            o, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, **kw)
            o.backward(g)
            return o.detach(), lse.detach(), q.grad.clone(), k.grad.clone(), v.grad.clone()

    def rel(a, b):
        a, b = a.double(), b.double()
        if not torch.equal(torch.isnan(a), torch.isnan(b)):
            return float("inf")
        fin = torch.isfinite(b)
        if not fin.any():
            return 0.0
        return ((a - b).abs()[fin].max() / b.abs()[fin].max().clamp(min=1e-30)).item()

    cases = [(2, 3, 5, 7, 8, {}, "contiguous"), (8, 6, 256, 256, 64, {}, "qkv_view"),
             (1, 2, 130, 70, 16, {}, "contiguous"), (2, 2, 33, 33, 32, {"is_causal": True}, "contiguous"),
             (2, 2, 40, 50, 8, {"scale": 0.3}, "e_strided"), (1, 1, 600, 600, 16, {"is_causal": True}, "contiguous"),
             (2, 2, 24, 20, 16, {"scale": -0.25}, "contiguous"), (1, 2, 17, 17, 8, {"scale": 0.0}, "contiguous"),
             # Whole tiles of keys (S a multiple of 32: the fused AMX kernel where it runs), with
             # a last query block of 5 rows, XL/2's head size, causal, a negative scale.
             (2, 3, 37, 64, 72, {}, "qkv_view"), (1, 2, 96, 96, 40, {"is_causal": True}, "contiguous"),
             (2, 2, 20, 32, 8, {"scale": -0.25}, "e_strided"),
             # Long keys: several query blocks of few rows, their rows 3040 apart (on a 1 MiB L2:
             # 32 rows forward, 16 backward in f32; 16-row blocks take the skinny kernel).
             (1, 2, 100, 3000, 24, {"scale": 0.3}, "contiguous")]
    for dt, tol in ((torch.float32, 2e-6), (torch.bfloat16, 2.0 ** -6)):
        for B, H, L, S, E, kw, layout in cases:
            q, k, v = operands(B, H, L, S, E, dt, layout)
            g = torch.randn(B, H, L, E).to(dt)
            before = ht.call_counts(OP)[0], ht.call_counts(OP + "_backward")[0]
            got = run(q, k, v, g, True, **kw)
            taken = ht.call_counts(OP)[0] - before[0], ht.call_counts(OP + "_backward")[0] - before[1]
            # The wheel's kernel is wrong on a strided last dimension (HCOps is
            # not): its reference is the wheel's kernel on contiguous copies.
            ref = run(*(t.detach().contiguous().requires_grad_() for t in (q, k, v)), g, False, **kw) \
                if layout == "e_strided" else run(q, k, v, g, False, **kw)
            if layout == "e_strided":
                ref = (torch.empty_like(q).copy_(ref[0]),) + ref[1:]  # its strides: empty_like(query)
            name = f"{str(dt)[6:]} {B}x{H}x{L}x{S}x{E} {layout} {kw}"
            check(taken == (1, 1), f"{name}: forward and backward taken", str(taken))
            check(got[0].stride() == ref[0].stride() and got[1].stride() == ref[1].stride()
                  and got[1].dtype == ref[1].dtype, f"{name}: output and logsumexp strides as stock",
                  f"{got[0].stride()} {got[1].stride()} vs {ref[0].stride()} {ref[1].stride()}")
            for what, a, b in zip(("out", "logsumexp", "dq", "dk", "dv"), got, ref):
                # logsumexp is f32 for either dtype: within f32 of stock, plus bf16's input noise.
                t = tol if what != "logsumexp" or dt == torch.float32 else 1e-2
                # The f32 output beyond 256 keys: each of its rows averages S rows of V, so its
                # largest value shrinks like 1 / sqrt(S) against V's while the rounding of each sum
                # does not; two f32 sums in different orders then differ, relative to the output's
                # largest, up to sqrt(S / 256) times what they do at 256 keys (100 x 3000 x 24: 2.2e-6
                # on AArch64's sme family, against 2e-6 at 256 keys). The gradients keep 2e-6.
                if dt == torch.float32 and what == "out":
                    t *= max(1.0, (S / 256) ** 0.5)
                r = rel(a, b)
                check(r <= t, f"{name}: {what}", f"relative error {r:.3g} > {t:g}")
        # NaN in one query: its row NaN, the others as stock.
        q, k, v = operands(1, 2, 9, 9, 8, dt, "contiguous")
        with torch.no_grad():
            q[0, 1, 4, 3] = float("nan")
        g = torch.randn(1, 2, 9, 8).to(dt)
        got, ref = run(q, k, v, g, True), run(q, k, v, g, False)
        # HCOps: that row NaN (attention's math); PyTorch's flash kernel: 0. The others as stock.
        row = torch.zeros_like(got[0], dtype=torch.bool)
        row[0, 1, 4] = True
        check(bool(torch.isnan(got[0][row]).all()) and not torch.isnan(got[0][~row]).any()
              and rel(got[0][~row], ref[0][~row]) <= tol, f"{str(dt)[6:]}: a NaN query gives a NaN row, the rest as stock")
    # HCOps' backward on PyTorch's forward (its logsumexp), and a logsumexp of
    # the wrong shape: PyTorch's backward, counted.
    for dt, tol in ((torch.float32, 2e-6), (torch.bfloat16, 2.0 ** -6)):
        q, k, v = operands(2, 3, 40, 40, 16, dt, "qkv_view")
        g = torch.randn(2, 3, 40, 16).to(dt)
        ref = run(q, k, v, g, False)
        for t in (q, k, v):
            t.grad = None
        with ht.enabled(False):
            o, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v)
        before = ht.call_counts(OP + "_backward")[0]
        with ht.enabled(True):
            o.backward(g)
        got = (q.grad, k.grad, v.grad)
        check(ht.call_counts(OP + "_backward")[0] == before + 1 and all(rel(a, b) <= tol for a, b in zip(got, ref[2:])),
              f"{str(dt)[6:]}: HCOps' backward on PyTorch's forward and logsumexp",
              str([rel(a, b) for a, b in zip(got, ref[2:])]))
        with torch.no_grad():
            o, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v)
            wide = torch.zeros(2, 3, 43, dtype=torch.float32)  # bigger than (B, H, L): stock reads within it
            before = ht.call_counts(OP + "_backward")[1]
            torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward(g, q, k, v, o, wide, 0.0, False)
            check(ht.call_counts(OP + "_backward")[1] == before + 1,
                  f"{str(dt)[6:]}: a logsumexp of the wrong shape: PyTorch's backward, counted")
    # Large scores (OpInfo's inputs: uniform in [-9, 9], E = 8, scores to
    # 80): the backward's probabilities recomputed from a logsumexp of |lse|
    # ~ 40 carry its rounding (2e-6 for a whole row); renormalized, the
    # gradients are as near f64 as the products allow (before: dQ and dK
    # 6e-5 off, 15x PyTorch's kernel). Against the same op in f64, in f32
    # within the rounding of the largest score (2^-24 max|lse|: each
    # probability carries its score's; 6e-6 here: avx512 reaches 5e-7, the
    # other families 2.2-2.5e-6) and no further than PyTorch's own kernel
    # (3.4e-6 on the aarch64 wheel, 7.7e-6 on the x86-64 one) or 2e-6.
    for dt, tol in ((torch.float32, None), (torch.bfloat16, 2.0 ** -7)):
        gen = torch.Generator().manual_seed(3)
        base = [torch.rand(2, 3, n, 8, generator=gen, dtype=torch.float64) * 18 - 9 for n in (7, 12, 12)]
        q, k, v = (t.to(dt).requires_grad_() for t in base)
        g = torch.randn(2, 3, 7, 8, generator=gen).to(dt)
        before = ht.call_counts(OP + "_backward")[0]
        got = run(q, k, v, g, True)
        exact = run(*(t.detach().double().requires_grad_() for t in (q, k, v)), g.double(), False)
        errs = [rel(a, b) for a, b in zip(got[2:], exact[2:])]
        if tol is None:
            stock = [rel(a, b) for a, b in zip(run(q, k, v, g, False)[2:], exact[2:])]
            tol = min(2.0 ** -24 * exact[1].abs().max().item(), max(max(stock), 2e-6))
        check(ht.call_counts(OP + "_backward")[0] == before + 1 and max(errs) <= tol,
              f"{str(dt)[6:]}: large scores, gradients against f64 within {tol:g} ({max(errs):.2g})", str(errs))
    # A logsumexp that is not the rows' own (a blockwise caller's, for part
    # of the keys): P = exp(S - lse) as given, as PyTorch's kernel takes it,
    # not renormalised; far enough off that the rows' sums underflow: no NaN.
    for shift in (5.0, 95.0):
        q, k, v = operands(1, 2, 24, 40, 16, torch.float32, "contiguous")
        g = torch.randn(1, 2, 24, 16)
        with torch.no_grad(), ht.enabled(False):
            o, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v)
        outs = []
        for on in (True, False):
            with torch.no_grad(), ht.enabled(on):
                outs.append(torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward(
                    g, q, k, v, o, lse + shift, 0.0, False))
        errs = [rel(a, b) for a, b in zip(*outs)]
        check(max(errs) <= 2e-6, f"a logsumexp {shift:g} above the rows' own: PyTorch's gradients", str(errs))
    # F.scaled_dot_product_attention reaches it (forward and backward).
    q, k, v = operands(2, 3, 16, 16, 8, torch.float32, "contiguous")
    before = ht.call_counts(OP)[0], ht.call_counts(OP + "_backward")[0]
    F.scaled_dot_product_attention(q, k, v).sum().backward()
    check(ht.call_counts(OP)[0] == before[0] + 1 and ht.call_counts(OP + "_backward")[0] == before[1] + 1,
          "F.scaled_dot_product_attention runs HCOps' forward and backward")
    # PyTorch's: dropout, a mask, causal with L != S, f64 - counted, results PyTorch's.
    q, k, v = (torch.randn(1, 2, 6, 8) for _ in range(3))
    k7, v7 = torch.randn(1, 2, 7, 8), torch.randn(1, 2, 7, 8)
    for name, fn in (("mask", lambda: torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
                         q, k, v, attn_mask=torch.zeros(6, 6))),
                     ("causal_rectangular", lambda: torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
                         q, k7, v7, is_causal=True)),
                     ("dtype", lambda: torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
                         q.double(), k.double(), v.double()))):
        before = ht.call_counts(OP)[1]
        got = fn()
        fell = ht.call_counts(OP)[1] - before
        with ht.enabled(False):
            ref = fn()
        check(fell == 1 and torch.equal(got[0], ref[0]),
              f"{name}: PyTorch's kernel, counted")
    # Dropout: PyTorch's kernel, whose error it is (its CPU flash attention has none).
    errors = []
    for on in (True, False):
        with ht.enabled(on):
            try:
                torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, dropout_p=0.5)
                errors.append(None)
            except RuntimeError as e:
                errors.append(str(e).splitlines()[0])
    check(errors[0] == errors[1], "dropout: PyTorch's kernel and its answer", repr(errors))
    return check.summary()


def bits(path):
    """HCOps' bf16 attention, forward and backward, on a few shapes with fixed
    operands, saved to path: test_sdpa.sh compares the bits under
    HCOPS_FP32_MATH=strict and bf16, which must not differ (the mode is for
    f32 work, and a bf16 slice widened to f32 is not: ops/attention.cpp's
    rm_gemm)."""
    import torch
    import hcops.torch as ht

    torch.manual_seed(1)
    out = []
    for B, H, L, S, E in ((8, 6, 256, 256, 64), (1, 2, 100, 3000, 24), (2, 3, 37, 64, 72)):
        q, k, v = (torch.randn(B, H, n, E).to(torch.bfloat16).requires_grad_() for n in (L, S, S))
        g = torch.randn(B, H, L, E).to(torch.bfloat16)
        with ht.enabled(True):
            o, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v)
            o.backward(g)
        out += [o.detach(), lse.detach(), q.grad, k.grad, v.grad]
    torch.save(out, path)
    return 0


def same_bits(a_path, b_path):
    import torch

    a, b = torch.load(a_path), torch.load(b_path)
    same = len(a) == len(b) and all(torch.equal(x.view(torch.int16) if x.dtype == torch.bfloat16 else x,
                                                y.view(torch.int16) if y.dtype == torch.bfloat16 else y)
                                    for x, y in zip(a, b))
    print(f"{'PASS' if same else 'FAIL'}: bf16 attention has the same bits under HCOPS_FP32_MATH=bf16 as strict")
    return 0 if same else 1


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        return child()
    if len(sys.argv) > 2 and sys.argv[1] == "--bits":
        return bits(sys.argv[2])
    if len(sys.argv) > 3 and sys.argv[1] == "--same-bits":
        return same_bits(sys.argv[2], sys.argv[3])
    env = dict(os.environ, HCOPS_VERBOSE="1")
    p = subprocess.run([sys.executable, __file__, "--child"], env=env, capture_output=True, text=True, timeout=time_limits.limit(1200))
    sys.stdout.write(p.stdout)
    ok = p.returncode == 0
    for needle in (f"hcops_verbose,exec,{OP},f32,", f"hcops_verbose,exec,{OP}_backward,bf16,",
                   f"hcops_verbose,fallback,{OP},f32,1x2x6x8,dropout", f"hcops_verbose,fallback,{OP},f32,1x2x6x8,mask",
                   f"hcops_verbose,fallback,{OP},f32,1x2x6x8,causal_rectangular",
                   f"hcops_verbose,fallback,{OP},f64,1x2x6x8,dtype"):
        found = needle in p.stderr
        print(f"{'PASS' if found else 'FAIL'}: verbose has {needle!r}")
        ok = ok and found
    # bf16 slices: bf16 products where the bf16 GEMMs' kernels compute on
    # bf16 instructions, else widened to f32 (test_sdpa.sh says which to expect);
    # with SDPA_TILES=1 (the amx family serves them), slices of whole tiles
    # of keys (S a multiple of 32) fused on the AMX tiles.
    want = os.environ.get("SDPA_PRODUCTS")
    passed_over = "hcops_verbose,info,kernel family avx512_bf16: its bf16:bf16:f32 kernel passed over: vdpbf16ps"
    if want == "bf16" and passed_over in p.stderr:
        want = "f32"
        print("(the avx512_bf16 family measured vdpbf16ps the slower way here: bf16 slices widened to f32)")
    if want:
        lines = [ln for ln in p.stderr.splitlines() if ln.startswith(f"hcops_verbose,exec,{OP}") and ",bf16," in ln]

        def expected(line):
            keys = int(line.split("S=")[1].split()[0])
            return "amx_tiles" if os.environ.get("SDPA_TILES") == "1" and keys % 32 == 0 else want

        found = bool(lines) and all(f"products={expected(ln)}" in ln for ln in lines)
        tiles = sum("products=amx_tiles" in ln for ln in lines)
        print(f"{'PASS' if found else 'FAIL'}: bf16 attention lines say products={want}"
              f"{f' ({tiles} on the AMX tiles)' if os.environ.get('SDPA_TILES') == '1' else ''} ({len(lines)} lines)")
        ok = ok and found and (tiles > 0 or os.environ.get("SDPA_TILES") != "1")
    if p.returncode != 0:
        sys.stdout.write(p.stderr[-3000:])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

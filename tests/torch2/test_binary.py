"""PyTorch 2.x's add.Tensor and mul.Tensor on libhcops_torch2 (shim/torch/binary.cpp)
against the wheel's own kernels in the same process, bit for bit: f32 and
bf16 operands in every pairing (the result f32 if either is), the same shape
and the broadcasts HCOps takes ((B, 1, C) against (B, T, C) either way round,
(C), (1, 1, C)), rows not a multiple of the vector length, NaN, infinities,
-0 and denormals in the data; the result's dtype, shape and strides; the
gradients through autograd. Left to PyTorch, counted, with the reason under
HCOPS_VERBOSE: alpha other than 1, a 0-dim operand, other dtypes, small
tensors, transposed (but for the swapped layout below), permuted, strided
and expanded operands, other broadcasts ((1, T, C)), rows of one element;
a bool alpha raises PyTorch's error; shapes that do not broadcast raise
PyTorch's own error. Taken too:
operands whose rows are evenly spaced in a wider tensor (adaLN's chunks), and
operands of the result's shape whose last two dimensions are swapped (DiT's
residual stream) against contiguous ones or each other, the result in the
first operand's layout as PyTorch's (but two f32 operands in different
layouts, which PyTorch adds as fast).
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


def child():
    import torch
    import hcops.torch as ht

    torch.manual_seed(0)
    check = Checks()

    def data(shape, dt):
        x = torch.randn(shape) * 3
        flat = x.view(-1)
        n = flat.numel()
        specials = torch.tensor([float("nan"), float("inf"), -float("inf"), -0.0, 1e-40, -3e-39, 3.4e38])
        idx = torch.randint(0, n, (len(specials) * 4,))
        flat[idx] = specials.repeat(4)
        return x.to(dt)

    def counts():
        return ht.call_counts("add")[0] + ht.call_counts("mul")[0]

    def same(a, b, nan_sign=True):
        sign_a, sign_b = torch.signbit(a), torch.signbit(b)
        if not nan_sign:
            sign_a, sign_b = sign_a & ~a.isnan(), sign_b & ~b.isnan()
        return a.dtype == b.dtype and a.shape == b.shape and a.stride() == b.stride() and \
            torch.equal(torch.isnan(a), torch.isnan(b)) and torch.equal(a.nan_to_num(0.0), b.nan_to_num(0.0)) and \
            torch.equal(sign_a, sign_b)

    def stock_and_hcops(fn, a, b):
        """fn(a, b) by PyTorch's kernel and under HCOps, and how many calls HCOps took."""
        with ht.enabled(False):
            want = fn(a, b)
        before = counts()
        with ht.enabled(True):
            got = fn(a, b)
        return want, got, counts() - before

    f32, bf16 = torch.float32, torch.bfloat16
    shapes = [((8, 256, 384), (8, 256, 384)), ((8, 256, 384), (8, 1, 384)), ((8, 1, 384), (8, 256, 384)),
              ((4, 100, 97), (97,)), ((3, 5, 41, 131), (3, 1, 1, 131)), ((2, 257, 129), (1, 1, 129)),
              ((40000,), (40000,))]
    for sa, sb in shapes:
        for da in (f32, bf16):
            for db in (f32, bf16):
                a, b = data(sa, da), data(sb, db)
                for name, fn in (("add", torch.add), ("mul", torch.mul)):
                    want, got, taken = stock_and_hcops(fn, a, b)
                    label = f"{name} {str(da)[6:]} {tuple(sa)} , {str(db)[6:]} {tuple(sb)}"
                    check(taken == 1, f"{label}: taken")
                    check(same(got, want), f"{label}: bit for bit as stock",
                          f"max diff {(got.float() - want.float()).abs().nan_to_num(0).max().item():.3g}")

    # The residual stream's layout: the last two dimensions swapped (DiT's
    # patch embedding's transpose, kept by every op after it), against a
    # contiguous operand of the same shape either way round, or both
    # swapped; the result in a's layout as PyTorch gives it. Sizes that are
    # not multiples of the transposing tile (32) or of a vector, one batch,
    # two dimensions. Two f32 operands in different layouts stay PyTorch's
    # (as fast there: it casts nothing).
    for shape in ((8, 256, 384), (3, 97, 131), (1, 256, 384), (2, 3, 70, 150), (300, 200)):
        swapped_shape = shape[:-2] + (shape[-1], shape[-2])
        for da in (f32, bf16):
            for db in (f32, bf16):
                for la, lb in (("swapped", "contiguous"), ("contiguous", "swapped"), ("swapped", "swapped")):
                    def operand(layout, dt):
                        return data(shape, dt) if layout == "contiguous" else data(swapped_shape, dt).transpose(-2, -1)
                    a, b = operand(la, da), operand(lb, db)
                    taken = 0 if la != lb and da == db == f32 else 1
                    for name, fn in (("add", torch.add), ("mul", torch.mul)):
                        want, got, took = stock_and_hcops(fn, a, b)
                        label = f"{name} {str(da)[6:]} {la} {shape} , {str(db)[6:]} {lb}"
                        check(took == taken, f"{label}: {'taken' if taken else 'declined'}")
                        # A bf16 NaN's sign: PyTorch's loop for operands of
                        # two layouts rounds every NaN to +NaN, its vector
                        # loop (one layout) keeps the sign, as HCOps does
                        # (inf * 0 gives x86's -NaN).
                        nan_sign = la == lb or got.dtype != bf16
                        check(same(got, want, nan_sign),
                              f"{label}: bit for bit as stock{'' if nan_sign else ' but a NaN sign'}, strides "
                              f"{tuple(got.stride())}", f"stock's strides {tuple(want.stride())}")
    # Size-1 dimensions with strides of their own (the result's strides are
    # a's, size-1 ones included), and a storage offset.
    sw = data((8, 384, 256), bf16).transpose(1, 2)
    odd = [("a swapped, unsqueezed", sw.unsqueeze(1), data((8, 1, 256, 384), f32)),
           ("a one matrix, unsqueezed", data((384, 256), f32).t().unsqueeze(0), data((1, 256, 384), bf16)),
           ("b swapped, unsqueezed", data((8, 1, 256, 384), f32), sw.unsqueeze(1)),
           ("a swapped, offset", data((9, 384, 256), f32)[1:].transpose(1, 2), data((8, 256, 384), bf16)),
           ("b swapped, offset", data((8, 256, 384), bf16), data((9, 384, 256), bf16)[1:].transpose(1, 2))]
    for label, a, b in odd:
        want, got, took = stock_and_hcops(torch.add, a, b)
        check(took == 1, f"{label}: taken")
        check(same(got, want, got.dtype != bf16), f"{label}: as stock, strides {tuple(got.stride())}",
              f"stock's strides {tuple(want.stride())}")

    # Operands whose rows are evenly spaced in a wider tensor: adaLN's chunks
    # of one (B, 6 C) output, unsqueezed to (B, 1, C); the first C of rows 2 C long.
    c = data((8, 6 * 384), bf16)
    wide = data((8, 256, 768), f32)
    # (1 + scale: a number and a small tensor, PyTorch's; the product and the sum HCOps'.)
    for label, calls, fn in (("x * (1 + scale) + shift, adaLN's chunks", 2,
                              lambda: wide[..., :384].contiguous() * (1 + c.chunk(6, dim=1)[1].unsqueeze(1))
                              + c.chunk(6, dim=1)[0].unsqueeze(1)),
                             ("rows of a wider tensor", 1, lambda: wide[..., :384] + wide[..., 384:])):
        with ht.enabled(False):
            want = fn()
        before = counts()
        with ht.enabled(True):
            got = fn()
        check(counts() - before == calls and same(got, want), f"{label}: taken, bit for bit as stock")

    # Autograd through HCOps' forward: the residual x + gate * y of DiT's block.
    x = torch.randn(8, 256, 384, requires_grad=True)
    gate = torch.randn(8, 1, 384).bfloat16().requires_grad_()
    y = torch.randn(8, 256, 384).bfloat16().requires_grad_()
    g = torch.randn(8, 256, 384)
    grads = {}
    for on in (False, True):
        with ht.enabled(on):
            for t in (x, gate, y):
                t.grad = None
            out = x + gate * y
            out.backward(g)
            grads[on] = [out.detach()] + [t.grad.clone() for t in (x, gate, y)]
    check(all(same(a, b) for a, b in zip(grads[False], grads[True])), "x + gate * y: output and gradients as stock")
    # The same with x in the residual stream's swapped layout.
    xs = torch.randn(8, 384, 256).transpose(1, 2).requires_grad_()
    for on in (False, True):
        with ht.enabled(on):
            for t in (xs, gate, y):
                t.grad = None
            before = counts()
            out = xs + gate * y
            taken = counts() - before
            out.backward(g)
            grads[on] = [out.detach()] + [t.grad.clone() for t in (xs, gate, y)]
    check(taken == 2, "swapped x + gate * y: both taken", f"{taken} taken")
    check(all(same(a, b) for a, b in zip(grads[False], grads[True])),
          "swapped x + gate * y: output and gradients as stock")

    # Declined, counted as fallbacks.
    big = torch.randn(8, 256, 384)
    narrow_sw, narrow_b = torch.randn(8, 20000, 2).transpose(1, 2), torch.randn(8, 2, 20000).bfloat16()
    declined = [("alpha", lambda: torch.add(big, big, alpha=2)), ("scalar", lambda: big + torch.tensor(2.0)),
                ("dtype", lambda: big.double() * big.double()), ("small", lambda: big[:1, :1] + big[:1, :1]),
                ("non_contiguous", lambda: big.transpose(0, 2) + big.transpose(0, 2)),
                ("swapped, broadcast", lambda: big.transpose(1, 2) + big.transpose(1, 2)[:, :1]),
                ("swapped f32", lambda: big.transpose(1, 2) + big.transpose(1, 2).contiguous()),
                ("swapped, narrow", lambda: narrow_sw * narrow_b),
                ("swapped and a slice", lambda: big.transpose(1, 2)[:, :, :200] * big[:, :200].transpose(1, 2)),
                ("broadcast", lambda: big + big[:1]),
                ("narrow", lambda: big.view(-1, 1) * big.view(-1, 1)),
                ("permuted rows", lambda: big.permute(1, 0, 2) + big.permute(1, 0, 2)),
                ("every other row", lambda: big[::2] * big[::2]),
                ("expanded rows", lambda: big + big[:, :1].expand(8, 256, 384))]
    for why, fn in declined:
        before = counts(), ht.call_counts("add")[1] + ht.call_counts("mul")[1]
        with ht.enabled(False):
            want = fn()
        mid = counts(), ht.call_counts("add")[1] + ht.call_counts("mul")[1]
        with ht.enabled(True):
            got = fn()
        after = counts(), ht.call_counts("add")[1] + ht.call_counts("mul")[1]
        check(after[0] == mid[0] and after[1] > mid[1] and same(got, want), f"{why}: PyTorch's kernel, counted")
    for on in (False, True):
        try:
            with ht.enabled(on):
                torch.add(big, big, alpha=True)
            check(False, f"a bool alpha raises ({'HCOps' if on else 'stock'})")
        except RuntimeError as e:
            check("Boolean alpha" in str(e), f"a bool alpha: PyTorch's error ({'HCOps' if on else 'stock'})", str(e))
    try:
        with ht.enabled(True):
            torch.randn(8, 256, 384) + torch.randn(8, 255, 384)
        check(False, "shapes that do not broadcast raise")
    except RuntimeError as e:
        check("must match" in str(e), "shapes that do not broadcast: PyTorch's error", str(e)[:80])
    return check.summary()


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        return child()
    # Every group but sum: the autograd check compares gate's gradient (a
    # sum over T) bit for bit, and HCOps' sum is not PyTorch's bit for bit
    # (torch2/test_sum.py tests it).
    env = dict(os.environ, HCOPS_VERBOSE="1",
               HCOPS_OPS="gelu,silu,softmax,log_softmax,layer_norm,adam,adamw,gemm,attention,binary")
    p = subprocess.run([sys.executable, __file__, "--child"], env=env, capture_output=True, text=True, timeout=time_limits.limit(600))
    sys.stdout.write(p.stdout)
    ok = p.returncode == 0
    for needle in ("hcops_verbose,exec,add,f32,8x256x384,", "hcops_verbose,exec,mul,bf16,",
                   "hcops_verbose,fallback,add,f32,8x256x384,alpha", "hcops_verbose,fallback,add,f32,8x256x384,broadcast"):
        found = needle in p.stderr
        print(f"{'PASS' if found else 'FAIL'}: verbose has {needle!r}")
        ok = ok and found
    if p.returncode != 0:
        sys.stdout.write(p.stderr[-3000:])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

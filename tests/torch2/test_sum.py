"""PyTorch 2.x's sum.dim_IntList on libhcops_torch2 (shim/torch/reduce.cpp)
against an f64 sum and the wheel's own kernel in the same process: f32 and
bf16 tensors summed over a run of dimensions in front of the last ones
(dims (0,), (0, 1), (1,), negative, keepdim or not, dtype=f32 for bf16),
contiguous and slices of wider tensors (rows or slices farther apart than
their data), one row and size-1 dimensions of any stride, column counts off the vector length, NaN and infinities in the
data; the result's dtype, shape and strides as PyTorch's, its values within
ops/reduce.h's bound (18 u sum|x| plus the result's rounding), the same on
1, 2 and 3 threads (the rows of a few slices summed in blocks); the gradients of a Linear's bias and of adaLN's gate through
autograd. Left to PyTorch, counted, with the reason under HCOPS_VERBOSE:
the last dimension or every dimension summed, dimensions not adjacent,
transposed and permuted tensors, rows of fewer than 16 elements, other dtypes, dtype= other than the
tensor's (or f32 for bf16), small and empty tensors; a dimension out of
range or repeated raises PyTorch's own error.
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

U = 2.0 ** -24


def child():
    import torch
    import hcops.torch as ht

    torch.manual_seed(0)
    check = Checks()

    def taken():
        return ht.call_counts("sum")[0]

    def fallen():
        return ht.call_counts("sum")[1]

    def within_bound(got, x, dims, keepdim):
        """|got - sum| <= 18 u sum|x| + the rounding of got, against f64."""
        exact = x.double().sum(dims, keepdim=keepdim)
        mag = x.double().abs().sum(dims, keepdim=keepdim)
        unit = 2.0 ** -8 if got.dtype == torch.bfloat16 else U
        bound = 18 * U * mag + unit * exact.abs() + 1e-300
        g = got.double()
        finite = torch.isfinite(exact)
        ok = torch.equal(torch.isnan(g), torch.isnan(exact)) and \
            torch.equal(g[torch.isinf(exact)], exact[torch.isinf(exact)]) and \
            bool(((g - exact).abs()[finite] <= bound[finite]).all())
        worst = ((g - exact).abs()[finite] / bound[finite]).max().item() if finite.any() else 0.0
        return ok, worst

    def data(shape, dt, specials=False):
        x = torch.randn(shape) * 3 + 0.25
        if specials:
            flat = x.view(-1, shape[-1])
            flat[5, 0], flat[7, 1], flat[9, 2] = float("nan"), float("inf"), -float("inf")
            flat[3, 3], flat[11, 3] = float("inf"), -float("inf")
        return x.to(dt)

    f32, bf16 = torch.float32, torch.bfloat16
    cases = [((2048, 1536), (0,), True), ((2048, 384), (0,), True), ((8, 256, 384), (0, 1), True),
             ((8, 256, 384), (1,), True), ((8, 256, 384), (-2,), False), ((8, 256, 384), (0, -2), False),
             ((3, 37, 41, 131), (1, 2), True), ((3, 37, 41, 131), (1,), False), ((40000, 17), (0,), True),
             ((257, 255), (0,), False)]
    for shape, dims, keepdim in cases:
        for dt in (f32, bf16):
            for specials in (False, True):
                x = data(shape, dt, specials)
                with ht.enabled(False):
                    want = x.sum(dims, keepdim=keepdim)
                before = taken()
                got = x.sum(dims, keepdim=keepdim)
                label = f"sum {str(dt)[6:]} {shape} dims {dims} keepdim {keepdim}{' NaN/Inf' if specials else ''}"
                check(taken() - before == 1, f"{label}: taken")
                check(got.dtype == want.dtype and got.shape == want.shape and got.stride() == want.stride(),
                      f"{label}: dtype, shape, strides as stock", f"{got.dtype} {got.shape} {got.stride()}")
                ok, worst = within_bound(got, x, dims, keepdim)
                check(ok, f"{label}: within the bound of the f64 sum (worst {worst:.3f} of it)")
                ok_stock, _ = within_bound(want, x, dims, keepdim)
                if not ok_stock:
                    print(f"note: {label}: stock's own sum is outside that bound")

    # dtype=f32 for a bf16 tensor: an f32 result, the bf16 data widened.
    x = data((2048, 384), bf16)
    with ht.enabled(False):
        want = x.sum((0,), keepdim=True, dtype=f32)
    before = taken()
    got = x.sum((0,), keepdim=True, dtype=f32)
    check(taken() - before == 1 and got.dtype == f32 and within_bound(got, x, (0,), True)[0],
          "bf16 summed with dtype=f32: taken, an f32 result within the bound")

    # Slices of wider tensors: rows 2 C apart (the first half of each row),
    # and every other slice of a (B, T, C) batch.
    wide = data((2048, 768), f32)
    narrow = wide[:, :384]
    every_other = data((8, 256, 384), bf16)[::2]
    for label, t, dims in (("rows of a wider tensor", narrow, (0,)), ("every other slice", every_other, (1,))):
        before = taken()
        got = t.sum(dims, keepdim=True)
        with ht.enabled(False):
            want = t.sum(dims, keepdim=True)
        check(taken() - before == 1 and got.stride() == want.stride() and within_bound(got, t, dims, True)[0],
              f"{label}: taken, within the bound, strides as stock")

    # Layouts with one row or size-1 dimensions: (1, T, C) over its first
    # dimension, (B, 1, C) over its middle one, leading dimensions of size 1,
    # size-1 dimensions with strides of their own (as_strided), and a slice
    # along the summed dimension (every other row).
    base = data((2048, 1, 384), f32)
    odd = base.as_strided((2048, 1, 384), (384, 7, 1))
    layouts = [("(1, T, C) over dim 0", data((1, 2048, 384), f32), (0,)),
               ("(B, 1, C) over dim 1", data((8, 1, 4096), bf16), (1,)),
               ("size-1 leading dims", data((1, 1, 2048, 384), f32), (2,)),
               ("a size-1 dim with its own stride", odd, (0,)),
               ("every other row", data((4096, 384), bf16)[::2], (0,))]
    for label, t, dims in layouts:
        for keepdim in (True, False):
            with ht.enabled(False):
                want = t.sum(dims, keepdim=keepdim)
            before = taken()
            got = t.sum(dims, keepdim=keepdim)
            ok, worst = within_bound(got, t, dims, keepdim)
            check(taken() - before == 1 and got.shape == want.shape and got.stride() == want.stride() and ok,
                  f"{label} (keepdim {keepdim}): taken, shape and strides as stock, within the bound",
                  f"{got.shape} {got.stride()} vs {want.shape} {want.stride()}, worst {worst:.3f}")

    # The same bits on 1, 2 and 3 threads: the rows' blocks are fixed by
    # the shape (8 of 256 rows here; 2 of 300 for the (600, 40) slices), and
    # the columns' ranges change no bits.
    threads = torch.get_num_threads()
    for shape, dims in (((2048, 1536), (0,)), ((2048, 384), (0,)), ((3, 600, 40), (1,))):
        x = data(shape, f32)
        results = []
        for n in (1, 2, 3):
            torch.set_num_threads(n)
            results.append(x.sum(dims, keepdim=True))
        torch.set_num_threads(threads)
        check(all(torch.equal(results[0], r) for r in results[1:]),
              f"{shape} over {dims}: the same result on 1, 2 and 3 threads")

    # Through autograd: a Linear's bias gradient on a (B, T, C) input and
    # adaLN's gate (B, 1, C), as sum_to issues them.
    lin = torch.nn.Linear(384, 1536)
    inp = torch.randn(8, 256, 384)
    gate = torch.randn(8, 1, 1536, requires_grad=True)
    grads = {}
    for on in (False, True):
        before = taken()
        with ht.enabled(on):
            lin.zero_grad()
            gate.grad = None
            (lin(inp) * gate).square().mean().backward()
            grads[on] = (lin.bias.grad.clone(), gate.grad.clone())
        if on:
            check(taken() - before >= 2, "autograd's sums for the bias and the gate: taken",
                  f"{taken() - before} sums computed")
    close = all(torch.allclose(a, b, rtol=1e-5, atol=1e-7) for a, b in zip(grads[False], grads[True]))
    check(close, "a Linear's bias and adaLN's gate gradients: as stock's within 1e-5")

    # Declined, counted as fallbacks, stock's results.
    big, thin = torch.randn(8, 256, 384), torch.randn(40000, 3)
    declined = [("last dim", lambda: big.sum(-1)), ("every dim", lambda: big.sum()),
                ("dim=None", lambda: torch.sum(big, dim=None)), ("dims not adjacent", lambda: big.sum((0, 2))),
                ("transposed", lambda: big.transpose(1, 2).sum(1)), ("permuted", lambda: big.permute(1, 0, 2).sum(0)),
                ("f64", lambda: big.double().sum(0)), ("int", lambda: big.int().sum(0)),
                ("dtype=f64", lambda: big.sum(0, dtype=torch.float64)), ("small", lambda: big[:1, :8].sum(0)),
                ("empty", lambda: big[:, :0].sum(0)),
                ("narrow", lambda: thin.sum(0)), ("expanded", lambda: big[:1].expand(8, 256, 384).sum(0))]
    for why, fn in declined:
        with ht.enabled(False):
            want = fn()
        before = taken(), fallen()
        got = fn()
        after = taken(), fallen()
        same = got.dtype == want.dtype and got.shape == want.shape and torch.equal(got, want)
        check(after[0] == before[0] and after[1] > before[1] and same, f"{why}: PyTorch's kernel, counted")
    for label, fn, needle in (("dim out of range", lambda: big.sum(3), "out of range"),
                              ("a repeated dim", lambda: big.sum((0, 0)), "multiple times")):
        try:
            fn()
            check(False, f"{label} raises")
        except (IndexError, RuntimeError) as e:
            check(needle in str(e), f"{label}: PyTorch's error", str(e)[:80])
    return check.summary()


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        return child()
    env = dict(os.environ, HCOPS_VERBOSE="1")
    p = subprocess.run([sys.executable, __file__, "--child"], env=env, capture_output=True, text=True, timeout=time_limits.limit(600))
    sys.stdout.write(p.stdout)
    ok = p.returncode == 0
    for needle in ("hcops_verbose,exec,sum,bf16,2048x1536,", "hcops_verbose,exec,sum,f32,8x256x384,",
                   "hcops_verbose,fallback,sum,f32,8x256x384,last_dim",
                   "hcops_verbose,fallback,sum,f32,8x384x256,non_contiguous"):
        found = needle in p.stderr
        print(f"{'PASS' if found else 'FAIL'}: verbose has {needle!r}")
        ok = ok and found
    if p.returncode != 0:
        sys.stdout.write(p.stderr[-4000:])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

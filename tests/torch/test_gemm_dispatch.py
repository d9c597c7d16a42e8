"""The dispatcher GEMMs of libhcops_torch (aten::mm, addmm, bmm, baddbmm with
their out= and in-place overloads) against PyTorch's own kernels in the same
process (hcops.torch.enabled(False); in bf16 against the same call in f64,
see Accuracy), under whichever torch runs this script:
Debian's 1.13 (libhcops_torch.so) or a 2.x wheel (libhcops_torch2.so,
tests/torch2). f32 and bf16; contiguous, transposed, sliced, permuted (no
unit stride: copied), broadcast-batched (stride 0) operands; sizes 0, 1 and
odd; addmm's input as a bias row, a column, a full matrix, a scalar, with
beta = 0 (the input ignored, NaN in it included), beta and alpha other than
1; NaN and Inf in the operands; out= and in-place results; forward and the
gradients through autograd (nn.Linear, matmul). Each call HCOps takes is
counted (call_counts), each it leaves to PyTorch is too, with its reason
under HCOPS_VERBOSE: f64, mixed dtypes, an out= of another shape (PyTorch
resizes it), an out= that overlaps an operand, alpha = 0 (PyTorch
computes 0 * A B in some kernels, NaN from a NaN or Inf operand; BLAS and
HCOps' engine skip the product). An out= beside sliced, expanded operands on other
storages is taken; an empty result is taken and said.

Accuracy: f32 |hcops - torch| <= 16 k eps (|A| |B|) + |beta| |C| eps
elementwise (both sum k products in f32 in some order); bf16 results (f32
sums rounded once) within 2^-7 of max(|ref|, (|A||B|)) of the same call on
the bf16 inputs widened to f64: PyTorch's own bf16 GEMM is not the
reference, as it is not always rounded once (1.13 without AVX-512 sums in
bf16; its kernel for tiny products is 2 ulp off). NaN and Inf positions
must agree exactly. With beta = 0 the reference is
PyTorch's mm / bmm (alpha = 1 there): PyTorch 1.13's own small-product
addmm / baddbmm read the uninitialised result when beta = 0 (NaN out of
freed memory, seen in 44 of 1200 calls), which HCOps does not.
"""
import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from verbose_child import run_child, run_test  # noqa: E402


def parent():
    p = run_child(__file__, 1200)
    sys.stdout.write(p.stdout)
    err = p.stderr
    ok = p.returncode == 0
    # The fallbacks the child provoked, each with its reason; the taken calls
    # in the BLAS lines' format with api=aten.
    for needle in ("hcops_verbose,fallback,mm,f64,", "hcops_verbose,fallback,mm,f32,4x5,mixed_dtype",
                   "hcops_verbose,fallback,addmm,bf16,3x5,alpha_zero", "hcops_verbose,fallback,baddbmm,f32,2x3x5,alpha_zero",
                   ",empty_result",
                   "hcops_verbose,fallback,mm,f32,4x5,out_shape", "hcops_verbose,fallback,addmm,f32,6x7,out_overlap",
                   "hcops_verbose,exec,aten::mm,", "hcops_verbose,exec,aten::addmm,", "hcops_verbose,exec,aten::bmm,",
                   "hcops_verbose,exec,aten::baddbmm,", "api=aten", "bias=epilogue"):
        found = needle in err
        print(f"{'PASS' if found else 'FAIL'}: verbose has {needle!r}")
        ok = ok and found
    if p.returncode != 0:
        sys.stdout.write(err[-3000:])
    print(f"{'PASS' if ok else 'FAIL'}: dispatcher GEMMs against PyTorch ({sys.executable})")
    return 0 if ok else 1


def child():
    import torch
    import hcops.torch as ht

    torch.manual_seed(1234)
    passed = failed = 0

    def check(ok, name, detail=""):
        nonlocal passed, failed
        if not ok:
            print(f"FAIL: {name} {detail}", flush=True)
        passed, failed = passed + bool(ok), failed + (not ok)

    def stock(fn):
        with ht.enabled(False):
            return fn()

    def reference(dt, fn, *ops):
        """The result HCOps' is held to: PyTorch's own for f32; for bf16 the
        same call on the operands widened to f64 (exact but for f64's own
        rounding), not rounded to bf16. PyTorch's own bf16 GEMM is no
        reference: where oneDNN has no bf16 kernel (1.13 without AVX-512,
        e.g. AMD Zen 3) it sums in bf16, 0.56 off on a 64-deep product of
        normal values (seen), 9 ulp."""
        if dt == torch.float32:
            return stock(lambda: fn(*ops))
        return fn(*(t.double() for t in ops))

    def bound(a, b, dt, k):
        # |A| |B| elementwise, in f64, of the operands as the op saw them.
        absprod = torch.matmul(a.double().abs(), b.double().abs())
        return absprod

    def compare(name, got, ref, scale, dt, k, extra=None):
        if got.shape != ref.shape or got.dtype != dt:
            check(False, name, f"shape/dtype {tuple(got.shape)} {got.dtype} vs {tuple(ref.shape)} {ref.dtype}")
            return
        g, r = got.double(), ref.double()
        nan_ok = torch.equal(torch.isnan(g), torch.isnan(r))
        inf_ok = torch.equal(torch.isinf(g) & (g > 0), torch.isinf(r) & (r > 0)) and \
            torch.equal(torch.isinf(g) & (g < 0), torch.isinf(r) & (r < 0))
        if not (nan_ok and inf_ok):
            check(False, name, "NaN/Inf positions differ")
            return
        fin = torch.isfinite(r)
        if dt == torch.float32:
            tol = 16 * max(k, 1) * 2.0 ** -24 * scale
            if extra is not None:
                tol = tol + extra * 2.0 ** -23
        else:
            tol = 2.0 ** -7 * torch.maximum(r.abs(), scale) + 1e-30
            if extra is not None:
                tol = tol + extra * 2.0 ** -7
        if r.numel() == 0:
            check(True, name)
            return
        err = (g - r).abs()
        bad = (err > tol) & fin
        if bool(bad.any()):
            worst = (err - tol).masked_fill(~fin, -1).argmax()
            check(False, name, f"err {err.flatten()[worst].item():.3g} > tolerance {torch.as_tensor(tol).expand_as(err).flatten()[worst].item():.3g}")
        else:
            check(True, name)

    def operand(shape, dt, kind):
        """A tensor of `shape` laid out as real models produce them."""
        if kind == "contiguous":
            return torch.randn(shape).to(dt)
        if kind == "transposed":  # a .t() / transpose(-1, -2) view
            return torch.randn(shape[:-2] + (shape[-1], shape[-2])).to(dt).transpose(-1, -2)
        if kind == "sliced":  # every row a slice of a wider one
            return torch.randn(shape[:-1] + (shape[-1] + 5,)).to(dt)[..., 2:2 + shape[-1]]
        if kind == "strided":  # no unit stride: every other column
            return torch.randn(shape[:-1] + (2 * shape[-1],)).to(dt)[..., ::2]
        raise ValueError(kind)

    kinds = ("contiguous", "transposed", "sliced", "strided")
    shapes = [(1, 1, 1), (1, 7, 1), (5, 1, 3), (37, 53, 29), (64, 64, 64), (3, 0, 4), (0, 5, 3), (4, 5, 0),
              (127, 65, 33), (256, 384, 96)]
    for dt in (torch.float32, torch.bfloat16):
        for (m, k, n) in shapes:
            for ka in kinds:
                for kb in kinds:
                    if (m, k, n) == (256, 384, 96) and (ka, kb) != ("contiguous", "transposed"):
                        continue
                    a, b = operand((m, k), dt, ka), operand((k, n), dt, kb)
                    tag = f"{dt} {m}x{k}x{n} {ka}/{kb}"
                    before = ht.call_counts("mm")[0]
                    got = torch.mm(a, b)
                    check(ht.call_counts("mm")[0] == before + 1, f"mm taken {tag}")
                    compare(f"mm {tag}", got, reference(dt, torch.mm, a, b), bound(a, b, dt, k), dt, k)
            # addmm with every kind of input, beta and alpha.
            a, b = operand((m, k), dt, "contiguous"), operand((k, n), dt, "transposed")
            inputs = {"row": torch.randn(n).to(dt), "row2d": torch.randn(1, n).to(dt),
                      "column": torch.randn(m, 1).to(dt), "full": torch.randn(m, n).to(dt),
                      "full_t": torch.randn(n, m).to(dt).t(), "scalar": torch.randn(()).to(dt)}
            for iname, c in inputs.items():
                for beta, alpha in ((1, 1), (0.5, 2.0), (0, 1), (-1.5, 0.25)):
                    tag = f"{dt} {m}x{k}x{n} input={iname} beta={beta} alpha={alpha}"
                    got = torch.addmm(c, a, b, beta=beta, alpha=alpha)
                    ref = reference(dt, lambda c, a, b: torch.addmm(c, a, b, beta=beta, alpha=alpha) if beta
                                    else alpha * torch.mm(a, b), c, a, b)
                    extra = abs(beta) * c.double().abs().expand(m, n)
                    compare(f"addmm {tag}", got, ref, abs(alpha) * bound(a, b, dt, k), dt, k, extra)
            # beta = 0 ignores the input, NaN included (PyTorch's documented semantics).
            c = torch.full((m, n), float("nan")).to(dt)
            got = torch.addmm(c, a, b, beta=0)
            compare(f"addmm beta=0 NaN input {dt} {m}x{k}x{n}", got, reference(dt, torch.mm, a, b),
                    bound(a, b, dt, k), dt, k)
            # out= and in-place.
            out = torch.empty(m, n, dtype=dt)
            torch.mm(a, b, out=out)
            compare(f"mm out= {dt} {m}x{k}x{n}", out, reference(dt, torch.mm, a, b), bound(a, b, dt, k), dt, k)
            out_t = torch.empty(n, m, dtype=dt).t()  # a column-major out=
            torch.addmm(inputs["row"], a, b, out=out_t)
            compare(f"addmm out= (transposed) {dt} {m}x{k}x{n}", out_t,
                    reference(dt, torch.addmm, inputs["row"], a, b), bound(a, b, dt, k), dt, k,
                    inputs["row"].double().abs().expand(m, n))
            c = torch.randn(m, n).to(dt)
            c2 = reference(dt, lambda c, a, b: c.clone().addmm_(a, b, beta=0.5, alpha=-1.0), c, a, b)
            c.addmm_(a, b, beta=0.5, alpha=-1.0)
            compare(f"addmm_ {dt} {m}x{k}x{n}", c, c2, bound(a, b, dt, k), dt, k, 0.5 * c2.double().abs() + 1)

        # Batched: bmm / baddbmm with per-batch, broadcast (stride 0) and
        # transposed operands; attention's shapes.
        for (bs, m, k, n) in ((1, 1, 1, 1), (4, 17, 23, 19), (48, 64, 32, 64), (3, 0, 4, 5), (0, 3, 4, 5),
                              (2, 5, 0, 3), (6, 33, 65, 17)):
            for ka in ("contiguous", "transposed", "strided"):
                for kb in ("contiguous", "transposed", "broadcast"):
                    a = operand((bs, m, k), dt, ka)
                    b = torch.randn(1, k, n).to(dt).expand(bs, k, n) if kb == "broadcast" else operand((bs, k, n), dt, kb)
                    tag = f"{dt} {bs}x{m}x{k}x{n} {ka}/{kb}"
                    before = ht.call_counts("bmm")[0]
                    got = torch.bmm(a, b)
                    check(ht.call_counts("bmm")[0] == before + 1, f"bmm taken {tag}")
                    compare(f"bmm {tag}", got, reference(dt, torch.bmm, a, b), bound(a, b, dt, k), dt, k)
            a, b = operand((bs, m, k), dt, "contiguous"), operand((bs, k, n), dt, "transposed")
            for iname, c in (("row", torch.randn(n).to(dt)), ("full", torch.randn(bs, m, n).to(dt)),
                             ("batch_bcast", torch.randn(1, m, n).to(dt))):
                for beta, alpha in ((1, 1), (0.5, 2.0), (0, 1)):
                    got = torch.baddbmm(c, a, b, beta=beta, alpha=alpha)
                    ref = reference(dt, lambda c, a, b: torch.baddbmm(c, a, b, beta=beta, alpha=alpha) if beta
                                    else alpha * torch.bmm(a, b), c, a, b)
                    compare(f"baddbmm {dt} {bs}x{m}x{k}x{n} input={iname} beta={beta}", got, ref,
                            abs(alpha) * bound(a, b, dt, k), dt, k, abs(beta) * c.double().abs().expand(bs, m, n))
            c = torch.randn(bs, m, n).to(dt)
            c2 = reference(dt, lambda c, a, b: c.clone().baddbmm_(a, b, alpha=0.5), c, a, b)
            c.baddbmm_(a, b, alpha=0.5)
            compare(f"baddbmm_ {dt} {bs}x{m}x{k}x{n}", c, c2, bound(a, b, dt, k), dt, k, c2.double().abs() + 1)
            out = torch.empty(bs, m, n, dtype=dt)
            torch.bmm(a, b, out=out)
            compare(f"bmm out= {dt} {bs}x{m}x{k}x{n}", out, reference(dt, torch.bmm, a, b), bound(a, b, dt, k), dt, k)

        # NaN and Inf in the operands.
        a, b = torch.randn(9, 11).to(dt), torch.randn(11, 7).to(dt)
        a[2, 3], a[5, 0], b[4, 6], b[0, 1] = float("nan"), float("inf"), float("-inf"), float("inf")
        compare(f"mm NaN/Inf {dt}", torch.mm(a, b), reference(dt, torch.mm, a, b), bound(a, b, dt, 11), dt, 11)

        # Autograd through nn.Linear (addmm, mm) and matmul (bmm), 3-D inputs.
        lin = torch.nn.Linear(48, 40).to(dt)
        x = torch.randn(3, 10, 48).to(dt).requires_grad_()
        w = torch.randn(3, 48, 24).to(dt).requires_grad_()

        def step():
            for t in (x, w, lin.weight, lin.bias):
                t.grad = None
            y = lin(x)
            z = torch.matmul(y.transpose(1, 2), x) @ w
            z.float().square().sum().backward()
            return [t.grad.clone() for t in (x, w, lin.weight, lin.bias)] + [z.detach()]

        before = sum(ht.call_counts(o)[0] for o in ("mm", "addmm", "bmm"))
        got = step()
        taken = sum(ht.call_counts(o)[0] for o in ("mm", "addmm", "bmm")) - before
        ref = stock(step)
        check(taken >= 5, f"autograd {dt}: GEMMs of forward and backward taken", f"({taken})")
        for name, g, r in zip(("dx", "dw", "dweight", "dbias", "z"), got, ref):
            scale = r.double().abs().max().clamp(min=1e-30)
            err = (g.double() - r.double()).abs().max() / scale
            check(err.item() <= (1e-4 if dt == torch.float32 else 4e-2), f"autograd {dt} {name}",
                  f"max err / max |ref| = {err.item():.3g}")

    # alpha = 0 with NaN and Inf in the operands: left to PyTorch, which
    # computes 0 * A B in some kernels (NaN: 2.15's f32 baddbmm, bf16) and
    # skips the product in others (beta * C: BLAS's rule).
    for dt in (torch.float32, torch.bfloat16):
        a, b, c = torch.ones(2, 3, 5, dtype=dt), torch.ones(2, 5, 4, dtype=dt), torch.randn(2, 3, 4).to(dt)
        a[0, 0, 0], b[1, 2, 3] = float("inf"), float("nan")
        fallen = 0
        calls = {"addmm": lambda: torch.addmm(c[0], a[0], b[0], alpha=0),
                 "addmm bias": lambda: torch.addmm(c[0, 0], a[0], b[0], beta=0.5, alpha=0),
                 "addmm_": lambda: c[1].clone().addmm_(a[1], b[1], alpha=0),
                 "baddbmm": lambda: torch.baddbmm(c, a, b, alpha=0),
                 "baddbmm out=": lambda: torch.baddbmm(c, a, b, alpha=0, out=torch.empty_like(c))}
        for name, fn in calls.items():
            before = ht.call_counts("addmm")[1] + ht.call_counts("baddbmm")[1]
            got = fn()
            fallen += ht.call_counts("addmm")[1] + ht.call_counts("baddbmm")[1] - before
            ref = stock(fn)
            check(torch.equal(torch.isnan(got), torch.isnan(ref)) and
                  torch.equal(got.nan_to_num(), ref.nan_to_num()), f"{name} alpha=0 NaN/Inf operands {dt}: as stock",
                  f"{got.flatten()[:4].tolist()} vs {ref.flatten()[:4].tolist()}")
        check(fallen == len(calls), f"alpha=0 {dt}: every call left to PyTorch", f"({fallen} of {len(calls)})")

    # out= beside operands that are views (a column slice, an expanded bias)
    # of other storages: taken, not declined as overlapping.
    big, b = torch.randn(8, 10), torch.randn(5, 6)
    bias = torch.randn(1, 6).expand(8, 6)
    for name, fn in (("mm out= sliced operand", lambda out: torch.mm(big[:, :5], b, out=out)),
                     ("addmm out= expanded input", lambda out: torch.addmm(bias, big[:, 2:7], b, out=out)),
                     ("addmm_ sliced operand", lambda out: out.copy_(bias).addmm_(big[:, 1:6], b))):
        op = "mm" if name.startswith("mm") else "addmm"
        before = ht.call_counts(op)[0]
        got, ref = fn(torch.empty(8, 6)), stock(lambda: fn(torch.empty(8, 6)))
        check(ht.call_counts(op)[0] == before + 1, f"{name}: taken")
        check((got - ref).abs().max().item() <= 1e-5 * (1 + ref.abs().max().item()), f"{name}: as stock")

    # An empty result: taken, nothing to compute, said under HCOPS_VERBOSE.
    before = ht.call_counts("mm")[0]
    got = torch.mm(torch.randn(0, 3), torch.randn(3, 4))
    check(got.shape == (0, 4) and ht.call_counts("mm")[0] == before + 1, "mm with an empty result taken")

    # What PyTorch keeps: f64, mixed dtypes, an out= PyTorch must resize or
    # that overlaps an operand; the results are PyTorch's own, bit for bit.
    a64, b64 = torch.randn(4, 5, dtype=torch.float64), torch.randn(5, 3, dtype=torch.float64)
    before = ht.call_counts("mm")[1]
    got = torch.mm(a64, b64)
    check(ht.call_counts("mm")[1] == before + 1, "mm f64 counted as a fallback")
    check(torch.equal(got, stock(lambda: torch.mm(a64, b64))), "mm f64 is PyTorch's")
    a, b = torch.randn(4, 5), torch.randn(5, 3)
    try:
        torch.mm(a, b.double())
        check(False, "mm mixed dtypes raises as PyTorch does")
    except RuntimeError:
        check(True, "mm mixed dtypes raises as PyTorch does")
    out = torch.empty(2, 2)
    with warnings.catch_warnings():  # 2.x: resizing a non-empty out= is deprecated
        warnings.simplefilter("ignore")
        torch.mm(a, b, out=out)
    check(out.shape == (4, 3) and torch.equal(out, stock(lambda: torch.mm(a, b))), "mm out= resized by PyTorch")
    try:
        torch.mm(torch.randn(4, 5), torch.randn(4, 3))
        check(False, "mm shape mismatch raises")
    except RuntimeError:
        check(True, "mm shape mismatch raises")
    base = torch.randn(6, 7)
    a, b = torch.randn(6, 7), torch.randn(7, 7)
    # out is the input and the operand: HCOps hands the call to PyTorch, so
    # the result is whatever stock PyTorch makes of the same aliasing (not
    # the unaliased product: PyTorch 2.15's own addmm, on an AMD Zen CPU,
    # reads operand rows it has already overwritten).
    alias = base.clone()
    ref = stock(lambda: torch.addmm(alias, alias, b, out=alias))
    got = torch.addmm(base, base, b, out=base)
    check(torch.equal(got, ref), "addmm out= overlapping an operand: as stock PyTorch")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(run_test(parent, child))

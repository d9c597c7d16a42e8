"""Edge behaviour of the replaced operators against stock PyTorch in the same
process (hcops.torch.set_enabled(False) gives stock's kernels), on every
kernel family this CPU runs: the cases PyTorch's own test suite and a
review found different (issue 30), each of which must now be stock's.

- softmax keeps denormal results: softmax([0, -87.5, -88, -100]);
- LayerNorm of a row whose variance exceeds FLT_MAX is NaN (output, rstd
  and the input's gradient; the mean too where the range overflows);
- native_layer_norm_backward of bf16 input with f32 mean/rstd raises
  stock's error;
- LayerNorm over a row of 9.4 M elements (test_nn's test_LayerNorm_numeric):
  rstd within 1e-6 of the f64 value, output within test_nn's atol 1e-5.

And two where stock is not right and HCOps gives the exact (f64) answer
(issue 49; the user guide lists them):
- LayerNorm over rows of one element: x - mean = 0, so the output is the
  bias (0 without one) and the input's gradient 0, exactly; stock's f32
  gradient and bf16 output carry rounding noise (1e-6 after rstd = 316);
- attention with a single key: softmax is 1, dS = 0, so the query and key
  gradients are 0, exactly; stock's f32 ones carry 1e-6 of noise.

Runs itself once per family in a child (HCOPS_ISA); prints
"N passed, M failed"."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import kernel_families  # noqa: E402 - tests/kernel_families.py
SRC_PYTHON = os.path.join(HERE, "..", "..", "python")
PYTHON = os.environ.get("PYTHON", "/usr/bin/python3")
LIB = os.environ.get("HCOPS_TORCH_LIB", "")


def same(a, b):
    """Equal values, NaN where NaN, and the same dtype and shape."""
    import torch
    return a.dtype == b.dtype and a.shape == b.shape and bool(
        torch.equal(torch.nan_to_num(a, nan=7.25), torch.nan_to_num(b, nan=7.25)) and
        torch.equal(a.isnan(), b.isnan()))


def child():
    import torch
    import torch.nn.functional as F
    sys.path.insert(0, SRC_PYTHON)
    import hcops.torch as ht
    torch.manual_seed(0)
    results = []

    def check(cond, what):
        results.append((bool(cond), what))
        print(("ok   " if cond else "FAIL ") + what, flush=True)

    def both(fn):
        """fn() under HCOps (which must take the call) and under stock."""
        with ht.enabled(False):
            ref = fn()
        got = fn()
        return got, ref

    x = torch.tensor([0.0, -87.5, -88.0, -100.0])
    got, ref = both(lambda: torch.softmax(x, -1))
    check(same(got, ref) and got[1] > 0, "softmax keeps denormals: %s (stock %s)" % (got.tolist(), ref.tolist()))
    got, ref = both(lambda: torch.softmax(x.bfloat16(), -1))
    check(same(got, ref), "bf16 softmax near underflow: %s (stock %s)" % (got.tolist(), ref.tolist()))

    # Variances over FLT_MAX: rstd, output and gradient as stock (1.13: NaN;
    # 2.x: 0), a row whose range overflows too: NaN mean, as stock.
    for row in ([3e38, -3e38, 1.0, 2.0], [2e19, -2e19] * 8 + [1.0]):
        def ln():
            t = torch.tensor([row], requires_grad=True)
            y = F.layer_norm(t, (len(row),))
            y.backward(torch.ones_like(y))
            return torch.cat([y.detach().flatten(), t.grad.flatten()])
        got, ref = both(ln)
        check(same(got, ref), "layer_norm of %s..: %s (stock %s)" % (row[:2], got.tolist()[:3], ref.tolist()[:3]))
        got, ref = both(lambda: torch.ops.aten.native_layer_norm(torch.tensor([row]), [len(row)], None, None, 1e-5))
        # 1.13: rstd and y NaN; 2.x: rstd 0, y = 0 (its f32 sums overflow to
        # Inf); the mean is the true one where the range fits f32 (2.x's is
        # whatever its running difference leaves).
        check(same(got[2], ref[2]) and same(got[0], ref[0]) and got[1].isnan().all() == ref[1].isnan().all(),
              "native_layer_norm of %s..: mean %s rstd %s (stock %s %s)" % (
                  row[:2], got[1].item(), got[2].item(), ref[1].item(), ref[2].item()))

    xb, dy = torch.randn(3, 8).bfloat16(), torch.randn(3, 8).bfloat16()

    def mixed_backward():
        try:
            torch.ops.aten.native_layer_norm_backward(dy, xb, [8], torch.zeros(3, 1), torch.ones(3, 1), None, None,
                                                      [True, False, False])
            return "no error"
        except RuntimeError as e:
            return str(e).splitlines()[0]
    got, ref = both(mixed_backward)
    check(got == ref and ref != "no error", "bf16 layer_norm backward with f32 statistics: %r (stock %r)" % (got, ref))

    X = torch.rand(2, 256, 256, 144)
    ln = torch.nn.LayerNorm([256, 256, 144])
    y, mean, rstd = torch.ops.aten.native_layer_norm(X, [256, 256, 144], ln.weight, ln.bias, 1e-5)
    Xd = X.double().view(2, -1)
    r = 1 / torch.sqrt(Xd.var(1, unbiased=False) + 1e-5)
    err = ((rstd.view(2).double() - r) / r).abs().max().item()
    yref = (Xd - Xd.mean(1, keepdim=True)) * r.view(2, 1)
    yerr = (y.view(2, -1).double() - yref).abs().max().item()
    check(err < 1e-6 and yerr < 1e-5, "LayerNorm over 9.4 M elements: rstd error %.2g (<= 1e-6), output %.2g "
          "(test_LayerNorm_numeric's atol 1e-5)" % (err, yerr))
    taken = ht.call_counts("native_layer_norm")[0]
    check(taken >= 5, "HCOps computed the LayerNorm calls (%d)" % taken)

    # Rows of one element, contiguous and as a transposed view: y = bias and
    # dx = 0 exactly (f64's answer), with and without the parameters.
    for dtype in (torch.float32, torch.bfloat16):
        for affine in (True, False):
            for view in ("contiguous", "strided"):
                # strided: every other row of a (12, 1) tensor, strides (2, 1)
                x = (torch.randn(6, 1).to(dtype) if view == "contiguous" else torch.randn(12, 1).to(dtype)[::2])
                x.requires_grad_()
                w = torch.randn(1).to(dtype).requires_grad_() if affine else None
                b = torch.randn(1).to(dtype).requires_grad_() if affine else None
                before = ht.call_counts("native_layer_norm_backward")[0]
                y = F.layer_norm(x, (1,), w, b, 1e-5)
                y.backward(torch.randn(6, 1).to(dtype))
                want_y = b.detach().expand(6, 1) if affine else torch.zeros(6, 1, dtype=dtype)
                ran = ht.call_counts("native_layer_norm_backward")[0] > before
                check(ran and torch.equal(y.detach(), want_y) and torch.equal(x.grad, torch.zeros_like(x.grad)),
                      "layer_norm over rows of one element (%s, %s, %s): y = bias, dx = 0 exactly: y %s dx %s" % (
                          str(dtype)[6:], "affine" if affine else "no parameters", view, y.detach().flatten()[:2].tolist(),
                          x.grad.flatten()[:2].tolist()))

    # Attention with a single key (2.x): dq = dk = 0 exactly, o and dv as f64.
    if hasattr(F, "scaled_dot_product_attention"):
        q0, k0, v0, g0 = (torch.randn(2, 3, n, 8, dtype=torch.float64) for n in (5, 1, 1, 5))
        q, k, v = (t.float().requires_grad_() for t in (q0, k0, v0))
        before = ht.call_counts("_scaled_dot_product_flash_attention_for_cpu_backward")[0]
        o = F.scaled_dot_product_attention(q, k, v)
        o.backward(g0.float())
        ran = ht.call_counts("_scaled_dot_product_flash_attention_for_cpu_backward")[0] > before
        q64, k64, v64 = (t.clone().requires_grad_() for t in (q0, k0, v0))
        o64 = F.scaled_dot_product_attention(q64, k64, v64)
        o64.backward(g0)
        close = all(torch.allclose(a.double(), r, atol=1e-6, rtol=1e-6) for a, r in ((o, o64), (v.grad, v64.grad)))
        check(ran and close and not q.grad.any() and not k.grad.any(),
              "attention with a single key: dq = dk = 0 exactly (max |dq| %.3g, |dk| %.3g), o and dv as f64" % (
                  q.grad.abs().max().item(), k.grad.abs().max().item()))
    return 0 if all(ok for ok, _ in results) else 1


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        return child()
    if not os.path.isfile(LIB):
        print("SKIP: libhcops_torch.so not built (configure --without-torch?): %r" % LIB)
        return 77
    info = os.path.join(os.environ.get("HCOPS_TEST_TOP_BUILDDIR", os.path.join(HERE, "..", "..", "build")), "tools",
                        "hcops-info")
    families = kernel_families.families_here(info, check=True)
    passed = failed = 0
    for isa in [f for f in families if f in kernel_families.ops_families()]:
        print("== HCOPS_ISA=%s" % isa, flush=True)
        env = dict(os.environ, HCOPS_ISA=isa, HCOPS_TORCH_LIB=LIB)
        rc = subprocess.run([PYTHON, __file__, "--child"], env=env).returncode
        passed, failed = passed + (rc == 0), failed + (rc != 0)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())

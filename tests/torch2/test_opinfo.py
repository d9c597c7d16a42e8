"""Every sample PyTorch's own OpInfo database (op_db, shipped in the wheel:
torch.testing._internal.common_methods_invocations) has for the operators
HCOps registers in a 2.x torch: its reference inputs (the sample inputs and
the extra ones an OpInfo defines; f32 and bf16, forward and the gradients of
every input that requires one) and its error inputs, with libhcops_torch2
loaded and enabled against the same process with it disabled (PyTorch's own
kernels).

- The GEMMs (mm, addmm and its decomposed form, bmm, baddbmm, addbmm,
  matmul, __rmatmul__, nn.functional.linear, einsum, tensordot): values
  within the dispatch test's bound (f32: 16 k eps |A||B| scale, taken as
  1e-5 relative to the largest |value| of the result plus 1e-5 of the
  elementwise magnitude; bf16: 2^-6 relative).
- softmax, log_softmax (and their with_dtype variants), _softmax_backward_data,
  nn.functional.layer_norm, gelu, silu, scaled_dot_product_attention: the
  same bound (HCOps' f32 operators are within a few ulps of PyTorch's; bf16
  ones round once from f32).
Each sample is checked for the same dtype and shape, NaN and Inf where
stock has them, and the values. Where HCOps' and stock's values differ by
more than the bound, the op runs again in f64 on the same values (stock's
kernels): the difference is listed, not failed, when HCOps is no further
from that result than stock (the cases where stock is not right: attention's
query and key gradients, LayerNorm's gradients that are rounding noise).
An error input must raise the error stock
raises (its type and OpInfo's message pattern) with HCOps enabled. Over the
whole run of each op, HCOps' counters must show that it computed at least
one call of the aten operators the op reaches, so the samples did reach it.
A failure names the op, dtype, sample and output: a deliberate error in one
kernel is reported by name.
"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

# op_db name -> the aten operators (HCOps' counters) its samples reach.
# (inner's samples are vectors and scalars: dot products, no GEMM.)
GEMMS = ("mm", "addmm", "bmm", "baddbmm")
OPS = {name: GEMMS for name in ("mm", "addmm", "bmm", "baddbmm", "addbmm", "matmul", "__rmatmul__",
                                "nn.functional.linear", "einsum", "tensordot")}
OPS.update({
    "softmax": ("_softmax", "_softmax_backward_data"),
    "log_softmax": ("_log_softmax", "_log_softmax_backward_data"),
    "_softmax_backward_data": ("_softmax_backward_data",),
    "nn.functional.layer_norm": ("native_layer_norm", "native_layer_norm_backward"),
    "nn.functional.gelu": ("gelu", "gelu_backward"),
    "nn.functional.silu": ("silu", "silu_backward"),
    "nn.functional.scaled_dot_product_attention": ("_scaled_dot_product_flash_attention_for_cpu",
                                                   "_scaled_dot_product_flash_attention_for_cpu_backward"),
})
VARIANTS = ("", "decomposed", "with_dtype")
# Variants whose every call HCOps declines, and why (its counters must show
# the declines: the samples did reach it).
DECLINED = {"softmax.with_dtype": "dtype=torch.float64: an f64 softmax", "log_softmax.with_dtype": "an f64 one"}


def main():
    import torch
    import hcops.torch as ht
    from torch.testing._internal.common_methods_invocations import op_db
    from torch.testing._internal.opinfo.core import SampleInput

    passed = failed = 0
    closer_to_f64 = []  # differences from stock where HCOps is the one nearer the f64 result
    sample_dtype = torch.float32
    seed_scale = 0.0  # the largest |gradient seed| of the last evaluation

    def check(ok, name, detail=""):
        nonlocal passed, failed
        if not ok:
            print(f"FAIL: {name} {detail}", flush=True)
        passed, failed = passed + bool(ok), failed + (not ok)

    def leaves(sample):
        out = [sample.input] if isinstance(sample.input, torch.Tensor) else list(sample.input)
        out += [a for a in sample.args if isinstance(a, torch.Tensor)]
        out += [a for a in sample.kwargs.values() if isinstance(a, torch.Tensor)]
        return [t for t in out if t.requires_grad]

    def evaluate(op, sample, on):
        with ht.enabled(on):
            ins = leaves(sample)
            for t in ins:
                t.grad = None
            out = op(sample.input, *sample.args, **sample.kwargs)
            outs = [out] if isinstance(out, torch.Tensor) else [o for o in out if isinstance(o, torch.Tensor)]
            grads = []
            diff = [o for o in outs if o.requires_grad]
            if diff and ins:
                torch.manual_seed(7)
                # In the sample's dtype, whatever the outputs' (f64 below): the same seeds.
                seeds = [torch.randn(o.shape, dtype=sample_dtype).to(o.dtype) for o in diff]
                nonlocal seed_scale
                seed_scale = max([float(t.abs().max()) for t in seeds if t.numel()] + [0.0])
                gs = torch.autograd.grad(diff, ins, seeds, allow_unused=True)
                grads = [g for g in gs]
            return [o.detach().clone() for o in outs], grads

    def widened(sample):
        """The sample with its floating-point tensors in f64 (the same values)."""
        def up(x):
            if isinstance(x, torch.Tensor) and x.is_floating_point():
                return x.detach().double().requires_grad_(x.requires_grad)
            if isinstance(x, (list, tuple)):
                return type(x)(up(y) for y in x)
            return x
        return SampleInput(up(sample.input), args=tuple(up(a) for a in sample.args),
                           kwargs={k: up(v) for k, v in sample.kwargs.items()})

    def worst(a, r):
        """The largest |a - r| over the finite elements of r, a in f64."""
        fin = torch.isfinite(r)
        return (a.double()[fin] - r[fin]).abs().max().item() if fin.any() else 0.0

    def close(a, b, dt):
        if a is None or b is None:
            return a is None and b is None, "gradient present on one side"
        if a.dtype != b.dtype or a.shape != b.shape:
            return False, f"{a.dtype}{tuple(a.shape)} vs {b.dtype}{tuple(b.shape)}"
        if a.numel() == 0:
            return True, ""
        x, y = a.double(), b.double()
        if not torch.equal(torch.isnan(x), torch.isnan(y)):
            return False, "NaN positions"
        inf = torch.isinf(y)
        if not torch.equal(torch.isinf(x), inf) or not torch.equal(x[inf], y[inf]):
            return False, "Inf"
        fin = torch.isfinite(y)
        if not fin.any():
            return True, ""
        x, y = x[fin], y[fin]
        rel = 1e-5 if dt == torch.float32 else 2.0 ** -6
        tol = rel * (y.abs().max() + y.abs()) + 1e-30
        err = (x - y).abs()
        return bool((err <= tol).all()), f"max err {err.max().item():.3g} (scale {y.abs().max().item():.3g})"

    for info in op_db:
        if info.name not in OPS or info.variant_test_name not in VARIANTS:
            continue
        label = info.name + (f".{info.variant_test_name}" if info.variant_test_name else "")
        counted = OPS[info.name]
        fallen_before = sum(ht.call_counts(g)[1] for g in counted)
        taken_before = sum(ht.call_counts(g)[0] for g in counted)
        samples_run = 0
        for dt in (torch.float32, torch.bfloat16):
            if dt not in info.supported_dtypes("cpu"):
                continue
            grad = info.supports_autograd
            sample_dtype = dt
            for i, sample in enumerate(info.reference_inputs("cpu", dt, requires_grad=grad)):
                samples_run += 1
                name = f"{label} {str(dt)[6:]} sample {i}"
                try:
                    got = evaluate(info.op, sample, True)
                except Exception as e:  # noqa: BLE001
                    try:
                        evaluate(info.op, sample, False)
                        check(False, name, f"raises only under HCOps: {str(e).splitlines()[0]}")
                    except Exception as e2:  # noqa: BLE001
                        same = type(e) is type(e2)
                        check(same, name + " error as stock", f"{e!r} vs {e2!r}")
                    continue
                ref = evaluate(info.op, sample, False)
                check(len(got[1]) == len(ref[1]), f"{name} gradients counted")
                exact = None  # the f64 result, computed when a comparison needs it
                for kind, pairs in (("output", zip(got[0], ref[0])), ("gradient", zip(got[1], ref[1]))):
                    for j, (a, b) in enumerate(pairs):
                        ok, why = close(a, b, dt)
                        if not ok and a is not None and b is not None and a.shape == b.shape and a.numel():
                            # Which side is right: the same op in f64 on the same values.
                            exact = exact or evaluate(info.op, widened(sample), False)
                            r = (exact[0] if kind == "output" else exact[1])[j]
                            if r is not None and torch.equal(torch.isnan(a), torch.isnan(r)):
                                mine, stock = worst(a, r), worst(b, r)
                                # A gradient whose values cancel to the rounding of the
                                # seeds' terms (LayerNorm over rows of 2): its error is
                                # judged against eps x the seeds' magnitude as well.
                                floor = 0.0 if kind == "output" else torch.finfo(dt).eps * seed_scale
                                if mine <= max(stock, floor):
                                    how = "HCOps closer to f64" if mine <= stock else \
                                        f"HCOps within eps x the seeds ({floor:.3g}) of f64"
                                    closer_to_f64.append(f"{name} {kind} {j}: {how}: {why}; from f64: HCOps "
                                                         f"{mine:.3g}, stock {stock:.3g}")
                                    continue
                                why += f"; from f64: HCOps {mine:.3g}, stock {stock:.3g}"
                        check(ok, f"{name} {kind} {j}", why)
        errors = 0
        for i, err in enumerate(info.error_inputs("cpu") if info.error_inputs_func else ()):
            errors += 1
            si = err.sample_input
            try:
                with ht.enabled(True):
                    info.op(si.input, *si.args, **si.kwargs)
                check(False, f"{label} error input {i}", f"no error, stock raises {err.error_type.__name__}")
            except Exception as e:  # noqa: BLE001
                ok = isinstance(e, err.error_type) and re.search(err.error_regex, str(e)) is not None
                check(ok, f"{label} error input {i}", f"{e!r}, stock's: {err.error_type.__name__} /{err.error_regex}/")
        taken = sum(ht.call_counts(g)[0] for g in counted) - taken_before
        fallen = sum(ht.call_counts(g)[1] for g in counted) - fallen_before
        if label in DECLINED:
            check(taken == 0 and fallen > 0, f"{label}: HCOps declined every call ({DECLINED[label]})",
                  f"({samples_run} samples, {taken} calls computed, {fallen} declined)")
        else:
            check(taken > 0, f"{label}: HCOps computed calls", f"({samples_run} samples, {taken} calls)")
        print(f"   {label}: {samples_run} samples, {errors} error inputs, {taken} calls computed by HCOps, "
              f"{fallen} left to PyTorch", flush=True)
    for line in closer_to_f64:
        print(f"differs from stock: {line}")
    print(f"{len(closer_to_f64)} results differ from stock's, explained by the f64 result")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())

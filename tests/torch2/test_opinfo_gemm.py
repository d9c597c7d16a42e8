"""Every sample input PyTorch's own OpInfo database (op_db, shipped in the
wheel: torch.testing._internal.common_methods_invocations) gives for the ops
that reach the dispatcher GEMMs (mm, addmm and its decomposed form, bmm,
baddbmm, addbmm, matmul, __rmatmul__, nn.functional.linear, einsum,
tensordot), f32 and bf16, forward and the gradients of every input that
requires one, with libhcops_torch2 loaded and enabled against the same
process with it disabled (PyTorch's own kernels). Each sample is checked
for: the same dtype and shape, NaN and Inf where stock has them, values
within the dispatch test's bound (f32: 16 k eps |A||B| scale, taken as
1e-5 relative to the largest |value| of the result plus 1e-5 of the
elementwise magnitude; bf16: 2^-6 relative); and that HCOps took at least
one GEMM over the whole run of each op (the counters), so the samples did
reach it.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

# (inner's samples are vectors and scalars: dot products, no GEMM.)
OPS = ["mm", "addmm", "bmm", "baddbmm", "addbmm", "matmul", "__rmatmul__", "nn.functional.linear", "einsum",
       "tensordot"]
GEMMS = ("mm", "addmm", "bmm", "baddbmm")


def main():
    import torch
    import hcops.torch as ht
    from torch.testing._internal.common_methods_invocations import op_db

    passed = failed = 0

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
                seeds = [torch.randn_like(o) for o in diff]
                gs = torch.autograd.grad(diff, ins, seeds, allow_unused=True)
                grads = [g for g in gs]
            return [o.detach().clone() for o in outs], grads

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
        if info.name not in OPS or info.variant_test_name not in ("", "decomposed"):
            continue
        label = info.name + (f".{info.variant_test_name}" if info.variant_test_name else "")
        taken_before = sum(ht.call_counts(g)[0] for g in GEMMS)
        samples_run = 0
        for dt in (torch.float32, torch.bfloat16):
            if dt not in info.supported_dtypes("cpu"):
                continue
            grad = info.supports_autograd
            for i, sample in enumerate(info.sample_inputs("cpu", dt, requires_grad=grad)):
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
                for j, (a, b) in enumerate(zip(got[0], ref[0])):
                    ok, why = close(a, b, dt)
                    check(ok, f"{name} output {j}", why)
                check(len(got[1]) == len(ref[1]), f"{name} gradients counted")
                for j, (a, b) in enumerate(zip(got[1], ref[1])):
                    ok, why = close(a, b, dt)
                    check(ok, f"{name} gradient {j}", why)
        taken = sum(ht.call_counts(g)[0] for g in GEMMS) - taken_before
        check(taken > 0, f"{label}: HCOps took GEMMs", f"({samples_run} samples, {taken} GEMMs)")
        print(f"   {label}: {samples_run} samples, {taken} GEMMs taken by HCOps", flush=True)
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())

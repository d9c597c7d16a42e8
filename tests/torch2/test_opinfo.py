"""Every sample PyTorch's own OpInfo database (op_db, shipped in the wheel:
torch.testing._internal.common_methods_invocations) has for the operators
HCOps registers in a 2.x torch: its reference inputs (the sample inputs and
the extra ones an OpInfo defines; f32 and bf16, forward and the gradients of
every input that requires one) and its error inputs, with libhcops_torch2
loaded and enabled against the same process with it disabled (PyTorch's own
kernels).

The ops: the GEMMs (mm, addmm and its decomposed form, bmm, baddbmm,
addbmm, matmul, __rmatmul__, nn.functional.linear, einsum, tensordot);
softmax, log_softmax (and their with_dtype variants, which are f64 and must
be declined), _softmax_backward_data, nn.functional.layer_norm, gelu, silu,
scaled_dot_product_attention, add, mul, sum. Outputs and gradients are judged as
stock_compare.py says (a bound, and the f64 result where they differ). An
error input must raise the error stock raises (its type and OpInfo's
message pattern) with HCOps enabled. Over the
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
sys.path.insert(1, HERE)  # stock_compare

# op_db name -> the aten operators (HCOps' counters) its samples reach, and
# whether each of them must have computed calls ("all": forward and
# backward) or at least one ("any": a composite op, whose samples take
# whichever GEMM their shapes lead to).
# (inner's samples are vectors and scalars: dot products, no GEMM.)
GEMMS = ("mm", "addmm", "bmm", "baddbmm")
OPS = {"mm": (("mm",), "all"), "addmm": (("addmm",), "all"), "bmm": (("bmm",), "all"),
       "baddbmm": (("baddbmm",), "all")}
OPS.update({name: (GEMMS, "any") for name in ("addbmm", "matmul", "__rmatmul__", "nn.functional.linear", "einsum",
                                              "tensordot")})
OPS.update({
    "softmax": (("_softmax", "_softmax_backward_data"), "all"),
    "log_softmax": (("_log_softmax", "_log_softmax_backward_data"), "all"),
    "_softmax_backward_data": (("_softmax_backward_data",), "all"),
    "nn.functional.layer_norm": (("native_layer_norm", "native_layer_norm_backward"), "all"),
    "nn.functional.gelu": (("gelu", "gelu_backward"), "all"),
    "nn.functional.silu": (("silu", "silu_backward"), "all"),
    "nn.functional.scaled_dot_product_attention": (("_scaled_dot_product_flash_attention_for_cpu",
                                                    "_scaled_dot_product_flash_attention_for_cpu_backward"), "all"),
    # add and mul: HCOps takes only large operands (most samples are small:
    # declined, counted), and must have taken some.
    "add": (("add",), "any"), "mul": (("mul",), "any"),
    "sum": (("sum",), "any"),
})
VARIANTS = ("", "decomposed", "with_dtype")
# Variants whose every call HCOps declines, and why (its counters must show
# the declines: the samples did reach it).
DECLINED = {"softmax.with_dtype": "dtype=torch.float64: an f64 softmax", "log_softmax.with_dtype": "an f64 one",
            "sum": "its samples are all under the 32768 elements HCOps takes: they check the decline and the errors; "
                   "torch2/test_sum.py the sums HCOps computes"}


def main():
    import torch
    import hcops.torch as ht
    from torch.testing._internal.common_methods_invocations import op_db
    from torch.testing._internal.opinfo.core import SampleInput
    from stock_compare import Judge, f64_op, widened

    judge = Judge()
    check = judge.check
    sample_dtype = torch.float32
    seed_scale = 0.0  # the largest |gradient seed| of the last evaluation

    def leaves(sample):
        out = [sample.input] if isinstance(sample.input, torch.Tensor) else list(sample.input)
        out += [a for a in sample.args if isinstance(a, torch.Tensor)]
        out += [a for a in sample.kwargs.values() if isinstance(a, torch.Tensor)]
        return [t for t in out if t.requires_grad]

    def evaluate(op, sample, on):
        nonlocal seed_scale
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
                seed_scale = max([float(t.abs().max()) for t in seeds if t.numel()] + [0.0])
                gs = torch.autograd.grad(diff, ins, seeds, allow_unused=True)
                grads = [g for g in gs]
            return [o.detach().clone() for o in outs], grads

    for info in op_db:
        if info.name not in OPS or info.variant_test_name not in VARIANTS:
            continue
        label = info.name + (f".{info.variant_test_name}" if info.variant_test_name else "")
        counted, need = OPS[info.name]
        taken = {g: 0 for g in counted}   # calls HCOps computed, and left to PyTorch,
        fallen = {g: 0 for g in counted}  # in the runs with HCOps enabled only

        def evaluate_enabled(sample):
            before = {g: ht.call_counts(g) for g in counted}
            try:
                return evaluate(info.op, sample, True)
            finally:
                for g in counted:
                    now = ht.call_counts(g)
                    taken[g] += now[0] - before[g][0]
                    fallen[g] += now[1] - before[g][1]
        samples_run = 0
        for dt in (torch.float32, torch.bfloat16):
            if dt not in info.supported_dtypes("cpu"):
                continue
            grad = info.supports_autograd
            sample_dtype = dt
            torch.manual_seed(len(label) * 10 + (dt == torch.bfloat16))  # the same samples each run
            for i, sample in enumerate(info.reference_inputs("cpu", dt, requires_grad=grad)):
                samples_run += 1
                name = f"{label} {str(dt)[6:]} sample {i}"
                try:
                    got = evaluate_enabled(sample)
                except Exception as e:  # noqa: BLE001
                    try:
                        evaluate(info.op, sample, False)
                        check(False, name, f"raises only under HCOps: {str(e).splitlines()[0]}")
                    except Exception as e2:  # noqa: BLE001
                        same = type(e) is type(e2)
                        check(same, name + " error as stock", f"{e!r} vs {e2!r}")
                    continue
                ref = evaluate(info.op, sample, False)
                scale = seed_scale
                check(len(got[1]) == len(ref[1]), f"{name} gradients counted")
                exact = []  # the f64 result, computed when a comparison needs it

                def f64(kind, j):
                    if not exact:
                        wide = SampleInput(widened(sample.input), args=widened(tuple(sample.args)),
                                           kwargs=widened(dict(sample.kwargs)))
                        exact.append(evaluate(f64_op(info.name, info.op), wide, False))
                    return exact[0][0 if kind == "output" else 1][j]
                for kind, pairs in (("output", zip(got[0], ref[0])), ("gradient", zip(got[1], ref[1]))):
                    for j, (a, b) in enumerate(pairs):
                        judge.compare(f"{name} {kind} {j}", a, b, dt, lambda: f64(kind, j), kind == "gradient",
                                      scale)
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
        if label in DECLINED:
            check(not any(taken.values()) and all(fallen.values()),
                  f"{label}: HCOps declined every call ({DECLINED[label]})",
                  f"({samples_run} samples, computed {taken}, declined {fallen})")
        elif need == "all":
            check(all(taken.values()), f"{label}: HCOps computed calls of each of {counted}",
                  f"({samples_run} samples, computed {taken})")
        else:
            check(any(taken.values()), f"{label}: HCOps computed calls of {counted}",
                  f"({samples_run} samples, computed {taken})")
        print(f"   {label}: {samples_run} samples, {errors} error inputs, computed by HCOps "
              f"{sum(taken.values())}, left to PyTorch {sum(fallen.values())}", flush=True)
    return judge.summary()


if __name__ == "__main__":
    sys.exit(main())

"""libhcops_torch.so against PyTorch's own CPU kernels, in the same process:
each replaced operator (GeLU none/tanh, SiLU, Softmax, LogSoftmax, LayerNorm,
forward and backward through autograd, and the out= / in-place overloads) on
shapes 0, 1, odd, last dims off the vector width, and DiT's; f32 and bf16
take HCOps' kernels (LayerNorm's strided inputs copied contiguous, as
PyTorch's kernel does), f64, non-contiguous inputs and softmax over another dim
fall back to PyTorch (bitwise equal, and the fallback counted); NaN and Inf.
Run once per kernel family this CPU runs (HCOPS_ISA) under 1 and 2 threads
(DiT's shapes under 2 threads on the family chosen by default),
then the run-time switch (hcops.torch.enabled blocks per thread, overlapping
on two threads; set_enabled process-wide), HCOPS_OPS selection, a bad
HCOPS_OPS, HCOPS_VERBOSE=1/2 lines, and no
"Overriding a previously registered kernel" text on any child's stderr.

Accuracy bound: f32 |hcops - torch| <= 8 ulp of max(|torch|, floor) +
2 |torch - torch_f64|, where torch_f64 is PyTorch's result in f64 on the
same inputs (HCOps may be as far from the exact result as PyTorch itself)
and floor is 1/16 of the largest |torch| of the tensor (a value far below
the tensor's scale comes out of cancellation between terms of that scale,
in either implementation; softmax's dx: 1/16 of |y| (|dy| + sum |dy y|),
log_softmax's: of |dy| + exp(y) sum |dy|, LayerNorm's dx: of max rstd
|weight dy|: the terms the result is the difference of).
Outputs made of sums take the kernels' reduction allowance on top, as the
operator tests state it (tests/ops/ops_check.h): softmax, log_softmax and
LayerNorm rows of C columns 8 + ceil(C/16) + 8 ulp, LayerNorm's weight and
bias gradients over R rows 8 + R ulp. bf16: equal or within 1 bf16 ulp of max(|ref|, floor) of
ref = PyTorch's f32 result on the same bf16 inputs, rounded to bf16 (floor
as for f32; where that is itself more than an ulp from PyTorch's f64 result,
e.g. oneDNN's f32 GeLU flushing tiny values to 0, twice that distance more):
PyTorch 1.13's own bf16 kernels round intermediates (tanh-GeLU, SiLU's
backward, LayerNorm's backward from bf16 mean/rstd) and are off by more.
"""
import json
import math
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import kernel_families  # noqa: E402 - tests/kernel_families.py
import time_limits  # noqa: E402 - tests/time_limits.py
SRC_PYTHON = os.path.join(HERE, "..", "..", "python")
PYTHON = os.environ.get("PYTHON", "/usr/bin/python3")
LIB = os.environ.get("HCOPS_TORCH_LIB", "")
OVERRIDE_TEXT = "Overriding a previously registered kernel"
F32_ULPS = 8
FLOOR = 2.0 ** -4
SKIP = 77


# --------------------------------------------------------------------- child
def child_setup(threads):
    sys.path.insert(0, SRC_PYTHON)
    import torch
    torch.set_num_threads(threads)
    import hcops.torch as ht
    return torch, ht


class Checks:
    def __init__(self):
        self.passed = self.failed = 0

    def check(self, ok, name, detail=""):
        print(f"{'PASS' if ok else 'FAIL'}: {name}" + (f"  [{detail}]" if detail and not ok else ""), flush=True)
        if ok:
            self.passed += 1
        else:
            self.failed += 1


def compare(torch, got, ref, exact=None, ulps=None, floor=0.0):
    """(ok, detail): NaN where ref is NaN, Inf equal, finite values within the
    bound of the module's docstring; `exact` is PyTorch's result in f64 on
    the same inputs (f32 only)."""
    if got.dtype != ref.dtype or got.shape != ref.shape:
        return False, f"dtype/shape {got.dtype}{tuple(got.shape)} vs {ref.dtype}{tuple(ref.shape)}"
    if got.numel() == 0:
        return True, ""
    g, r = got.double(), ref.double()
    nan_r, nan_g = torch.isnan(r), torch.isnan(g)
    if exact is not None:
        # PyTorch 2.x's vectorised f32 GeLU gives NaN at +Inf where its f64
        # kernel (and 1.13, and the tanh form) give +Inf: where PyTorch's
        # result is NaN and its f64 one is not, HCOps may give the f64 value.
        e = exact.double()
        fixed = nan_r & ~torch.isnan(e) & (g == e)
        r = torch.where(fixed, e, r)
        nan_r = nan_r & ~fixed
        # And the other way: the aarch64 wheel's f32 GeLU backward (2.10)
        # gives +-Inf at +-Inf where its f64 kernel (and the x86-64 wheel's
        # f32 one) give NaN: there HCOps may give NaN, the f64 value.
        took_f64 = ~nan_r & torch.isnan(e) & nan_g
        r = torch.where(took_f64, e, r)
        nan_r = nan_r | took_f64
    if not torch.equal(nan_r, nan_g):
        return False, f"NaN positions differ ({int(nan_r.sum())} vs {int(nan_g.sum())})"
    inf_r = torch.isinf(r)
    if not torch.equal(torch.isinf(g), inf_r) or not torch.equal(g[inf_r], r[inf_r]):
        return False, "Inf differ"
    fin = ~(nan_r | inf_r)
    if not fin.any():
        return True, ""
    g, r = g[fin], r[fin]
    scale = r.abs().max().item()
    mag = torch.clamp(r.abs(), min=scale * FLOOR)
    if isinstance(floor, torch.Tensor):  # per element, from the operator's terms
        mag = torch.maximum(mag, floor.double()[fin])
    else:
        mag = torch.clamp(mag, min=floor)
    if ref.dtype == torch.float32:
        bound = (ulps or F32_ULPS) * 2.0 ** -23 * mag
        if exact is not None:
            bound = bound + 2 * (r - exact.double()[fin]).abs()
    elif ref.dtype == torch.bfloat16:
        # one ulp of bf16 at max(|ref|, floor): 2^(exponent - 7)
        bound = torch.pow(2.0, torch.floor(torch.log2(torch.clamp(mag, min=1e-38))) - 7)
        if exact is not None:  # where PyTorch's f32 kernel itself is off by more than an ulp
            off = (r - exact.double()[fin]).abs()
            bound = bound + torch.where(off > bound, 2 * off, torch.zeros_like(off))
    else:
        return bool(torch.equal(got, ref)), "not bitwise equal"
    err = (g - r).abs()
    bad = err > bound
    if not bad.any():
        return True, ""
    i = int(torch.nonzero(bad)[0])
    return False, (f"{int(bad.sum())} of {err.numel()} beyond the bound, e.g. hcops {g[i].item():.9g} "
                   f"torch {r[i].item():.9g} bound {bound[i].item():.3g}")


def counts(ht, op):
    return ht.call_counts(op)


def run_case(torch, ht, c, name, fn, inputs, ops, expect_fast, values=True, ulps=(), floors=()):
    """fn(*inputs) -> tensor or tuple, computed with HCOps and with PyTorch's
    kernels (set_enabled False) on copies of the same inputs; `ops` are the
    aten names whose calls must have been taken (expect_fast) or fallen back.
    values=False checks only that (bf16 autograd chains: rounding the saved
    forward output to bf16 moves the backward's result more than an ulp)."""
    def clone_all(ts):
        return [t.detach().clone().requires_grad_(t.requires_grad) if isinstance(t, torch.Tensor) else t for t in ts]

    ins_h, ins_r = clone_all(inputs), clone_all(inputs)
    before = {op: counts(ht, op) for op in ops}
    outs_h = fn(*ins_h)
    after = {op: counts(ht, op) for op in ops}
    with ht.enabled(False):
        # A bf16 operator HCOps computes is held to PyTorch's f32 result
        # rounded once, not to PyTorch's bf16 kernel (which Debian's arm64
        # 1.13 does not even have for GeLU: its oneDNN 2.6 declines, and
        # F.gelu raises "could not create a primitive descriptor iterator").
        if expect_fast and any(isinstance(t, torch.Tensor) and t.dtype == torch.bfloat16 for t in inputs):
            outs_r = fn(*[t.detach().float().requires_grad_(t.requires_grad) if isinstance(t, torch.Tensor) else t
                          for t in inputs])
            outs_r = [o.to(torch.bfloat16) if o is not None else None for o in
                      ([outs_r] if isinstance(outs_r, torch.Tensor) else outs_r)]
        else:
            outs_r = fn(*ins_r)
        # PyTorch's f64 result on the same (f32) inputs: how far its f32
        # result is from the exact one, which the f32 bound allows on top.
        outs_x = None
        if expect_fast and any(isinstance(t, torch.Tensor) and t.dtype in (torch.float32, torch.bfloat16)
                               for t in inputs):
            outs_x = fn(*[t.detach().double().requires_grad_(t.requires_grad) if isinstance(t, torch.Tensor) else t
                          for t in inputs])
    def as_list(o):
        return [o] if isinstance(o, torch.Tensor) else o
    outs_h, outs_r, outs_x = as_list(outs_h), as_list(outs_r), as_list(outs_x)
    for i, (a, b) in enumerate(zip(outs_h, outs_r) if values else []):
        if b is None:
            c.check(a is None, f"{name} output {i} undefined")
            continue
        if expect_fast:
            ok, detail = compare(torch, a, b, outs_x[i] if outs_x is not None else None,
                                 ulps[i] if i < len(ulps) else None, floors[i] if i < len(floors) else 0.0)
        else:
            ok = a.dtype == b.dtype and a.shape == b.shape and (
                torch.equal(a, b) or torch.equal(torch.isnan(a), torch.isnan(b)) and torch.equal(
                    torch.nan_to_num(a), torch.nan_to_num(b)))
            detail = "fallback not bitwise equal"
        c.check(ok, f"{name} output {i}", detail)
    for op in ops:
        taken = after[op][0] - before[op][0]
        fallen = after[op][1] - before[op][1]
        if expect_fast:
            c.check(taken > 0 and fallen == 0, f"{name}: {op} taken by HCOps", f"taken {taken}, fallen back {fallen}")
        else:
            c.check(taken == 0 and fallen > 0, f"{name}: {op} fell back to PyTorch",
                    f"taken {taken}, fallen back {fallen}")


def autograd_fn(torch, forward):
    """forward(x) and the input gradient of sum(forward(x) * w) (w fixed)."""
    def fn(x, w):
        y = forward(x)
        (g,) = torch.autograd.grad(y, x, w)
        return y.detach(), g
    return fn


def with_specials(torch, x):
    """x with NaN, +Inf, -Inf and large values in its first elements (when room)."""
    x = x.detach().clone()
    flat = x.view(-1)
    vals = [float("nan"), float("inf"), float("-inf"), 30.0, -30.0, 0.0, -0.0]
    n = min(len(vals), flat.numel())
    flat[:n] = torch.tensor(vals[:n], dtype=x.dtype)
    return x


ELTWISE_SHAPES = [(0,), (1,), (1, 1), (3, 37), (5, 7, 13), (7, 33), (4, 100), (3, 1023), (4, 64, 1152)]
ROW_SHAPES = [(0, 5), (1,), (1, 1), (3, 37), (5, 7, 13), (7, 33), (4, 100), (3, 1023), (2, 3), (4, 64, 1152)]
# DiT's: once, on the default family (each costs seconds on a shared machine).
DIT_ELTWISE = [(8, 256, 384), (8, 256, 1536), (2, 256, 4608)]
DIT_ROWS = [(8, 256, 384), (8, 256, 1152), (8, 6, 256, 256)]


def row_ulps(cols):
    """The f32 bound of an output made of sums over `cols` (see the docstring)."""
    return F32_ULPS + (cols + 15) // 16 + 8


def per_op_cases(torch, ht, c, F, dtype, randn, stock, eltwise, rows, layer_norm_grads):
    dn = str(dtype).split(".")[1]
    for name, f, ops in eltwise:
        a = "tanh" if name == "gelu_tanh" else "none"
        bwd = ((lambda dy, x: torch.ops.aten.silu_backward(dy, x)) if name == "silu" else
               (lambda dy, x, a=a: torch.ops.aten.gelu_backward(dy, x, approximate=a)))
        for shape in ELTWISE_SHAPES + [(5, 37)]:
            x = randn(shape, dtype)
            if shape == (5, 37):
                x, shape = with_specials(torch, x), "NaN/Inf"
            fast = x.numel() > 0
            run_case(torch, ht, c, f"{name} {dn} {shape}", f, [x], ops[:1] if fast else [], fast)
            run_case(torch, ht, c, f"{name} backward {dn} {shape}", bwd, [randn(x.shape, dtype, 1.0), x],
                     ops[1:] if fast else [], fast)
        run_case(torch, ht, c, f"{name} {dn} autograd", autograd_fn(torch, f),
                 [randn((4, 100), dtype).requires_grad_(), randn((4, 100), dtype, 1.0)], ops, True, values=False)
    for name, f, ops in rows[:2]:
        back = torch.ops.aten._softmax_backward_data if name == "softmax" else torch.ops.aten._log_softmax_backward_data
        bwd = lambda dy, y, back=back: back(dy, y, -1, y.dtype)
        for shape in ROW_SHAPES + [(5, 37)]:
            x = randn(shape, dtype)
            if shape == (5, 37):
                x, shape = with_specials(torch, x), "NaN/Inf"
            fast = x.numel() > 0
            k = (row_ulps(x.shape[-1]),) if x.dim() else ()
            run_case(torch, ht, c, f"{name} {dn} {shape}", f, [x], ops[:1] if fast else [], fast, ulps=k)
            dy, y = randn(x.shape, dtype, 1.0), stock(f, x)
            # dx's terms: y dy and y sum(dy y) (softmax), dy and exp(y) sum(dy) (log).
            if name == "softmax":
                terms = y.float().abs() * (dy.float().abs() + (dy.float() * y.float()).abs().sum(-1, keepdim=True))
            else:
                terms = dy.float().abs() + y.float().exp() * dy.float().abs().sum(-1, keepdim=True)
            run_case(torch, ht, c, f"{name} backward {dn} {shape}", bwd, [dy, y], ops[1:] if fast else [], fast,
                     ulps=k, floors=(terms * FLOOR,))
        run_case(torch, ht, c, f"{name} {dn} autograd", autograd_fn(torch, f),
                 [randn((4, 100), dtype).requires_grad_(), randn((4, 100), dtype, 1.0)], ops, True, values=False)
    ln_ops = ["native_layer_norm", "native_layer_norm_backward"]
    for shape, normalized, affine in ([(s, s[-1:], True) for s in ROW_SHAPES] + [((5, 37), (37,), True)] +
                                      [((6, 5, 24), (5, 24), False), ((9, 24), (24,), "weight")]):
        x = randn(shape, dtype)
        label = shape
        if shape == (5, 37):
            x, label = with_specials(torch, x), "NaN/Inf"
        label = f"{label}" + ("" if affine is True else " no affine" if not affine else " weight only")
        wgt = randn(normalized, dtype, 1.0) if affine else None
        bias = randn(normalized, dtype, 1.0) if affine is True else None
        mask = [True, affine is not False, affine is True]
        fast = x.numel() > 0
        fwd = lambda x, wgt, bias, n=list(normalized): torch.native_layer_norm(x, n, wgt, bias, 1e-6)
        k = row_ulps(math.prod(normalized))
        # An f32 row's mean is a sum over the row: its rounding is relative
        # to the values summed, not to a mean that cancels to near 0
        # ((6, 5, 24)'s 0.0103 from 120 values of about 1 was 4.7e-8 from
        # PyTorch's, at an 8-ulp bound of 4.6e-8 around it): each row's mean
        # of |x| (finite values) is its floor.
        mean_floor = 0.0
        if dtype == torch.float32 and x.numel():
            dims = tuple(range(x.dim() - len(normalized), x.dim()))
            mean_floor = torch.where(torch.isfinite(x), x.double().abs(), torch.zeros((), dtype=torch.float64)) \
                .mean(dim=dims, keepdim=True)
        run_case(torch, ht, c, f"layer_norm {dn} {label}", fwd, [x, wgt, bias], ln_ops[:1] if fast else [], fast,
                 ulps=(k, k, k), floors=(0.0, mean_floor, 0.0))
        _, mean, rstd = stock(fwd, x, wgt, bias)
        bwd = lambda dy, x, mean, rstd, wgt, bias, n=list(normalized), mask=mask: \
            torch.ops.aten.native_layer_norm_backward(dy, x, n, mean, rstd, wgt, bias, mask)
        rows = x.numel() // max(1, math.prod(normalized))
        dy = randn(shape, dtype, 1.0)
        # dx's terms are rstd * weight * dy: its scale, also where dx is ~0.
        dx_floor = 0.0
        if fast:
            gdy = dy.float() * (wgt.float() if wgt is not None else 1.0)
            dx_floor = float(rstd.float().nan_to_num(0, 0, 0).max() * gdy.abs().max()) * FLOOR
        run_case(torch, ht, c, f"layer_norm backward {dn} {label}", bwd, [dy, x, mean, rstd, wgt, bias],
                 ln_ops[1:] if fast else [], fast, ulps=(k, F32_ULPS + rows, F32_ULPS + rows), floors=(dx_floor,))
    run_case(torch, ht, c, f"layer_norm {dn} autograd", layer_norm_grads,
             [randn((4, 100), dtype).requires_grad_(), randn((4, 100), dtype, 1.0),
              randn((100,), dtype, 1.0).requires_grad_(), randn((100,), dtype, 1.0).requires_grad_()], ln_ops, True, values=False)



def child_ops(threads, full):
    global ELTWISE_SHAPES, ROW_SHAPES
    if full:
        ELTWISE_SHAPES, ROW_SHAPES = ELTWISE_SHAPES + DIT_ELTWISE, ROW_SHAPES + DIT_ROWS
    torch, ht = child_setup(threads)
    F = torch.nn.functional
    c = Checks()
    gen = torch.Generator().manual_seed(1234 + threads)

    def randn(shape, dtype, scale=3.0):
        return (torch.randn(shape, generator=gen) * scale).to(dtype)

    eltwise = [
        ("gelu", lambda x: F.gelu(x), ["gelu", "gelu_backward"]),
        ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), ["gelu", "gelu_backward"]),
        ("silu", lambda x: F.silu(x), ["silu", "silu_backward"]),
    ]
    rows = [
        ("softmax", lambda x: torch.softmax(x, -1), ["_softmax", "_softmax_backward_data"]),
        ("log_softmax", lambda x: torch.log_softmax(x, dim=x.dim() - 1), ["_log_softmax", "_log_softmax_backward_data"]),
        ("layer_norm", None, ["native_layer_norm", "native_layer_norm_backward"]),
    ]
    def layer_norm_grads(x, w, wgt, bias):
        y = F.layer_norm(x, (x.shape[-1],), wgt, bias, 1e-6)
        gx, gw, gb = torch.autograd.grad(y, (x, wgt, bias), w)
        return y.detach(), gx, gw, gb

    # Each operator, forward and backward, on the same inputs as PyTorch's
    # kernels (see the docstring); autograd once per operator, to see that it
    # reaches both.
    stock = lambda fn, *a: (ht.set_enabled(False), fn(*a), ht.set_enabled(True))[1]
    for dtype in (torch.float32, torch.bfloat16):
        per_op_cases(torch, ht, c, F, dtype, randn, stock, eltwise, rows, layer_norm_grads)

    for dtype in (torch.float32, torch.bfloat16):
        dn = str(dtype).split(".")[1]
    for dtype in (torch.float32, torch.bfloat16):
        dn = str(dtype).split(".")[1]
        # out= and in-place overloads.
        x = randn((4, 100), dtype)
        run_case(torch, ht, c, f"gelu.out {dn}", lambda x: torch.ops.aten.gelu.out(x, out=torch.empty_like(x)), [x],
                 ["gelu"], True)
        run_case(torch, ht, c, f"silu.out {dn}", lambda x: torch.ops.aten.silu.out(x, out=torch.empty_like(x)), [x], ["silu"], True)
        run_case(torch, ht, c, f"silu_ {dn}", lambda x: F.silu(x.clone(), inplace=True), [x], ["silu"], True)
        run_case(torch, ht, c, f"gelu_ {dn}", lambda x: torch.ops.aten.gelu_(x.clone(), approximate="tanh"), [x],
                 ["gelu"], True)
        run_case(torch, ht, c, f"_softmax.out {dn}",
                 lambda x: torch.ops.aten._softmax.out(x, -1, False, out=torch.empty_like(x)), [x], ["_softmax"], True)
        run_case(torch, ht, c, f"_log_softmax.out {dn}",
                 lambda x: torch.ops.aten._log_softmax.out(x, 1, False, out=torch.empty_like(x)), [x],
                 ["_log_softmax"], True)
        dy = randn((4, 100), dtype)
        run_case(torch, ht, c, f"gelu_backward.grad_input {dn}",
                 lambda dy, x: torch.ops.aten.gelu_backward.grad_input(dy, x, grad_input=torch.empty_like(x)),
                 [dy, x], ["gelu_backward"], True)
        run_case(torch, ht, c, f"silu_backward.grad_input {dn}",
                 lambda dy, x: torch.ops.aten.silu_backward.grad_input(dy, x, grad_input=torch.empty_like(x)),
                 [dy, x], ["silu_backward"], True)
        y = torch.softmax(x.float(), -1).to(dtype)
        run_case(torch, ht, c, f"_softmax_backward_data.out {dn}",
                 lambda dy, y: torch.ops.aten._softmax_backward_data.out(dy, y, -1, y.dtype,
                                                                         grad_input=torch.empty_like(y)),
                 [dy, y], ["_softmax_backward_data"], True)

    # Fallbacks: PyTorch's own kernel, bitwise, and counted as such.
    for name, f, ops in eltwise + rows[:2]:
        x = randn((6, 40), torch.float64).requires_grad_()
        run_case(torch, ht, c, f"{name} f64 falls back", autograd_fn(torch, f), [x, randn((6, 40), torch.float64)],
                 ops, False)
        # A transposed input: the forward falls back (its output, contiguous,
        # may then take the fast backward of softmax; not so GeLU/SiLU's).
        x = randn((40, 6), torch.float32).t()
        run_case(torch, ht, c, f"{name} non-contiguous falls back", f, [x], ops[:1], False)
    a = randn((40, 6), torch.float32).t()
    b = randn((6, 40), torch.float32)
    y = torch.softmax(b, -1)
    for name, fn in [("gelu_backward", lambda a, b: torch.ops.aten.gelu_backward(a, b, approximate="tanh")),
                     ("silu_backward", lambda a, b: torch.ops.aten.silu_backward(a, b)),
                     ("_softmax_backward_data", lambda a, y: torch.ops.aten._softmax_backward_data(a, y, 1, y.dtype)),
                     ("_log_softmax_backward_data",
                      lambda a, y: torch.ops.aten._log_softmax_backward_data(a, y, 1, y.dtype))]:
        run_case(torch, ht, c, f"{name} of a non-contiguous gradient falls back", fn,
                 [a, y if "softmax" in name else b], [name], False)
    for name, f, ops in [("softmax dim 0", lambda x: torch.softmax(x, 0), ["_softmax", "_softmax_backward_data"]),
                         ("log_softmax dim 1 of 3", lambda x: torch.log_softmax(x, 1),
                          ["_log_softmax", "_log_softmax_backward_data"])]:
        x = randn((4, 6, 5), torch.float32).requires_grad_()
        run_case(torch, ht, c, f"{name} falls back", autograd_fn(torch, f), [x, randn((4, 6, 5), torch.float32)],
                 ops, False)
    x = randn((6, 40), torch.float64).requires_grad_()
    run_case(torch, ht, c, "layer_norm f64 falls back", autograd_fn(torch, lambda x: F.layer_norm(x, (40,))),
             [x, randn((6, 40), torch.float64)], ["native_layer_norm", "native_layer_norm_backward"], False)
    # A transposed input is taken: 2-D, and batches of matrices with their
    # last two dimensions swapped (DiT's residual stream), read in place in
    # bands of 32 rows transposed by blocks of 16 or 8 (odd sizes across
    # them); a permutation that is neither is copied contiguous first, as
    # PyTorch's own kernel does, and so is a transposed gradient.
    for dt in (torch.float32, torch.bfloat16):
        for label, make in [("(40, 6).t()", lambda: randn((40, 6), dt).t()),
                            ("(3, 45, 37).transpose(1, 2)", lambda: randn((3, 45, 37), dt).transpose(1, 2)),
                            ("(2, 3, 64, 33).transpose(2, 3)", lambda: randn((2, 3, 64, 33), dt).transpose(2, 3)),
                            # units of 32 rows and backward blocks that start inside a batch
                            ("(2, 1000, 100).transpose(1, 2)", lambda: randn((2, 1000, 100), dt).transpose(1, 2)),
                            ("(33, 5, 40).permute(1, 0, 2)", lambda: randn((33, 5, 40), dt).permute(1, 0, 2))]:
            x = make().requires_grad_()
            w = make()
            n = x.shape[-1]
            run_case(torch, ht, c, f"layer_norm non-contiguous {label} {dt} copied and taken",
                     autograd_fn(torch, lambda x, n=n: F.layer_norm(x, (n,))), [x, w],
                     ["native_layer_norm", "native_layer_norm_backward"], True, values=dt == torch.float32,
                     ulps=(None, row_ulps(n)))
            # Read in place or copied first: the same bits, forward and backward
            # (with weight and bias), and a transposed gradient taken too.
            xs = make()
            wb = [randn((n,), dt), randn((n,), dt)]
            dy = make().transpose(-1, -2).contiguous().transpose(-1, -2)
            results = []
            for inp in (xs, xs.contiguous()):
                xi = inp.detach().clone().requires_grad_()
                ps = [p.detach().clone().requires_grad_() for p in wb]
                y = F.layer_norm(xi, (n,), ps[0], ps[1], 1e-6)
                y.backward(dy)
                results.append([y, xi.grad, ps[0].grad, ps[1].grad])
            c.check(all(torch.equal(a, b) for a, b in zip(*results)),
                    f"layer_norm {label} {dt}: the same bits in place as on a contiguous copy")
    x = randn((6, 40), torch.float32)
    run_case(torch, ht, c, "gelu broadcast backward falls back",
             lambda x: torch.ops.aten.gelu_backward(torch.ones(40), x, approximate="tanh"), [x], ["gelu_backward"], False)
    # PyTorch's errors stay PyTorch's: a bad approximate and bf16 input with f32 weight.
    for what, fn in [("gelu approximate='bad'", lambda: F.gelu(torch.ones(3), approximate="bad")),
                     ("layer_norm bf16 input, f32 weight",
                      lambda: F.layer_norm(torch.ones(2, 4, dtype=torch.bfloat16), (4,), torch.ones(4)))]:
        errs = []
        for on in (True, False):
            with ht.enabled(on):
                try:
                    fn()
                    errs.append(None)
                except RuntimeError as e:
                    errs.append(str(e).splitlines()[0])
        # PyTorch 2.x accepts bf16 input with f32 weight (HCOps leaves it to
        # PyTorch's kernel): then both run and neither raises.
        allowed = what.startswith("layer_norm") and int(torch.__version__.split(".")[0]) >= 2
        c.check(errs[0] == errs[1] and (errs[0] is not None or allowed), f"{what}: PyTorch's own error", repr(errs))
    print(json.dumps({"passed": c.passed, "failed": c.failed}), flush=True)


def child_probe():
    """A few calls for the selection and verbose checks: prints the loaded
    overloads, then runs a fast gelu (f32 4x8) and a fallback one (f64)."""
    torch, ht = child_setup(1)
    torch.nn.functional.gelu(torch.ones(4, 8))
    torch.nn.functional.gelu(torch.ones(3, dtype=torch.float64))
    torch.softmax(torch.ones(2, 5), -1)
    # LayerNorm on a swapped input (read in place) and on a permuted one (copied).
    for x in (torch.randn(2, 6, 40).transpose(1, 2), torch.randn(40, 2, 6).permute(1, 0, 2)):
        x.requires_grad_()
        torch.nn.functional.layer_norm(x, (6,)).sum().backward()
    print(json.dumps({"loaded": ht.loaded_ops(), "gelu": ht.call_counts("gelu")}), flush=True)


def child_switch():
    """hcops.torch.enabled(on) blocks on two threads that overlap in time, the
    process-wide set_enabled beside them, nesting, and backward() inside a
    block: each thread's calls follow its own block, and the block that ends
    last does not put back the other thread's state (as a saved and restored
    process-wide switch did: HCOps then stayed off for everyone)."""
    import threading
    torch, ht = child_setup(1)
    c = Checks()
    x = torch.ones(4, 8)

    def taken(op="gelu"):  # calls HCOps computed so far
        return ht.call_counts(op)[0]

    def runs_hcops():  # one f32 gelu: computed by HCOps?
        before = taken()
        torch.nn.functional.gelu(x)
        return taken() == before + 1

    step = [threading.Event() for _ in range(3)]
    seen = {}

    def off_thread():  # A: off block opens first, ends first
        with ht.enabled(False):
            step[0].set()
            step[1].wait(60)
            seen["A"] = (runs_hcops(), ht.is_enabled())
        step[2].set()

    def on_thread():  # B: on block opens inside A's, ends after it
        step[0].wait(60)
        with ht.enabled(True):
            step[1].set()
            step[2].wait(60)
            seen["B"] = (runs_hcops(), ht.is_enabled())
        seen["B after"] = (runs_hcops(), ht.is_enabled())

    threads = [threading.Thread(target=off_thread), threading.Thread(target=on_thread)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    c.check(seen.get("A") == (False, False), "thread A inside enabled(False): PyTorch's kernel", seen)
    c.check(seen.get("B") == (True, True), "thread B inside enabled(True), after A's block ended: HCOps", seen)
    c.check(seen.get("B after") == (True, True), "thread B after its block: the process-wide state (on)", seen)
    c.check(runs_hcops() and ht.is_enabled(), "main thread after both blocks: HCOps")

    # The process-wide switch off: threads without a block follow it, a
    # thread inside an enabled(True) block keeps its own state.
    ht.set_enabled(False)
    try:
        c.check(not runs_hcops() and not ht.is_enabled(), "set_enabled(False): PyTorch's kernel on the main thread")
        with ht.enabled(True):
            c.check(runs_hcops(), "set_enabled(False), then enabled(True) on this thread: HCOps")
            with ht.enabled(False):
                c.check(not runs_hcops(), "nested enabled(False) inside enabled(True): PyTorch's kernel")
            c.check(runs_hcops(), "after the nested block: the outer block's state (HCOps)")
        c.check(not runs_hcops(), "after the blocks: the process-wide state (off)")
        other = []
        t = threading.Thread(target=lambda: other.append(runs_hcops()))
        t.start()
        t.join(60)
        c.check(other == [False], "set_enabled(False): PyTorch's kernel on another thread", other)
    finally:
        ht.set_enabled(True)

    # backward() runs on the calling thread: inside the block, gelu_backward is
    # PyTorch's too. (A contiguous dY: sum()'s expanded one is PyTorch's anyway.)
    xg = torch.randn(4, 8, requires_grad=True)

    def forward_backward():
        y = torch.nn.functional.gelu(xg)
        y.backward(torch.ones_like(y))

    before = (taken(), taken("gelu_backward"))
    with ht.enabled(False):
        forward_backward()
    c.check((taken(), taken("gelu_backward")) == before, "enabled(False): forward and backward PyTorch's",
            (before, taken(), taken("gelu_backward")))
    forward_backward()
    c.check((taken(), taken("gelu_backward")) == (before[0] + 1, before[1] + 1),
            "after the block: forward and backward HCOps'", (before, taken(), taken("gelu_backward")))
    try:
        torch.ops.hcops.set_thread_enabled(2)
        c.check(False, "set_thread_enabled(2) raises")
    except RuntimeError as e:
        c.check("is not -1 (none), 0 or 1" in str(e), "set_thread_enabled(2) raises, saying why", str(e)[:200])
    print(json.dumps({"passed": c.passed, "failed": c.failed}), flush=True)


# -------------------------------------------------------------------- parent
def run_child(args, env_extra):
    env = dict(os.environ)
    for k in ("HCOPS_OPS", "HCOPS_VERBOSE", "HCOPS_ISA"):
        env.pop(k, None)
    env.update(env_extra)
    p = subprocess.run([PYTHON, os.path.abspath(__file__)] + args, env=env, capture_output=True, text=True,
                       timeout=time_limits.limit(600))
    return p


def last_json(text):
    for line in reversed(text.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return None


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child-ops":
        return child_ops(int(sys.argv[2]), sys.argv[3:] == ["full"])
    if len(sys.argv) > 1 and sys.argv[1] == "--child-probe":
        return child_probe()
    if len(sys.argv) > 1 and sys.argv[1] == "--child-switch":
        return child_switch()
    if not LIB or not os.path.isfile(LIB):
        print(f"SKIP: libhcops_torch.so not built (HCOPS_TORCH_LIB={LIB!r}): configured --without-torch?")
        return SKIP
    passed = failed = 0

    def check(ok, name, detail=""):
        nonlocal passed, failed
        print(f"{'PASS' if ok else 'FAIL'}: {name}" + (f"  [{detail}]" if detail and not ok else ""), flush=True)
        passed, failed = passed + bool(ok), failed + (not ok)

    def no_override_text(p, what):
        check(OVERRIDE_TEXT not in p.stderr, f"{what}: no '{OVERRIDE_TEXT}' on stderr", p.stderr[-400:])

    info = os.path.join(os.environ.get("HCOPS_TEST_BUILDDIR", "."), "..", "tools", "hcops-info")
    families = kernel_families.families_here(info)
    check(bool(families), "hcops-info --families lists kernel families")
    for fam in kernel_families.ops_families():
        if fam not in families:
            print(f"SKIP: HCOPS_ISA={fam}: this CPU does not run it")
    op_families = [f for f in families if f in kernel_families.ops_families()]
    for i, fam in enumerate(families):
        # Which family the operators run on: the verbose info line says. A
        # family without operator kernels (amx, GEMM only) passes them to the
        # next one, whose run below covers them.
        want = next((f for f in families[i:] if f in op_families), None)
        p = run_child(["--child-probe"], {"HCOPS_ISA": fam, "HCOPS_VERBOSE": "1"})
        check(p.returncode == 0 and f"hcops_verbose,info,operators,isa={want}" in p.stderr,
              f"HCOPS_ISA={fam}: operators run on {want}", p.stderr[-400:])
        if fam != want:
            print(f"== HCOPS_ISA={fam}: no operator kernels, operators on {want} (tested under HCOPS_ISA={want})")
            continue
        for threads in (2, 1):
            full = fam == op_families[0] and threads == 2
            print(f"== HCOPS_ISA={fam}, {threads} thread(s){', with DiT shapes' if full else ''}", flush=True)
            p = run_child(["--child-ops", str(threads)] + (["full"] if full else []), {"HCOPS_ISA": fam})
            sys.stdout.write("".join(l + "\n" for l in p.stdout.splitlines() if l.startswith("FAIL")))
            res = last_json(p.stdout)
            check(p.returncode == 0 and res is not None and res["failed"] == 0,
                  f"HCOPS_ISA={fam} threads={threads}: operators against PyTorch",
                  (f"{res['failed']} of {res['passed'] + res['failed']} checks failed" if res else p.stderr[-800:]))
            if res:
                print(f"   ({res['passed']} checks passed)")
            no_override_text(p, f"HCOPS_ISA={fam} threads={threads}")

    # HCOPS_OPS: a selection, case-insensitive; none; a bad value (warns once, means all).
    p = run_child(["--child-probe"], {})
    res = last_json(p.stdout)
    all_ops = set(res["loaded"]) if res else set()
    expected = {"gelu", "gelu.out", "gelu_", "gelu_backward", "gelu_backward.grad_input", "silu", "silu.out", "silu_",
                "silu_backward", "silu_backward.grad_input", "_softmax", "_softmax.out", "_softmax_backward_data",
                "_softmax_backward_data.out", "_log_softmax", "_log_softmax.out", "_log_softmax_backward_data",
                "_log_softmax_backward_data.out", "native_layer_norm", "native_layer_norm_backward"}
    check(expected <= all_ops, "HCOPS_OPS unset: every operator replaced", sorted(expected - all_ops))
    check(p.stderr.strip() == "", "HCOPS_OPS unset: nothing on stderr", p.stderr[-400:])
    p = run_child(["--child-probe"], {"HCOPS_OPS": " GeLU, softmax "})
    res = last_json(p.stdout)
    got = set(res["loaded"]) if res else None
    check(got == {n for n in expected if n.startswith("gelu") or n.startswith("_softmax")},
          "HCOPS_OPS=' GeLU, softmax ': gelu and softmax only", sorted(got or []))
    check(p.stderr.strip() == "", "HCOPS_OPS=' GeLU, softmax ': no warning", p.stderr[-400:])
    p = run_child(["--child-probe"], {"HCOPS_OPS": "none"})
    res = last_json(p.stdout)
    check(res is not None and res["loaded"] == [] and res["gelu"] == [0, 0],
          "HCOPS_OPS=none: nothing replaced, gelu never reaches HCOps", repr(res))
    p = run_child(["--child-probe"], {"HCOPS_OPS": "gelu,tanh"})
    res = last_json(p.stdout)
    warnings = [l for l in p.stderr.splitlines() if l.startswith("hcops: warning: HCOPS_OPS=")]
    check(len(warnings) == 1 and '"tanh"' in warnings[0], "HCOPS_OPS=gelu,tanh: one warning naming tanh",
          p.stderr[-400:])
    check(res is not None and expected <= set(res["loaded"]), "HCOPS_OPS=gelu,tanh: means all")
    no_override_text(p, "HCOPS_OPS=gelu,tanh")

    # hcops.torch.enabled(on) is per thread; set_enabled process-wide.
    p = run_child(["--child-switch"], {})
    sys.stdout.write("".join(l + "\n" for l in p.stdout.splitlines() if l.startswith("FAIL")))
    res = last_json(p.stdout)
    check(p.returncode == 0 and res is not None and res["failed"] == 0,
          "enabled(on) blocks per thread, set_enabled process-wide",
          (f"{res['failed']} of {res['passed'] + res['failed']} checks failed" if res else p.stderr[-800:]))

    # HCOPS_VERBOSE=1: a line per call taken, one per fallback; =2 the summary.
    p = run_child(["--child-probe"], {"HCOPS_VERBOSE": "1"})
    lines = p.stderr.splitlines()
    check("hcops_verbose,legend,op,dtype,shape,threads,ms,impl,details" in lines, "HCOPS_VERBOSE=1: legend line",
          p.stderr[-400:])
    execs = [l.split(",") for l in lines if l.startswith("hcops_verbose,exec,gelu,")]
    check(len(execs) == 1 and execs[0][3:6] == ["f32", "4x8", "1"] and execs[0][7].startswith("hcops:")
          and execs[0][8] == "approximate=none" and float(execs[0][6]) >= 0,
          "HCOPS_VERBOSE=1: one exec line for the f32 gelu (op, dtype, shape, threads, ms, impl, details)", execs)
    check("hcops_verbose,fallback,gelu,f64,3,dtype" in lines, "HCOPS_VERBOSE=1: the f64 gelu's fallback line",
          p.stderr[-400:])
    check(any(l.startswith("hcops_verbose,exec,_softmax,f32,2x5,1,") for l in lines),
          "HCOPS_VERBOSE=1: the softmax line")
    check(not any(l.startswith("hcops_verbose,summary") for l in lines), "HCOPS_VERBOSE=1: no summary")
    ln = [l for l in lines if l.startswith(("hcops_verbose,exec,native_layer_norm,f32,2x40x6,",
                                            "hcops_verbose,exec,native_layer_norm_backward,f32,2x40x6,"))]
    check(len(ln) == 4 and [l.endswith(",input=swapped") for l in ln] == [True, True, False, False],
          "HCOPS_VERBOSE=1: LayerNorm reads the swapped input in place (input=swapped), copies the permuted one", ln)
    p = run_child(["--child-probe"], {"HCOPS_VERBOSE": "2"})
    summary = [l.split(",") for l in p.stderr.splitlines() if l.startswith("hcops_verbose,summary,gelu,")]
    check(len(summary) == 1 and summary[0][3] == "1" and summary[0][5] == "1" and summary[0][6] == "dtype:1",
          "HCOPS_VERBOSE=2: gelu summary: 1 call, 1 fallback (dtype)", summary)
    check(any(l.startswith("hcops_verbose,summary,_softmax,1,") for l in p.stderr.splitlines()),
          "HCOPS_VERBOSE=2: softmax summary")
    no_override_text(p, "HCOPS_VERBOSE=2")

    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

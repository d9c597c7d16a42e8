"""HCOps' results against stock PyTorch's in one process, as the OpInfo and
ModuleInfo tests (test_opinfo.py, test_modules.py) judge them.

Two results agree when they have the same dtype and shape, NaN and Inf in
the same places, and finite values within the bound: f32 1e-5 relative to
the largest |value| of stock's result plus 1e-5 of the elementwise magnitude
(the GEMMs' 16 k eps |A||B| with room for their different summation
orders), bf16 2^-6. Where they do not, the same computation in f64 on the
same values decides (PyTorch's kernels, GeLU's replaced by an accurate
form: accurate_gelu): the difference is listed, not failed, when HCOps'
result has stock's dtype, f64's NaN and infinities, and each element is
within the bound of the f64 value (for a gradient at least f32's eps times
the gradient seeds' magnitude, where a gradient that cancels to rounding
noise ends up: LayerNorm over rows of two) or no further from it than
stock's element. For a module composed of several operators in bf16
(test_modules' COMPOSED), each side rounds its intermediate results to bf16
at other elements, so either may be the nearer one at a given element: there
HCOps' largest error from f64 must be no larger than stock's largest.
"""
import contextlib
import math

import torch
from torch.utils._pytree import tree_map


def widened(x):
    """x with every floating-point tensor in f64 (the same values, requires_grad
    kept), through lists, tuples and dicts."""
    def up(t):
        if isinstance(t, torch.Tensor) and t.is_floating_point():
            return t.detach().double().requires_grad_(t.requires_grad)
        return t
    return tree_map(up, x)


def accurate_gelu(x, approximate="none"):
    """GeLU in f64 without the cancellation of 1 + erf(x / sqrt 2) (or of
    1 + tanh) far below 0, where PyTorch's own f64 kernel returns 0 from x =
    -8.3 on (gelu(-9) = -1.0e-18): x Phi(x) as 0.5 x erfc(-x / sqrt 2), and
    the tanh form as x sigmoid(2 u)."""
    if approximate == "tanh":
        u = math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)
        return x * torch.sigmoid(2 * u)
    return 0.5 * x * torch.special.erfc(-x / math.sqrt(2))


@contextlib.contextmanager
def accurate_f64():
    """PyTorch's functions, with those whose f64 kernels are not accurate
    enough to judge by (GeLU's tail) replaced, for the f64 result."""
    saved = torch.nn.functional.gelu
    torch.nn.functional.gelu = accurate_gelu
    try:
        yield
    finally:
        torch.nn.functional.gelu = saved


def f64_op(name, op):
    """The op to compute an OpInfo's f64 result with."""
    return accurate_gelu if name == "nn.functional.gelu" else op


def close(a, b, dt, f32_rel=1e-5):
    """(whether HCOps' a agrees with stock's b, why not)."""
    if a is None or b is None:
        return a is None and b is None, "present on one side only"
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
    rel = f32_rel if dt == torch.float32 else 2.0 ** -6
    tol = rel * (y.abs().max() + y.abs()) + 1e-30
    err = (x - y).abs()
    return bool((err <= tol).all()), f"max err {err.max().item():.3g} (scale {y.abs().max().item():.3g})"


class Judge:
    """Counts checks, prints failures, and keeps the explained differences."""

    def __init__(self):
        self.passed = self.failed = 0
        self.explained = []

    def check(self, ok, name, detail=""):
        if not ok:
            print(f"FAIL: {name} {detail}", flush=True)
        self.passed, self.failed = self.passed + bool(ok), self.failed + (not ok)

    def compare(self, name, a, b, dt, exact, gradient, seed_scale=0.0, f32_rel=1e-5, composed=False):
        """HCOps' a against stock's b; exact() gives the f64 result, asked only
        when they disagree (None: no f64 result to judge by). f32_rel: the f32
        bound, wider for a composition of operators (composed: a module of
        several operators, judged in bf16 by the largest errors).

        Where they disagree, HCOps' result is accepted only if it has stock's
        dtype and shape, NaN where f64 has NaN and f64's infinities, and each
        finite element is within the bound of the f64 value (close()'s bound,
        taken around the f64 result; for a gradient at least f32's eps times
        the seeds' magnitude: a gradient that cancels to rounding noise) or
        no further from it than stock's element."""
        ok, why = close(a, b, dt, f32_rel)
        if not ok and a is not None and b is not None and a.dtype == b.dtype and a.shape == b.shape and a.numel():
            r = exact()
            if r is not None and r.shape == a.shape:
                x, y = a.double(), b.double()
                nan, inf = torch.isnan(r), torch.isinf(r)
                fin = torch.isfinite(r)
                if torch.equal(torch.isnan(x), nan) and torch.equal(x[inf], r[inf]) and torch.isfinite(x[fin]).all():
                    mine, stock, ref = (x[fin] - r[fin]).abs(), (y[fin] - r[fin]).abs(), r[fin]
                    rel = f32_rel if dt == torch.float32 else 2.0 ** -6
                    bound = rel * (ref.abs().max() + ref.abs()) if ref.numel() else ref
                    if gradient:
                        bound = torch.clamp(bound, min=torch.finfo(torch.float32).eps * seed_scale)
                    accepted = (mine <= torch.maximum(stock, bound)) if ref.numel() else torch.ones(0, dtype=torch.bool)
                    worst_mine = mine.max().item() if ref.numel() else 0.0
                    worst_stock = stock.max().item() if ref.numel() else 0.0
                    if bool(accepted.all()):
                        how = "HCOps within the bound of f64" if bool((mine <= bound).all()) else \
                            "HCOps no further from f64 than stock, element by element"
                        self.explained.append(f"{name}: {how}: {why}; from f64: HCOps {worst_mine:.3g}, "
                                              f"stock {worst_stock:.3g}")
                        return
                    if composed and dt == torch.bfloat16 and worst_mine <= worst_stock:
                        self.explained.append(f"{name}: HCOps' largest error from f64 no larger than stock's "
                                              f"(a bf16 composition): {why}; from f64: HCOps {worst_mine:.3g}, "
                                              f"stock {worst_stock:.3g}")
                        return
                    why += f"; from f64: HCOps {worst_mine:.3g}, stock {worst_stock:.3g}"
        self.check(ok, name, why)

    def summary(self):
        for line in self.explained:
            print(f"differs from stock: {line}")
        print(f"{len(self.explained)} results differ from stock's, explained by the f64 result")
        print(f"{self.passed} passed, {self.failed} failed")
        return 0 if self.failed == 0 and self.passed > 0 else 1

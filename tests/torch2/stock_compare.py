"""HCOps' results against stock PyTorch's in one process, as the OpInfo and
ModuleInfo tests (test_opinfo.py, test_modules.py) judge them.

Two results agree when they have the same dtype and shape, NaN and Inf in
the same places, and finite values within the bound: f32 1e-5 relative to
the largest |value| of stock's result plus 1e-5 of the elementwise magnitude
(the GEMMs' 16 k eps |A||B| with room for their different summation
orders), bf16 2^-6. Where they do not, the same computation in f64 on the
same values decides (PyTorch's kernels, GeLU's replaced by an accurate
form: accurate_gelu): the difference is listed, not failed, when HCOps is no
further from the f64 result than stock, or (a gradient) within eps times the
gradient seeds' magnitude of it, which is where a gradient that cancels to
rounding noise ends up (LayerNorm over rows of two).
"""
import contextlib
import math

import torch


def widened(x):
    """x with every floating-point tensor in f64 (the same values, requires_grad
    kept), through lists, tuples and dicts."""
    if isinstance(x, torch.Tensor) and x.is_floating_point():
        return x.detach().double().requires_grad_(x.requires_grad)
    if isinstance(x, (list, tuple)):
        return type(x)(widened(y) for y in x)
    if isinstance(x, dict):
        return {k: widened(v) for k, v in x.items()}
    return x


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


def worst(a, r):
    """The largest |a - r| over the finite elements of r."""
    fin = torch.isfinite(r)
    return (a.double()[fin] - r[fin]).abs().max().item() if fin.any() else 0.0


class Judge:
    """Counts checks, prints failures, and keeps the explained differences."""

    def __init__(self):
        self.passed = self.failed = 0
        self.explained = []

    def check(self, ok, name, detail=""):
        if not ok:
            print(f"FAIL: {name} {detail}", flush=True)
        self.passed, self.failed = self.passed + bool(ok), self.failed + (not ok)

    def compare(self, name, a, b, dt, exact, gradient, seed_scale=0.0, f32_rel=1e-5):
        """HCOps' a against stock's b; exact() gives the f64 result, asked only
        when they disagree (None: no f64 result to judge by). f32_rel: the f32
        bound, wider for a composition of operators."""
        ok, why = close(a, b, dt, f32_rel)
        if not ok and a is not None and b is not None and a.shape == b.shape and a.numel():
            r = exact()
            if r is not None and r.shape == a.shape and torch.equal(torch.isnan(a), torch.isnan(r)):
                mine, stock = worst(a, r), worst(b, r)
                floor = torch.finfo(dt).eps * seed_scale if gradient else 0.0
                if mine <= max(stock, floor):
                    how = "HCOps closer to f64" if mine <= stock else \
                        f"HCOps within eps x the seeds ({floor:.3g}) of f64"
                    self.explained.append(f"{name}: {how}: {why}; from f64: HCOps {mine:.3g}, stock {stock:.3g}")
                    return
                why += f"; from f64: HCOps {mine:.3g}, stock {stock:.3g}"
        self.check(ok, name, why)

    def summary(self):
        for line in self.explained:
            print(f"differs from stock: {line}")
        print(f"{len(self.explained)} results differ from stock's, explained by the f64 result")
        print(f"{self.passed} passed, {self.failed} failed")
        return 0 if self.failed == 0 and self.passed > 0 else 1

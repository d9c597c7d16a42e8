"""torch.optim.Adam and AdamW steps through HCOps' fused kernel.

`install()` replaces the module functions `torch.optim.adam.adam` and
`torch.optim.adamw.adamw` (what `Adam.step` and `AdamW.step` call once per
parameter group) with functions that run the whole group in one call of
`torch.ops.hcops.adam_step_` (libhcops_torch.so, shim/torch/adam.cpp) when
every tensor qualifies, and PyTorch's own function, unchanged, otherwise:

- qualifies: dense CPU tensors, contiguous, all float32 or all bfloat16
  (parameters, gradients and state alike), one-element CPU step tensors,
  foreach not True, not capturable, not differentiable, not fused, no grad
  scaler, and autograd off (as Adam.step has it);
- falls back: foreach=True, complex or other dtypes, mixed dtypes,
  non-contiguous or sparse tensors, other devices, capturable/differentiable,
  and a parameter whose gradient or state shares its memory (PyTorch's
  in-place order then matters). Each fallback is counted and, under
  HCOPS_VERBOSE, printed with its reason (`hcops_verbose,fallback,adam_step_,...`).

The optimizer's state (step, exp_avg, exp_avg_sq, max_exp_avg_sq) is PyTorch's
own, updated in place, so `state_dict()` moves between the two freely.
`calls` counts the groups each path took. HCOPS_OPS selects `adam` and
`adamw` (parsed by libhcops_torch.so); `install()` leaves out what it does
not select; hcops.torch.set_enabled(False) sends every step to PyTorch,
hcops.torch.enabled(False) those of the calling thread inside its block.
`import hcops.torch` calls `install()`.
"""
import importlib
import inspect
import math
import numbers
import sys

import torch

# Group calls per path, e.g. {"adamw:fused": 3, "adamw:fallback": 1}.
calls = {}

_warned = set()
_original = {}  # "adam"/"adamw" -> PyTorch's function, while installed


def _warn_once(key, message):
    if key not in _warned:
        _warned.add(key)
        sys.stderr.write("hcops: %s\n" % message)


def selected(name):
    """Whether HCOPS_OPS selects `name` ("adam" or "adamw"), as libhcops_torch.so parsed it."""
    return bool(torch.ops.hcops.adam_selected(name == "adamw"))


def _op():
    """torch.ops.hcops.adam_step_, or None when libhcops_torch.so is not loaded."""
    try:
        return torch.ops.hcops.adam_step_
    except (AttributeError, RuntimeError):
        return None


def _enabled_op():
    """The op, unless HCOps is switched off for this thread (set_enabled(False),
    or inside an enabled(False) block): then PyTorch's code runs."""
    op = _op()
    return op if op is not None and torch.ops.hcops.is_enabled() else None


def _dense_cpu(t, dtype, shape):
    return (type(t) in (torch.Tensor, torch.nn.Parameter) and t.layout == torch.strided and t.device.type == "cpu"
            and t.dtype == dtype and t.shape == shape and t.is_contiguous())


def _any_overlap(tensors):
    """Whether any two of these dense tensors share memory: their byte
    ranges, sorted by start, each begin before the furthest end so far."""
    spans = sorted((t.data_ptr(), t.data_ptr() + t.numel() * t.element_size()) for t in tensors if t.numel())
    end = None
    for start, stop in spans:
        if end is not None and start < end:
            return True
        end = stop if end is None else max(end, stop)
    return False


def _decline(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, amsgrad, scalars):
    """None when the group qualifies for the fused kernel, else why not (a short reason for HCOPS_VERBOSE)."""
    if not params:
        return "empty"
    if torch.is_grad_enabled():
        return "grad_enabled"
    if not all(isinstance(x, numbers.Real) and not isinstance(x, bool) and math.isfinite(x) for x in scalars):
        return "scalars"
    n = len(params)
    if len(grads) != n or len(exp_avgs) != n or len(exp_avg_sqs) != n or len(state_steps) != n:
        return "lengths"
    if len(max_exp_avg_sqs) != (n if amsgrad else 0):
        return "lengths"
    dtype = params[0].dtype if isinstance(params[0], torch.Tensor) else None
    if dtype not in (torch.float32, torch.bfloat16):
        return "dtype"
    for i, p in enumerate(params):
        if not isinstance(p, torch.Tensor):
            return "not_tensor"
        shape = p.shape
        group = [p, grads[i], exp_avgs[i], exp_avg_sqs[i]] + ([max_exp_avg_sqs[i]] if amsgrad else [])
        if not all(isinstance(t, torch.Tensor) and _dense_cpu(t, dtype, shape) for t in group):
            return "layout"
        s = state_steps[i]
        if not (isinstance(s, torch.Tensor) and s.device.type == "cpu" and s.numel() == 1 and s.layout == torch.strided
                and not s.is_complex()):
            return "step"
    # PyTorch updates the tensors one after another: param.mul_ first, then
    # exp_avg from grad, ..., and parameter after parameter. A gradient that
    # is its parameter reads the decayed values there, and a parameter listed
    # twice in a group (tied weights, with one state) is updated twice in
    # turn; the fused kernel reads every element once and updates the
    # parameters in parallel. Such groups take PyTorch's order.
    if _any_overlap([*params, *grads, *exp_avgs, *exp_avg_sqs, *(max_exp_avg_sqs if amsgrad else [])]):
        return "aliased"
    return None


def _fallback(kind, op, reason, params):
    """Counts and reports (HCOPS_VERBOSE) a group left to PyTorch's function."""
    _count(kind + ":fallback")
    if op is not None:
        first = params[0] if params and isinstance(params[0], torch.Tensor) else None
        op_fallback = torch.ops.hcops.adam_fallback
        op_fallback(kind, reason, str(first.dtype).replace("torch.", "") if first is not None else "none", len(params))


def _fused(kind, op, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, amsgrad, beta1, beta2, lr,
           weight_decay, eps, maximize):
    op(list(params), list(grads), list(exp_avgs), list(exp_avg_sqs), list(max_exp_avg_sqs) if amsgrad else [],
       list(state_steps), float(lr), float(beta1), float(beta2), float(eps), float(weight_decay), kind == "adamw",
       bool(amsgrad), bool(maximize))


def _count(key):
    calls[key] = calls.get(key, 0) + 1


def _make_adam(original):
    # PyTorch 2.x adds has_complex and decoupled_weight_decay (its AdamW is
    # Adam with decoupled_weight_decay=True, stepping through this function);
    # they go on to PyTorch's function only when set, so 1.13's, which has
    # neither, is called as before.
    def adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, foreach=None, capturable=False,
             differentiable=False, fused=False, grad_scale=None, found_inf=None, has_complex=False,
             decoupled_weight_decay=False, *, amsgrad, beta1, beta2, lr, weight_decay, eps, maximize):
        kind = "adamw" if decoupled_weight_decay else "adam"
        op = _enabled_op()
        why = ("not_selected" if not selected(kind) else "disabled" if op is None else "foreach" if foreach else "capturable" if capturable
               else "differentiable" if differentiable else "fused" if fused
               else "grad_scale" if grad_scale is not None or found_inf is not None
               else "complex" if has_complex
               else _decline(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, amsgrad,
                             (beta1, beta2, lr, weight_decay, eps)))
        if why is None:
            _count(kind + ":fused")
            return _fused(kind, op, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, amsgrad,
                          beta1, beta2, lr, weight_decay, eps, maximize)
        if why != "not_selected":  # HCOPS_OPS left this kind alone: not ours to count
            _fallback(kind, _op(), why, params)
        extra = {}
        if has_complex:
            extra["has_complex"] = True
        if decoupled_weight_decay:
            extra["decoupled_weight_decay"] = True
        return original(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, foreach=foreach,
                        capturable=capturable, differentiable=differentiable, fused=fused, grad_scale=grad_scale,
                        found_inf=found_inf, amsgrad=amsgrad, beta1=beta1, beta2=beta2, lr=lr,
                        weight_decay=weight_decay, eps=eps, maximize=maximize, **extra)

    adam.__doc__ = original.__doc__
    adam.hcops_original = original
    return adam


def _make_adamw(original):
    def adamw(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, foreach=None, capturable=False,
              differentiable=False, fused=None, grad_scale=None, found_inf=None, has_complex=False, *,
              amsgrad, beta1, beta2, lr, weight_decay, eps, maximize):
        op = _enabled_op()
        why = ("disabled" if op is None else "foreach" if foreach else "capturable" if capturable
               else "differentiable" if differentiable else "fused" if fused
               else "grad_scale" if grad_scale is not None or found_inf is not None
               else "complex" if has_complex
               else _decline(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, amsgrad,
                             (beta1, beta2, lr, weight_decay, eps)))
        if why is None:
            _count("adamw:fused")
            return _fused("adamw", op, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, amsgrad,
                          beta1, beta2, lr, weight_decay, eps, maximize)
        _fallback("adamw", _op(), why, params)
        # Only what 1.13's adamw (foreach, capturable) does not take, and only when set.
        extra = {k: v for k, v in (("differentiable", differentiable), ("fused", fused), ("grad_scale", grad_scale),
                                   ("found_inf", found_inf), ("has_complex", has_complex)) if v}
        return original(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, foreach=foreach,
                        capturable=capturable, amsgrad=amsgrad, beta1=beta1, beta2=beta2, lr=lr,
                        weight_decay=weight_decay, eps=eps, maximize=maximize, **extra)

    adamw.__doc__ = original.__doc__
    adamw.hcops_original = original
    return adamw


_MAKERS = {"adam": _make_adam, "adamw": _make_adamw}


def install():
    """Route Adam/AdamW steps through the fused kernel (those HCOPS_OPS selects).
    Idempotent. Returns the names installed now or before."""
    if _op() is None:
        _warn_once("no-op", "torch.ops.hcops.adam_step_ is not registered (libhcops_torch.so not loaded): "
                   "Adam and AdamW stay PyTorch's")
        return []
    for name, make in _MAKERS.items():
        module = importlib.import_module("torch.optim." + name)
        original = getattr(module, name)
        # PyTorch 2.x's AdamW steps through torch.optim.adam.adam
        # (decoupled_weight_decay=True): that function serves either selection.
        both = name == "adam" and "decoupled_weight_decay" in inspect.signature(original).parameters
        if name in _original or not (selected(name) or both and selected("adamw")):
            continue
        _original[name] = original
        setattr(module, name, make(original))
    return sorted(_original)


def uninstall():
    """Put PyTorch's functions back."""
    for name, original in list(_original.items()):
        setattr(importlib.import_module("torch.optim." + name), name, original)
        del _original[name]

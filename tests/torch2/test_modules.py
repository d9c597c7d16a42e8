"""PyTorch's own ModuleInfo database (module_db, shipped in the wheel:
torch.testing._internal.common_modules) for the modules whose work HCOps
does in a 2.x torch: nn.Linear, nn.LayerNorm, nn.GELU, nn.SiLU, nn.Softmax,
nn.MultiheadAttention and nn.TransformerEncoderLayer. Every ModuleInput,
f32 and bf16, in training mode (forward and backward: the gradients of the
inputs and of every parameter) and in eval mode under no_grad (where
MultiheadAttention and TransformerEncoderLayer may take their fused fast
path), each with its inputs as given and again non-contiguous (the same
values in strided views, as test_modules' test_non_contiguous_tensors
makes them). The module is built once per input from a fixed seed and
copied, so HCOps (libhcops_torch2 enabled) and stock (disabled) run the same
parameters; results are judged as stock_compare.py says (a bound, and the
same module in f64 where they differ). Over each module's inputs HCOps'
counters must show it computed calls of the operators the module reaches.
Prints "N passed, M failed".
"""
import copy
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(1, HERE)  # stock_compare

GEMMS = ("mm", "addmm", "bmm", "baddbmm")
# ModuleInfo name -> groups of HCOps' counters: in each group, at least one
# operator must have computed calls over the module's inputs (a group of
# one: that operator). Forward and backward are separate groups.
MODULES = {
    "nn.Linear": (GEMMS,),
    "nn.LayerNorm": (("native_layer_norm",), ("native_layer_norm_backward",)),
    "nn.GELU": (("gelu",), ("gelu_backward",)),
    "nn.SiLU": (("silu",), ("silu_backward",)),
    "nn.Softmax": (("_softmax",), ("_softmax_backward_data",)),
    # need_weights (the default) takes softmax, need_weights=False attention
    "nn.MultiheadAttention": (GEMMS, ("_softmax", "_scaled_dot_product_flash_attention_for_cpu"),
                              ("_softmax_backward_data", "_scaled_dot_product_flash_attention_for_cpu_backward")),
    "nn.TransformerEncoderLayer": (GEMMS, ("native_layer_norm",), ("native_layer_norm_backward",),
                                   ("_scaled_dot_product_flash_attention_for_cpu",),
                                   ("_scaled_dot_product_flash_attention_for_cpu_backward",)),
}

# The f32 bound of modules whose outputs go through several products and a
# softmax, forward and backward (each rounding in f32 in its own order):
# wider than one operator's 1e-5; both sides are then ~1e-6 from f64. In
# bf16 they are judged by their largest error from f64 against stock's
# (stock_compare.Judge.compare).
COMPOSED = {"nn.MultiheadAttention": 4e-5, "nn.TransformerEncoderLayer": 4e-5}


def main():
    import torch
    import hcops.torch as ht
    from torch.testing._internal.common_modules import module_db
    from stock_compare import Judge, accurate_f64, widened
    from torch.utils._pytree import tree_leaves, tree_map

    judge = Judge()

    def strided(x):
        """x's values in non-contiguous views (every other element of a buffer
        twice as long in the last dimension), through lists, tuples, dicts."""
        def one(t):
            if isinstance(t, torch.Tensor) and t.is_floating_point() and t.dim() > 0 and t.numel() > 1:
                view = torch.zeros(*t.shape, 2, dtype=t.dtype)[..., 0]
                view.copy_(t.detach())
                return view.requires_grad_(t.requires_grad)
            return t
        return tree_map(one, x)

    def tensors(x):
        return [t for t in tree_leaves(x) if isinstance(t, torch.Tensor)]

    def fresh(x):
        """A copy of x's tensors as new leaves (the same requires_grad)."""
        def one(t):
            if not isinstance(t, torch.Tensor):
                return t
            return t.detach().clone().requires_grad_(t.requires_grad) if t.is_floating_point() else t.clone()
        return tree_map(one, x)

    def run(module, args, kwargs, on, training, seed_dtype):
        """(outputs, input gradients, parameter gradients, largest |seed|)."""
        module.train(training)
        module.zero_grad(set_to_none=True)
        args, kwargs = fresh(args), fresh(kwargs)
        ins = [t for t in tensors((args, kwargs)) if t.requires_grad]
        with ht.enabled(on), torch.set_grad_enabled(training):
            out = module(*args, **kwargs)
            outs = [o for o in tensors(out)]
            diff = [o for o in outs if o.requires_grad]
            scale = 0.0
            if training and diff:
                torch.manual_seed(7)
                seeds = [torch.randn(o.shape, dtype=seed_dtype).to(o.dtype) for o in diff]
                scale = max([float(s.abs().max()) for s in seeds if s.numel()] + [0.0])
                torch.autograd.backward(diff, seeds)
        params = [p.grad for p in module.parameters()] if training else []
        return [o.detach() for o in outs], [t.grad for t in ins], params, scale

    for info in module_db:
        if info.name not in MODULES:
            continue
        groups = MODULES[info.name]
        counted = sorted({op for group in groups for op in group})
        taken_before = {op: ht.call_counts(op)[0] for op in counted}
        inputs_run = 0
        for dt in (torch.float32, torch.bfloat16):
            for training in (True, False):
                torch.manual_seed(len(info.name) * 100 + (dt == torch.bfloat16) * 10 + training)  # the same inputs each run
                try:
                    minputs = info.module_inputs_func(info, device="cpu", dtype=dt, requires_grad=training,
                                                      training=training)
                except Exception as e:  # noqa: BLE001 - a dtype the module's inputs do not come in
                    print(f"   {info.name} {str(dt)[6:]}: no inputs ({str(e).splitlines()[0]})")
                    continue
                for i, mi in enumerate(minputs):
                    if mi.forward_input is None:
                        continue
                    torch.manual_seed(1000 + i)
                    base = info.module_cls(*mi.constructor_input.args, **mi.constructor_input.kwargs).to(dt)
                    for layout in ("as given", "non-contiguous"):
                        inputs_run += 1
                        args, kwargs = mi.forward_input.args, mi.forward_input.kwargs
                        if layout == "non-contiguous":
                            args, kwargs = strided(args), strided(kwargs)
                        mode = "train" if training else "eval"
                        name = f"{info.name} {str(dt)[6:]} {mode} input {i} ({mi.desc or 'default'}, {layout})"
                        try:
                            got = run(copy.deepcopy(base), args, kwargs, True, training, dt)
                        except Exception as e:  # noqa: BLE001
                            try:
                                run(copy.deepcopy(base), args, kwargs, False, training, dt)
                                judge.check(False, name, f"raises only under HCOps: {str(e).splitlines()[0]}")
                            except Exception as e2:  # noqa: BLE001
                                judge.check(type(e) is type(e2), name + " error as stock", f"{e!r} vs {e2!r}")
                            continue
                        ref = run(copy.deepcopy(base), args, kwargs, False, training, dt)
                        exact = []

                        def f64(part, j):
                            if not exact:
                                wide = copy.deepcopy(base).double()
                                with accurate_f64():
                                    exact.append(run(wide, widened(args), widened(kwargs), False, training, dt))
                            return exact[0][part][j]
                        for part, what in enumerate(("output", "input gradient", "parameter gradient")):
                            judge.check(len(got[part]) == len(ref[part]), f"{name} {what}s counted")
                            for j, (a, b) in enumerate(zip(got[part], ref[part])):
                                judge.compare(f"{name} {what} {j}", a, b, dt, lambda: f64(part, j), part > 0,
                                              got[3], COMPOSED.get(info.name, 1e-5), info.name in COMPOSED)
        taken = {op: ht.call_counts(op)[0] - taken_before[op] for op in counted}
        for group in groups:
            judge.check(any(taken[op] for op in group), f"{info.name}: HCOps computed calls of {' or '.join(group)}",
                        f"({inputs_run} runs, computed {taken})")
        print(f"   {info.name}: {inputs_run} runs, computed by HCOps {taken}", flush=True)
    return judge.summary()


if __name__ == "__main__":
    sys.exit(main())

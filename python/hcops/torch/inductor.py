"""Inside torch.compile'd graphs: the operators HCOps runs faster than the C++
inductor would generate for them stay calls to ATen (inductor's "fallback"
kernels), so that HCOps' kernels run there as in eager mode.

Inductor decomposes GeLU and its backward into pointwise arithmetic and
generates C++ for it; its tanh and erf are vectorised library calls. DiT's
MLP GeLU (tanh, 8 x 256 x 1536 f32, 2 threads, AMD Zen 3: AVX2) took 5.4 ms
a call forward and 6.1 ms backward in the compiled step, HCOps' `gelu` 1.5
and `gelu_backward` 1.9 (the bias gradient's sum, fused there, then runs on
its own: 1.5 ms). On the families with 512-bit vectors (avx512,
avx512_bf16, amx) and on AArch64 this has not been measured, and inductor
keeps its own code there unless asked.

HCOPS_INDUCTOR_OPS: what compiled graphs call instead of inductor's code:
`gelu` (GeLU and its backward), `none`; unset or `auto`: `gelu` where HCOps'
operators run on the avx2 family (the CPU has AVX2 and FMA, not AVX-512),
`none` elsewhere. Nothing is kept as a call for an operator HCOps does not
take (HCOPS_OPS). Applied when inductor is first imported (the first
torch.compile), under HCOPS_VERBOSE with a line
`hcops_verbose,info,inductor,calls=gelu+gelu_backward,reason=auto:avx2`.
The compiled graphs then differ from stock's, so the choice is added to
`torch.compiler.config.cache_key_tag` (`hcops-inductor-calls=gelu+gelu_backward@cpu-f32-bf16`,
after any tag of the user's set before then): inductor's caches keep the two
apart. A process that compiled before `import hcops.torch` gets the change
from then on (inductor's cached copy of its table is dropped).

Only CPU tensors of f32 and bf16 (what HCOps' kernels take) are kept as
calls: inductor's decomposition declines those and decomposes the rest, so
a CUDA graph in the same process (a GPU node whose CPU has AVX2), or a CPU
f64 GeLU, keeps inductor's own fused code.

PyTorch 2.x only; `import hcops.torch` calls `install()`.
"""
import importlib
import os
import sys

import torch

from hcops._after_import import after_import

# The operators each name of HCOPS_INDUCTOR_OPS keeps as calls.
_GROUPS = {"gelu": ("gelu", "gelu_backward")}
# Families where HCOps' kernels were measured faster than inductor's code.
_AUTO_FAMILIES = {"avx2": "gelu"}

applied = []  # the operators kept as calls in this process ("gelu", "gelu_backward")


def _warn(message):
    sys.stderr.write("hcops: warning: " + " ".join(str(message).split()) + "\n")


def choice():
    """(names of _GROUPS to apply, the reason) from HCOPS_INDUCTOR_OPS and the family."""
    value = os.environ.get("HCOPS_INDUCTOR_OPS", "auto").strip().lower()  # case-insensitive, as HCOPS_OPS
    if value in ("", "auto"):
        family = torch.ops.hcops.ops_family()
        group = _AUTO_FAMILIES.get(family)
        return ([group] if group else []), f"auto:{family}"
    if value == "none":
        return [], "HCOPS_INDUCTOR_OPS"
    names = list(dict.fromkeys(v.strip() for v in value.split(",") if v.strip()))  # each once, in order
    unknown = [n for n in names if n not in _GROUPS]
    if unknown:
        _warn(f"HCOPS_INDUCTOR_OPS={value!r}: {', '.join(unknown)} unknown (gelu, none, auto); inductor keeps "
              "its own code")
        return [], "HCOPS_INDUCTOR_OPS unknown"
    return names, "HCOPS_INDUCTOR_OPS"


# The inputs HCOps' kernels take (its GeLU: f32 and bf16 on the CPU); a
# compiled graph keeps inductor's own code for the others.
_CALL_DTYPES = (torch.float32, torch.bfloat16)


def _cpu_only(decomp):
    """decomp, declining (NotImplemented: the op stays in the graph, and the
    fallback lowering calls it) where its first tensor is a CPU tensor of
    _CALL_DTYPES: a CUDA graph, or a CPU f64 GeLU, is still decomposed and
    fused by inductor. (gelu(self), gelu_backward(grad_output, self) and
    their out= forms: the first argument says.)"""
    def cpu_calls_else_decompose(*args, **kwargs):
        first = args[0] if args else None
        if isinstance(first, torch.Tensor) and first.device.type == "cpu" and first.dtype in _CALL_DTYPES:
            return NotImplemented
        return decomp(*args, **kwargs)
    cpu_calls_else_decompose.hcops_original = decomp
    return cpu_calls_else_decompose


def _keep_as_call(name):
    """Inductor's tables changed so that aten op `name` is a call for CPU
    f32/bf16 inputs: into its lowerings as a fallback, and its
    decomposition declining those inputs (_cpu_only), in its table and in
    the copy select_decomp_table() caches (fast_random_decomps, made by the
    first compile or by anything that asked for the table before this ran).
    A 2.x whose make_fallback refuses an op that is still decomposed loses
    the decomposition on every device."""
    # (From sys.modules: this runs inside lowering's import, before the
    # package has it as an attribute.)
    decomposition = importlib.import_module("torch._inductor.decomposition")
    lowering = importlib.import_module("torch._inductor.lowering")
    packet = getattr(torch.ops.aten, name)

    def clear_cache():
        cached = getattr(decomposition, "fast_random_decomps", None)
        if hasattr(cached, "cache_clear"):
            cached.cache_clear()

    def drop_decompositions():
        for overload in packet.overloads():
            decomposition.decompositions.pop(getattr(packet, overload), None)
        clear_cache()

    def decompose_elsewhere():
        table = decomposition.decompositions
        for overload in packet.overloads():
            op = getattr(packet, overload)
            decomp = table.get(op)
            if decomp is not None and not hasattr(decomp, "hcops_original"):
                table[op] = _cpu_only(decomp)
        clear_cache()

    # The lowering first: should it fail, the table still decomposes the op
    # and inductor's own code runs, as stock.
    try:
        # override_decomp: torch._decomp still has one (make_fallback refuses
        # it under CI=1 without this).
        lowering.make_fallback(packet, override_decomp=True)
    except TypeError:  # a 2.x without the keyword refuses an op still in the table
        drop_decompositions()
        lowering.make_fallback(packet, warn=False)
        return
    decompose_elsewhere()


def _tag(ops):
    """The choice in torch.compiler.config.cache_key_tag (once, after the
    caller's tag): inductor's caches then keep these graphs apart."""
    try:
        config = importlib.import_module("torch.compiler.config")
    except ImportError:  # a 2.x before it: no tag to add
        return
    if not hasattr(config, "cache_key_tag"):
        return
    # "@cpu-f32-bf16": the inputs kept as calls (graphs cached when every
    # GeLU was one, before 2026-12-03, are not reused).
    tag = "hcops-inductor-calls=" + "+".join(ops) + "@cpu-f32-bf16"
    if tag not in config.cache_key_tag.split(";"):
        config.cache_key_tag = f"{config.cache_key_tag};{tag}" if config.cache_key_tag else tag


def _apply():
    """Runs inside the import of inductor's lowering module, once: whatever
    fails here is a warning, and the operators not changed keep inductor's
    own code (as stock)."""
    try:
        groups, reason = choice()
        taken = set(torch.ops.hcops.loaded_ops())
        for op in (op for g in groups for op in _GROUPS[g] if op in taken):
            _keep_as_call(op)
            applied.append(op)
    except Exception as e:
        but = f" for all but {'+'.join(applied)}" if applied else ""
        _warn(f"inductor keeps its own code{but}: {type(e).__name__}: {e}")
        reason = "error"
    finally:
        try:
            if applied:
                _tag(applied)
            torch.ops.hcops.info(f"inductor,calls={'+'.join(applied) or 'none'},reason={reason}")
        except Exception as e:
            _warn(f"inductor's cache tag or verbose line: {type(e).__name__}: {e}")


_installed = False


def install():
    """_apply() when inductor's lowering module is imported (now if it is),
    once per process."""
    global _installed
    if _installed or int(torch.__version__.split(".")[0]) < 2:
        return
    _installed = True
    after_import("torch._inductor.lowering", _apply)

"""HCOps operators for PyTorch: `import hcops.torch` loads libhcops_torch into
this process once, after which PyTorch's CPU kernels of GeLU, SiLU, Softmax,
LogSoftmax and LayerNorm (forward and backward) and the GEMMs (mm, addmm,
bmm, baddbmm: nn.Linear, matmul) run HCOps' kernels where they cover the
call and PyTorch's own everywhere else. HCOPS_OPS
selects the operators (read when the library loads).

    import hcops.torch
    with hcops.torch.enabled(False):   # PyTorch's own kernels inside the block
        ref = model(x)                  # (on this thread; set_enabled: every thread)

The library is $HCOPS_TORCH_LIB, else the first built for the torch running
(libhcops_torch.so: Debian's 1.13; libhcops_torch2.so: a 2.x wheel) in the
installed libdir or the build tree; a torch with no build gets an ImportError
that says which builds exist and how to make one.
"""
import contextlib
import os

import torch

from hcops import _builds

__all__ = ["library", "enabled", "set_enabled", "is_enabled", "loaded_ops", "call_counts"]

# One build per torch: libhcops_torch.so against Debian's 1.13, libhcops_torch2.so
# against a 2.x wheel (configure --with-torch-python); hcops._builds finds the
# one made for the torch running.
_NAMES = ("libhcops_torch.so", "libhcops_torch2.so")


def _running():
    return torch.__version__.split("+")[0]


def _already_loaded():
    try:
        torch.ops.hcops.is_enabled
        return True
    except (AttributeError, RuntimeError):
        return False


def _choose():
    """The library for the torch running: $HCOPS_TORCH_LIB when set (that one or
    none, never a silent substitute), else the first build made for this torch."""
    return _builds.choose(_running(), _NAMES, "HCOPS_TORCH_LIB", "torch", "libhcops_torch")


def _load():
    if _already_loaded():  # by the start-up hook, or another copy of this package
        return None
    path = os.path.realpath(_choose())
    torch.ops.load_library(path)
    if not _already_loaded():  # it refused to register (its error line says why)
        raise ImportError(f"hcops: {path} registered no operators (see the hcops: line above); "
                          "PyTorch's own kernels stay in use")
    return path


library = _load()  # the path loaded now, or None when it was already loaded


def set_enabled(on):
    """Process-wide: False makes every replaced operator run PyTorch's kernel,
    on every thread except those inside an enabled() block (each keeps its
    block's state)."""
    torch.ops.hcops.set_enabled(bool(on))


def is_enabled():
    """Whether replaced operators called from this thread run HCOps' kernels."""
    return bool(torch.ops.hcops.is_enabled())


@contextlib.contextmanager
def enabled(on=True):
    """HCOps' kernels on (or off) for the calling thread inside the block, and
    the thread's previous state after it; other threads are not affected.
    A dispatcher call is decided on the thread that makes it, and PyTorch runs
    a CPU backward() on the calling thread, so both are covered; work the
    block hands to other threads (a thread pool of the caller's, TorchScript
    fork tasks on PyTorch's inter-op pool) follows the process-wide switch.
    Like torch.no_grad(), blocks on one thread must nest: two interleaved on
    the same thread (generators, asyncio tasks) restore each other's state."""
    before = int(torch.ops.hcops.thread_enabled())
    torch.ops.hcops.set_thread_enabled(1 if on else 0)
    try:
        yield
    finally:
        torch.ops.hcops.set_thread_enabled(before)


def loaded_ops():
    """The aten overloads replaced in this process ("gelu", "gelu.out", ...)."""
    return list(torch.ops.hcops.loaded_ops())


def call_counts(op):
    """(calls HCOps computed, calls left to PyTorch's kernel) of an aten
    operator, by name: "gelu", "_softmax_backward_data", "native_layer_norm"..."""
    taken, fallen = torch.ops.hcops.call_counts(op)
    return int(taken), int(fallen)


# torch.optim.Adam / AdamW steps through the fused kernel, where HCOPS_OPS selects them.
from hcops.torch import optim  # noqa: E402

optim.install()

# torch.compile'd graphs call GeLU (HCOps' kernel) where inductor's own code is
# slower (hcops.torch.inductor, HCOPS_INDUCTOR_OPS), from the first compile on.
from hcops.torch import inductor  # noqa: E402

inductor.install()

"""HCOps operators for PyTorch: `import hcops.torch` loads libhcops_torch.so
into this process once, after which PyTorch's CPU kernels of GeLU, SiLU,
Softmax, LogSoftmax and LayerNorm (forward and backward) run HCOps' kernels
where they cover the call and PyTorch's own everywhere else. HCOPS_OPS
selects the operators (read when the library loads).

    import hcops.torch
    with hcops.torch.enabled(False):   # PyTorch's own kernels inside the block
        ref = model(x)

The library is the first that exists of: $HCOPS_TORCH_LIB, the installed
one (libdir), the build tree's.
"""
import contextlib
import os

import torch

__all__ = ["library", "enabled", "set_enabled", "is_enabled", "loaded_ops", "call_counts"]

_NAME = "libhcops_torch.so"
_HERE = os.path.dirname(os.path.abspath(__file__))


def _candidates():
    env = os.environ.get("HCOPS_TORCH_LIB")
    if env:
        # Named explicitly: that library or none, never a silent substitute.
        return [env]
    found = []
    try:  # written by `make install` (libdir), absent in the source tree
        from hcops.torch import _paths
        found.append(os.path.join(_paths.LIBDIR, _NAME))
    except ImportError:
        _paths = None
    # python/hcops/torch in the source tree, with the default build/ beside it.
    found.append(os.path.join(_HERE, "..", "..", "..", "build", "shim", "torch", ".libs", _NAME))
    if _paths is not None and _paths.BUILDDIR:  # an installed package names no build tree
        found.append(os.path.join(_paths.BUILDDIR, "shim", "torch", ".libs", _NAME))
    return found


def _already_loaded():
    try:
        torch.ops.hcops.is_enabled
        return True
    except (AttributeError, RuntimeError):
        return False


def _check_torch_version():
    # Built against one torch (Debian's): loaded into another (a venv's), the
    # library would pull its own libtorch_cpu in beside that one's.
    try:
        from hcops.torch import _paths
        built = getattr(_paths, "TORCH_VERSION", "")
    except ImportError:  # the source tree: no record of the build
        return
    running = torch.__version__.split("+")[0]
    if built and running != built:
        raise ImportError(f"hcops: {_NAME} was built for torch {built}, this process runs torch {running}; "
                          "PyTorch's own kernels stay in use")


def _load():
    if _already_loaded():  # by the start-up hook, or another copy of this package
        return None
    if not os.environ.get("HCOPS_TORCH_LIB"):  # a library named explicitly is the user's choice
        _check_torch_version()
    tried = _candidates()
    for path in tried:
        if os.path.isfile(path):
            path = os.path.realpath(path)
            torch.ops.load_library(path)
            return path
    raise ImportError(f"hcops: {_NAME} not found (looked at {', '.join(tried)}); "
                      "set HCOPS_TORCH_LIB to its path")


library = _load()  # the path loaded now, or None when it was already loaded


def set_enabled(on):
    """Process-wide: False makes every replaced operator run PyTorch's kernel."""
    torch.ops.hcops.set_enabled(bool(on))


def is_enabled():
    return bool(torch.ops.hcops.is_enabled())


@contextlib.contextmanager
def enabled(on=True):
    """set_enabled(on) inside the block, the previous state after it."""
    before = is_enabled()
    set_enabled(on)
    try:
        yield
    finally:
        set_enabled(before)


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

"""HCOps operators for PyTorch: `import hcops.torch` loads libhcops_torch into
this process once, after which PyTorch's CPU kernels of GeLU, SiLU, Softmax,
LogSoftmax and LayerNorm (forward and backward) and the GEMMs (mm, addmm,
bmm, baddbmm: nn.Linear, matmul) run HCOps' kernels where they cover the
call and PyTorch's own everywhere else. HCOPS_OPS
selects the operators (read when the library loads).

    import hcops.torch
    with hcops.torch.enabled(False):   # PyTorch's own kernels inside the block
        ref = model(x)

The library is $HCOPS_TORCH_LIB, else the first built for the torch running
(libhcops_torch.so: Debian's 1.13; libhcops_torch2.so: a 2.x wheel) in the
installed libdir or the build tree; a torch with no build gets an ImportError
that says which builds exist and how to make one.
"""
import contextlib
import os

import torch

from hcops._built_for import built_for as _built_for

__all__ = ["library", "enabled", "set_enabled", "is_enabled", "loaded_ops", "call_counts"]

# One build per torch: libhcops_torch.so against Debian's 1.13, libhcops_torch2.so
# against a 2.x wheel (configure --with-torch-python). Each carries the version
# it was built for (_built_for); the one made for the torch running is loaded.
_NAMES = ("libhcops_torch.so", "libhcops_torch2.so")
_HERE = os.path.dirname(os.path.abspath(__file__))


def _dirs():
    found = []
    try:  # written by `make install` (libdir), absent in the source tree
        from hcops.torch import _paths
        found.append(_paths.LIBDIR)
    except ImportError:
        _paths = None
    # python/hcops/torch in the source tree, with the default build/ beside it.
    found.append(os.path.join(_HERE, "..", "..", "..", "build", "shim", "torch", ".libs"))
    if _paths is not None and _paths.BUILDDIR:  # an installed package names no build tree
        found.append(os.path.join(_paths.BUILDDIR, "shim", "torch", ".libs"))
    return found


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
    running = _running()
    env = os.environ.get("HCOPS_TORCH_LIB")
    if env:
        built = _built_for(env) if os.path.isfile(env) else None
        if built is None:
            raise ImportError(f"hcops: HCOPS_TORCH_LIB={env} is not a libhcops_torch library")
        if built != running:
            raise ImportError(f"hcops: HCOPS_TORCH_LIB={env} was built for torch {built}, this process runs "
                              f"torch {running}; PyTorch's own kernels stay in use")
        return env
    seen = []
    for d in _dirs():
        for name in _NAMES:
            path = os.path.join(d, name)
            if not os.path.isfile(path):
                continue
            built = _built_for(path)
            if built == running:
                return path
            seen.append(f"{name} for torch {built}")
    if seen:
        raise ImportError(f"hcops: no libhcops_torch built for torch {running} (found: {', '.join(seen)}); "
                          "build one with configure --with-torch-python=<that environment's python>; "
                          "PyTorch's own kernels stay in use")
    raise ImportError(f"hcops: libhcops_torch not found (looked in {', '.join(_dirs())}); "
                      "set HCOPS_TORCH_LIB to its path")


def _load():
    if _already_loaded():  # by the start-up hook, or another copy of this package
        return None
    path = os.path.realpath(_choose())
    torch.ops.load_library(path)
    return path


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

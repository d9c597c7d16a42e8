"""ctypes access to libhcops_mem.so's phase API (include/hcops.h).

The interposer has to be preloaded for policies to reach allocations:

    LD_PRELOAD=/path/to/libhcops_mem.so python3 train.py

    from hcops import mem
    with mem.policy("fast,thp"):      # this thread's allocations inside the block
        out = model(x)
    mem.move(t.data_ptr(), t.numel() * t.element_size(), "ddr")
"""
import contextlib
import ctypes
import ctypes.util
import os

THREAD, PROCESS = 0, 1


def _bind(lib):
    lib.hcops_mem_push.argtypes = [ctypes.c_int, ctypes.c_char_p]
    lib.hcops_mem_pop.argtypes = [ctypes.c_int]
    lib.hcops_mem_move.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    lib.hcops_mem_move_async.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    lib.hcops_mem_move_async.restype = ctypes.c_long
    lib.hcops_mem_wait.argtypes = [ctypes.c_long]
    lib.hcops_mem_stat.argtypes = [ctypes.c_char_p]
    lib.hcops_mem_stat.restype = ctypes.c_size_t
    return lib


def _load():
    """The preloaded library (found in the global scope), else a copy loaded now,
    which can still move memory but places no allocation."""
    main = ctypes.CDLL(None, use_errno=True)
    if hasattr(main, "hcops_mem_push"):
        return _bind(main), True
    path = os.environ.get("HCOPS_MEM_LIB") or ctypes.util.find_library("hcops_mem")
    if not path:
        return None, False
    return _bind(ctypes.CDLL(path, use_errno=True)), False


_lib, preloaded = _load()


def _need(placing):
    if _lib is None:
        raise RuntimeError("libhcops_mem.so not found: preload it (LD_PRELOAD) or set HCOPS_MEM_LIB")
    if placing and not preloaded:
        raise RuntimeError("libhcops_mem.so is not preloaded, so policies reach no allocation; "
                           "run with LD_PRELOAD=/path/to/libhcops_mem.so")


def _check(rc, what):
    if rc < 0:
        err = ctypes.get_errno()
        raise (ValueError if err == 22 else OSError)(err, f"{what}: {os.strerror(err)}")
    return rc


def push(text, scope=THREAD):
    """Pushes a policy ("fast,thp", "2M-:fast,thp;64K-2M:local") for new allocations."""
    _need(True)
    _check(_lib.hcops_mem_push(scope, text.encode()), f"hcops_mem_push({text!r})")


def pop(scope=THREAD):
    _need(True)
    _check(_lib.hcops_mem_pop(scope), "hcops_mem_pop")


@contextlib.contextmanager
def policy(text, scope=THREAD):
    push(text, scope)
    try:
        yield
    finally:
        pop(scope)


def move(addr, nbytes, target):
    """Migrates [addr, addr + nbytes) to target: fast, ddr, local, interleave[:n], bind:n."""
    _need(False)
    _check(_lib.hcops_mem_move(addr, nbytes, target.encode()), f"hcops_mem_move({target!r})")


def move_async(addr, nbytes, target):
    """The same on the pinned helper thread; returns a ticket for wait()."""
    _need(False)
    return _check(_lib.hcops_mem_move_async(addr, nbytes, target.encode()), f"hcops_mem_move_async({target!r})")


def wait(ticket):
    _need(False)
    _check(_lib.hcops_mem_wait(ticket), "hcops_mem_wait")


def stat(name):
    """A named counter (see hcops.h): "live", "peak", "fallback.fast_to_ddr", ..."""
    _need(False)
    v = _lib.hcops_mem_stat(name.encode())
    if v == ctypes.c_size_t(-1).value:
        raise KeyError(name)
    return v

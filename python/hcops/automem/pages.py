"""Where the kernel has put pages and which NUMA policy governs them, by the
system calls (no libnuma): `move_pages` with no target (the node of each page)
and `get_mempolicy(MPOL_F_ADDR)` (the policy of the mapping at an address).
Used by the tests and by `hcops.automem.placement()`."""
import ctypes
import os
import platform

MPOL_DEFAULT, MPOL_PREFERRED, MPOL_BIND, MPOL_INTERLEAVE, MPOL_LOCAL = 0, 1, 2, 3, 4
MODE_NAMES = {0: "default", 1: "preferred", 2: "bind", 3: "interleave", 4: "local", 5: "preferred_many"}
MPOL_F_NODE, MPOL_F_ADDR = 1 << 0, 1 << 1

_SYSCALLS = {"x86_64": {"get_mempolicy": 239, "move_pages": 279},
             "aarch64": {"get_mempolicy": 236, "move_pages": 239}}

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
PAGE = os.sysconf("SC_PAGE_SIZE")
_MAXNODE = 1024


def _nr(name):
    table = _SYSCALLS.get(platform.machine())
    if table is None:
        raise OSError(f"hcops.automem.pages: no system call numbers for {platform.machine()}")
    return table[name]


def policy_at(addr):
    """(mode, nodes) of the policy of the mapping holding addr; mode in MODE_NAMES."""
    mode = ctypes.c_int(0)
    mask = (ctypes.c_ulong * (_MAXNODE // 64))()
    rc = _libc.syscall(ctypes.c_long(_nr("get_mempolicy")), ctypes.byref(mode), mask,
                       ctypes.c_ulong(_MAXNODE), ctypes.c_void_p(addr), ctypes.c_ulong(MPOL_F_ADDR))
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"get_mempolicy(MPOL_F_ADDR): {os.strerror(err)}")
    nodes = [w * 64 + b for w in range(len(mask)) for b in range(64) if mask[w] >> b & 1]
    return mode.value & 0xFFFF, nodes  # the high bits are mode flags (MPOL_F_STATIC_NODES...)


def nodes_of(addr, nbytes, sample=64):
    """The node of up to `sample` pages spread over [addr, addr + nbytes), as
    move_pages reports them (a negative errno for a page not present)."""
    first = addr // PAGE * PAGE
    count = max(1, (addr + nbytes - first + PAGE - 1) // PAGE)
    step = max(1, count // sample)
    pages = [first + i * PAGE for i in range(0, count, step)][:sample]
    n = len(pages)
    ptrs = (ctypes.c_void_p * n)(*pages)
    status = (ctypes.c_int * n)()
    rc = _libc.syscall(ctypes.c_long(_nr("move_pages")), ctypes.c_int(0), ctypes.c_ulong(n), ptrs, None, status,
                       ctypes.c_int(0))
    if rc < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"move_pages: {os.strerror(err)}")
    return list(status)

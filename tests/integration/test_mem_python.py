#!/usr/bin/env python3
"""python/hcops/mem.py against the preloaded libhcops_mem.so: a pushed policy
reaches numpy's allocations (counted by the library), pop restores the
default, moves succeed synchronously and on the helper thread, and a bad
policy raises ValueError with nothing pushed. Re-runs itself as a child with
LD_PRELOAD=$HCOPS_MEM_LIB and prints "N passed, M failed"."""
import errno
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
from integration.harness import PYTHON, Report  # noqa: E402
import time_limits  # noqa: E402

SRC_PYTHON = os.path.join(HERE, "..", "..", "python")
BIG = 4 << 20  # above the 1 MiB threshold


MPOL_PREFERRED, MPOL_LOCAL = 1, 4


def policy_of(addr):
    """(mode, node mask) the kernel holds for the page at addr (get_mempolicy)."""
    import ctypes
    numa = ctypes.CDLL("libnuma.so.1", use_errno=True)
    mode, mask = ctypes.c_int(), (ctypes.c_ulong * 16)()
    MPOL_F_ADDR = 2
    if numa.get_mempolicy(ctypes.byref(mode), mask, ctypes.c_ulong(16 * 64 + 1), ctypes.c_void_p(addr),
                          ctypes.c_ulong(MPOL_F_ADDR)) != 0:
        return (-1, ctypes.get_errno())
    return (mode.value, mask[0])


def child():
    sys.path.insert(0, SRC_PYTHON)
    import numpy as np
    from hcops import mem

    r = Report()
    r.check(mem.preloaded, "library found preloaded")
    before = mem.stat("allocations")
    a = np.ones(BIG, dtype=np.uint8)
    r.check(mem.stat("allocations") == before + 1, "a 4 MiB array is a large block", mem.stat("allocations") - before)

    sys_before, alloc_before = mem.stat("system_rule"), mem.stat("allocations")
    with mem.policy("system"):
        b = np.ones(BIG, dtype=np.uint8)
    r.check(mem.stat("system_rule") == sys_before + 1 and mem.stat("allocations") == alloc_before,
            "policy 'system' hands the array to glibc")
    c = np.ones(BIG, dtype=np.uint8)
    r.check(mem.stat("allocations") == alloc_before + 1, "after the block the default applies again")

    if os.environ.get("HCOPS_TEST_EMULATED") == "yes":
        # QEMU's user-mode emulation (make check-aarch64) implements no mbind
        # nor get_mempolicy: a move must fail with the kernel's ENOSYS, raised,
        # not swallowed, both synchronously and on the helper thread.
        for how, move in (("move", lambda: mem.move(a.ctypes.data, a.nbytes, "ddr")),
                          ("move_async", lambda: mem.wait(mem.move_async(a.ctypes.data, a.nbytes, "local")))):
            try:
                move()
                r.check(False, f"{how} under QEMU raises ENOSYS (no mbind)", "it returned")
            except OSError as e:
                r.check(e.errno == errno.ENOSYS, f"{how} under QEMU raises ENOSYS (no mbind)", e)
    else:
        mem.move(a.ctypes.data, a.nbytes, "ddr")
        r.check(policy_of(a.ctypes.data) == (MPOL_PREFERRED, 1), "move to ddr: the kernel reports preferred node 0",
                policy_of(a.ctypes.data))
        mem.wait(mem.move_async(a.ctypes.data, a.nbytes, "local"))
        r.check(policy_of(a.ctypes.data)[0] == MPOL_LOCAL, "move to local on the helper: the kernel reports local",
                policy_of(a.ctypes.data))
    r.check(int(a.sum()) == BIG and int(b.sum()) == BIG and int(c.sum()) == BIG, "contents intact after moves")

    try:
        mem.push("fast,thq")
        r.check(False, "bad policy raises ValueError")
    except ValueError:
        r.check(True, "bad policy raises ValueError")
    try:
        mem.pop()
        r.check(False, "nothing left pushed after the bad policy")
    except ValueError:
        r.check(True, "nothing left pushed after the bad policy")
    sys.exit(r.finish())


def main():
    lib = os.environ.get("HCOPS_MEM_LIB")
    if not lib or not os.path.isfile(lib):
        print(f"ERROR: HCOPS_MEM_LIB must name the libhcops_mem.so to test (got {lib!r})")
        sys.exit(99)
    env = dict(os.environ, LD_PRELOAD=os.path.abspath(lib))
    proc = subprocess.run([PYTHON, os.path.abspath(__file__), "--child"], env=env, capture_output=True,
                          text=True, timeout=time_limits.limit(120))
    sys.stdout.write(proc.stdout)
    # The bad policy's message is expected; anything else on stderr is not.
    unexpected = [l for l in proc.stderr.splitlines() if "hcops_mem_push(\"fast,thq\")" not in l]
    if unexpected:
        print("FAIL: unexpected stderr:\n" + "\n".join(unexpected))
        sys.exit(1)
    sys.exit(proc.returncode)


if __name__ == "__main__":
    child() if "--child" in sys.argv else main()

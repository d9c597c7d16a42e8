"""perf/torch2_gemm.py's llc_bytes, which sizes the benchmarks' cache flush
(torch2_gemm, torch2_attention, torch2_layer_norm, torch2_sum): the largest
index*/size of a sysfs cache folder whatever else the folder holds and in
whatever order it lists (a file such as uevent, an entry without a size or
with a bad one once ended the search: a 260 MiB L3 read as 32 MiB); K and M
suffixes; 32 MiB when nothing can be read; and on this machine the same as
its own sysfs read independently."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("srcdir", "."), "..", "perf"))
from torch2_gemm import llc_bytes  # noqa: E402

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def tree(entries):
    """A cache folder: name -> size text (None: a folder without size; a
    name starting with 'file:' is a plain file)."""
    d = tempfile.mkdtemp()
    for name, size in entries.items():
        if name.startswith("file:"):
            with open(os.path.join(d, name[5:]), "w") as f:
                f.write(size)
            continue
        os.mkdir(os.path.join(d, name))
        if size is not None:
            with open(os.path.join(d, name, "size"), "w") as f:
                f.write(size + "\n")
    return d


# Every entry in front of the L3 in turn: listdir's order is the file system's.
for bad in ("file:uevent", "index9", "index8"):
    entries = {"index0": "48K", "index1": "32K", "index2": "2048K", "index3": "266240K"}
    entries[bad] = {"file:uevent": "DEVTYPE=cache", "index9": None, "index8": "lots"}[bad]
    check(llc_bytes(tree(entries)) == 266240 << 10, f"a 260 MiB L3 beside {bad.replace('file:', '')}")
check(llc_bytes(tree({"index0": "32K", "index3": "96M"})) == 96 << 20, "an M suffix")
check(llc_bytes(tree({"index0": "1048576"})) == 1 << 20, "no suffix: bytes")
check(llc_bytes(tree({"file:uevent": "x"})) == 32 << 20, "nothing readable: 32 MiB")
check(llc_bytes(os.path.join(tempfile.mkdtemp(), "absent")) == 32 << 20, "no folder: 32 MiB")

real = "/sys/devices/system/cpu/cpu0/cache"
if os.path.isdir(real):
    sizes = []
    for e in os.listdir(real):
        try:
            with open(os.path.join(real, e, "size")) as f:
                t = f.read().strip()
            sizes.append(int(t.rstrip("KM")) * {"K": 1 << 10, "M": 1 << 20}.get(t[-1:], 1))
        except (OSError, ValueError):
            pass
    if sizes:
        check(llc_bytes() == max(sizes), f"this machine: {max(sizes) >> 20} MiB, as its sysfs says")
else:
    print("SKIP this machine's sysfs: no cache folder")

if failures:
    print(f"{len(failures)} failed")
    sys.exit(1)

"""AutoMem's counters, process-wide, and their report at exit under
HCOPS_MEM_STATS (on stderr for 1, appended to the file for a path, as
libhcops_mem's own report; AutoMem's lines come first, Python exits before C)."""
import atexit
import os
import sys

from .config import mib

COUNTERS = ("prefetched", "prefetches", "fetched", "fetches", "offloaded", "offloads", "grads_offloaded",
            "wait_ns", "waits", "refused", "failed_moves", "high_water", "pinned")
values = dict.fromkeys(COUNTERS, 0)
info = {"budget": 0, "budget_source": "", "models": 0, "active": False, "in_ddr": 0, "reason": ""}


def add(name, n=1):
    values[name] += n


def pin(delta):
    values["pinned"] += delta
    if values["pinned"] > values["high_water"]:
        values["high_water"] = values["pinned"]


def snapshot():
    out = dict(values)
    out.update(info)
    return out


def report():
    v = values
    if not info["active"]:
        return f"hcops_automem: inactive ({info['reason'] or 'not enabled'})"
    return "\n".join([
        f"hcops_automem: {info['models']} model(s), budget {mib(info['budget'])} ({info['budget_source']}), "
        f"fast-tier high-water {mib(v['high_water'])} pinned",
        f"hcops_automem: prefetched {mib(v['prefetched'])} in {v['prefetches']} moves, fetched on demand "
        f"{mib(v['fetched'])} in {v['fetches']}, offloaded {mib(v['offloaded'])} in {v['offloads']} "
        f"(gradients {mib(v['grads_offloaded'])})",
        f"hcops_automem: compute waited {v['wait_ns'] / 1e6:.1f} ms for {v['waits']} prefetches; "
        f"{v['refused']} moves refused by the budget, {v['failed_moves']} failed; "
        f"{info['in_ddr']} layer(s) larger than the budget kept in DDR"])


_pattern = None


def _read_pattern():
    """'-' for stderr, an absolute file pattern (relative paths are the starting
    directory's, as libhcops_mem takes them), or None."""
    v = os.environ.get("HCOPS_MEM_STATS", "")
    if not v or v == "0":
        return None
    if v == "1":
        return "-"
    if "/" not in v:
        return None  # libhcops_mem says the value is wrong
    return os.path.abspath(v)


def _destination():
    if _pattern in (None, "-"):
        return _pattern
    out, i = [], 0
    while i < len(_pattern):  # %p: the pid of the process that exits; %%: a %
        if _pattern[i] == "%" and i + 1 < len(_pattern) and _pattern[i + 1] in "p%":
            out.append(str(os.getpid()) if _pattern[i + 1] == "p" else "%")
            i += 2
        else:
            out.append(_pattern[i])
            i += 1
    return "".join(out)


def _at_exit():
    dest = _destination()
    if dest is None:
        return
    text = report() + "\n"
    try:
        if dest == "-":
            sys.stderr.write(text)
            sys.stderr.flush()
        else:
            fd = os.open(dest, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o666)
            try:
                os.write(fd, text.encode())
            finally:
                os.close(fd)
    except OSError:
        pass


_registered = False


def register():
    global _registered, _pattern
    if not _registered:
        _registered = True
        _pattern = _read_pattern()
        atexit.register(_at_exit)

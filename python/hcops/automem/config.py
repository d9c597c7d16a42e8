"""AutoMem's settings and its connection to libhcops_mem: the budget
(HCOPS_AUTOMEM_FAST_BYTES, else the fast tier of this thread's domain), the
smallest tensor worth moving, and one-time messages."""
import os
import sys

_said = set()


def verbose():
    try:
        return int(os.environ.get("HCOPS_VERBOSE", "0") or 0) > 0
    except ValueError:
        return False


def info_once(key, text):
    """One `hcops_verbose,info,automem: ...` line on stderr, under HCOPS_VERBOSE."""
    if key in _said or not verbose():
        return
    _said.add(key)
    _write(f"hcops_verbose,info,automem: {text}")


def warn_once(key, text):
    if key in _said:
        return
    _said.add(key)
    _write(f"hcops: warning: automem: {text}")


def _write(line):
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except Exception:  # no stderr to say it on
        pass


_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(text):
    """'16G', '512M', '1073741824' (binary units, an optional trailing B or iB); None if malformed."""
    t = text.strip().upper()
    for suffix in ("IB", "B"):
        if t.endswith(suffix) and len(t) > len(suffix) and t[-len(suffix) - 1] in "KMGT":
            t = t[:-len(suffix)]
            break
    unit = t[-1:] if t[-1:] in "KMGT" else ""
    digits = t[:-1] if unit else t
    if not digits.isdigit():
        return None
    return int(digits) * _UNITS[unit]


def mib(n):
    return f"{n / (1 << 20):.1f} MiB"


def budget(stat):
    """(bytes, where from). The fast tier of the calling thread's domain, capped by
    HCOPS_MEM_FAST_LIMIT; HCOPS_AUTOMEM_FAST_BYTES overrides (a malformed value
    warns once and the default holds)."""
    capacity = stat("fast_capacity")
    limit = stat("fast_limit")
    default = min(capacity, limit) if limit else capacity
    source = "HCOPS_MEM_FAST_LIMIT" if limit and limit < capacity else "the fast tier of this domain"
    text = os.environ.get("HCOPS_AUTOMEM_FAST_BYTES")
    if text:
        value = parse_size(text)
        if value is None:
            warn_once("budget", f"HCOPS_AUTOMEM_FAST_BYTES={text!r} is not a size (e.g. 12G, 512M); "
                                f"using {source}: {mib(default)}")
        else:
            return value, "HCOPS_AUTOMEM_FAST_BYTES"
    return default, source

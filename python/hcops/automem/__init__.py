"""AutoMem: per-layer dataflow between the fast memory tier (HBM, on-package
memory) and DDR for an unmodified PyTorch model, as DiT-HC's Algorithm 1.

    from hcops import automem
    am = automem.enable(model)     # before or after the optimizer is made
    ...train as usual...
    automem.disable(model)         # hooks removed, pinned tensors left where they are

or, with no change to the script: `hcops-run --automem python3 train.py`
(every top-level module whose parameters an optimizer is given).

The first training step after enable() records the order in which the layers
(modules with parameters or buffers, and leaf modules) run forward and
backward and the tensors each uses. From then on, before each layer runs, its
tensors are on the fast tier and the next layer's are being prefetched on
libhcops_mem's helper core; offloads to DDR keep what is pinned within the
budget (HCOPS_AUTOMEM_FAST_BYTES, by default the fast tier of this thread's
domain). Allocations inside a layer's forward and backward go on fast huge
pages, the rest on DDR huge pages (libhcops_mem must be preloaded for that:
hcops-run --automem does it). See doc/memory.md.

Where the machine has one memory kind, enable() installs nothing and says so
under HCOPS_VERBOSE=1.
"""
import weakref

from . import config, stats
from .plan import Event, Plan, make_plan  # noqa: F401  (the planner, for tools and tests)

_shared = None
_enabled = weakref.WeakKeyDictionary()  # model -> AutoMem
_mem = None
_process_pushed = False


def _library():
    global _mem
    if _mem is None:
        try:
            from hcops import mem
        except Exception as e:  # no libhcops_mem at all
            config.warn_once("lib", f"libhcops_mem.so cannot be loaded ({type(e).__name__}: {e}); AutoMem is off")
            return None
        if mem._lib is None:
            config.warn_once("lib", "libhcops_mem.so not found (preload it or set HCOPS_MEM_LIB); AutoMem is off")
            return None
        _mem = mem
    return _mem


def fast_tier():
    """(budget bytes, where it comes from), or (0, reason) when there is no fast tier."""
    mem = _library()
    if mem is None:
        return 0, "libhcops_mem.so not found"
    if mem.stat("fast_capacity") == 0:
        return 0, "no fast memory tier on this machine"
    return config.budget(mem.stat)


def enable(model, *, fast="fast", slow="ddr", min_bytes=None):
    """Applies AutoMem to `model` (an nn.Module); returns its AutoMem object, or
    None when it does nothing here (no fast tier, no libhcops_mem). Enabling
    a model twice returns the first object.

    fast, slow: libhcops_mem placements the tensors move between ("fast" and
    "ddr" by default; e.g. slow="interleave" spreads offloaded layers over
    every DDR node). min_bytes: the smallest tensor moved (default: the
    threshold of libhcops_mem, 1 MiB: smaller ones share pages with other
    allocations)."""
    global _shared, _process_pushed
    import torch
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"automem.enable: an nn.Module is needed, not {type(model).__name__}")
    if model in _enabled:
        return _enabled[model]
    stats.register()  # the report says why when AutoMem stays inactive
    mem = _library()
    if mem is None:
        stats.info["reason"] = "libhcops_mem.so not found"
        return None
    if mem.stat("fast_capacity") == 0:
        source = "no fast memory tier on this machine"
        stats.info["reason"] = source
        config.info_once("no fast tier", f"{source}: AutoMem does nothing (every tensor is on the one memory kind)")
        return None
    budget, source = fast_tier()
    from .runtime import AutoMem, _Shared
    if _shared is None:
        _shared = _Shared(mem, fast, slow, budget)
        stats.info.update(active=True, budget=budget, budget_source=source)
        if not mem.preloaded:
            config.info_once("not preloaded", "libhcops_mem.so is loaded but not preloaded: layers move, "
                                              "but allocations are not placed (preload it, or use hcops-run --automem)")
        else:
            _slow_by_default(mem, slow)
    elif (fast, slow) != (_shared.fast, _shared.slow):
        config.warn_once("targets", f"automem.enable: fast={fast!r}, slow={slow!r} differ from the first model's "
                                    f"({_shared.fast!r}, {_shared.slow!r}), which every model shares")
    if min_bytes is None:
        min_bytes = max(mem.stat("threshold"), 1)
    am = AutoMem(model, _shared, min_bytes)
    _enabled[model] = am
    stats.info["models"] += 1
    # A model freed without disable() gives its share of the budget back.
    weakref.finalize(model, _released, am).atexit = False
    config.info_once(f"enabled {id(am)}", f"enabled on {type(model).__name__}: {len(am.unit_names)} layers, "
                                          f"{len(am.slots)} tensors of {config.mib(sum(s.nbytes for s in am.slots))} "
                                          f"(each >= {config.mib(min_bytes)}), budget {config.mib(budget)} ({source}); "
                                          f"the next training step is recorded")
    return am


def _released(am):
    if am.handles:  # not disabled before
        am.release()


def _slow_by_default(mem, slow):
    """Allocations outside every layer go to DDR huge pages, for every thread
    (pushed once, process-wide; only where there is a fast tier)."""
    global _process_pushed
    if not _process_pushed and mem.preloaded:
        from .runtime import SLOW_POLICY
        mem.push(SLOW_POLICY.replace("ddr", slow, 1), mem.PROCESS)
        _process_pushed = True


def disable(model):
    """Removes AutoMem's hooks from `model`; its tensors stay where they are."""
    global _process_pushed
    am = _enabled.pop(model, None)
    if am is None:
        return
    am.remove()
    if not len(_enabled) and _process_pushed:
        _shared.mem.pop(_shared.mem.PROCESS)
        _process_pushed = False


def enabled(model):
    """The model's AutoMem object, or None."""
    return _enabled.get(model)


def statistics():
    """The counters of the HCOPS_MEM_STATS report, as a dict (bytes, ns, counts)."""
    return stats.snapshot()


def placement(tensor):
    """(policy mode name, policy nodes, nodes of sampled pages) of a tensor's
    storage, as the kernel reports them."""
    from . import pages
    from .runtime import storage_span
    ptr, nbytes = storage_span(tensor)
    mode, nodes = pages.policy_at(ptr)
    return pages.MODE_NAMES.get(mode, str(mode)), nodes, sorted(set(pages.nodes_of(ptr, nbytes)))


def install():
    """For hcops-run --automem: every optimizer made from now on enables AutoMem
    on the top-level modules that own its parameters; from now on, where
    there is a fast tier, allocations go to DDR unless a layer runs (so the
    model, its copies and the data made before the optimizer do not take the
    fast tier first)."""
    from .optimizer_hook import install as _install
    mem = _library()
    if mem is not None and mem.stat("fast_capacity") > 0:
        _slow_by_default(mem, "ddr")
    _install(enable)

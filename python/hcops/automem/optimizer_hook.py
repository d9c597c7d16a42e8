"""hcops-run --automem: AutoMem for unmodified scripts. torch.optim.Optimizer's
constructor is wrapped; each optimizer made then enables AutoMem on the
top-level nn.Modules owning its parameters (a module no other such module
contains). The modules are found once per optimizer among the objects the
garbage collector tracks."""
import functools
import gc

from . import config

_installed = False


def owners(params):
    """The modules to enable for an optimizer's parameters: of the modules
    holding any of them that no other holder contains, the one holding most,
    then any other that holds parameters the chosen ones do not (a module
    whose layers were reused in the model, e.g. a pretrained backbone still
    referenced, is not chosen twice over)."""
    import torch
    Module = torch.nn.Module
    wanted = {id(p) for p in params}
    holders = []
    for obj in gc.get_objects():
        # type(), not isinstance: no __class__ property of a foreign object runs.
        if issubclass(type(obj), Module):
            try:
                held = {id(p) for p in obj.parameters()} & wanted
            except Exception:  # a half-built or odd module: not ours to judge
                continue
            if held:
                holders.append((obj, held))
    contained = {id(m) for h, _ in holders for m in h.modules() if m is not h}
    tops = sorted(((h, held) for h, held in holders if id(h) not in contained), key=lambda x: -len(x[1]))
    chosen, covered = [], set()
    for h, held in tops:
        if held - covered:
            chosen.append(h)
            covered |= held
    return chosen


def install(enable):
    global _installed
    if _installed:
        return
    import torch
    original = torch.optim.Optimizer.__init__

    @functools.wraps(original)
    def __init__(self, params, *args, **kwargs):
        original(self, params, *args, **kwargs)
        if getattr(self, "_hcops_automem", False):
            return
        self._hcops_automem = True
        try:
            plist = [p for g in self.param_groups for p in g["params"]]
            for model in owners(plist):
                enable(model)
        except Exception as e:  # training goes on without AutoMem
            config.warn_once("optimizer", f"not applied to {type(self).__name__}: {type(e).__name__}: {e}")

    torch.optim.Optimizer.__init__ = __init__
    _installed = True

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
    """The top-level modules holding any of `params`: those no other holder contains."""
    import torch
    wanted = {id(p) for p in params}
    holders = []
    for obj in gc.get_objects():
        if isinstance(obj, torch.nn.Module):
            try:
                if any(id(p) in wanted for p in obj.parameters()):
                    holders.append(obj)
            except Exception:  # a half-built or odd module: not ours to judge
                continue
    contained = {id(m) for h in holders for m in h.modules() if m is not h}
    return [h for h in holders if id(h) not in contained]


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

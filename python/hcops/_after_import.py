"""after_import(name, callback): callback() once module `name` has been
imported, whoever imports it (Python has no post-import hook).

A finder first on sys.meta_path notices the module's import, hands back the
spec the rest of sys.meta_path gives, with its loader's exec_module wrapped:
the module's own code runs, then the callback, inside the same import (the
module lock is the importing thread's, so the callback may import it, and
what it imports). The finder leaves sys.meta_path at that import: later
imports do not see it. A module in sys.modules already gets the callback at
once (one still being imported too: call after_import before, not from
within, the module's own import). The callback must not raise: it runs
inside the module's exec_module, and an exception there fails the import
(importlib then drops the module from sys.modules).

hcops.torch.inductor changes inductor's tables this way, after inductor's
lowering module. (hcops-run's start-up hook, python/startup/sitecustomize.py,
has its own copy of the finder for `import torch`: it must not import the
hcops package in a process that never imports torch.)
"""
import _thread
import sys


class _AfterImport:
    """The finder of sys.meta_path for one module."""

    def __init__(self, name, callback):
        self._name = name
        self._callback = callback
        # Per thread: another thread's find_spec("torch") (an availability
        # check) while this one imports must not make this import skip the hook.
        self._busy = _thread._local()

    def find_spec(self, name, path=None, target=None):
        if name != self._name or getattr(self._busy, "on", False):
            return None
        # The spec the rest of sys.meta_path gives; _busy keeps this finder out
        # should one of them import something on the way.
        self._busy.on = True
        try:
            spec = None
            for finder in list(sys.meta_path):
                find = getattr(finder, "find_spec", None) if finder is not self else None
                if find is not None:
                    spec = find(name, path, target)
                    if spec is not None:
                        break
        finally:
            self._busy.on = False
        loader = getattr(spec, "loader", None)
        exec_module = getattr(loader, "exec_module", None)
        if exec_module is None:  # namespace package or legacy loader: nothing to wrap
            return spec

        def exec_then_call(module):
            exec_module(module)  # the module's own import; its errors are the importer's
            # A loader may serve other modules too (a zip's): only this one's
            # import ends the wait.
            if getattr(module, "__name__", None) != self._name:
                return
            # The loader is this spec's own (file finders make one per spec):
            # the module's __loader__ gets its own exec_module back.
            try:
                del loader.exec_module
            except AttributeError:
                pass
            self.remove()
            self._callback()

        # On the instance, not a wrapper object: the module's __loader__ keeps
        # its class (resource readers, pkgutil and inspect look at it).
        loader.exec_module = exec_then_call
        return spec

    def remove(self):
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass


def after_import(name, callback):
    """callback() now if `name` is imported, else right after its import."""
    if name in sys.modules:
        callback()
        return
    sys.meta_path.insert(0, _AfterImport(name, callback))

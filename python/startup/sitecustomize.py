"""hcops-run's start-up hook: loads HCOps' PyTorch operators (`import hcops.torch`)
in every Python process that imports torch, with no change to its code.

hcops-run puts this file's folder first on PYTHONPATH, so Python's site module
imports this module as `sitecustomize` instead of the one it would otherwise
have found (Debian's /usr/lib/python3.11/sitecustomize.py, or the user's).
This module then
- puts a finder first on sys.meta_path that notices the first `import torch`
  (direct or from another package), lets torch's own import run, then runs
  `import hcops.torch` and, under hcops-run --automem, installs AutoMem's
  optimizer hook, and under hcops-run --dist routes torch.distributed's gloo
  and mpi backends to hcops (HCOPS_RUN_HOOKS: `ops`, `automem`, `dist`;
  unset means ops); a failure there prints one `hcops: warning:` line and
  torch goes on with its own kernels. The finder leaves sys.meta_path after
  that first import: later imports do not see it;
- runs the sitecustomize that was shadowed, once, as `sitecustomize`.

A process that never imports torch pays for this module and one string
comparison per imported module: no torch, no hcops import.
"""
import os
import _thread
import sys

_HERE = os.path.dirname(os.path.realpath(__file__))


def _warn(message):
    """One line on stderr; the message of an exception may hold newlines."""
    try:
        sys.stderr.write("hcops: warning: " + " ".join(message.split()) + "\n")
        sys.stderr.flush()
    except Exception:  # no stderr (pythonw, closed descriptor): nothing to say it on
        pass


class _TorchHook:
    """The finder of sys.meta_path: hands back torch's own spec, with its loader's
    exec_module wrapped so that hcops.torch is imported once torch has run.
    (hcops._after_import does this for any module, but it is in the hcops
    package, which a process that never imports torch must not import.)"""

    def __init__(self):
        # Per thread: another thread's find_spec("torch") (an availability
        # check) while this one imports must not make this import skip the hook.
        self._busy = _thread._local()

    def find_spec(self, name, path=None, target=None):
        if name != "torch" or getattr(self._busy, "on", False):
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

        def exec_then_load_ops(module):
            exec_module(module)  # torch's own import; its errors are the caller's
            # A loader may serve other modules too (a zip's): only torch's
            # import ends the wait.
            if getattr(module, "__name__", None) != "torch":
                return
            # The loader is this spec's own (file finders make one per spec):
            # torch.__loader__ gets its own exec_module back.
            try:
                del loader.exec_module
            except AttributeError:
                pass
            self.remove()
            _load_ops()

        # On the instance, not a wrapper object: torch.__loader__ keeps its
        # class (resource readers, pkgutil and inspect look at it).
        loader.exec_module = exec_then_load_ops
        return spec

    def remove(self):
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass


def _hooks():
    """What hcops-run asked for (HCOPS_RUN_HOOKS): 'ops' (the default when
    unset), 'automem', 'dist'."""
    value = os.environ.get("HCOPS_RUN_HOOKS")
    if value is None:
        return {"ops"}
    return {h.strip() for h in value.split(",") if h.strip()}


def _share_threads():
    """A torchrun worker under hcops-run takes its share of the threads.
    torchrun gives each worker OMP_NUM_THREADS=1 only where it is unset, and
    under hcops-run it is set, to all of the rank's cores: N workers would
    each run that many. Where hcops-run set it (HCOPS_RUN_OMP_NUM_THREADS
    equal to it: not the user's) and this is one of LOCAL_WORLD_SIZE > 1
    workers of torchrun (TORCHELASTIC_RUN_ID), torch's pool gets
    OMP_NUM_THREADS / LOCAL_WORLD_SIZE threads, the remainder to the first
    workers (at least 1 each); the workers are not bound to CPUs, as under
    torchrun alone."""
    env = os.environ
    omp = env.get("OMP_NUM_THREADS")
    if not omp or omp != env.get("HCOPS_RUN_OMP_NUM_THREADS") or not env.get("TORCHELASTIC_RUN_ID"):
        return
    try:
        threads, workers = int(omp), int(env.get("LOCAL_WORLD_SIZE", "1"))
        rank = int(env.get("LOCAL_RANK", "0"))
    except ValueError:
        return
    if workers <= 1 or threads <= 1:
        return
    import torch
    share = max(1, threads // workers + (0 <= rank < threads % workers))
    torch.set_num_threads(share)
    if env.get("HCOPS_VERBOSE", "0") not in ("", "0"):
        try:
            sys.stderr.write(f"hcops: torchrun worker {env.get('LOCAL_RANK', '?')} of {workers} under hcops-run: "
                             f"{share} of hcops-run's {threads} threads\n")
        except Exception:
            pass


def _load_ops():
    """import hcops.torch (and hcops.automem, for hcops-run --automem) inside
    torch's import (torch has run; the module lock is this thread's, so
    hcops.torch's own `import torch` gets it)."""
    try:
        _share_threads()
    except Exception as e:  # torch must import whatever hcops does
        _warn(f"torchrun's workers keep hcops-run's OMP_NUM_THREADS: {type(e).__name__}: {e}")
    hooks = _hooks()
    if "ops" in hooks:
        try:
            import hcops.torch  # noqa: F401
        except Exception as e:  # torch must import whatever hcops does
            _warn(f"PyTorch operators not loaded, torch runs its own kernels: import hcops.torch failed: "
                  f"{type(e).__name__}: {e}")
    if "dist" in hooks:
        try:
            import hcops.dist
            hcops.dist.route_cpu_backends()
        except Exception as e:
            _warn(f"torch.distributed keeps its own backends (hcops-run --dist): {type(e).__name__}: {e}")
    if "automem" in hooks:
        try:
            import hcops.automem
            hcops.automem.install()
        except Exception as e:
            _warn(f"AutoMem not applied: {type(e).__name__}: {e}")


def _chain():
    """Runs the sitecustomize this module shadows, as Python would have: the
    first on sys.path outside this folder, its errors reported by site.py."""
    me = sys.modules.get(__name__)
    saved = sys.path[:]
    sys.path[:] = [p for p in saved if os.path.realpath(p or os.curdir) != _HERE]
    del sys.modules[__name__]
    try:
        import sitecustomize  # noqa: F401  (the next one; it replaces this module in sys.modules)
    except ImportError as e:
        if e.name != "sitecustomize":
            raise
    finally:
        sys.path[:] = saved
        # None found, or it failed: this module stays what `import sitecustomize` gives.
        sys.modules.setdefault(__name__, me)


if __name__ == "sitecustomize":
    if "torch" in sys.modules:  # imported before site ran (python -S then site.main())
        _load_ops()
    else:
        sys.meta_path.insert(0, _TorchHook())
    _chain()

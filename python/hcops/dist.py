"""The torch.distributed backend "hcops": collectives and
point-to-point on MPI, driven by libhcops_mpi's progress threads on dedicated
cores while the compute threads keep the others (doc/mpi.md). Built for
PyTorch 2.x (configure --with-torch-python) and for Debian's 1.13: the
module built for the torch running is loaded.

    import hcops.dist
    torch.distributed.init_process_group("hcops")   # under mpirun or srun

The ranks are MPI's: start one process per rank with mpirun (or srun).
torch.distributed's rendezvous then comes from MPI with
init_method="hcops://" (rank 0 opens the TCPStore and tells the others
where through MPI: no MASTER_ADDR, RANK or WORLD_SIZE to set), or from
torch's env:// (which must give the ranks MPI gives, or the backend says
so). CPU tensors only.

Under `hcops-run --dist`, route_cpu_backends() makes a script's
init_process_group("gloo") or ("mpi") (and new_group's) use "hcops", with
hcops:// when the environment names no rendezvous; said once on stderr.
"""
import ctypes
import datetime
import importlib.util
import inspect
import os
import socket
import subprocess
import sys
import time
import traceback
import urllib.parse

import torch
import torch.distributed as dist

from hcops import _builds

__all__ = ["NAME", "extension", "route_cpu_backends"]

NAME = "hcops"
# One build per torch, as hcops.torch's: the one made for the torch running
# is loaded (hcops._builds).
_FILES = ("hcops_c10d_torch2.so", "hcops_c10d_torch1.so")


def _load_mpi_wrapper(module_path):
    """libhcops_mpi.so, loaded globally before the module that needs it: from
    beside the module (installed), else from the build tree's shim/mpi. An
    MPI library loaded globally before it (mpi4py's) keeps the MPI entry
    points, and the backend then runs each operation on the calling thread."""
    here = os.path.dirname(os.path.realpath(module_path))
    for d in (here, os.path.join(here, "..", "..", "mpi", ".libs")):
        lib = os.path.join(d, "libhcops_mpi.so.0")
        if os.path.exists(lib):
            ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)
            return


def _load():
    path = _builds.choose(torch.__version__.split("+")[0], _FILES, "HCOPS_C10D_LIB", "torch_dist", "hcops_c10d")
    _load_mpi_wrapper(path)
    spec = importlib.util.spec_from_file_location("hcops._c10d", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


extension = _load()  # the loaded hcops._c10d


def _create(opts, backend_options=None):
    try:
        backend = extension.create(opts.store, opts.group_rank, opts.group_size,
                                   list(opts.global_ranks_in_group or []))
    except Exception as e:
        # Refused here (torch's ranks are not MPI's), the other ranks would
        # wait for this one in MPI: the job ends instead.
        if opts.group_size > 1:
            _abort_job(type(e), e, e.__traceback__)
        raise
    global _hooked
    if not _hooked and opts.group_size > 1:  # a job of several ranks: see _abort_on_uncaught
        sys.excepthook = _abort_on_uncaught(sys.excepthook)
        _hooked = True
    return backend


_hooked = False


def _abort_on_uncaught(hook):
    """A rank that ends on an uncaught exception aborts the MPI job (after
    the usual traceback): the other ranks would otherwise wait for it in a
    collective, or in MPI_Finalize, until the job's time limit."""
    def excepthook(kind, value, tb):
        try:
            hook(kind, value, tb)
        finally:
            _abort_job(kind, value, tb, printed=True)
    return excepthook


def _abort_job(kind, value, tb, printed=False):
    """The traceback on this process's own stderr (unless `printed` there
    already), then MPI_Abort. init_process_group wraps sys.excepthook in a
    hook that sends what it prints to a buffer, written out only after it
    returns, which MPI_Abort prevents."""
    err = sys.__stderr__
    try:
        if not printed or sys.stderr is not err:
            traceback.print_exception(kind, value, tb, file=err)
        err.write(f"hcops: rank {extension.world()[0]} ended on an uncaught {kind.__name__}: aborting the MPI job\n")
        err.flush()
    except Exception:  # no stderr: abort all the same
        pass
    # The launcher forwards stderr through a pipe that MPI_Abort may close
    # before it has been read.
    time.sleep(0.5)
    extension.abort(1)


if NAME.upper() not in dist.Backend._plugins:  # another copy of this package registered it already
    if "devices" in inspect.signature(dist.Backend.register_backend).parameters:  # 2.x
        dist.Backend.register_backend(NAME, _create, extended_api=True, devices=["cpu"])
    else:  # 1.13: CPU is all it knows of a plugin
        dist.Backend.register_backend(NAME, _create, extended_api=True)


# ---- hcops:// rendezvous: the store's address from MPI ----

def _ipv4_addresses():
    """This host's IPv4 addresses (iproute2's list of them; without it, those
    its name resolves to), loopback last."""
    found = []
    try:
        out = subprocess.run(["ip", "-4", "-o", "addr", "show"], capture_output=True, text=True, timeout=10).stdout
        # "2: eth0    inet 10.0.0.5/24 brd ... scope global eth0 ..."
        found = [field.split("/")[0] for line in out.splitlines()
                 for i, field in enumerate(line.split()) if i > 0 and line.split()[i - 1] == "inet"]
    except (OSError, subprocess.SubprocessError):
        pass
    if not found:
        try:
            found = socket.gethostbyname_ex(socket.gethostname())[2]
        except OSError:
            found = []
    return sorted(set(found), key=lambda a: (a.startswith("127."), a))


def _hcops_rendezvous(url, timeout=datetime.timedelta(minutes=30), **kwargs):
    """torch.distributed's rendezvous handler for hcops://: ranks from
    MPI_COMM_WORLD; rank 0 opens a TCPStore on a free port and broadcasts its
    port and addresses; each other rank connects to the first that answers
    (HCOPS_DIST_ADDR, if set, is the only address rank 0 gives)."""
    rank, size = extension.world()
    try:
        store_rank_size = _rendezvous_store(url, timeout, rank, size)
    except BaseException as e:
        # The other ranks wait for this one in MPI (the broadcast, the
        # communicator's creation): the job ends here instead.
        if size > 1:
            _abort_job(type(e), e, e.__traceback__)
        raise
    yield store_rank_size


def _rendezvous_store(url, timeout, rank, size):
    query = urllib.parse.parse_qs(urllib.parse.urlparse(url).query)
    for key, mine in (("rank", rank), ("world_size", size)):
        given = int(query.get(key, ["-1"])[0])
        if given not in (-1, mine):
            raise ValueError(f"hcops:// rendezvous: {key} {given} given, MPI says {mine} "
                             "(start one process per rank with mpirun or srun)")
    if rank == 0:
        store = dist.TCPStore("0.0.0.0", 0, size, True, timeout, wait_for_workers=False)
        given = os.environ.get("HCOPS_DIST_ADDR")
        addrs = [given] if given else _ipv4_addresses()
        msg = f"{store.port} {socket.gethostname()} {','.join(addrs)}"
        extension.broadcast_bytes(msg.encode(), 0)
    else:
        port, host, addrs = extension.broadcast_bytes(b"", 0).decode().split(" ")
        port = int(port)
        # Loopback only between processes of one host (and then of one
        # network namespace: a refused connection moves on).
        addrs = [a for a in addrs.split(",") if a and (not a.startswith("127.") or host == socket.gethostname())]
        store, errors = None, []
        for addr in addrs:
            try:
                store = dist.TCPStore(addr, port, size, False, min(timeout, datetime.timedelta(seconds=10)))
                break
            except (RuntimeError, OSError) as e:
                errors.append(f"{addr}: {e}")
        if store is None:
            raise RuntimeError(f"hcops:// rendezvous: rank {rank} reached none of rank 0's addresses, port {port} "
                               f"({'; '.join(errors) or 'none given'}); set HCOPS_DIST_ADDR on rank 0")
        store.set_timeout(timeout)
    return store, rank, size


_rdzv = importlib.import_module("torch.distributed.rendezvous")
if "hcops" not in getattr(_rdzv, "_rendezvous_handlers", {}):  # another copy of this package did it
    _rdzv.register_rendezvous_handler("hcops", _hcops_rendezvous)


# ---- hcops-run --dist: gloo and mpi on CPU become hcops ----

_ROUTED = ("gloo", "mpi")
_said = False


def _route(backend, where):
    """The backend to use for `backend`: hcops for gloo or mpi (any case,
    alone or as the CPU part of "cpu:gloo,cuda:nccl"), once said so."""
    global _said
    if backend is None:
        return None
    text = str(backend)
    if ":" in text:  # device:backend pairs: only the CPU's
        parts = []
        for pair in text.split(","):
            dev, _, name = pair.partition(":")
            parts.append(f"{dev}:{NAME}" if dev.strip() == "cpu" and name.strip().lower() in _ROUTED else pair)
        routed = ",".join(parts)
    else:
        routed = NAME if text.lower() in _ROUTED else text
    if routed != text and not _said:
        _said = True
        sys.stderr.write(f"hcops: torch.distributed: {where}(backend={text!r}) runs on {routed!r} "
                         "(hcops-run --dist: MPI, progressed by libhcops_mpi)\n")
        sys.stderr.flush()
    return routed


def route_cpu_backends():
    """Makes init_process_group and new_group use hcops for gloo and mpi
    (hcops-run --dist). init_process_group with no init_method, no store and
    no MASTER_ADDR in the environment rendezvouses by hcops://."""
    if getattr(dist.init_process_group, "_hcops_routed", False):
        return
    init, new = dist.init_process_group, dist.new_group

    def init_process_group(backend=None, init_method=None, *args, **kwargs):
        if backend is None:  # torch's default: gloo for CPU (and nccl for CUDA)
            backend = "cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo"
        routed = _route(backend, "init_process_group")
        store = args[3] if len(args) > 3 else kwargs.get("store")  # (timeout, world_size, rank, store, ...)
        if NAME in routed and init_method is None and store is None and "MASTER_ADDR" not in os.environ:
            init_method = "hcops://"
        return init(routed, init_method, *args, **kwargs)

    def new_group(ranks=None, timeout=None, backend=None, *args, **kwargs):
        return new(ranks, timeout, _route(backend, "new_group"), *args, **kwargs)

    for f, orig in ((init_process_group, init), (new_group, new)):
        f.__wrapped__ = orig
        f.__doc__ = orig.__doc__
        f._hcops_routed = True
    dist.init_process_group = init_process_group
    dist.new_group = new_group

"""The hcops backend in a job whose MPI the application initialized at
MPI_THREAD_SERIALIZED, with libhcops_mpi declining (HCOPS_MPI=0): each
collective is waited for on the calling thread, in turn, and gives gloo's
result; a send or receive, which could deadlock an exchange when waited for
there, is refused with the reason. Run by test_dist_run.sh on 2 ranks."""
import ctypes

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import hcops.dist  # noqa: E402 - loads libhcops_mpi (and MPI) globally

# The application's MPI_Init_thread (through libhcops_mpi's, which records
# the level), before the backend would initialize MPI itself.
MPI_THREAD_SERIALIZED = 2  # Open MPI's value
provided = ctypes.c_int(-1)
rc = ctypes.CDLL(None).MPI_Init_thread(None, None, MPI_THREAD_SERIALIZED, ctypes.byref(provided))
assert rc == 0 and provided.value == MPI_THREAD_SERIALIZED, (rc, provided.value)

dist.init_process_group("hcops", init_method="hcops://")
gloo = dist.new_group(backend="gloo")
rank = dist.get_rank()
failures = []
a, b = torch.arange(1000.0) * (rank + 1), torch.arange(1000.0) * (rank + 1)
works = [dist.all_reduce(a, async_op=True), dist.broadcast(torch.ones(3), 0, async_op=True)]
for w in works:
    w.wait()
dist.all_reduce(b, group=gloo)
if not torch.equal(a, b):
    failures.append("allreduce differs from gloo's")
try:
    if rank == 0:
        dist.send(torch.ones(4), 1)
    else:
        dist.recv(torch.empty(4), 0)
    failures.append("send/recv below MPI_THREAD_MULTIPLE: no error")
except RuntimeError as e:
    if "needs MPI_THREAD_MULTIPLE" not in str(e):
        failures.append(f"send/recv below MPI_THREAD_MULTIPLE: {e}")
dist.barrier()
dist.destroy_process_group()
ctypes.CDLL(None).MPI_Finalize()  # the application's MPI: its to finalize
for f in failures:
    print(f"rank {rank}: FAIL: {f}", flush=True)
if not failures:
    print(f"rank {rank}: serialized: OK", flush=True)

"""An unmodified data-parallel script, as a user writes it for torchrun:
init_process_group("gloo"), DistributedDataParallel, five SGD steps. Run by
test_dist_run.sh under torchrun (gloo) and under mpirun + hcops-run --dist
(the hcops backend, hcops:// rendezvous): rank 0 prints the final
parameters' sums, which must be the same. DIST_SCRIPT_DIE=R: rank R raises
at step 2 (the others must then stop, not wait for it)."""
import os
import sys

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(24, 48), torch.nn.Tanh(), torch.nn.Linear(48, 48), torch.nn.Tanh(),
                            torch.nn.Linear(48, 3))
ddp = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=0.005)
opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
gen = torch.Generator().manual_seed(100 + rank)
die = int(os.environ.get("DIST_SCRIPT_DIE", "-1"))
for step in range(5):
    if step == 2 and rank == die:
        raise RuntimeError(f"rank {rank} fails on purpose at step {step}")
    ddp(torch.randn(32, 24, generator=gen)).square().mean().backward()
    opt.step()
    opt.zero_grad()
# One write per line: the ranks share stdout (unbuffered under torchrun),
# and print() writes its pieces one by one.
if rank == 0:
    sys.stdout.write("sums " + " ".join(f"{p.detach().double().sum().item():.17g}" for p in model.parameters()) + "\n")
sys.stdout.write(f"rank {rank}: backend {dist.get_backend()}\n")
sys.stdout.flush()
dist.barrier()
dist.destroy_process_group()

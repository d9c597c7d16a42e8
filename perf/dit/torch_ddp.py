#!/usr/bin/env python3
"""One DDP DiT training run on torch.distributed (a rank of perf/dit/
torch_ddp_bench.py's jobs): torch.nn.parallel.DistributedDataParallel over
the model of dit.py, AdamW, synthetic batches seeded per rank.

  mpirun -np 2 $PYTHON torch_ddp.py --backend hcops --model S --batch 4 --steps 4

--backend gloo | hcops | none: none runs the hcops process group but DDP
communicates nothing (a communication hook that hands each bucket back):
the step's compute alone, from which the others' exposed communication is
measured. Ranks and rendezvous come from MPI (hcops://: rank 0's TCPStore
address broadcast by MPI), for gloo too, so that every variant starts alike.
Rank 0 prints one JSON line: step_times (s), losses, param_sum, grad_bytes,
allreduce_s (the gradients' allreduce alone, in DDP's bucket sizes, 3
times), backend."""
import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dit import CONFIGS, DiT, alphas_cumprod, diffusion_loss, make_batch  # noqa: E402

import hcops.dist  # noqa: E402,F401 - the backend and the hcops:// rendezvous


def no_communication(state, bucket):
    fut = torch.futures.Future()
    fut.set_result(bucket.buffer())
    return fut


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backend", choices=("gloo", "hcops", "none"), required=True)
    ap.add_argument("--model", choices=sorted(CONFIGS), default="S")
    ap.add_argument("--batch", type=int, default=4, help="samples per rank")
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--bucket-mb", type=float, default=25.0, help="DDP's bucket_cap_mb (its default: 25)")
    ap.add_argument("--pin", action="store_true",
                    help="bind rank r to CPU r (two 'nodes' on one machine: each orted would bind to CPU 0)")
    args = ap.parse_args()
    if args.pin:
        r = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[r % len(os.sched_getaffinity(0))]})
    torch.set_num_threads(args.threads)
    dist.init_process_group("hcops" if args.backend == "none" else args.backend, init_method="hcops://")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DiT(*CONFIGS[args.model])
    ddp = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=args.bucket_mb)
    if args.backend == "none":
        ddp.register_comm_hook(None, no_communication)
    opt = torch.optim.AdamW(ddp.parameters(), lr=1e-4)
    abar = alphas_cumprod()
    gen = torch.Generator().manual_seed(1000 + rank)
    times, losses = [], []
    for step in range(args.warmup + args.steps):
        batch = make_batch(gen, args.batch)
        t0 = time.perf_counter()
        loss = diffusion_loss(ddp, abar, batch)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        dt = time.perf_counter() - t0
        if step >= args.warmup:
            times.append(dt)
            losses.append(loss.item())
    # The gradients' allreduce alone, as DDP's buckets (the same backend, no
    # compute beside it): what overlap hides, or what is left exposed.
    comm = []
    if args.backend != "none":
        flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
        cap = max(1, int(args.bucket_mb * 2**20 / 4))
        for _ in range(3):
            dist.barrier()
            t0 = time.perf_counter()
            works = [dist.all_reduce(b, async_op=True) for b in flat.split(cap)]
            for w in works:
                w.wait()
            comm.append(time.perf_counter() - t0)
    psum = sum(p.detach().double().sum().item() for p in model.parameters())
    nbytes = sum(p.numel() * p.element_size() for p in model.parameters())
    if rank == 0:
        print(json.dumps({"backend": args.backend, "step_times": times, "losses": losses, "param_sum": psum,
                          "grad_bytes": nbytes, "ranks": dist.get_world_size(), "allreduce_s": comm}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Data-parallel DiT training with mpi4py, gradients averaged as PyTorch DDP does.

Every rank holds the whole DiT of dit.py (same seed, then broadcast from rank 0)
and trains on a batch shard of its own (a generator seeded per rank). Gradients
are bucketed in reverse parameter order (the order backward produces them) into
flat float32 buffers of about --bucket-mb MB; a backward hook on each parameter
copies its gradient into its bucket and, once a bucket is complete, starts an
MPI_Iallreduce on it (buckets are launched in index order, the same on every
rank, as MPI requires), so communication overlaps the rest of backward. After
backward every request is waited for, the sums divided by the number of ranks
and copied into .grad, and AdamW steps. Under LD_PRELOAD of libhcops_mpi.so the
Iallreduces are driven by its progress thread while backward computes.

  mpirun -np 2 $PYTHON ddp.py --model tiny --batch 4 --steps 3 --warmup 1 --threads 1 --json
  mpirun -np 2 hcops-run --mpi $PYTHON ddp.py --model S --batch 8 --steps 5

Rank 0 prints per-step times and losses (the mean over ranks), or with --json one
JSON line: step_times, median_s, losses, wait_times (s spent in the final
Waitall), buckets, param_checksum and in_sync (every rank ends with the same
parameters).
"""
import argparse
import hashlib
import json
import os
import statistics
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dit import CONFIGS, DiT, alphas_cumprod, diffusion_loss, make_batch  # noqa: E402

from mpi4py import MPI  # noqa: E402  (initializes MPI, MPI_THREAD_MULTIPLE by default)


class GradBuckets:
    """DDP-style gradient averaging: per-bucket MPI Iallreduce started from backward hooks."""

    def __init__(self, params, comm, bucket_bytes):
        self.comm = comm
        self.world = comm.Get_size()
        self.buckets = []
        current, size = [], 0
        for p in reversed(params):  # backward produces the last layers' gradients first
            nbytes = p.numel() * p.element_size()
            if current and size + nbytes > bucket_bytes:
                self.buckets.append(current)
                current, size = [], 0
            current.append(p)
            size += nbytes
        if current:
            self.buckets.append(current)
        self.flat, self.slots = [], {}
        for b, members in enumerate(self.buckets):
            offset = 0
            for p in members:
                self.slots[p] = (b, offset, p.numel())
                offset += p.numel()
            self.flat.append(torch.zeros(offset, dtype=torch.float32))
        self.hooks = [p.register_hook(self._hook(p)) for p in params]
        self.reset()

    def reset(self):
        for f in self.flat:
            f.zero_()
        self.filled = [0] * len(self.buckets)
        self.requests = [None] * len(self.buckets)
        self.next_launch = 0

    def _hook(self, p):
        b, offset, n = self.slots[p]

        def hook(grad):
            self.flat[b][offset:offset + n].copy_(grad.reshape(-1))
            self.filled[b] += 1
            self._launch_ready()
            return None  # .grad gets the local gradient; finish() overwrites it

        return hook

    def _start(self, b):
        self.requests[b] = self.comm.Iallreduce(MPI.IN_PLACE, self.flat[b].numpy(), op=MPI.SUM)

    def _launch_ready(self):
        # In bucket order only: every rank must start its collectives in the same order.
        while self.next_launch < len(self.buckets) and self.filled[self.next_launch] == len(self.buckets[self.next_launch]):
            self._start(self.next_launch)
            self.next_launch += 1

    def finish(self):
        """After backward: starts what a missing gradient held back, waits, averages into .grad."""
        while self.next_launch < len(self.buckets):  # parameters without a gradient count as zero
            self._start(self.next_launch)
            self.next_launch += 1
        t0 = time.perf_counter()
        MPI.Request.Waitall(self.requests)
        waited = time.perf_counter() - t0
        for b, members in enumerate(self.buckets):
            self.flat[b].div_(self.world)
            for p in members:
                _, offset, n = self.slots[p]
                avg = self.flat[b][offset:offset + n].view_as(p)
                if p.grad is None:
                    p.grad = avg.clone()
                else:
                    p.grad.copy_(avg)
        return waited


def train_step(model, opt, abar, batch, grads, comm):
    loss = diffusion_loss(model, abar, batch)
    opt.zero_grad(set_to_none=True)
    grads.reset()
    loss.backward()  # the hooks start the bucket allreduces meanwhile
    waited = grads.finish()
    opt.step()
    mean_loss = np.array([loss.item()], dtype=np.float64)
    comm.Allreduce(MPI.IN_PLACE, mean_loss, op=MPI.SUM)
    return float(mean_loss[0]) / comm.Get_size(), waited


def run(args, comm):
    rank = comm.Get_rank()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)  # the same initial model everywhere...
    model = DiT(*CONFIGS[args.model])
    model.train()
    with torch.no_grad():  # ...and rank 0's, to be sure
        for p in model.parameters():
            comm.Bcast(p.data.numpy(), root=0)
    torch.manual_seed(args.seed + 1000 * (rank + 1))  # label dropout: per rank
    params = [p for p in model.parameters() if p.requires_grad]
    grads = GradBuckets(params, comm, int(args.bucket_mb * 2**20))
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0)
    gen = torch.Generator().manual_seed(args.seed * 7919 + rank + 1)  # this rank's data shard
    abar = alphas_cumprod()
    step_times, losses, wait_times = [], [], []
    for i in range(args.warmup + args.steps):
        data = make_batch(gen, args.batch)
        comm.Barrier()
        start = time.perf_counter()
        loss, waited = train_step(model, opt, abar, data, grads, comm)
        elapsed = time.perf_counter() - start
        if i >= args.warmup:
            step_times.append(elapsed)
            losses.append(loss)
            wait_times.append(waited)
    with torch.no_grad():
        checksum = float(sum(p.double().sum() for p in model.parameters()))
        digest = hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in model.parameters())).hexdigest()
    digests = comm.allgather(digest)
    return {
        "model": args.model,
        "batch": args.batch,
        "ranks": comm.Get_size(),
        "threads": args.threads,
        "bucket_mb": args.bucket_mb,
        "buckets": len(grads.buckets),
        "params": sum(p.numel() for p in params),
        "step_times": step_times,
        "median_s": statistics.median(step_times),
        "losses": losses,
        "wait_times": wait_times,
        "param_checksum": checksum,
        "in_sync": all(d == digests[0] for d in digests),
        "mpi_thread_level": MPI.Query_thread(),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", choices=sorted(CONFIGS), default="S")
    ap.add_argument("--batch", type=int, default=8, help="samples per rank")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", type=int, default=torch.get_num_threads(), help="torch threads per rank")
    ap.add_argument("--bucket-mb", type=float, default=4.0, help="gradient bucket size (MB)")
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true", help="rank 0 prints one JSON line instead of a summary")
    args = ap.parse_args()
    if args.steps < 1:
        ap.error("--steps must be at least 1")
    if args.bucket_mb <= 0:
        ap.error("--bucket-mb must be positive")
    comm = MPI.COMM_WORLD
    result = run(args, comm)
    if comm.Get_rank() != 0:
        return 0
    if args.json:
        print(json.dumps(result), flush=True)
    else:
        for i, (dt, loss, w) in enumerate(zip(result["step_times"], result["losses"], result["wait_times"])):
            print(f"step {i}: {dt:.3f} s  loss {loss:.6f}  (waited {w * 1e3:.1f} ms for gradients)")
        print(f"DiT-{args.model} batch {args.batch}/rank x {result['ranks']} ranks, {args.threads} threads, "
              f"{result['buckets']} buckets of <= {args.bucket_mb:g} MB: median {result['median_s']:.3f} s/step"
              f"{'' if result['in_sync'] else '  (RANKS OUT OF SYNC)'}", flush=True)
    return 0 if result["in_sync"] else 1


if __name__ == "__main__":
    sys.exit(main())

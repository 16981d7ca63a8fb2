#!/usr/bin/env python3
"""A small PyTorch DDP job over Gloo (CPU), for aml-shim's demo and tests.

Reads only the torch env:// contract (RANK, WORLD_SIZE, MASTER_ADDR, ...),
as any unchanged training script does. Each rank fits the same linear model
to its own shard of a synthetic regression problem, prints its loss as it
falls, and ends with a digest of its final weights: every rank must print
the same digest, or DDP did not keep the replicas in sync.

    mpirun -np 4 aml-shim -- /usr/bin/python3 examples/train_ddp.py
"""
import argparse
import datetime
import hashlib
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--backend", default="gloo")
    p.add_argument("--local_rank", type=int, default=None,
                   help="legacy torch.distributed.launch argument (aml-shim --local-rank-arg)")
    args = p.parse_args()

    dist.init_process_group(args.backend, timeout=datetime.timedelta(seconds=120))
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ["LOCAL_RANK"])
    if args.local_rank is not None and args.local_rank != local_rank:
        sys.exit(f"--local_rank={args.local_rank} disagrees with LOCAL_RANK={local_rank}")

    torch.manual_seed(0)  # same initial weights everywhere (DDP broadcasts anyway)
    true_w = torch.tensor([[2.0, -3.0, 0.5, 1.0]])
    gen = torch.Generator().manual_seed(1000 + rank)  # each rank its own shard
    x = torch.randn(256, 4, generator=gen)
    y = x @ true_w.T + 0.7 + 0.01 * torch.randn(256, 1, generator=gen)

    # NCCL needs CUDA tensors: each rank on the GPU of its LOCAL_RANK.
    device = torch.device("cpu")
    if args.backend == "nccl":
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
        x, y = x.to(device), y.to(device)
    model = DDP(torch.nn.Linear(4, 1).to(device))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    first = last = None
    for epoch in range(args.epochs):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        first = loss.item() if first is None else first
        last = loss.item()
        if epoch % 5 == 0 or epoch == args.epochs - 1:
            print(f"rank {rank}/{world} epoch {epoch:3d} loss {last:.6f}", flush=True)

    params = torch.cat([t.detach().flatten() for t in model.parameters()]).cpu()
    digest = hashlib.sha256(params.numpy().tobytes()).hexdigest()[:16]
    print(f"rank {rank}/{world} local_rank {local_rank} node {os.environ.get('NODE_RANK')} "
          f"loss {first:.4f} -> {last:.6f} weights {digest}", flush=True)
    dist.barrier()
    dist.destroy_process_group()
    # Halved at least: a model that trains (6 epochs divide it by about 8,
    # the default 60 by far more); one that does not, stays.
    if not last < first / 2:
        sys.exit(f"rank {rank}: loss did not fall ({first} -> {last})")


if __name__ == "__main__":
    main()

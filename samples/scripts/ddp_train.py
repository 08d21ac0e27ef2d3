"""A tiny PyTorch DDP job: every rank fits y = 3x + 2 on its own shard of the data, over gloo.

It reads nothing but the env torchrun (or kubetrain, for plain ``python3``) provides —
MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE — so it proves the rendezvous kubetrain renders.
Each rank prints where it met the others (MASTER_ADDR and the address DNS gave for it) and,
at the end, one ``KUBETRAIN-RESULT {json}`` line: its first and last loss and the weights.
DDP averages gradients every step, so every rank must end with the same weights.
With ``--logdir``, each rank also writes its loss at every step for TensorBoard, as the run
``rank<N>`` under that directory (see tfevents.py beside this script).
"""

import argparse
import json
import os
import socket
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--logdir", default=None, help="write TensorBoard scalars here, one run per rank")
    args = parser.parse_args()

    master = os.environ["MASTER_ADDR"]
    print(f"resolving {master}: {socket.gethostbyname(master)}", flush=True)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    print(f"rank {rank}/{world} on {socket.gethostname()} joined the rendezvous at {master}", flush=True)

    torch.manual_seed(0)  # the same initial weights everywhere; DDP also broadcasts rank 0's
    model = DistributedDataParallel(torch.nn.Linear(1, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    shard = torch.Generator().manual_seed(1000 + rank)
    x = torch.rand(64, 1, generator=shard) * 2 - 1
    y = 3 * x + 2

    writer = None
    if args.logdir:
        import tfevents

        writer = tfevents.Writer(os.path.join(args.logdir, f"rank{rank}"))
    losses = []
    for step in range(args.steps):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if writer is not None:
            writer.scalar("loss", loss.item(), step)
        if step % 50 == 0:
            print(f"rank {rank} step {step} loss {loss.item():.6f}", flush=True)
    if writer is not None:
        writer.close()

    weight, bias = model.module.weight.item(), model.module.bias.item()
    result = {"rank": rank, "world": world, "firstLoss": losses[0], "finalLoss": losses[-1], "weight": weight, "bias": bias}
    print("KUBETRAIN-RESULT " + json.dumps(result), flush=True)
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())

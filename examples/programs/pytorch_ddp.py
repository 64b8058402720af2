"""Data-parallel training with torch.distributed (DDP, gloo backend, CPU).

Contract (PyTorch's, as torchrun and Kubeflow's PyTorchJob set it): MASTER_ADDR and
MASTER_PORT name rank 0's rendezvous store; WORLD_SIZE is the number of processes and RANK
this one's place among them. MASTER_ADDR may be a Cairn DNS name: it is waited for here until
it resolves (the master replica's task may start a moment after this one), and printed.

It trains a small MLP on scikit-learn's bundled digits (1797 8x8 images, no download), each
rank reading its own shard through DistributedSampler, gradients averaged by DDP. Every rank
prints one line per epoch with the loss averaged over all ranks ("epoch 3 loss 0.4123");
rank 0 ends with "done: ..." giving the first and last loss and the accuracy. Exits 0.

    MASTER_ADDR=localhost MASTER_PORT=29500 WORLD_SIZE=1 RANK=0 python3 pytorch_ddp.py --epochs 5
"""

import argparse
import os
import sys
from datetime import timedelta

import torch
import torch.distributed as dist
from sklearn.datasets import load_digits
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

from cairn_net import resolve


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.1)
    args = parser.parse_args()

    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    os.environ["MASTER_ADDR"] = resolve(os.environ["MASTER_ADDR"])
    # Several ranks may share a host's cores: one thread each keeps them from fighting.
    torch.set_num_threads(1)
    torch.manual_seed(0)  # the same initial weights on every rank (DDP also broadcasts rank 0's)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=120))
    print(f"rank {rank} of {world} joined through {os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}", flush=True)

    digits = load_digits()
    data = TensorDataset(torch.tensor(digits.data / 16.0, dtype=torch.float32), torch.tensor(digits.target))
    sampler = DistributedSampler(data, num_replicas=world, rank=rank, shuffle=True, seed=0)
    loader = DataLoader(data, batch_size=args.batch_size, sampler=sampler)
    model = DistributedDataParallel(nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10)))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss(reduction="sum")

    losses = []
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        total = torch.zeros(2)  # summed loss, examples seen
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            (loss / len(y)).backward()
            optimizer.step()
            total += torch.tensor([loss.item(), len(y)])
        dist.all_reduce(total)
        losses.append(float(total[0] / total[1]))
        print(f"epoch {epoch} loss {losses[-1]:.4f}", flush=True)

    with torch.no_grad():
        correct = torch.tensor([(model(x).argmax(1) == y).sum().item() for x, y in loader]).sum()
        seen = torch.tensor([float(len(sampler))])
        counts = torch.stack([correct.float(), seen[0]])
        dist.all_reduce(counts)
    if rank == 0:
        print(f"done: world {world} epochs {args.epochs} loss {losses[0]:.4f} -> {losses[-1]:.4f} "
              f"accuracy {float(counts[0] / counts[1]):.3f}", flush=True)
    dist.barrier()
    # Every rank is done with the others. Tearing the process group and DDP's reducer down
    # in their destructors can hang at exit with gloo (seen on torch 1.13), so leave now.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()

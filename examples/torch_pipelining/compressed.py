"""plain.py with pipecodec at every stage boundary (--policy: docs/POLICY.md):
    torchrun --nproc-per-node 4 compressed.py [--policy TEXT] [--schedule 1f1b] [--quick]"""
import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.distributed.pipelining import Schedule1F1B, ScheduleGPipe

import pipecodec.torch as pct

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "torch_pipeline"))
import fashion_mnist  # noqa: E402


def stage_module(rank, world, hidden):
    torch.manual_seed(rank)
    width = 784 if rank == 0 else hidden
    if rank == world - 1:
        return torch.nn.Linear(width, 10)
    return torch.nn.Sequential(torch.nn.Linear(width, hidden), torch.nn.ReLU())


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--schedule", choices=("gpipe", "1f1b"), default="gpipe")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--chunks", type=int, default=4, help="micro-batches per batch")
    ap.add_argument("--quick", action="store_true", help="one epoch of 6000 samples, hidden width 128")
    ap.add_argument("--policy", default="fwd=quant:bits=4+aqsgd; bwd=quant:bits=8; warmup=1epoch")
    args = ap.parse_args()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(1)
    hidden, limit = (128, 6000) if args.quick else (512, 0)
    epochs = 1 if args.quick else args.epochs
    x_train, y_train = map(torch.from_numpy, fashion_mnist.load("train", limit))
    x_test, y_test = map(torch.from_numpy, fashion_mnist.load("t10k", limit // 3))

    module = stage_module(rank, world, hidden)
    example = torch.zeros(args.batch // args.chunks, 784 if rank == 0 else hidden)
    stage = pct.CodecPipelineStage(module, rank, world, torch.device("cpu"), input_args=example,
                                   policy=args.policy, sample_ids=True, samples=len(x_train))
    Schedule = ScheduleGPipe if args.schedule == "gpipe" else Schedule1F1B
    schedule = Schedule(stage, n_microbatches=args.chunks, loss_fn=torch.nn.functional.cross_entropy)
    opt = torch.optim.SGD(module.parameters(), lr=0.05, momentum=0.9)
    start, step = time.time(), 0
    for epoch in range(epochs):
        order = torch.randperm(len(x_train), generator=torch.Generator().manual_seed(epoch))
        for first in range(0, len(order) - args.batch + 1, args.batch):
            batch = order[first:first + args.batch]
            opt.zero_grad()
            stage.set_step(step, epoch)
            losses = []
            if rank == 0:
                schedule.step(x_train[batch], batch)
            else:
                schedule.step(target=y_train[batch] if rank == world - 1 else None, losses=losses)
            opt.step()
            step += 1
            if rank == world - 1 and step % 100 == 0:
                print(f"epoch {epoch} step {step}: loss {sum(map(float, losses)) / len(losses):.3f}", flush=True)

    module.eval()
    correct = 0
    for first in range(0, len(x_test) - args.batch + 1, args.batch):
        x, y = x_test[first:first + args.batch], y_test[first:first + args.batch]
        if rank == 0:
            schedule.eval(x, torch.arange(len(x)))  # (sample ids: unused at inference)
        elif rank == world - 1:
            correct += int((schedule.eval(target=y).argmax(1) == y).sum())
        else:
            schedule.eval()
    if rank == world - 1:
        tested = len(x_test) // args.batch * args.batch
        print(f"{os.path.basename(__file__)}: test accuracy {correct / tested:.4f}; {step} steps in "
              f"{time.time() - start:.1f} s", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

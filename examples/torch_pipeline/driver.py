"""What plain_pipeline.py and pipeline.py share: options, data, the stage processes, the
training loop, evaluation and output. A runtime adds only its Link: how a stage boundary
carries tensors (the tensors themselves, or pipecodec payloads).

The model and training are those of the C++ demo (examples/pipeline_train/train_main.hpp):
S stages of dense layers 784-H-...-H-10 (ReLU, softmax cross-entropy), SGD with momentum,
the training set reshuffled every epoch from the seed, the last partial batch dropped, test
accuracy with compressed and with plain inference. Each stage runs in its own process and
talks to its neighbours through torch.distributed (gloo, CPU). Stages run one after the other,
one batch at a time, as in the C++ demo: no micro-batches.

A Link is built in each stage process as Link(opts, stage, peers, samples): `peers` maps each
neighbour stage to (boundary, (max rows, width)), boundary b joining stages b and b + 1;
`samples` is the training set size (sample ids run below it). It has
  send(x, to, d, at) -> bytes sent   x: rows x width float32, d: "fwd" (activations, to stage + 1)
                                     or "bwd" (gradients, to stage - 1)
  recv(out, src, d, at)              fills `out` with what stage `src` sent
  set_inference(mode)                "compress" | "plain", before each evaluation
`at` holds what both ends of a boundary agree on for one batch (the keyword arguments of
pipecodec's Sender.encode): step, epoch, training, sample_ids (the rows' indices in their data
set; AQ-SGD keys its per-sample state by them) and seed.
"""
import argparse
import os
import sys
import tempfile
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F

import fashion_mnist
from model import DenseStage

# Sizes that depend on --quick: the C++ demo's full size, or a few seconds of training for tests.
FULL = dict(hidden=1024, train=0, test=0)
QUICK = dict(hidden=128, train=6000, test=2000)


def parse_args(prog, takes_policy, argv=None):
    p = argparse.ArgumentParser(prog=prog, description="Pipeline-parallel training of an MLP on "
                                "Fashion-MNIST, one process per stage (examples/pipeline_train in PyTorch).")
    p.add_argument("--policy", default="", help="pipecodec policy text as the C++ demo's, e.g. "
                   "'fwd=topk:ratio=0.1,scope=row' (default: everything plain fp32)")
    p.add_argument("--name", default="run", help="name of the run in the output")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--hidden", type=int, help="width H of the hidden layers (default 1024; --quick 128)")
    p.add_argument("--stages", type=int, default=4, help="S stages: S processes, S - 1 boundaries")
    p.add_argument("--batch", type=int, default=100)
    p.add_argument("--train", type=int, help="the first N training samples (0: all 60000; --quick 6000)")
    p.add_argument("--test", type=int, help="the first N test samples (0: all 10000; --quick 2000)")
    p.add_argument("--lr", type=float, default=0.02)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--seed", type=int, default=1, help="initialisation and data-order seed (default 1)")
    p.add_argument("--data", default=fashion_mnist.DEFAULT_DIR, help="Fashion-MNIST directory")
    p.add_argument("--log-every", type=int, default=100, help="a progress line every N steps (0: none)")
    p.add_argument("--quick", action="store_true", help="seconds of training, for tests: sizes as above")
    p.add_argument("--init-method", help="run one stage in this process, joining the others at this "
                   "torch.distributed init method (e.g. tcp://10.231.1.1:29500); its rank comes from "
                   "OMPI_COMM_WORLD_RANK or RANK, so that a launcher such as mpirun (tools/links) starts "
                   "one process per stage (default: this process spawns every stage)")
    o = p.parse_args(argv)
    for key, value in (QUICK if o.quick else FULL).items():
        if getattr(o, key) is None:
            setattr(o, key, value)
    if not 2 <= o.stages <= 64 or min(o.epochs, o.hidden, o.batch) <= 0:
        p.error("need 2 <= --stages <= 64 and positive --epochs, --hidden, --batch")
    if o.policy and not takes_policy:
        p.error("this runtime sends the tensors as they are; run pipeline.py for --policy")
    return o


class StageProcess:
    """Stage `s` of the pipeline: its layer, optimiser, data and Link."""

    def __init__(self, opts, s, Link):
        self.opts, self.s, self.last = opts, s, s == opts.stages - 1
        self.train_set = fashion_mnist.load("train", opts.train, opts.data)
        self.test_set = fashion_mnist.load("t10k", opts.test, opts.data)
        self.widths = [784] + [opts.hidden] * (opts.stages - 1) + [10]  # widths[s]: stage s's input
        self.layer = DenseStage(self.widths[s], self.widths[s + 1], not self.last, opts.seed + s)
        self.sgd = torch.optim.SGD(self.layer.parameters(), lr=opts.lr, momentum=opts.momentum)
        peers = {p: (min(s, p), (opts.batch, self.widths[max(s, p)]))
                 for p in (s - 1, s + 1) if 0 <= p < opts.stages}
        self.link = Link(opts, s, peers, len(self.train_set[1]))
        self.sent = np.zeros(4)  # forward bytes and elements, backward bytes and elements

    def send(self, x, to, d, at):
        i = 0 if d == "fwd" else 2
        self.sent[i:i + 2] += (self.link.send(x, to, d, at), x.numel())

    def batch(self, data, ids, at, train):
        """One batch forward, and backward when training. Returns the summed loss and the count of
        correct predictions (on the last stage; 0 on the others)."""
        s = self.s
        if s == 0:
            x = torch.from_numpy(data[0][ids.numpy()])
        else:
            x = torch.empty(len(ids), self.widths[s])
            self.link.recv(x, s - 1, "fwd", at)
            x.requires_grad_(train)
        with torch.set_grad_enabled(train):
            y = self.layer(x)
        loss, correct = 0.0, 0
        if self.last:
            labels = torch.from_numpy(data[1][ids.numpy()])
            mean_loss = F.cross_entropy(y, labels)  # gradient (softmax - one-hot) / rows, as in C++
            loss, correct = mean_loss.item() * len(ids), int((y.argmax(1) == labels).sum())
        else:
            self.send(y.detach(), s + 1, "fwd", at)
        if not train:
            return loss, correct
        if self.last:
            mean_loss.backward()
        else:
            dy = torch.empty_like(y)
            self.link.recv(dy, s + 1, "bwd", at)
            y.backward(dy)
        if s > 0:
            self.send(x.grad, s - 1, "bwd", at)
        self.sgd.step()
        self.sgd.zero_grad()
        return loss, correct

    def log(self, *args):
        if self.last:  # the stage that sees the loss speaks for the pipeline
            print(*args, flush=True)

    def train(self):
        """Returns the payload bytes and elements sent by this stage in the last epoch."""
        o, n = self.opts, len(self.train_set[1])
        steps = n // o.batch  # the last partial batch is dropped
        order = np.arange(n)
        t0 = time.perf_counter()
        for e in range(o.epochs):
            epoch_start = self.sent.copy()
            np.random.default_rng(o.seed * 1000 + e).shuffle(order)  # the same order in every process
            epoch_stats, window = np.zeros(2), 0.0
            for b in range(steps):
                step = e * steps + b
                ids = torch.from_numpy(order[b * o.batch:(b + 1) * o.batch])
                at = dict(step=step, epoch=e, training=True, sample_ids=ids, seed=step)
                loss, correct = self.batch(self.train_set, ids, at, train=True)
                epoch_stats += (loss, correct)
                window += loss
                if o.log_every and (b + 1) % o.log_every == 0:
                    self.log(f"  epoch {e + 1}/{o.epochs} step {b + 1}/{steps}  loss "
                             f"{window / (o.log_every * o.batch):.4f}  {time.perf_counter() - t0:.1f} s")
                    window = 0.0
            self.log(f"  epoch {e + 1}/{o.epochs}  loss {epoch_stats[0] / (steps * o.batch):.4f}  train acc "
                     f"{epoch_stats[1] / (steps * o.batch):.4f}  {time.perf_counter() - t0:.1f} s")
        return self.sent - epoch_start, steps

    def evaluate(self, mode):
        """Test accuracy with the boundaries in inference mode `mode` (on the last stage)."""
        self.link.set_inference(mode)
        n, correct = len(self.test_set[1]), 0
        for b in range(0, n, self.opts.batch):
            ids = torch.arange(b, min(b + self.opts.batch, n))
            correct += self.batch(self.test_set, ids, dict(training=False, sample_ids=ids), train=False)[1]
        return correct / n


def run_stage(s, prog, opts, Link, init_method):
    # One BLAS thread per stage process, as the C++ demo pins OpenBLAS (its main.cpp says why).
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=init_method, rank=s, world_size=opts.stages)
    try:
        stage = StageProcess(opts, s, Link)
    except ValueError as e:  # a policy or codec the endpoints reject: the message says why
        print(f"{prog}: stage {s}: {e}", file=sys.stderr, flush=True)
        sys.exit(2)
    stage.log(f"[{opts.name}] {prog}: {len(stage.train_set[1])} train / {len(stage.test_set[1])} test "
              f"samples, {opts.stages} stages 784-{opts.hidden}-...-10 (a process each), batch {opts.batch}, "
              f"{opts.epochs} epochs, seed {opts.seed}\n  policy: '{opts.policy}'")
    dist.barrier()
    t0 = time.perf_counter()
    last_epoch, steps = stage.train()
    train_s = time.perf_counter() - t0
    acc = [stage.evaluate(mode) for mode in ("compress", "plain")]
    sent = last_epoch
    dist.all_reduce(torch.from_numpy(sent))  # every stage's bytes, for the last stage that prints them
    fwd_bits, bwd_bits = (8 * sent[i] / sent[i + 1] if sent[i + 1] else 0 for i in (0, 2))
    # Bits and bytes over the last epoch (past any warm-up), as the C++ demo counts them.
    stage.log(f"[{opts.name}] {prog}: test acc {acc[0]:.4f} (compressed inference) {acc[1]:.4f} "
              f"(plain inference); {fwd_bits:.2f} / {bwd_bits:.2f} bits per element fwd / bwd; "
              f"{(sent[0] + sent[2]) / steps:.0f} bytes per step; policy '{opts.policy}'; "
              f"{train_s:.1f} s training, {time.perf_counter() - t0:.1f} s in all")
    dist.destroy_process_group()


def main(Link, takes_policy):
    """Parses the command line and runs one process per stage, each with its own Link."""
    prog = os.path.basename(sys.argv[0])
    opts = parse_args(prog, takes_policy)
    if opts.init_method:
        rank = os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("RANK"))
        if rank is None:
            sys.exit(f"{prog}: --init-method needs the stage's rank in OMPI_COMM_WORLD_RANK or RANK")
        run_stage(int(rank), prog, opts, Link, opts.init_method)
        return
    with tempfile.TemporaryDirectory() as tmp:
        try:
            mp.spawn(run_stage, (prog, opts, Link, "file://" + os.path.join(tmp, "rendezvous")), nprocs=opts.stages)
        except mp.ProcessExitedException as e:  # a stage exited with an error it printed
            sys.exit(e.exit_code or 1)

"""The language-model task: a byte-level GPT of 4 blocks pre-trained uncompressed on `fortunes`,
then fine-tuned on the KJV Bible as a 4-stage torch.distributed.pipelining pipeline whose
boundaries carry pipecodec payloads (pipecodec.torch.CodecPipelineStage), as the seed paper
fine-tunes its language models with compressed activations and gradients.

    python train.py pretrain --out DIR                 # one process, no compression: DIR/pretrained.pt
    torchrun --nproc-per-node 4 train.py finetune --pretrained DIR/pretrained.pt --policy TEXT --out R.json
    python train.py stats --pretrained DIR/pretrained.pt   # the boundary activations' statistics

Fine-tuning reports the validation loss and perplexity of the fine-tuned weights evaluated
without compression (in one process, after the run) and through the pipeline with the policy's
inference mode."""
import argparse
import json
import math
import os
import sys
import time

import torch
import torch.distributed as dist

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import corpus  # noqa: E402
from model import Stage, loss_fn  # noqa: E402

STAGES = 4


def options():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=("pretrain", "finetune", "stats"))
    ap.add_argument("--out", help="pretrain: a directory; finetune: the result JSON file")
    ap.add_argument("--pretrained", help="the pre-trained checkpoint (finetune, stats)")
    ap.add_argument("--policy", default="", help="pipecodec policy (docs/POLICY.md); empty: plain fp32")
    ap.add_argument("--steps", type=int, default=None, help="training steps (pretrain 2000, finetune 300)")
    ap.add_argument("--batch", type=int, default=16, help="sequences per step")
    ap.add_argument("--chunks", type=int, default=4, help="micro-batches per step")
    ap.add_argument("--context", type=int, default=128)
    ap.add_argument("--width", type=int, default=128)
    ap.add_argument("--lr", type=float, default=None, help="AdamW learning rate (pretrain 3e-3, finetune 1e-3)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--visits", type=int, default=4, help="finetune: times each training window is seen")
    ap.add_argument("--eval-batches", type=int, default=16, help="validation batches of --batch sequences")
    ap.add_argument("--log-every", type=int, default=50)
    return ap.parse_args()


def build(args):
    return [Stage(i, STAGES, args.width, context=args.context) for i in range(STAGES)]


def run_all(stages, x):
    for s in stages:
        x = s(x)
    return x


def eval_starts(val, args):
    """Fixed validation offsets: the same batches for every run."""
    g = torch.Generator().manual_seed(12345)
    return torch.randint(0, len(val) - args.context - 1, (args.eval_batches, args.batch), generator=g)


@torch.no_grad()
def validate(stages, val, args):
    """Mean validation loss of the model run whole in this process, without compression."""
    for s in stages:
        s.eval()
    losses = [float(loss_fn(run_all(stages, x), y)) for x, y in
              (corpus.batch(val, starts, args.context) for starts in eval_starts(val, args))]
    return sum(losses) / len(losses)


def pretrain(args):
    torch.manual_seed(args.seed)
    train, val = corpus.splits(corpus.fortunes())
    stages = build(args)
    params = [p for s in stages for p in s.parameters()]
    steps, lr = args.steps or 2000, args.lr or 3e-3
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.01)
    warm = max(1, steps // 20)  # linear warm-up, then cosine decay
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * 0.5 * (1 + math.cos(math.pi * s / steps)))
    g, start = torch.Generator().manual_seed(args.seed), time.time()
    for step in range(steps):
        for s in stages:
            s.train()
        x, y = corpus.batch(train, torch.randint(0, len(train) - args.context - 1, (args.batch,), generator=g),
                            args.context)
        loss = loss_fn(run_all(stages, x), y)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        if args.log_every and (step + 1) % args.log_every == 0:
            left = (time.time() - start) / (step + 1) * (steps - step - 1)
            print(f"pretrain step {step + 1}/{steps}: loss {loss.item():.3f}, {left:.0f} s left", flush=True)
    fortunes_val = validate(stages, val, args)
    bible_val = validate(stages, corpus.splits(corpus.bible())[1], args)
    os.makedirs(args.out, exist_ok=True)
    torch.save({"stages": [s.state_dict() for s in stages], "args": vars(args)},
               os.path.join(args.out, "pretrained.pt"))
    print(f"pretrained: validation loss {fortunes_val:.4f} on fortunes, {bible_val:.4f} on the Bible "
          f"(before fine-tuning); {time.time() - start:.0f} s", flush=True)


def finetune(args):
    import pipecodec.torch as pct
    from torch.distributed.pipelining import ScheduleGPipe

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    assert dist.get_world_size() == STAGES, f"run with {STAGES} processes (torchrun --nproc-per-node {STAGES})"
    torch.set_num_threads(1)
    train, val = corpus.splits(corpus.bible())
    module = Stage(rank, STAGES, args.width, context=args.context)
    module.load_state_dict(torch.load(args.pretrained)["stages"][rank])
    mb = args.batch // args.chunks
    example = torch.zeros(mb, args.context, dtype=torch.long) if rank == 0 else torch.zeros(mb, args.context, args.width)
    # The training samples: a pool of windows of the Bible drawn once per seed, each visited
    # about --visits times in random order (as epochs would); a sample's id is its index in the
    # pool, so AQ-SGD and per-sample EF keep state per (window, position) row.
    steps, lr = args.steps or 300, args.lr or 1e-3
    g, order = torch.Generator().manual_seed(args.seed), torch.Generator().manual_seed(args.seed + 1)
    pool = torch.randint(0, len(train) - args.context - 1, (max(args.batch, steps * args.batch // args.visits),),
                         generator=g)
    stage = pct.CodecPipelineStage(module, rank, STAGES, torch.device("cpu"), input_args=example,
                                   policy=args.policy or "fwd=plain; bwd=plain", sample_ids=True, samples=len(pool))
    sent = [0, 0]  # payload bytes this stage sent forward and backward

    def count(direction, role, payload, *_):
        if role == "sent":
            sent[direction == "bwd"] += payload.numel()

    stage.codec.on_payload = count
    schedule = ScheduleGPipe(stage, n_microbatches=args.chunks, loss_fn=loss_fn)
    opt = torch.optim.AdamW(module.parameters(), lr=lr, weight_decay=0.01)
    start = time.time()
    for step in range(steps):
        module.train()
        ids = torch.randperm(len(pool), generator=order)[:args.batch]
        x, y = corpus.batch(train, pool[ids], args.context)
        stage.set_step(step)
        opt.zero_grad()
        losses = []
        if rank == 0:
            schedule.step(x, ids)
        else:
            schedule.step(target=y if rank == STAGES - 1 else None, losses=losses)
        torch.nn.utils.clip_grad_norm_(module.parameters(), 1.0)
        opt.step()
        if rank == STAGES - 1 and args.log_every and (step + 1) % args.log_every == 0:
            left = (time.time() - start) / (step + 1) * (steps - step - 1)
            print(f"finetune step {step + 1}/{steps}: loss {sum(v.item() for v in losses) / len(losses):.3f}, "
                  f"{left:.0f} s left", flush=True)
    train_seconds = time.time() - start
    stage.codec.on_payload = None  # bytes per step count training steps only

    module.eval()  # the policy's inference mode at every boundary
    piped = []
    for starts in eval_starts(val, args):
        x, y = corpus.batch(val, starts, args.context)
        if rank == 0:
            schedule.eval(x, torch.zeros(len(x), dtype=torch.long))
        elif rank == STAGES - 1:
            piped.append(float(loss_fn(schedule.eval(target=y), y)))
        else:
            schedule.eval()
    states = [None] * STAGES
    dist.all_gather_object(states, module.state_dict())
    counts = [None] * STAGES
    dist.all_gather_object(counts, sent)
    if rank == 0:
        stages = build(args)
        for s, sd in zip(stages, states):
            s.load_state_dict(sd)
        piped_loss = [None]
        dist.recv_object_list(piped_loss, src=STAGES - 1)
        plain = validate(stages, val, args)
        result = {"policy": args.policy, "seed": args.seed, "steps": steps, "val_loss": plain,
                  "val_ppl": math.exp(plain), "val_loss_pipeline_inference": piped_loss[0],
                  "fwd_bytes_per_step": sum(c[0] for c in counts) / steps,
                  "bwd_bytes_per_step": sum(c[1] for c in counts) / steps,
                  "fp32_bytes_per_step": (STAGES - 1) * args.batch * args.context * args.width * 4,
                  "train_seconds": train_seconds}
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
        print(f"[{args.policy or 'fp32'}] seed {args.seed}: validation loss {plain:.4f} (perplexity "
              f"{math.exp(plain):.2f}), {piped_loss[0]:.4f} through the pipeline; "
              f"{result['fwd_bytes_per_step']:.0f} / {result['bwd_bytes_per_step']:.0f} payload bytes per step "
              f"fwd / bwd (fp32 {result['fp32_bytes_per_step']}); {train_seconds:.0f} s", flush=True)
    elif rank == STAGES - 1:
        dist.send_object_list([sum(piped) / len(piped)], dst=0)
    dist.destroy_process_group()


@torch.no_grad()
def stats(args):
    """Per boundary: the activation's per-channel magnitude on Bible validation batches (max |x|
    per channel, its median over channels, the channels whose max exceeds 6x that median), the
    whole tensor's kurtosis and absmax / rms: why rotation and outlier keeping matter here."""
    ckpt = torch.load(args.pretrained)
    stages = build(args)
    for s, sd in zip(stages, ckpt["stages"]):
        s.load_state_dict(sd)
        s.eval()
    val = corpus.splits(corpus.bible())[1]
    acts = [[] for _ in range(STAGES - 1)]
    for starts in eval_starts(val, args):
        x, _ = corpus.batch(val, starts, args.context)
        for i, s in enumerate(stages[:-1]):
            x = s(x)
            acts[i].append(x.reshape(-1, x.shape[-1]))
    rows = []
    for i, a in enumerate(acts):
        a = torch.cat(a)
        chan_max = a.abs().amax(0)
        med = float(chan_max.median())
        outliers = (chan_max > 6 * med).nonzero().flatten().tolist()
        z = (a - a.mean()) / a.std()
        rows.append({"boundary": i, "channels": a.shape[1], "median_channel_absmax": med,
                     "max_channel_absmax": float(chan_max.max()), "outlier_channels": outliers,
                     "kurtosis": float((z ** 4).mean()), "absmax_over_rms": float(a.abs().max() / a.pow(2).mean().sqrt())})
        print(f"boundary {i}: channel absmax median {med:.2f}, max {float(chan_max.max()):.2f}; "
              f"{len(outliers)} outlier channels (> 6x median) {outliers[:8]}; kurtosis {rows[-1]['kurtosis']:.1f}; "
              f"absmax/rms {rows[-1]['absmax_over_rms']:.1f}", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    a = options()
    {"pretrain": pretrain, "finetune": finetune, "stats": stats}[a.command](a)

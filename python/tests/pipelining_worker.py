"""One rank of a small torch.distributed.pipelining run over gloo, for test_pipecodec_torch.py:
an MLP split into --world stages (one per rank), trained for --steps steps of --chunks
micro-batches with ScheduleGPipe or Schedule1F1B. With --policy the stages are
pipecodec.torch.CodecPipelineStage and every end records what it encoded or decoded; without,
plain PipelineStage. Writes OUT/rank<R>.pt: {"losses": [...], "records": [...]}.
    python pipelining_worker.py --rank R --world N --port P --out DIR [--policy TEXT] ..."""
import argparse
import os

import torch
import torch.distributed as dist
from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe

WIDTH, BATCH, CLASSES = 24, 16, 5


def stage_module(rank: int, world: int) -> torch.nn.Module:
    torch.manual_seed(100 + rank)  # the same weights in every run
    if rank == world - 1:
        return torch.nn.Linear(WIDTH, CLASSES)
    return torch.nn.Sequential(torch.nn.Linear(WIDTH, WIDTH), torch.nn.Tanh())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--world", type=int, required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--policy", default=None)
    ap.add_argument("--schedule", choices=("gpipe", "1f1b"), default="gpipe")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--chunks", type=int, default=4)
    ap.add_argument("--sample-ids", action="store_true")
    a = ap.parse_args()
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(a.port))
    dist.init_process_group("gloo", rank=a.rank, world_size=a.world)
    torch.set_num_threads(1)

    module = stage_module(a.rank, a.world)
    example = torch.zeros(BATCH // a.chunks, WIDTH)
    if a.policy is None:
        stage = PipelineStage(module, a.rank, a.world, torch.device("cpu"), input_args=example)
    else:
        import pipecodec.torch as pct
        stage = pct.CodecPipelineStage(module, a.rank, a.world, torch.device("cpu"), input_args=example,
                                       policy=a.policy, sample_ids=a.sample_ids, samples=4 * BATCH)
        records = []
        stage.codec.on_payload = lambda d, role, payload, t, at, ids: records.append(dict(
            direction=d, role=role, payload=payload.clone(), tensor=t.detach().clone(), at=dict(at),
            ids=None if ids is None else ids.clone()))
    losses = []
    Schedule = ScheduleGPipe if a.schedule == "gpipe" else Schedule1F1B
    schedule = Schedule(stage, n_microbatches=a.chunks,
                        loss_fn=lambda out, y: torch.nn.functional.cross_entropy(out, y))
    opt = torch.optim.SGD(module.parameters(), lr=0.1)
    gen = torch.Generator().manual_seed(7)
    for step in range(a.steps):
        x = torch.randn(BATCH, WIDTH, generator=gen)
        y = torch.randint(0, CLASSES, (BATCH,), generator=gen)
        ids = torch.arange(BATCH, dtype=torch.int64) + (step % 2) * BATCH  # samples seen again at step 2
        if a.policy is not None:
            stage.set_step(step)
        opt.zero_grad()
        if a.rank == 0:
            schedule.step(x, ids) if a.sample_ids else schedule.step(x)
        elif a.rank == a.world - 1:
            mb_losses = []
            schedule.step(target=y, losses=mb_losses)
            losses.append([float(v) for v in mb_losses])
        else:
            schedule.step()
        opt.step()
    torch.save({"losses": losses, "records": records if a.policy is not None else []},
               os.path.join(a.out, f"rank{a.rank}.pt"))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

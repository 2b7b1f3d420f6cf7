#!/usr/bin/env python3
"""torch.topk on the same cases as bench/cuda_topk, for the issue's ">= 10x faster" comparison.

Times torch.topk(x.abs(), k) (tensor scope: the flattened tensor; row scope: dim=1) with CUDA
events, median of REPS runs after two warm-ups, each run after an L2 flush. With the JSON of
bench/cuda_topk (--benchmark_out) as its argument it also prints pipecodec's time and the
speed-up. torch.topk returns values and indices but not a payload, so it does less work than
the codec. Exits 0 with a message, measuring nothing, when torch or a CUDA device is absent.

  python3 bench/torch_topk.py [cuda_topk.json]
  PIPECODEC_BENCH_LOG2N (default 28), PIPECODEC_BENCH_REPS (default 15)
"""
import json
import os
import sys


def main():
    try:
        import torch
    except ImportError:
        print("torch_topk: torch is not installed, nothing measured (skipped)")
        return 0
    if not torch.cuda.is_available():
        print("torch_topk: torch sees no CUDA device, nothing measured (skipped)")
        return 0
    log2n = int(os.environ.get("PIPECODEC_BENCH_LOG2N", "28"))
    reps = max(1, int(os.environ.get("PIPECODEC_BENCH_REPS", "15")))
    ours = {}
    if len(sys.argv) > 1 and os.path.exists(sys.argv[1]):
        for b in json.load(open(sys.argv[1])).get("benchmarks", []):
            if "error_message" not in b:
                ours[b["name"].split("/iterations")[0].replace("/manual_time", "")] = b["real_time"]
    dev = torch.device("cuda")
    flush = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
    cases = []
    for dt, name in ((torch.float32, "fp32"), (torch.bfloat16, "bf16")):
        for r in ("0.001", "0.01", "0.1"):
            cases.append(("tensor/2^%d/%s/k=%s" % (log2n, name, r), dt, (1 << log2n,), float(r)))
        for r in ("0.01", "0.1"):
            cases.append(("row/4096x16384/%s/k=%s" % (name, r), dt, (4096, 16384), float(r)))
    print("| case | torch.topk (us) | pipecodec encode (us) | speed-up |")
    print("|---|---:|---:|---:|")
    for label, dt, shape, ratio in cases:
        x = (torch.rand(shape, device=dev) * 8 - 4).to(dt)
        unit = shape[-1]
        k = max(1, min(unit, int(ratio * unit + 0.5)))
        op = (lambda: torch.topk(x.abs(), k, dim=1)) if len(shape) == 2 else (lambda: torch.topk(x.abs(), k))
        for _ in range(2):
            op()
        times = []
        for i in range(reps):
            flush.fill_(i & 0xFF)
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            op()
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop) * 1e3)
        times.sort()
        t = times[len(times) // 2]
        mine = ours.get(label)
        print("| %s | %.1f | %s | %s |" % (label, t, "%.1f" % mine if mine else "-",
                                          "%.1fx" % (t / mine) if mine else "-"))
        del x
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())

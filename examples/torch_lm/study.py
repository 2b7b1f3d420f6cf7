"""The language-model study (docs/LM.md): pre-train once (train.py pretrain), then fine-tune every
row with every seed as a 4-stage pipeline (train.py finetune under torchrun), then a table with
95 % intervals and a verdict per finding. Resumable: a finished run leaves OUT/runs/ROW-sSEED.json
and is skipped by a rerun. Prints progress with the time left, and ends with the summary.
    python study.py [--out DIR] [--seeds 1,2,3] [--only ROW,...] [--pretrain-steps N] [--steps N]"""
import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
from verdicts import interval, verdict  # noqa: E402  (the MLP study's statistics)

# name: policy (docs/POLICY.md). Fine-tuning compresses from its first step: the model is
# pre-trained; AQ-SGD still sends a sample's first visit whole.
ROWS = {
    "fp32": "",
    "q8": "fwd=quant:bits=8; bwd=quant:bits=8",
    "q4": "fwd=quant:bits=4; bwd=quant:bits=4",
    "q2": "fwd=quant:bits=2; bwd=quant:bits=2",
    "q2-fwd": "fwd=quant:bits=2",
    "q2-bwd": "bwd=quant:bits=2",
    "q2-aqsgd": "fwd=quant:bits=2+aqsgd",
    "q2-rot-fwd": "fwd=quant:bits=2,rotate=hadamard",
    "mxfp4-fwd": "fwd=mx:format=fp4_e2m1",
    "topk10": "fwd=topk:ratio=0.1,scope=row; bwd=topk:ratio=0.1,scope=row,mask=shared",
    "topk10-ef": "fwd=topk:ratio=0.1,scope=row+ef(scope=sample); bwd=topk:ratio=0.1,scope=row,mask=shared",
}
MARGIN = 0.02  # nats of validation loss: "equal" means within this (about 2 % of perplexity)
# Written down before the first study run. (claim, kind, row A, row B), on the validation loss
# of the fine-tuned weights (lower is better), per-seed differences d = A - B:
#   worse: A's loss higher (reproduced if the interval is above 0, refuted if below 0);
#   better: the other way round; equal: |d| <= MARGIN (reproduced if the interval lies within
#   +-MARGIN, refuted if wholly outside); not_better: reproduced if the interval's bottom is at
#   least -MARGIN, refuted if its top is below -MARGIN; otherwise not distinguishable from noise
#   (tools/verdicts.py, on B - A).
FINDINGS = [
    ("8-bit activations and gradients cost nothing", "equal", "q8", "fp32"),
    ("4-bit activations and gradients cost nothing", "equal", "q4", "fp32"),
    ("2-bit activations and gradients hurt", "worse", "q2", "fp32"),
    ("gradients need gentler compression than activations (2 bits)", "worse", "q2-bwd", "q2-fwd"),
    ("AQ-SGD beats direct 2-bit activations", "better", "q2-aqsgd", "q2-fwd"),
    ("AQ-SGD at 2 bits recovers the uncompressed loss", "equal", "q2-aqsgd", "fp32"),
    ("Hadamard rotation improves direct 2-bit activations", "better", "q2-rot-fwd", "q2-fwd"),
    ("MXFP4 activations cost nothing", "equal", "mxfp4-fwd", "fp32"),
    ("TopK 10 % (shared-mask gradients) hurts", "worse", "topk10", "fp32"),
    ("EF does not beat plain TopK 10 %", "not_better", "topk10-ef", "topk10"),
]
def rows_table(runs, seeds):
    """Per row with runs: (row, policy, seeds, mean loss, half-width, pipeline-inference loss,
    payload bytes over fp32 bytes, both directions)."""
    table = []
    for row, policy in ROWS.items():
        rs = [runs[row, s] for s in seeds if (row, s) in runs]
        if rs:
            m, _, h = interval([r["val_loss"] for r in rs])
            table.append((row, policy, len(rs), m, h, statistics.fmean(r["val_loss_pipeline_inference"] for r in rs),
                          statistics.fmean((r["fwd_bytes_per_step"] + r["bwd_bytes_per_step"]) /
                                           (2 * r["fp32_bytes_per_step"]) for r in rs)))
    return table


def plot(table, path):
    """Validation loss against payload bytes (gnuplot; skipped without it)."""
    data = "".join(f"{ratio} {m} {0 if math.isnan(h) else h} {row}\n" for row, _, _, m, h, _, ratio in table)
    script = f"""set terminal pngcairo size 1000,650
set output "{path}"
set title "byte-level GPT fine-tuned on the KJV Bible through a 4-stage pipeline\\nvalidation loss, mean over seeds with 95 % intervals"
set xlabel "payload bytes / fp32 bytes (both directions)"
set ylabel "validation loss (nats per byte)"
set logscale x 2
set grid
plot "-" using 1:2:3 with yerrorbars pt 7 notitle, "-" using 1:2:4 with labels left offset 1,0 font ",9" notitle
{data}e
{data}e
"""
    if shutil.which("gnuplot"):
        subprocess.run(["gnuplot"], input=script, text=True, check=True)


def summarize(runs, seeds):
    """The results table and the findings table (markdown) from {(row, seed): result}."""
    lines = ["| row | policy | seeds | validation loss (95 % interval) | perplexity | through the pipeline | "
             "payload / fp32 bytes |", "|---|---|---|---|---|---|---|"]
    for row, policy, n, m, h, piped, ratio in rows_table(runs, seeds):
        lines.append(f"| {row} | `{policy or 'plain fp32'}` | {n} | {m:.4f} +- {h:.4f} | {math.exp(m):.3f} | "
                     f"{piped:.4f} | {ratio:.3f} |")
    lines += ["", "| finding [kind] | A | B | A - B, nats (95 % interval) | seeds | verdict |",
              "|---|---|---|---|---|---|"]
    for claim, kind, a, b in FINDINGS:
        d = [runs[a, s]["val_loss"] - runs[b, s]["val_loss"] for s in seeds if (a, s) in runs and (b, s) in runs]
        if not d:
            continue
        m, _, h = interval(d)
        # Lower loss is better: the verdict reads the interval of B - A.
        lines.append(f"| {claim} [{kind}] | {a} | {b} | {m:+.4f} ({m - h:+.4f}, {m + h:+.4f}) | {len(d)} | "
                     f"{verdict(kind, -(m + h), -(m - h), MARGIN)} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="lm-study")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--only", default="", help="comma-separated rows (default: all)")
    ap.add_argument("--pretrain-steps", type=int, default=2000)
    ap.add_argument("--steps", type=int, default=300, help="fine-tuning steps per run")
    ap.add_argument("--extra", default="", help="more train.py arguments, for every run (smoke tests)")
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    rows = args.only.split(",") if args.only else list(ROWS)
    unknown = set(rows) - set(ROWS)
    if unknown:
        sys.exit(f"study: unknown rows {sorted(unknown)}")
    os.makedirs(os.path.join(args.out, "runs"), exist_ok=True)
    train = os.path.join(HERE, "train.py")
    extra = args.extra.split()
    ckpt = os.path.join(args.out, "pretrained.pt")
    if not os.path.exists(ckpt):
        print(f"study: pre-training ({args.pretrain_steps} steps on fortunes)", flush=True)
        subprocess.run([sys.executable, train, "pretrain", "--out", args.out, "--steps", str(args.pretrain_steps),
                        "--log-every", "200", *extra], check=True)
        subprocess.run([sys.executable, train, "stats", "--pretrained", ckpt,
                        "--out", os.path.join(args.out, "activation-stats.json"), *extra], check=True)
    todo = [(r, s) for s in seeds for r in rows if not os.path.exists(os.path.join(args.out, "runs", f"{r}-s{s}.json"))]
    print(f"study: {len(todo)} fine-tuning runs to do, {len(rows) * len(seeds) - len(todo)} done before", flush=True)
    start = time.time()
    for i, (row, seed) in enumerate(todo):
        result = os.path.join(args.out, "runs", f"{row}-s{seed}.json")
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "4", train,
               "finetune", "--pretrained", ckpt, "--policy", ROWS[row], "--seed", str(seed), "--steps",
               str(args.steps), "--log-every", "0", "--out", result + ".tmp", *extra]
        with tempfile.TemporaryDirectory() as tmp:  # torchrun leaves its log directories in TMPDIR
            out = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "TMPDIR": tmp})
        if out.returncode != 0:
            sys.exit(f"study: {row} seed {seed} failed:\n{out.stdout[-3000:]}{out.stderr[-5000:]}")
        os.replace(result + ".tmp", result)
        done = time.time() - start
        print(f"[{i + 1}/{len(todo)}] {row} seed {seed}: validation loss {json.load(open(result))['val_loss']:.4f}; "
              f"{done / (i + 1) * (len(todo) - i - 1):.0f} s left", flush=True)
    runs = {}
    for row in ROWS:
        for s in seeds:
            path = os.path.join(args.out, "runs", f"{row}-s{s}.json")
            if os.path.exists(path):
                with open(path) as f:
                    runs[row, s] = json.load(f)
    summary = summarize(runs, seeds)
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write(summary)
    plot(rows_table(runs, seeds), os.path.join(args.out, "lm-loss.png"))
    print(summary, end="")


if __name__ == "__main__":
    main()

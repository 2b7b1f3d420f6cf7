"""The language-model task at a tiny size (tools/test): pre-training lowers the loss, and the
study's runner fine-tunes two rows through the 4-stage pipeline, writes its table and findings,
and skips finished runs when rerun. About 60 s on 2 cores, most of it processes importing torch."""
import json
import os
import shutil
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("pipecodec.torch")
if shutil.which("bible") is None or not os.path.isdir("/usr/share/games/fortunes"):
    pytest.skip("needs Debian's fortunes and bible-kjv (tools/setup-deps)", allow_module_level=True)

HERE = os.path.dirname(os.path.abspath(__file__))
TINY = ["--extra", "--eval-batches 2 --batch 8"]


def study(out, *args):
    run = subprocess.run([sys.executable, os.path.join(HERE, "study.py"), "--out", str(out), "--seeds", "1",
                          "--only", "fp32,q2", "--pretrain-steps", "30", "--steps", "8", *TINY, *args],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return run.stdout


def test_tiny_study(tmp_path):
    out = study(tmp_path)
    assert "pretrained: validation loss" in out and "[2/2] q2 seed 1" in out
    fp32, q2 = (json.load(open(tmp_path / "runs" / f"{r}-s1.json")) for r in ("fp32", "q2"))
    assert fp32["val_loss"] < 4.0 and q2["val_loss"] < 4.0  # below a uniform guess's ln(256) = 5.55
    # 2-bit payloads in both directions: about 1/16 of fp32 plus scales and headers
    assert q2["fwd_bytes_per_step"] < 0.1 * q2["fp32_bytes_per_step"]
    assert abs(fp32["fwd_bytes_per_step"] / fp32["fp32_bytes_per_step"] - 1) < 0.01
    assert "| 2-bit activations and gradients hurt [worse] | q2 | fp32 |" in (tmp_path / "results.md").read_text()
    assert "0 fine-tuning runs to do, 2 done before" in study(tmp_path)
    stats = json.load(open(tmp_path / "activation-stats.json"))
    assert [b["boundary"] for b in stats] == [0, 1, 2]

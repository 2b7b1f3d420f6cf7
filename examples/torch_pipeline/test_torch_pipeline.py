"""The torch pipeline in --quick mode (a few seconds of training, 4 stages of width 128): the
plain runtime and pipeline.py with TopK and with TopK + AQ-SGD must train to accuracies a broken
codec would not reach (chance is 10 %), and pipecodec must cost fewer than 30 changed lines.

The floors leave about 0.1 below the lowest of seeds 1-3 measured on the development machine
(plain 0.81-0.83; topk compressed / plain inference 0.76 / 0.59-0.73; aqsgd 0.69-0.72 / 0.74-0.79).
Each run takes 10-15 s on 2 cores, most of it four processes importing torch."""
import os
import re
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
if not torch.distributed.is_available() or not torch.distributed.is_gloo_available():
    pytest.skip("torch.distributed with gloo is not available", allow_module_level=True)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import count_diff  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SUMMARY = re.compile(r"test acc ([0-9.]+) \(compressed inference\) ([0-9.]+) \(plain inference\)")


def quick_run(runtime, *args):
    """Runs `runtime` --quick; returns the test accuracies with compressed and plain inference."""
    out = subprocess.run([sys.executable, os.path.join(HERE, runtime), "--quick", "--log-every", "0", *args],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    found = SUMMARY.search(out.stdout)
    assert found, out.stdout
    return float(found[1]), float(found[2])


def test_plain_runtime():
    compressed, plain = quick_run("plain_pipeline.py")
    assert compressed == plain and plain > 0.7


@pytest.mark.parametrize("policy, floors", [
    ("fwd=topk:ratio=0.1,scope=row", (0.65, 0.45)),
    ("fwd=topk:ratio=0.1,scope=row+aqsgd(store=host,dtype=fp16); warmup=1epoch", (0.6, 0.6)),
])
def test_pipecodec_runtime(policy, floors):
    pytest.importorskip("pipecodec")
    compressed, plain = quick_run("pipeline.py", "--policy", policy)
    assert compressed > floors[0] and plain > floors[1]


def test_pipecodec_changes_fewer_than_30_lines():
    assert count_diff.changed_lines(count_diff.unified_diff()) < 30

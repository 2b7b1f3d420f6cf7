"""Smoke test: the side-by-side benchmark runs --quick to the end and prints its tables."""
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")
pytest.importorskip("pipecodec")

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "side_by_side.py")


def test_quick_run_prints_the_tables(tmp_path):
    out = tmp_path / "table.md"
    r = subprocess.run([sys.executable, SCRIPT, "--quick", "--out", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "| shape | comparison | method |" in r.stdout
    assert "| call (64 fp32 elements) | us per call |" in r.stdout
    # every compressor appears once per quick shape, and --out holds what stdout printed
    assert r.stdout.count("| pipecodec topk:ratio=0.1,scope=row |") == 2
    # torch's float8 casts where torch has them (2.1 and later)
    import torch
    assert r.stdout.count("| pipecodec fp8:format=e4m3,group=128 |") == (2 if hasattr(torch, "float8_e4m3fn") else 0)
    assert out.read_text() == r.stdout

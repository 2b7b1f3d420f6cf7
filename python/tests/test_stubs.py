"""The committed type stubs describe the built extension: nanobind's stubgen run on it must
give the committed _core.pyi, block for block. The committed stub comes from a CUDA build,
so a host build lacks only its CUDA-only names."""
import pathlib
import re
import subprocess
import sys

import pytest

import pipecodec as pc

CUDA_ONLY = {"class CudaSender", "class CudaReceiver", "def cuda_encode_into", "def cuda_encode_shared_into",
             "def cuda_decode_into", "def cuda_decode_shared_into", "def cuda_status"}


def blocks(text):
    """Top-level statements of a stub, keyed by their first words ('class Spec', 'def info')."""
    out, key = {}, "header"
    for line in text.splitlines():
        if line and not line[0].isspace() and not line.startswith(('"""', ")")):
            key = re.match(r"(class \w+|def \w+|\w+)", line).group(1)
        out[key] = out.get(key, "") + line + "\n"
    return {k: re.sub(r"has_cuda: bool = \w+", "has_cuda: bool", v).rstrip() for k, v in out.items()}


def test_core_stub_is_current(tmp_path):
    pytest.importorskip("nanobind.stubgen")
    out = tmp_path / "_core.pyi"
    subprocess.run([sys.executable, "-m", "nanobind.stubgen", "-q", "-m", "pipecodec._core", "-o", str(out)],
                   check=True)
    fresh = blocks(out.read_text())
    committed = blocks(pathlib.Path(pc.__file__).with_name("_core.pyi").read_text())
    hint = "python/pipecodec/_core.pyi is stale: regenerate it from a CUDA build (python/README.md)"
    for key, text in fresh.items():
        assert committed.get(key) == text, f"{hint}: {key}"
    missing = set(committed) - set(fresh)
    assert missing == (set() if pc.has_cuda else CUDA_ONLY), hint


def test_public_names():
    assert sorted(pc.__all__) == sorted(n for n in dir(pc) if not n.startswith("_")
                                        and n not in {"Any", "Array", "Optional", "Sequence", "SpecLike",
                                                      "Union", "annotations", "math",
                                                      "torch"})  # pipecodec.torch, once imported
    assert (pathlib.Path(pc.__file__).parent / "py.typed").exists()

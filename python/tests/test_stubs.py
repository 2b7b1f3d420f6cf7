"""The committed type stubs describe the built extension (regenerated with nanobind's
stubgen and compared), and the package's public names are all there."""
import pathlib
import subprocess
import sys

import pytest

import pipecodec as pc


def test_core_stub_is_current(tmp_path):
    pytest.importorskip("nanobind.stubgen")
    out = tmp_path / "_core.pyi"
    subprocess.run([sys.executable, "-m", "nanobind.stubgen", "-q", "-m", "pipecodec._core", "-o", str(out)],
                   check=True)
    committed = pathlib.Path(pc.__file__).with_name("_core.pyi")
    assert out.read_text() == committed.read_text(), \
        "python/pipecodec/_core.pyi is stale: regenerate with python -m nanobind.stubgen -m pipecodec._core"


def test_public_names():
    assert sorted(pc.__all__) == sorted(n for n in dir(pc) if not n.startswith("_")
                                        and n not in {"Any", "Array", "Optional", "Sequence", "SpecLike",
                                                      "Union", "annotations", "sys"})
    assert (pathlib.Path(pc.__file__).parent / "py.typed").exists()

"""Shared fixtures: the repository's golden payloads, the C++ CLI (PIPECODEC_CLI, set by
tools/test; tests that need it skip without it) and torch when importable."""
import os
import pathlib

import numpy as np
import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.fixture
def golden_dir():
    return REPO / "tests" / "golden"


@pytest.fixture
def cli():
    path = os.environ.get("PIPECODEC_CLI")
    if not path:
        pytest.skip("PIPECODEC_CLI is not set (tools/test sets it to the built pipecodec CLI)")
    return path


@pytest.fixture
def torch():
    return pytest.importorskip("torch")

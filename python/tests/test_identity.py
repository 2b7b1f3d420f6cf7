"""Bit-identity with the C++ library: the committed golden payloads are re-encoded from their
committed inputs and decode to the hashes in tests/golden/manifest.txt; payloads made here
equal the pipecodec CLI's for the same input, spec and seed."""
import subprocess

import numpy as np
import pytest

import pipecodec as pc


def fnv1a(data: bytes) -> str:
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def manifest(golden_dir):
    rows = {}
    for line in (golden_dir / "manifest.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            f = line.split()
            rows[f[0]] = {"bytes": int(f[1]), "hash": f[2], "decode": f[3:6]}
    return rows


def golden_input(path, info, torch):
    raw = path.read_bytes()
    if info["dtype"] == "bfloat16":  # NumPy has no bfloat16
        if torch is None:
            return None
        return torch.frombuffer(bytearray(raw), dtype=torch.bfloat16).reshape(info["shape"])
    return np.frombuffer(raw, dtype=info["dtype"]).reshape(info["shape"])


def test_golden_payloads(golden_dir):
    try:
        import torch
    except ImportError:
        torch = None
    cases = manifest(golden_dir)
    assert len(cases) >= 20
    checked = 0
    for name, want in cases.items():
        payload = np.fromfile(golden_dir / f"{name}.bin", dtype=np.uint8)
        assert len(payload) == want["bytes"] and fnv1a(payload.tobytes()) == want["hash"]
        i = pc.info(payload)
        x = golden_input(golden_dir / "inputs" / f"{name}.raw", i, torch)
        if x is None:
            continue
        ids = None
        if "rng=sample" in i["spec"]:  # tests/common/golden_cases.hpp: sample_ids()
            rows = i["shape"][0] if len(i["shape"]) == 2 else 1
            ids = np.array([1000 * i["seed"] + 3 * r + 1 for r in range(rows)], dtype=np.uint64)
        again = pc.encode(i["spec"], x, seed=i["seed"], sample_ids=ids)
        assert fnv1a(np.asarray(again).tobytes()) == want["hash"], name
        for dtype, h in zip(["float32", "float16", "bfloat16"], want["decode"]):
            if dtype == "bfloat16":
                if torch is None:
                    continue
                out = torch.full(i["shape"], 0.0, dtype=torch.bfloat16)
                out.view(torch.int16).fill_(-4370)  # 0xEEEE, the C++ test's fill
                pc.decode(payload, out=out)
                got = out.view(torch.int16).numpy().tobytes()
            else:
                out = np.frombuffer(b"\xee" * (np.prod(i["shape"], dtype=int) * np.dtype(dtype).itemsize),
                                    dtype=dtype).reshape(i["shape"]).copy()
                got = pc.decode(payload, out=out).tobytes()
            assert fnv1a(got) == h, (name, dtype)
        checked += 1
    assert checked >= (20 if torch else 16)


CLI_SPECS = ["quant:bits=3,group=64,round=stochastic", "topk:ratio=0.05,scope=row,values=quant",
             "randk:k=9,scope=row", "plain:dtype=bf16", "topk:ratio=0.3,index=bitmap", "mx:format=fp4_e2m1",
             "fp8:group=row,round=stochastic"]


@pytest.mark.parametrize("spec", CLI_SPECS)
def test_payloads_equal_the_cli(spec, cli, tmp_path, rng):
    x = rng.standard_normal((7, 300)).astype(np.float32)
    src, dst = tmp_path / "x.npy", tmp_path / "p.bin"
    np.save(src, x)
    subprocess.run([cli, "encode", "--spec", spec, "--seed", "77", str(src), str(dst)], check=True)
    ours = pc.encode(spec, x, seed=77)
    assert dst.read_bytes() == ours.tobytes()
    decoded = tmp_path / "y.npy"
    subprocess.run([cli, "decode", str(dst), str(decoded)], check=True)
    assert np.array_equal(np.load(decoded), pc.decode(ours))

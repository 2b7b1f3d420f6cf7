"""Device tensors on the CUDA backend (a CUDA build with a GPU and torch with CUDA; skipped
otherwise): payloads byte-identical to the host backend's, the caller's stream, device
validation of hostile payloads, and the CUDA endpoints against the host ones."""
import os

import numpy as np
import pytest

import pipecodec as pc

READY = "needs a CUDA build of pipecodec, a GPU and torch with CUDA"
if os.environ.get("PIPECODEC_REQUIRE_CUDA") == "1":  # tools/gpu-check-python: skipping is failing
    import torch

    assert pc.has_cuda and torch.cuda.is_available(), READY
torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not (pc.has_cuda and torch.cuda.is_available()), reason=READY)

SPECS = ["quant:bits=4,group=128", "quant:bits=2,group=row,round=stochastic", "plain:dtype=bf16",
         "topk:ratio=0.1,scope=row", "topk:ratio=0.05,index=bitmap", "randk:ratio=0.1"]


@pytest.mark.parametrize("spec", SPECS)
def test_device_payloads_equal_host_payloads(spec):
    x = torch.randn(33, 1000, generator=torch.Generator().manual_seed(1))
    host = pc.encode(spec, x, seed=9)
    dev = pc.encode(spec, x.cuda(), seed=9)
    assert dev.is_cuda and torch.equal(dev.cpu(), host)
    out = torch.empty(33, 1000, device="cuda")
    pc.decode(dev, out=out, spec=spec)
    assert torch.equal(out.cpu(), pc.decode(host))


def test_runs_on_the_callers_stream():
    x = torch.randn(64, 4096, device="cuda")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        p = pc.encode("quant:bits=8,group=row", x)
        y = pc.decode(p, out=torch.empty_like(x), spec="quant:bits=8,group=row")
    s.synchronize()
    assert (y - x).abs().max().item() < 0.05


def test_hostile_device_payload_is_rejected_on_the_device():
    spec = "quant:bits=4,group=128"
    p = pc.encode(spec, torch.randn(1000, device="cuda"))
    bad = p.clone()
    bad[8:16] = 255  # header fields
    out = torch.full((1000,), 7.0, device="cuda")
    ws = torch.empty(4096, dtype=torch.uint8, device="cuda")
    pc.decode(bad, out=out, spec=spec, workspace=ws)
    with pytest.raises(pc.CodecError) as e:
        pc.raise_for_status(ws)
    assert e.value.status != "success" and torch.all(out == 7.0)


def test_cuda_endpoints_match_host_endpoints():
    policy = "fwd=topk:ratio=0.25,scope=row+aqsgd; warmup=1epoch"
    shape = (8, 256)
    htx, hrx = pc.Sender(policy, 0, "fwd", shape, samples=32), pc.Receiver(policy, 0, "fwd", shape, samples=32)
    dtx, drx = pc.CudaSender(policy, 0, "fwd", shape, samples=32), pc.CudaReceiver(policy, 0, "fwd", shape, samples=32)
    ids = torch.arange(8)
    hout, dout = torch.empty(shape), torch.empty(shape, device="cuda")
    for epoch in range(3):
        x = torch.randn(shape) + epoch
        hp = htx.encode(x, epoch=epoch, sample_ids=ids, seed=epoch)
        dp = dtx.encode(x.cuda(), epoch=epoch, sample_ids=ids, seed=epoch)
        assert torch.equal(dp.cpu(), hp)
        hrx.decode(hp, hout, epoch=epoch, sample_ids=ids)
        drx.decode(dp, dout, epoch=epoch, sample_ids=ids)
        drx.check()
        assert torch.equal(dout.cpu(), hout)
    assert np.isfinite(hout.numpy()).all()

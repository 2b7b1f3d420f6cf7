"""PyTorch CPU tensors through DLPack: payloads come back as torch uint8 tensors, bfloat16
works, the bytes equal NumPy's, and strided tensors are refused."""
import numpy as np
import pytest

import pipecodec as pc


@pytest.mark.parametrize("spec", ["quant:bits=4,group=row", "topk:ratio=0.1,scope=row", "plain:dtype=fp16"])
def test_torch_matches_numpy(spec, torch):
    t = torch.randn(16, 256, generator=torch.Generator().manual_seed(0))
    p = pc.encode(spec, t, seed=3)
    assert isinstance(p, torch.Tensor) and p.dtype == torch.uint8
    assert np.array_equal(p.numpy(), pc.encode(spec, t.numpy(), seed=3))
    y = pc.decode(p)
    assert isinstance(y, torch.Tensor) and y.shape == t.shape and y.dtype == torch.float32
    assert torch.equal(y, torch.from_numpy(pc.decode(p.numpy())))


def test_bfloat16_round_trip(torch):
    t = torch.randn(8, 128).to(torch.bfloat16)
    p = pc.encode("quant:bits=8,group=row", t)
    assert pc.info(p)["dtype"] == "bfloat16"
    y = pc.decode(p)
    assert y.dtype == torch.bfloat16 and (y.float() - t.float()).abs().max() < 0.05
    acc = torch.zeros(8, 128)
    pc.decode_accumulate(p, acc)
    assert torch.allclose(acc, y.float(), atol=1e-2)


def test_strided_tensors_are_refused(torch):
    t = torch.randn(16, 64)
    with pytest.raises(ValueError, match="contiguous"):
        pc.encode("quant:bits=4", t.t())
    with pytest.raises(ValueError, match="contiguous"):
        pc.encode("quant:bits=4", t[:, ::2])
    pc.encode("quant:bits=4", t.t().contiguous())


def test_endpoints_take_torch_tensors_and_int64_ids(torch):
    policy = "fwd=quant:bits=4,group=row+aqsgd; warmup=1epoch"
    tx = pc.Sender(policy, 0, "fwd", (4, 32), dtype=torch.float32, samples=16)
    rx = pc.Receiver(policy, 0, "fwd", (4, 32), dtype=torch.float32, samples=16)
    ids = torch.tensor([1, 5, 7, 9])
    x = torch.randn(4, 32)
    out = torch.empty(4, 32)
    for epoch in range(3):
        rx.decode(tx.encode(x, epoch=epoch, sample_ids=ids), out, epoch=epoch, sample_ids=ids)
    assert (out - x).abs().max() < 0.05
    with pytest.raises(TypeError, match="sample_ids"):
        tx.encode(x, epoch=2, sample_ids=ids.to(torch.int32))

"""Policy text and the Sender / Receiver endpoints: warm-up, compressed and inference steps,
AQ-SGD with sample ids, shared-mask TopK, counters."""
import numpy as np
import pytest

import pipecodec as pc


def pair(policy, direction="fwd", shape=(4, 64), samples=0):
    return (pc.Sender(policy, 0, direction, shape, samples=samples),
            pc.Receiver(policy, 0, direction, shape, samples=samples))


def test_policy_text():
    p = pc.Policy("fwd=quant:bits=4; bwd=topk:ratio=0.1")
    assert pc.Policy(str(p)) == p
    with pytest.raises(ValueError, match="bitz"):
        pc.Policy("fwd=quant:bitz=4")
    with pytest.raises(ValueError, match="sideways"):
        pc.Policy("sideways=quant:bits=4")


def test_stateless_policy_matches_the_codec(rng):
    tx, rx = pair("fwd=quant:bits=4,group=row")
    x = rng.standard_normal((4, 64)).astype(np.float32)
    p = tx.encode(x, step=3)
    assert np.array_equal(p, pc.encode("quant:bits=4,group=row", x))
    out = rx.decode(p, np.empty_like(x), step=3)
    assert np.array_equal(out, pc.decode(p))
    assert tx.counters["calls"] == 1 and tx.counters["bytes_out"] == len(p)
    assert len(tx.encode(x[:2], step=4)) < len(p)  # fewer rows than max_shape


def test_aqsgd_policy_with_warmup_and_inference(rng):
    policy = "fwd=topk:ratio=0.25,scope=row+aqsgd; warmup=1epoch"
    tx, rx = pair(policy, samples=8)
    ids = np.arange(4, dtype=np.int64)
    x = rng.standard_normal((4, 64)).astype(np.float32)
    out = np.empty_like(x)
    warm = tx.encode(x, epoch=0, sample_ids=ids)
    assert np.array_equal(rx.decode(warm, out, epoch=0, sample_ids=ids), x)
    x2 = x + 0.1
    comp = tx.encode(x2, epoch=1, step=9, sample_ids=ids)
    rx.decode(comp, out, epoch=1, step=9, sample_ids=ids)
    assert len(comp) < len(warm) and np.abs(out - x2).max() < np.abs(x2).max()
    # Inference: the codec alone (no state), or plain after set_inference("plain").
    inf = tx.encode(x2, training=False)
    assert np.array_equal(inf, pc.encode("topk:ratio=0.25,scope=row", x2))
    tx.set_inference("plain")
    rx.set_inference("plain")
    assert np.array_equal(rx.decode(tx.encode(x2, training=False), out, training=False), x2)
    with pytest.raises(pc.CodecError):  # a training step needs the sample ids
        tx.encode(x2, epoch=1)


def test_shared_mask_backward(rng):
    policy = "fwd=topk:ratio=0.1,scope=row; bwd=topk:ratio=0.1,scope=row,mask=shared"
    ftx, frx = pair(policy, "fwd")
    btx, brx = pair(policy, "bwd")
    assert btx.needs_mask and not ftx.needs_mask
    x = rng.standard_normal((4, 64)).astype(np.float32)
    g = rng.standard_normal((4, 64)).astype(np.float32)
    mask = ftx.encode(x, step=1)
    y = frx.decode(mask, np.empty_like(x), step=1)
    gp = btx.encode(g, step=1, mask=mask)
    gout = brx.decode(gp, np.empty_like(g), step=1, mask=mask)
    assert np.array_equal(gout != 0, y != 0)
    with pytest.raises(pc.CodecError) as e:
        btx.encode(g, step=1)
    assert e.value.status == "invalid_argument"


def test_endpoint_checks_its_tensors(rng):
    tx, _ = pair("fwd=quant:bits=8")
    with pytest.raises(pc.CodecError) as e:
        tx.encode(np.zeros((5, 64), np.float32))  # more rows than max_shape
    assert e.value.status == "shape_mismatch"
    with pytest.raises(ValueError, match="direction"):
        pc.Sender("fwd=quant:bits=8", 0, "up", (4, 64))


def test_a_failed_init_says_where():
    # AQ-SGD forward with a shared-mask gradient: the forward message is not a TopK payload.
    policy = "fwd=topk:ratio=0.1+aqsgd; bwd=topk:ratio=0.1,mask=shared"
    with pytest.raises(pc.CodecError, match="bwd endpoint at boundary 2") as e:
        pc.Sender(policy, 2, "bwd", (4, 64), samples=8)
    assert e.value.status == "not_supported"

"""The stateful schemes as objects: what each keeps, sender and receiver in step, and
state_dict() / load_state_dict() continuing exactly where a run left off."""
import pickle

import numpy as np
import pytest

import pipecodec as pc


def test_ef_keeps_the_compression_error(rng):
    x = rng.standard_normal((4, 128)).astype(np.float32)
    ef = pc.EF("topk:ratio=0.1", (4, 128))
    assert np.all(ef.residual == 0)
    p = ef.encode(x)
    assert np.allclose(ef.residual, x - pc.decode(p), atol=1e-6)
    e1 = ef.residual.copy()
    p2 = ef.encode(x)  # sends C(x + e), keeps x + e - D(C(x + e))
    assert np.allclose(ef.residual, x + e1 - pc.decode(p2), atol=1e-5)


def test_ef21_sides_stay_equal(rng):
    spec, shape = "quant:bits=4,group=row", (3, 64)
    tx, rx = pc.EF21(spec, shape), pc.EF21(spec, shape)
    out = np.empty(shape, np.float32)
    for step in range(4):
        x = rng.standard_normal(shape).astype(np.float32)
        p = tx.encode(x, seed=step)
        rx.decode(p, out)
        assert np.array_equal(tx.state, rx.state) and np.array_equal(out, rx.state)
    assert np.linalg.norm(rx.state - x) < np.linalg.norm(x)


def ids_of(*values):
    return np.array(values, dtype=np.int64)


def test_aqsgd_stores_per_sample_and_restores(rng):
    spec, cols = "quant:bits=4,group=row", 256
    tx, rx = pc.AQSGD(spec, cols, 16, 4), pc.AQSGD(spec, cols, 16, 4)
    x = rng.standard_normal((4, cols)).astype(np.float32)
    out = np.empty_like(x)
    ids = ids_of(3, 9, 1, 12)
    rx.decode(tx.encode(ids, x), ids, out)  # unseen samples travel whole
    assert np.array_equal(out, x) and tx.count == rx.count == 4
    saved_tx, saved_rx = pickle.loads(pickle.dumps(tx.state_dict())), rx.state_dict()
    assert saved_rx["kind"] == "aqsgd_store"
    x2 = x + 0.01 * rng.standard_normal(x.shape).astype(np.float32)
    p = tx.encode(ids, x2, seed=4)
    rx.decode(p, ids, out)
    assert len(p) < x.nbytes / 4 and np.abs(out - x2).max() < 0.01
    # Restored copies continue bit for bit where the originals did.
    tx2, rx2 = pc.AQSGD(spec, cols, 16, 4), pc.AQSGD(spec, cols, 16, 4)
    tx2.load_state_dict(saved_tx)
    rx2.load_state_dict(saved_rx)
    p2 = tx2.encode(ids, x2, seed=4)
    out2 = np.empty_like(x)
    rx2.decode(p2, ids, out2)
    assert np.array_equal(p, p2) and np.array_equal(out, out2)
    with pytest.raises(pc.CodecError) as e:  # the receiver checks the ids it was told to expect
        rx2.decode(p2, ids_of(3, 9, 1, 13), out2)
    assert e.value.status == "id_mismatch"


def test_ef_sample_keeps_one_residual_per_sample(rng):
    spec, cols = "topk:ratio=0.25,scope=row", 40
    efs = pc.EFSample(spec, cols, 8, 2)
    a = rng.standard_normal((2, cols)).astype(np.float32)
    p = efs.encode(ids_of(5, 6), a)
    assert efs.count == 2
    kept = pc.decode(p)
    # Sample 5 again, alone: its residual is added before selection, sample 6's is untouched.
    state = efs.state_dict()
    p2 = efs.encode(ids_of(5), a[:1])
    again = pc.EFSample(spec, cols, 8, 2)
    again.load_state_dict(state)
    assert np.array_equal(again.encode(ids_of(5), a[:1]), p2)
    assert not np.array_equal(pc.decode(p2), kept[:1])
    assert efs.memory["total_bytes"] > 0


def test_state_dict_of_another_kind_is_refused(rng):
    ef = pc.EF("quant:bits=4", (64,))
    with pytest.raises(ValueError, match="ef_residual"):
        ef.load_state_dict(pc.EF21("quant:bits=4", (64,)).state_dict())
    bad = ef.state_dict()
    bad["checkpoint"] = bad["checkpoint"][:-1] + bytes([bad["checkpoint"][-1] ^ 1])
    with pytest.raises(pc.CodecError) as e:
        ef.load_state_dict(bad)
    assert e.value.status == "corrupt_payload"
    with pytest.raises(pc.CodecError) as e:
        pc.EF("quant:bits=4", (65,)).load_state_dict(ef.state_dict())
    assert e.value.status == "state_mismatch"


@pytest.mark.parametrize("storage", ["float16", "bfloat16"])
def test_low_precision_storage(storage, rng):
    ef = pc.EF("quant:bits=2,group=32", (2, 64), storage=storage)
    ef.encode(rng.standard_normal((2, 64)).astype(np.float32))
    r = ef.residual
    assert r.shape == (2, 64) and r.itemsize == 2 and np.any(r != 0)


def test_ef_with_lowrank_keeps_and_restores_the_warm_q(rng):
    spec, shape = "lowrank:rank=2", (16, 40)
    a = pc.EF(spec, shape)
    xs = [rng.standard_normal(shape).astype(np.float32) for _ in range(4)]
    for x in xs[:2]:
        a.encode(x)
    saved = pickle.loads(pickle.dumps(a.state_dict()))
    assert saved["lowrank_q"]["kind"] == "lowrank_q"
    b = pc.EF(spec, shape)
    b.load_state_dict(saved)
    for x in xs[2:]:  # the restored twin continues byte for byte: residual and warm Q
        assert np.array_equal(a.encode(x), b.encode(x))
    missing = dict(saved)
    del missing["lowrank_q"]
    with pytest.raises(ValueError, match="lowrank_q"):
        pc.EF(spec, shape).load_state_dict(missing)

"""Hostile payloads raise CodecError naming the status and never crash the interpreter or
write the output: truncations, bit flips and random bytes over every golden payload, and
payloads handed to the wrong call."""
import numpy as np
import pytest

import pipecodec as pc

STATUSES = {
    "invalid_argument", "invalid_spec", "invalid_shape", "not_supported", "truncated", "bad_magic",
    "unsupported_version", "unknown_codec", "invalid_header", "size_mismatch", "shape_mismatch",
    "corrupt_payload", "size_overflow", "misaligned",
}


def golden_payloads(golden_dir):
    return [np.fromfile(p, dtype=np.uint8) for p in sorted(golden_dir.glob("*.bin"))]


def try_decode(payload, out):
    before = out.copy()
    try:
        pc.decode(payload, out=out)
        return None
    except pc.CodecError as e:
        assert e.status in STATUSES, e.status
        assert np.array_equal(out, before, equal_nan=True), "a rejected payload wrote the output"
        return e.status


def test_truncations_and_bit_flips(golden_dir, rng):
    payloads = golden_payloads(golden_dir)
    assert len(payloads) >= 20
    rejected = 0
    for p in payloads:
        shape = pc.info(p)["shape"]
        out = np.full(shape, 7.0, np.float32)
        for cut in sorted({0, 1, 15, 63, len(p) // 2, len(p) - 1}):
            if cut < len(p):
                rejected += try_decode(p[:cut].copy(), out) is not None
        for _ in range(40):
            bad = p.copy()
            pos = rng.integers(0, len(bad), size=rng.integers(1, 4))
            bad[pos] ^= rng.integers(1, 256, size=len(pos), dtype=np.uint8)
            rejected += try_decode(bad, out) is not None
    assert rejected > 500  # most mutations are caught (flips inside packed codes decode fine)


def test_random_bytes_and_wrong_calls(rng):
    out = np.zeros(100, np.float32)
    for n in [0, 1, 7, 64, 65, 1000]:
        assert try_decode(rng.integers(0, 256, n, dtype=np.uint8), out) is not None
    p = pc.encode("quant:bits=4", np.ones(100, np.float32))
    assert try_decode(p, np.zeros(99, np.float32)) == "shape_mismatch"
    with pytest.raises(pc.CodecError) as e:
        pc.info(p[:10])
    assert e.value.status == "truncated"
    with pytest.raises(pc.CodecError):
        pc.decode_shared(p, p, out=out)  # a quant payload is no shared-mask payload or mask


def test_hostile_state_messages(rng):
    rx = pc.AQSGD("quant:bits=4,group=row", 64, 8, 4)
    ids = np.arange(4, dtype=np.uint64)
    out = np.zeros((4, 64), np.float32)
    for n in [0, 16, 64, 300]:
        with pytest.raises(pc.CodecError):
            rx.decode(rng.integers(0, 256, n, dtype=np.uint8), ids, out)
    assert rx.count == 0 and np.all(out == 0)
    ef21 = pc.EF21("quant:bits=4", (64,))
    with pytest.raises(pc.CodecError):
        ef21.decode(rng.integers(0, 256, 200, dtype=np.uint8))
    assert np.all(ef21.state == 0)

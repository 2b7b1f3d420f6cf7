"""What the binding accepts: dtypes, shapes, strides, devices, read-only memory; that views
keep their owners alive; and that the GIL is released while a codec runs."""
import gc
import threading
import time
import weakref

import numpy as np
import pytest

import pipecodec as pc

SPEC = "quant:bits=8,group=32"


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.uint8, np.complex64])
def test_unsupported_dtypes_are_type_errors(dtype):
    with pytest.raises(TypeError, match="float32, float16 or bfloat16"):
        pc.encode(SPEC, np.ones(64, dtype))


def test_non_contiguous_arrays_are_refused_not_copied():
    x = np.ones((8, 64), np.float32)
    for bad in (x[:, ::2], x.T, np.asfortranarray(x)):
        with pytest.raises(ValueError, match="C-contiguous"):
            pc.encode(SPEC, bad)
    p = pc.encode(SPEC, x)
    with pytest.raises(ValueError, match="C-contiguous"):
        pc.decode(p, out=np.empty((8, 128), np.float32)[:, ::2])
    with pytest.raises(ValueError, match="C-contiguous"):
        pc.decode(np.repeat(p, 2)[::2], out=np.empty_like(x))
    # Size-1 dimensions may carry any stride.
    assert np.array_equal(pc.encode(SPEC, x[:1]), pc.encode(SPEC, np.ascontiguousarray(x[:1])))


def test_shapes():
    with pytest.raises(ValueError, match="at least one dimension"):
        pc.encode(SPEC, np.float32(1.0).reshape(()))
    x = np.arange(2 * 3 * 40, dtype=np.float32).reshape(2, 3, 40)
    p = pc.encode(SPEC, x)
    assert pc.info(p)["shape"] == (6, 40)  # leading dimensions are rows
    assert np.array_equal(pc.decode(p, out=np.empty_like(x)).reshape(6, 40), pc.decode(p))
    with pytest.raises(pc.CodecError):
        pc.decode(p, out=np.empty((240,), np.float32))


def test_payload_and_output_buffers_must_be_right():
    x = np.ones(64, np.float32)
    with pytest.raises(TypeError, match="uint8"):
        pc.decode(pc.encode(SPEC, x).view(np.int8), out=np.empty(64, np.float32))
    with pytest.raises(pc.CodecError) as e:
        pc.encode(SPEC, x, out=np.empty(10, np.uint8))
    assert e.value.status == "buffer_too_small"
    ro = np.ones(64, np.float32)
    ro.flags.writeable = False
    assert len(pc.encode(SPEC, ro)) > 0  # read-only input is fine
    out = np.empty(64, np.float32)
    out.flags.writeable = False
    with pytest.raises(TypeError):
        pc.decode(pc.encode(SPEC, x), out=out)


def test_aliasing_input_and_output_is_refused():
    buf = np.zeros(4096, np.uint8)
    x = buf[:1024].view(np.float32)
    with pytest.raises(pc.CodecError) as e:
        pc.encode(SPEC, x, out=buf)
    assert e.value.status == "aliasing"


def test_state_views_keep_their_owner_alive():
    ef = pc.EF("quant:bits=2,group=32", (4, 64))
    ef.encode(np.random.default_rng(0).standard_normal((4, 64)).astype(np.float32))
    owner = weakref.ref(ef)
    r = ef.residual
    expected = r.copy()
    del ef
    gc.collect()
    assert owner() is not None and np.array_equal(r, expected)
    del r
    gc.collect()
    assert owner() is None


def test_payload_outlives_its_input():
    x = np.random.default_rng(1).standard_normal(1 << 16).astype(np.float32)
    p = pc.encode(SPEC, x)
    y = pc.decode(p)
    del x
    gc.collect()
    assert np.array_equal(pc.decode(p), y)


def test_gil_is_released_while_a_codec_runs():
    x = np.random.default_rng(2).standard_normal(1 << 23).astype(np.float32)
    buf = np.empty(pc.encoded_bytes("topk:ratio=0.1", x.shape), np.uint8)
    ws = np.empty(pc.workspace_bytes("topk:ratio=0.1", x.shape), np.uint8)
    spec = pc.Spec("topk:ratio=0.1")
    ticks, running = [0], [True]

    def count():
        while running[0]:
            ticks[0] += 1

    t = threading.Thread(target=count)
    t.start()
    time.sleep(0.05)
    start_ticks, start = ticks[0], time.perf_counter()
    pc._core.encode_into(spec, x, buf, 0, ws)
    during, elapsed = ticks[0] - start_ticks, time.perf_counter() - start
    running[0] = False
    t.join()
    # Were the GIL held, the counter thread could not run at all until the call returned; it
    # counts about 10^7 per second when it can.
    assert elapsed > 0.01 and during > 1000, (during, elapsed)


def test_device_status_wants_device_memory():
    with pytest.raises(RuntimeError if not pc.has_cuda else ValueError):
        pc.device_status(np.zeros(256, np.uint8))

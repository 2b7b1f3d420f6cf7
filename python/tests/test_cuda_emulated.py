"""The CUDA binding on the emulated GPU (tools/test-python's second build, with
-Dpython_cuda_emulated=true: cuda_py.cu and cuda_endpoint_py.cu compiled by the host compiler
against tests/emu, which runs the unchanged kernels on the CPU). Device arrays here are
emulated device memory exported through DLPack as CUDA memory, so every call takes the
package's device path: payloads byte-identical to the host backend's, device-side validation
of hostile payloads, the RandK hint, shared masks, and the CUDA endpoints against the host
ones. Skipped in any other build; it shows that the binding's device path works, not how
fast it runs on a GPU (tools/gpu-check-python, test_cuda.py)."""
import math

import numpy as np
import pytest

import pipecodec as pc
from pipecodec import _core, _device

pytestmark = pytest.mark.skipif(not getattr(_core, "emulated", False),
                                reason="needs the emulated-GPU build (tools/test-python)")

ITEM = {"float32": 4, "float16": 2, "bfloat16": 2, "uint8": 1, "int64": 8}


class DeviceArray:
    """C-contiguous emulated device memory with the little of an array the package uses:
    shape, dtype, 1-D slices [:n] (views), and DLPack export as CUDA memory."""

    def __init__(self, shape, dtype, base=None, offset=0):
        self.shape, self.dtype = tuple(int(d) for d in shape), dtype
        self.nbytes = math.prod(self.shape) * ITEM[dtype]
        self.base = base if base is not None else _Allocation(self.nbytes)
        self.ptr = self.base.ptr + offset

    def __dlpack_device__(self):
        return (_device.KDL_CUDA, 0)

    def __dlpack__(self, stream=None, **_):
        return _core.emu_dlpack(self.ptr, list(self.shape), self.dtype, self.base)

    def __getitem__(self, s):
        assert len(self.shape) == 1 and isinstance(s, slice) and s.step is None
        start, stop, _ = s.indices(self.shape[0])
        return DeviceArray((stop - start,), self.dtype, self.base, (self.ptr - self.base.ptr) + start * ITEM[self.dtype])

    def numpy(self):
        raw = np.frombuffer(_core.emu_read(self.ptr, self.nbytes), dtype=np.uint8)
        flat = raw if self.dtype == "uint8" else raw.view(np.uint16 if self.dtype == "bfloat16" else self.dtype)
        return flat.reshape(self.shape)

    @staticmethod
    def of(a: np.ndarray) -> "DeviceArray":
        d = DeviceArray(a.shape, str(a.dtype))
        _core.emu_write(d.ptr, np.ascontiguousarray(a).tobytes())
        return d


class _Allocation:
    def __init__(self, nbytes):
        self.ptr = _core.emu_malloc(nbytes)

    def __del__(self):
        _core.emu_free(self.ptr)


@pytest.fixture(autouse=True)
def device_allocations(monkeypatch):
    """The package allocates payloads and workspaces in its caller's framework: here, ours."""
    host_empty = _device.empty
    monkeypatch.setattr(_device, "empty", lambda like, shape, dtype: DeviceArray(shape, dtype)
                        if isinstance(like, DeviceArray) else host_empty(like, shape, dtype))


def rand(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


SPECS = ["quant:bits=4,group=128", "quant:bits=2,group=row,round=stochastic", "plain:dtype=bf16",
         "topk:ratio=0.1,scope=row", "topk:ratio=0.05,index=bitmap", "randk:ratio=0.1",
         "topk:ratio=0.1,scope=row,values=quant,bits=4", "fp8:format=e5m2,round=stochastic",
         "mx:format=fp6_e3m2", "quant:bits=3,group=row,rotate=hadamard,rotate_block=64",
         "quant:bits=2,group=64,outliers=2"]


@pytest.mark.parametrize("spec", SPECS)
def test_device_payloads_and_decodes_equal_the_host_backend(spec):
    x = rand((33, 1000), 1)
    host = pc.encode(spec, x, seed=9)
    dev = pc.encode(spec, DeviceArray.of(x), seed=9)
    assert isinstance(dev, DeviceArray) and np.array_equal(dev.numpy(), host)
    out = DeviceArray((33, 1000), "float32")
    pc.decode(dev, out=out, spec=spec)
    np.testing.assert_array_equal(out.numpy(), pc.decode(host))
    acc = DeviceArray.of(np.ones((33, 1000), np.float32))
    ws = DeviceArray((1 << 20,), "uint8")
    pc.decode_accumulate(dev, acc, workspace=ws, spec=spec)
    assert pc.device_status(ws) == "success"
    np.testing.assert_array_equal(acc.numpy(), pc.decode_accumulate(host, np.ones((33, 1000), np.float32)))


def test_randk_of_a_large_tensor_reselects_on_the_grid_with_the_codec_named():
    """2^16 + 3 elements: the decode re-selects on the whole grid (the spec names RandK)."""
    spec = "randk:ratio=0.01,values=fp16"
    x = rand((1 << 16) + 3, 2)
    host = pc.encode(spec, x, seed=4)
    dev = pc.encode(spec, DeviceArray.of(x), seed=4)
    assert np.array_equal(dev.numpy(), host)
    out = DeviceArray(x.shape, "float32")
    pc.decode(dev, out=out, spec=spec)
    np.testing.assert_array_equal(out.numpy(), pc.decode(host))


def test_shared_mask_on_the_device():
    x, g = rand((16, 512), 3), rand((16, 512), 4)
    mask = pc.encode("topk:ratio=0.1,scope=row", x)
    vals = pc.encode_shared("topk:ratio=0.1,scope=row,mask=shared", g, mask)
    dmask = pc.encode("topk:ratio=0.1,scope=row", DeviceArray.of(x))
    dvals = pc.encode_shared("topk:ratio=0.1,scope=row,mask=shared", DeviceArray.of(g), dmask)
    assert np.array_equal(dvals.numpy(), vals)
    out = DeviceArray((16, 512), "float32")
    pc.decode_shared(dvals, dmask, out=out)
    np.testing.assert_array_equal(out.numpy(), pc.decode_shared(vals, mask))


def test_hostile_device_payload_is_rejected_on_the_device_and_leaves_out_untouched():
    spec = "quant:bits=4,group=128"
    p = pc.encode(spec, rand(1000, 5)).copy()
    p[8:16] = 255  # header fields
    out = DeviceArray.of(np.full(1000, 7.0, np.float32))
    ws = DeviceArray((4096,), "uint8")
    pc.decode(DeviceArray.of(p), out=out, spec=spec, workspace=ws)
    with pytest.raises(pc.CodecError) as e:
        pc.raise_for_status(ws)
    assert e.value.status != "success" and np.all(out.numpy() == 7.0)


def test_decoding_device_memory_needs_out_and_spec():
    dev = pc.encode("quant:bits=8", DeviceArray.of(rand(64, 6)))
    with pytest.raises(ValueError, match="out="):
        pc.decode(dev)
    with pytest.raises(ValueError, match="spec="):
        pc.decode(dev, out=DeviceArray((64,), "float32"))


def test_cuda_endpoints_match_host_endpoints():
    policy = "fwd=topk:ratio=0.25,scope=row+aqsgd; warmup=1epoch"
    shape = (8, 256)
    htx, hrx = pc.Sender(policy, 0, "fwd", shape, samples=32), pc.Receiver(policy, 0, "fwd", shape, samples=32)
    dtx, drx = pc.CudaSender(policy, 0, "fwd", shape, samples=32), pc.CudaReceiver(policy, 0, "fwd", shape, samples=32)
    ids = np.arange(8, dtype=np.int64)
    hout, dout = np.empty(shape, np.float32), DeviceArray(shape, "float32")
    for epoch in range(3):
        x = rand(shape, 10 + epoch) + epoch
        hp = htx.encode(x, epoch=epoch, sample_ids=ids, seed=epoch)
        dp = dtx.encode(DeviceArray.of(x), epoch=epoch, sample_ids=ids, seed=epoch)
        assert np.array_equal(dp.numpy(), hp)
        hrx.decode(hp, hout, epoch=epoch, sample_ids=ids)
        drx.decode(dp, dout, epoch=epoch, sample_ids=ids)
        drx.check()
        np.testing.assert_array_equal(dout.numpy(), hout)
    assert np.isfinite(hout).all()

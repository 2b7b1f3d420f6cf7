"""pipecodec: lossy codecs for activations and gradients crossing pipeline-parallel stage
boundaries (k-bit quantization, TopK / RandK, EF, EF21, AQ-SGD), over the C++ host backend.

Arrays come in through DLPack or the buffer protocol (NumPy, PyTorch CPU tensors, anything
with ``__dlpack__``) and are read and written in place: no copies, and the GIL is released
while a codec runs. Every array must be C-contiguous. Payloads are uint8 arrays of the
caller's framework (a NumPy array for NumPy input, a torch tensor for torch input).

    import numpy as np, pipecodec as pc
    x = np.random.randn(64, 1024).astype(np.float32)
    payload = pc.encode("quant:bits=4,group=128", x)      # uint8, pc.info(payload) describes it
    y = pc.decode(payload)                                 # float32 (64, 1024)

A failed call raises CodecError (a ValueError) whose ``status`` names the reason, e.g.
"corrupt_payload" for hostile bytes; bad spec or policy text raises ValueError naming the key.
"""
from __future__ import annotations

import math
from typing import Any, Optional, Sequence, Union

from . import _core, _device
from ._core import CodecError, Policy, Spec, has_cuda

__all__ = [
    "AQSGD", "CodecError", "EF", "EF21", "EFSample", "Policy", "Receiver", "Sender", "Spec",
    "decode", "decode_accumulate", "decode_shared", "decode_shared_accumulate", "encode",
    "device_status", "encode_shared", "encoded_bytes", "has_cuda", "info", "raise_for_status",
    "workspace_bytes",
]
__version__ = "0.1.0"

Array = Any  # a NumPy array, a torch tensor, or any object exporting __dlpack__
SpecLike = Union[str, Spec]


def _spec(s: SpecLike) -> Spec:
    return s if isinstance(s, Spec) else Spec(s)


def _dtype_name(d: Any) -> str:
    """'float32', np.float16, torch.bfloat16, ... -> the name pipecodec knows."""
    name = d if isinstance(d, str) else str(d)
    return name[len("torch."):] if name.startswith("torch.") else name


def _payload(like: Any, size: int, out: Optional[Array]) -> Array:
    return out if out is not None else _device.empty(like, (size,), "uint8")


def _workspace(like: Any, spec: Spec, shape: Sequence[int], given: Optional[Array]) -> Array:
    return given if given is not None else _device.empty(like, (spec.workspace_bytes(list(shape)),), "uint8")


def _decode_workspace(out: Array, codec: str, shared: bool, given: Optional[Array]) -> Array:
    if given is not None:
        return given
    n = _core.device_decode_workspace_bytes(math.prod(out.shape), codec in ("topk", "randk"), shared)
    return _device.empty(out, (n,), "uint8")


def _device_spec(spec: Optional[SpecLike]) -> Spec:
    if spec is None:
        raise ValueError("decoding device memory needs spec=: the host cannot read a device payload's "
                         "codec without a synchronization")
    return _spec(spec)


def encoded_bytes(spec: SpecLike, shape: Sequence[int]) -> int:
    """Exact payload size of `spec` for a tensor of `shape`."""
    return _spec(spec).encoded_bytes(list(shape))


def workspace_bytes(spec: SpecLike, shape: Sequence[int]) -> int:
    """Workspace an encode of `shape` needs: the CUDA backend's figure (every codec); the host
    backend uses one for TopK / RandK and rotated quantization only, and encode() makes one when
    none is given."""
    return _spec(spec).workspace_bytes(list(shape))


def encode(spec: SpecLike, x: Array, seed: int = 0, out: Optional[Array] = None,
           workspace: Optional[Array] = None, stream: Optional[int] = None,
           sample_ids: Optional[Array] = None) -> Array:
    """Encodes `x` (float32 / float16 / bfloat16; N-D is rows x last dimension) with `spec`.

    Returns the payload: `out[:n]` when `out` (uint8, at least encoded_bytes) is given, else a
    new uint8 array. `seed` drives stochastic rounding and RandK's positions; specs with
    rng=sample also take `sample_ids` (uint64 / int64, one per row, on x's device), so a sample's
    bits do not depend on its batch. Device arrays (CUDA builds) are encoded on `stream`, by
    default the framework's current stream."""
    s = _spec(spec)
    buf = _payload(x, s.encoded_bytes(list(x.shape)), out)
    if _device.use_cuda(x):
        ws = _workspace(x, s, x.shape, workspace)
        return buf[:_core.cuda_encode_into(s, x, buf, ws, seed, _device.stream(x, stream), sample_ids)]
    return buf[:_core.encode_into(s, x, buf, seed, workspace, sample_ids)]


def encode_shared(spec: SpecLike, x: Array, mask: Array, seed: int = 0, out: Optional[Array] = None,
                  workspace: Optional[Array] = None, stream: Optional[int] = None) -> Array:
    """TopK with mask=shared: the values of `x` at the positions of `mask` (an earlier TopK
    payload of the same shape, scope and k)."""
    s = _spec(spec)
    buf = _payload(x, s.encoded_bytes(list(x.shape)), out)
    if _device.use_cuda(x):
        ws = _workspace(x, s, x.shape, workspace)
        return buf[:_core.cuda_encode_shared_into(s, x, mask, buf, ws, seed, _device.stream(x, stream))]
    return buf[:_core.encode_shared_into(s, x, mask, buf, seed, workspace)]


def _decode_target(payload: Array, out: Optional[Array]) -> Array:
    if out is not None:
        return out
    if _device.use_cuda(payload):
        raise ValueError("decoding device memory needs out=: the host cannot read a device payload's "
                         "shape without a synchronization")
    i = info(payload)
    return _device.empty(payload, i["shape"], i["dtype"])


def _decode(payload: Array, out: Optional[Array], accumulate: bool, workspace: Optional[Array],
            spec: Optional[SpecLike], stream: Optional[int]) -> Array:
    target = _decode_target(payload, out)
    if _device.use_cuda(payload, target):
        s = _device_spec(spec)
        ws = _decode_workspace(target, s.codec, False, workspace)
        _core.cuda_decode_into(s, payload, target, ws, accumulate, _device.stream(target, stream))
    else:
        _core.decode_into(payload, target, accumulate, workspace)
    return target


def decode(payload: Array, out: Optional[Array] = None, workspace: Optional[Array] = None,
           spec: Optional[SpecLike] = None, stream: Optional[int] = None) -> Array:
    """Decodes a payload into `out` (any float dtype, the encoded shape) or a new array of the
    encoded shape and dtype. The payload is validated whole before `out` is written.

    Device arrays (CUDA builds) need `out` and the `spec` the payload was made with; the
    payload is validated on the device (a rejected one leaves `out` untouched) and the verdict
    waits in `workspace` for device_status()."""
    return _decode(payload, out, False, workspace, spec, stream)


def decode_accumulate(payload: Array, out: Array, workspace: Optional[Array] = None,
                      spec: Optional[SpecLike] = None, stream: Optional[int] = None) -> Array:
    """out += decode(payload) (the update EF21 and AQ-SGD apply to their state)."""
    return _decode(payload, out, True, workspace, spec, stream)


def _decode_shared(payload: Array, mask: Array, out: Optional[Array], accumulate: bool,
                   workspace: Optional[Array], stream: Optional[int]) -> Array:
    target = _decode_target(mask, out)
    if _device.use_cuda(payload, mask, target):
        ws = _decode_workspace(target, "topk", True, workspace)
        _core.cuda_decode_shared_into(payload, mask, target, ws, accumulate, _device.stream(target, stream))
    else:
        _core.decode_shared_into(payload, mask, target, accumulate)
    return target


def decode_shared(payload: Array, mask: Array, out: Optional[Array] = None, workspace: Optional[Array] = None,
                  stream: Optional[int] = None) -> Array:
    """Decodes a shared-mask payload at the positions of its mask payload (zeros elsewhere)."""
    return _decode_shared(payload, mask, out, False, workspace, stream)


def decode_shared_accumulate(payload: Array, mask: Array, out: Array, workspace: Optional[Array] = None,
                             stream: Optional[int] = None) -> Array:
    """out += decode_shared(payload, mask), at the kept positions only."""
    return _decode_shared(payload, mask, out, True, workspace, stream)


def device_status(workspace: Array, stream: Optional[int] = None) -> str:
    """Waits for `stream`, then names the verdict of the last device decode that used
    `workspace` ("success", "corrupt_payload", ...). Raises CodecError when asked to
    (raise_for_status) or when the read itself fails."""
    if not has_cuda:
        raise RuntimeError("device_status needs pipecodec built with the CUDA backend")
    return _core.cuda_status(workspace, _device.stream(workspace, stream))


def _raise_unless_success(verdict: str) -> None:
    if verdict != "success":
        err = CodecError(f"decode: device validation rejected the payload ({verdict})")
        err.status = verdict
        raise err


def raise_for_status(workspace: Array, stream: Optional[int] = None) -> None:
    """device_status(), raising CodecError unless the payload was accepted."""
    _raise_unless_success(device_status(workspace, stream))


def info(payload: Array) -> dict:
    """What a payload says about itself: codec, spec, dtype, shape, bytes, seed, version."""
    return _core.info(payload)


class EF(_core.EF):
    """Error feedback with one residual of `shape` (the batch): sends C(x + e), keeps the error.
    The receiver decodes with decode(). EF(spec, shape, storage="float32")."""

    def encode(self, x: Array, seed: int = 0, out: Optional[Array] = None,
               sample_ids: Optional[Array] = None) -> Array:
        buf = _payload(x, self.payload_bytes, out)
        return buf[:self.encode_into(x, buf, seed, sample_ids)]


class EF21(_core.EF21):
    """EF21: both sides keep g; the sender sends C(x - g) and both do g += D(payload).
    EF21(spec, shape, storage="float32"); decode(payload, out=None) updates g (and fills out)."""

    def encode(self, x: Array, seed: int = 0, out: Optional[Array] = None,
               sample_ids: Optional[Array] = None) -> Array:
        buf = _payload(x, self.payload_bytes, out)
        return buf[:self.encode_into(x, buf, seed, sample_ids)]


class EFSample(_core.EFSample):
    """Error feedback with one residual per training sample, keyed by sample id (rows of x are
    samples). EFSample(spec, cols, capacity, max_rows, storage="float32")."""

    def encode(self, sample_ids: Array, x: Array, seed: int = 0, out: Optional[Array] = None) -> Array:
        buf = _payload(x, self.payload_bytes, out)
        return buf[:self.encode_into(sample_ids, x, buf, seed)]


class AQSGD(_core.AQSGD):
    """AQ-SGD: both sides keep m(xi) per sample id; the sender sends C(x - m(xi)) and both do
    m(xi) += D(payload). Unseen samples and warm-up calls travel whole.
    AQSGD(spec, cols, capacity, max_rows, storage="float32")."""

    def encode(self, sample_ids: Array, x: Array, warmup: bool = False, seed: int = 0,
               out: Optional[Array] = None) -> Array:
        buf = _payload(x, self.payload_bytes, out)
        return buf[:self.encode_into(sample_ids, x, buf, warmup, seed)]

    def decode(self, payload: Array, sample_ids: Array, out: Array) -> Array:  # type: ignore[override]
        super().decode(payload, sample_ids, out)
        return out


def _policy(p: Union[str, Policy]) -> Policy:
    return p if isinstance(p, Policy) else Policy(p)


class Sender(_core.Sender):
    """The sending side of one direction of one boundary, following a policy:
    Sender(policy, boundary, "fwd" | "bwd", max_shape=(rows, cols), dtype="float32", samples=0).
    `samples`: per-sample store capacity (AQ-SGD, EF scope=sample) when the policy leaves it 0."""

    def __init__(self, policy: Union[str, Policy], boundary: int, direction: str,
                 max_shape: Sequence[int], dtype: Any = "float32", samples: int = 0) -> None:
        super().__init__(_policy(policy), boundary, direction, list(max_shape), _dtype_name(dtype), samples)

    def encode(self, x: Array, *, step: int = 0, epoch: int = 0, training: bool = True,
               sample_ids: Optional[Array] = None, seed: int = 0, mask: Optional[Array] = None,
               out: Optional[Array] = None) -> Array:
        """The payload for `x` at this step (both sides must be given the same step arguments).
        `mask`: the forward payload of the same boundary and step, when needs_mask."""
        buf = _payload(x, self.encoded_bytes, out)
        return buf[:self.encode_into(x, buf, step, epoch, training, sample_ids, seed, mask)]


class Receiver(_core.Receiver):
    """The receiving side of one direction of one boundary (arguments as Sender)."""

    def __init__(self, policy: Union[str, Policy], boundary: int, direction: str,
                 max_shape: Sequence[int], dtype: Any = "float32", samples: int = 0) -> None:
        super().__init__(_policy(policy), boundary, direction, list(max_shape), _dtype_name(dtype), samples)

    def decode(self, payload: Array, out: Array, *, step: int = 0, epoch: int = 0, training: bool = True,
               sample_ids: Optional[Array] = None, seed: int = 0, mask: Optional[Array] = None) -> Array:
        """Decodes the peer sender's payload for the same step into `out` and returns it."""
        self.decode_into(payload, out, step, epoch, training, sample_ids, seed, mask)
        return out


if _core.has_cuda:
    __all__ += ["CudaReceiver", "CudaSender"]

    class CudaSender(_core.CudaSender):
        """Sender on the CUDA backend, for device tensors (arguments as Sender; state and
        workspace on the current CUDA device). Calls enqueue on `stream`, by default the
        tensor framework's current stream; sample ids stay in host memory."""

        def __init__(self, policy: Union[str, Policy], boundary: int, direction: str,
                     max_shape: Sequence[int], dtype: Any = "float32", samples: int = 0) -> None:
            super().__init__(_policy(policy), boundary, direction, list(max_shape), _dtype_name(dtype), samples)

        def encode(self, x: Array, *, step: int = 0, epoch: int = 0, training: bool = True,
                   sample_ids: Optional[Array] = None, seed: int = 0, mask: Optional[Array] = None,
                   out: Optional[Array] = None, stream: Optional[int] = None) -> Array:
            buf = _payload(x, self.encoded_bytes, out)
            n = self.encode_into(x, buf, step, epoch, training, sample_ids, seed, mask, _device.stream(x, stream))
            return buf[:n]

    class CudaReceiver(_core.CudaReceiver):
        """Receiver on the CUDA backend (arguments as Sender). The device validates each
        payload; check() (or last_status()) waits for the last decode's stream and reports the
        verdict, and an AQ-SGD receiver commits that batch to its store only then."""

        def __init__(self, policy: Union[str, Policy], boundary: int, direction: str,
                     max_shape: Sequence[int], dtype: Any = "float32", samples: int = 0) -> None:
            super().__init__(_policy(policy), boundary, direction, list(max_shape), _dtype_name(dtype), samples)

        def decode(self, payload: Array, out: Array, *, step: int = 0, epoch: int = 0, training: bool = True,
                   sample_ids: Optional[Array] = None, seed: int = 0, mask: Optional[Array] = None,
                   stream: Optional[int] = None) -> Array:
            self.decode_into(payload, out, step, epoch, training, sample_ids, seed, mask, _device.stream(out, stream))
            return out

        def check(self) -> None:
            """last_status(), raising CodecError unless the last payload was accepted."""
            _raise_unless_success(self.last_status())

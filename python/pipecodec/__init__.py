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

import sys
from typing import Any, Optional, Sequence, Union

from . import _core
from ._core import CodecError, Policy, Spec

__all__ = [
    "AQSGD", "CodecError", "EF", "EF21", "EFSample", "Policy", "Receiver", "Sender", "Spec",
    "decode", "decode_accumulate", "decode_shared", "decode_shared_accumulate", "encode",
    "encode_shared", "encoded_bytes", "info", "workspace_bytes",
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


def _is_torch(a: Any) -> bool:
    return type(a).__module__.split(".")[0] == "torch"


def _empty(like: Any, shape: Sequence[int], dtype: str) -> Array:
    """An uninitialised array of the framework (and device) of `like`."""
    if _is_torch(like):
        torch = sys.modules["torch"]
        return torch.empty(tuple(shape), dtype=getattr(torch, dtype), device=like.device)
    import numpy as np

    # NumPy has no bfloat16: a bf16 payload decodes to float32 unless `out` says otherwise.
    return np.empty(tuple(shape), dtype=np.float32 if dtype == "bfloat16" else dtype)


def _payload(like: Any, size: int, out: Optional[Array]) -> Array:
    return out if out is not None else _empty(like, (size,), "uint8")


def encoded_bytes(spec: SpecLike, shape: Sequence[int]) -> int:
    """Exact payload size of `spec` for a tensor of `shape`."""
    return _spec(spec).encoded_bytes(list(shape))


def workspace_bytes(spec: SpecLike, shape: Sequence[int]) -> int:
    """Workspace an encode of `shape` needs (TopK / RandK; 0 for the others)."""
    return _spec(spec).workspace_bytes(list(shape))


def encode(spec: SpecLike, x: Array, seed: int = 0, out: Optional[Array] = None,
           workspace: Optional[Array] = None) -> Array:
    """Encodes `x` (float32 / float16 / bfloat16; N-D is rows x last dimension) with `spec`.

    Returns the payload: `out[:n]` when `out` (uint8, at least encoded_bytes) is given, else a
    new uint8 array. `seed` drives stochastic rounding and RandK's positions."""
    s = _spec(spec)
    buf = _payload(x, s.encoded_bytes(list(x.shape)), out)
    return buf[:_core.encode_into(s, x, buf, seed, workspace)]


def encode_shared(spec: SpecLike, x: Array, mask: Array, seed: int = 0,
                  out: Optional[Array] = None) -> Array:
    """TopK with mask=shared: the values of `x` at the positions of `mask` (an earlier TopK
    payload of the same shape, scope and k)."""
    s = _spec(spec)
    buf = _payload(x, s.encoded_bytes(list(x.shape)), out)
    return buf[:_core.encode_shared_into(s, x, mask, buf, seed)]


def _decode_target(payload: Array, out: Optional[Array]) -> Array:
    if out is not None:
        return out
    i = info(payload)
    return _empty(payload, i["shape"], i["dtype"])


def decode(payload: Array, out: Optional[Array] = None, workspace: Optional[Array] = None) -> Array:
    """Decodes a payload into `out` (any float dtype, the encoded shape) or a new array of the
    encoded shape and dtype. The payload is validated whole before `out` is written."""
    target = _decode_target(payload, out)
    _core.decode_into(payload, target, False, workspace)
    return target


def decode_accumulate(payload: Array, out: Array, workspace: Optional[Array] = None) -> Array:
    """out += decode(payload) (the update EF21 and AQ-SGD apply to their state)."""
    _core.decode_into(payload, out, True, workspace)
    return out


def decode_shared(payload: Array, mask: Array, out: Optional[Array] = None) -> Array:
    """Decodes a shared-mask payload at the positions of its mask payload (zeros elsewhere)."""
    target = _decode_target(mask, out)
    _core.decode_shared_into(payload, mask, target, False)
    return target


def decode_shared_accumulate(payload: Array, mask: Array, out: Array) -> Array:
    """out += decode_shared(payload, mask), at the kept positions only."""
    _core.decode_shared_into(payload, mask, out, True)
    return out


def info(payload: Array) -> dict:
    """What a payload says about itself: codec, spec, dtype, shape, bytes, seed, version."""
    return _core.info(payload)


class EF(_core.EF):
    """Error feedback with one residual of `shape` (the batch): sends C(x + e), keeps the error.
    The receiver decodes with decode(). EF(spec, shape, storage="float32")."""

    def encode(self, x: Array, seed: int = 0, out: Optional[Array] = None) -> Array:
        buf = _payload(x, self.payload_bytes, out)
        return buf[:self.encode_into(x, buf, seed)]


class EF21(_core.EF21):
    """EF21: both sides keep g; the sender sends C(x - g) and both do g += D(payload).
    EF21(spec, shape, storage="float32"); decode(payload, out=None) updates g (and fills out)."""

    def encode(self, x: Array, seed: int = 0, out: Optional[Array] = None) -> Array:
        buf = _payload(x, self.payload_bytes, out)
        return buf[:self.encode_into(x, buf, seed)]


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

"""Where an array lives, and the framework pieces a CUDA call needs: the caller's current
stream and device memory for payloads and workspaces, taken from the array's own framework
(PyTorch's caching allocator, CuPy's memory pool) so the package imports no framework."""
from __future__ import annotations

import sys
from typing import Any, Optional, Sequence

from . import _core

KDL_CUDA = 2  # DLPack's device type of CUDA device memory


def framework(a: Any) -> str:
    return type(a).__module__.split(".")[0]


def is_cuda(a: Any) -> bool:
    dev = getattr(a, "__dlpack_device__", None)
    return dev is not None and dev()[0] == KDL_CUDA


def use_cuda(*arrays: Any) -> bool:
    """True when the call goes to the CUDA backend; host arrays (and a build without CUDA,
    whose host calls then explain what to build) go to the host backend."""
    return _core.has_cuda and any(is_cuda(a) for a in arrays if a is not None)


def stream(a: Any, given: Optional[int]) -> int:
    """The stream to enqueue on: `given`, else the current stream of `a`'s framework."""
    if given is not None:
        return int(given)
    fw = framework(a)
    if fw == "torch":
        return sys.modules["torch"].cuda.current_stream(a.device).cuda_stream
    if fw == "cupy":
        return sys.modules["cupy"].cuda.get_current_stream().ptr
    return 0  # the legacy default stream


def empty(like: Any, shape: Sequence[int], dtype: str) -> Any:
    """An uninitialised array of the framework and device of `like`."""
    fw = framework(like)
    if fw == "torch":
        torch = sys.modules["torch"]
        return torch.empty(tuple(shape), dtype=getattr(torch, dtype), device=like.device)
    if fw == "cupy":
        cupy = sys.modules["cupy"]
        with cupy.cuda.Device(like.device.id):
            return cupy.empty(tuple(shape), dtype=dtype)
    import numpy as np

    # NumPy has no bfloat16: a bf16 payload decodes to float32 unless `out` says otherwise.
    return np.empty(tuple(shape), dtype=np.float32 if dtype == "bfloat16" else dtype)

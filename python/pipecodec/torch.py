"""pipecodec for PyTorch 2 (2.4 or newer): custom ops, a compressed boundary with autograd, and a
codec slot for torch.distributed.pipelining. Imported on request only (``import pipecodec.torch``):
the package itself knows no framework.

    import pipecodec.torch as pct
    y = pct.boundary(x, fwd="quant:bits=4", bwd="quant:bits=8")   # x -> C(x) forward, C(grad) back

- ``encode`` / ``decode`` / ``roundtrip``: ``torch.library`` custom ops (``pipecodec::...``) with
  fake implementations, so they trace under ``torch.compile`` without graph breaks.
- ``boundary(x, fwd, bwd, seed)``: the activation compressed on the way forward and its gradient
  on the way back, in one process (how the paper's code simulates model parallelism); a custom
  op with its autograd formula, so it compiles too.
- ``Boundary(policy, index, max_shape)``: the same with stateful schemes (EF, EF21, AQ-SGD) through
  a pipecodec Sender/Receiver pair per direction; eager only.
- ``CodecPipelineStage``: a ``torch.distributed.pipelining.PipelineStage`` whose stage-to-stage
  tensors are pipecodec payloads (docs/PYTORCH.md).
"""
from __future__ import annotations

import math
from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

import torch
from torch.distributed.pipelining import PipelineStage

import pipecodec as pc

if not hasattr(torch.library, "custom_op"):
    raise ImportError(f"pipecodec.torch needs PyTorch 2.4 or newer (torch.library.custom_op); this is {torch.__version__}")

__all__ = ["Boundary", "CodecPipelineStage", "WireError", "boundary", "decode", "encode", "roundtrip"]
SpecLike = Union[str, pc.Spec]


def _text(spec: SpecLike) -> str:
    """Spec text for the ops (a str stays as it is: a constant to torch.compile; the op parses it)."""
    return spec if isinstance(spec, str) else str(spec)


# ---- custom ops ------------------------------------------------------------------------------

@torch.library.custom_op("pipecodec::encode", mutates_args=())
def encode(x: torch.Tensor, spec: str, seed: int = 0) -> torch.Tensor:
    """The payload of `x` (float32/float16/bfloat16, rows x last dimension) as a uint8 tensor of
    exactly ``pc.encoded_bytes(spec, x.shape)`` bytes on x's device."""
    x = x.contiguous()
    out = torch.empty(pc.encoded_bytes(spec, x.shape), dtype=torch.uint8, device=x.device)
    pc.encode(spec, x, seed=seed, out=out)
    return out


@encode.register_fake
def _(x: torch.Tensor, spec: str, seed: int = 0) -> torch.Tensor:
    return x.new_empty((pc.encoded_bytes(spec, x.shape),), dtype=torch.uint8)


@torch.library.custom_op("pipecodec::decode", mutates_args=())
def decode(payload: torch.Tensor, spec: str, shape: List[int], dtype: torch.dtype) -> torch.Tensor:
    """A payload made with `spec` decoded into a new tensor of `shape` and `dtype`. Raises
    CodecError on a rejected payload (host); on a GPU the verdict stays on the device."""
    out = torch.empty(shape, dtype=dtype, device=payload.device)
    pc.decode(payload, out=out, spec=spec)
    return out


@decode.register_fake
def _(payload: torch.Tensor, spec: str, shape: List[int], dtype: torch.dtype) -> torch.Tensor:
    return payload.new_empty(shape, dtype=dtype)


@torch.library.custom_op("pipecodec::roundtrip", mutates_args=())
def roundtrip(x: torch.Tensor, spec: str, seed: int = 0) -> torch.Tensor:
    """decode(encode(x)): what the far side of a boundary sees of `x`."""
    x = x.contiguous()
    out = torch.empty_like(x)
    pc.decode(pc.encode(spec, x, seed=seed), out=out, spec=spec)
    return out


@roundtrip.register_fake
def _(x: torch.Tensor, spec: str, seed: int = 0) -> torch.Tensor:
    return torch.empty_like(x, memory_format=torch.contiguous_format)


@torch.library.custom_op("pipecodec::boundary", mutates_args=())
def _boundary(x: torch.Tensor, fwd: str, bwd: str, seed: int) -> torch.Tensor:
    return roundtrip(x, fwd, seed)


@_boundary.register_fake
def _(x: torch.Tensor, fwd: str, bwd: str, seed: int) -> torch.Tensor:
    return torch.empty_like(x, memory_format=torch.contiguous_format)


def _boundary_setup(ctx: Any, inputs: Tuple[Any, ...], output: torch.Tensor) -> None:
    ctx.bwd, ctx.seed = inputs[2], inputs[3]


def _boundary_backward(ctx: Any, grad: torch.Tensor) -> Tuple[Optional[torch.Tensor], None, None, None]:
    return roundtrip(grad, ctx.bwd, ctx.seed), None, None, None


_boundary.register_autograd(_boundary_backward, setup_context=_boundary_setup)


def boundary(x: torch.Tensor, fwd: SpecLike = "plain", bwd: SpecLike = "plain", seed: int = 0) -> torch.Tensor:
    """A stage boundary in one process: returns decode(encode(x, fwd)); on the way back the
    gradient becomes decode(encode(grad, bwd)). `seed` drives stochastic rounding and RandK."""
    return _boundary(x, _text(fwd), _text(bwd), seed)


# ---- stateful boundary in one process ---------------------------------------------------------

class _StatefulBoundary(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, b: "Boundary", at: dict) -> torch.Tensor:  # type: ignore[override]
        x = x.contiguous()
        payload = b.fwd[0].encode(x, **at)
        out = b.fwd[1].decode(payload, torch.empty_like(x), **at)
        b.bytes[0] += payload.numel()
        ctx.b, ctx.at, ctx.mask = b, at, payload
        return out

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> Tuple[torch.Tensor, None, None]:  # type: ignore[override]
        b, grad = ctx.b, grad.contiguous()
        payload = b.bwd[0].encode(grad, **ctx.at, mask=ctx.mask)
        b.bytes[1] += payload.numel()
        return b.bwd[1].decode(payload, torch.empty_like(grad), **ctx.at, mask=ctx.mask), None, None


class Boundary:
    """Both ends of boundary `index` in one process, following a pipecodec policy (docs/POLICY.md),
    with its state: EF, EF21 and AQ-SGD keep theirs across calls as a pipeline's two stages would.
    ``b(x, step=, epoch=, training=, sample_ids=, seed=)``; `sample_ids` (int64, one per row of x
    as rows x last dimension) for AQ-SGD, per-sample EF and rng=sample. ``bytes`` counts payload
    bytes [forward, backward]. Eager only (the state lives in C++ objects)."""

    def __init__(self, policy: Union[str, pc.Policy], index: int, max_shape: Sequence[int],
                 dtype: Any = torch.float32, samples: int = 0) -> None:
        def ends(d: str) -> Tuple[pc.Sender, pc.Receiver]:
            return (pc.Sender(policy, index, d, max_shape, dtype, samples),
                    pc.Receiver(policy, index, d, max_shape, dtype, samples))
        self.fwd, self.bwd = ends("fwd"), ends("bwd")
        self.bytes = [0, 0]

    def __call__(self, x: torch.Tensor, *, step: int = 0, epoch: int = 0, training: bool = True,
                 sample_ids: Optional[torch.Tensor] = None, seed: int = 0) -> torch.Tensor:
        at = dict(step=step, epoch=epoch, training=training, sample_ids=sample_ids, seed=seed)
        return _StatefulBoundary.apply(x, self, at)


# ---- the codec slot for torch.distributed.pipelining -----------------------------------------
#
# A pipeline runtime sends a stage's output tensor forward and the gradient of the next stage's
# input back, with shapes fixed when the stage is built. So the slot makes both the same
# fixed-size "wire" tensor: float32 words holding a header, the micro-batch's sample ids and a
# pipecodec payload, zero-padded. The forward wire carries the activation's payload, the gradient
# of that wire carries the gradient's payload, and autograd pairs each micro-batch's two.

_MAGIC = 0x31574350  # "PCW1"
_HEADER = 8          # int64 words: magic, payload bytes, micro-batch size, ids, step, epoch, seed, training


class WireError(ValueError):
    """A wire tensor that is not what this boundary's other end sends (or the two ends were
    given different steps)."""


class _Wire:
    """One boundary's wire format, the same on its two ends."""

    def __init__(self, policy: pc.Policy, index: int, shape: Sequence[int], dtype: Any, samples: int,
                 sending: bool) -> None:
        self.shape = tuple(shape)  # the largest micro-batch's activation
        self.rows_per_sample = math.prod(self.shape[:-1]) // self.shape[0]
        max_shape = (math.prod(self.shape[:-1]), self.shape[-1])
        store = samples * self.rows_per_sample
        fwd_end, bwd_end = (pc.Sender, pc.Receiver) if sending else (pc.Receiver, pc.Sender)
        self.fwd = fwd_end(policy, index, "fwd", max_shape, dtype, store)
        self.bwd = bwd_end(policy, index, "bwd", max_shape, dtype, store)
        self.dtype = dtype
        self.start = 8 * (_HEADER + self.shape[0])  # the payload's offset: after the header and ids
        self.nbytes = 4 * math.ceil((self.start + max(self.fwd.encoded_bytes, self.bwd.encoded_bytes)) / 4)

    def empty(self) -> torch.Tensor:
        return torch.zeros(self.nbytes // 4, dtype=torch.float32)

    def row_ids(self, ids: Optional[torch.Tensor]) -> Optional[torch.Tensor]:
        """Per-row sample ids of the payload: sample s's r-th row of a (samples, ..., cols)
        activation is s * rows_per_sample + r, so per-sample state is per (sample, position)."""
        if ids is None:
            return None
        k = self.rows_per_sample
        return (ids.view(-1, 1) * k + torch.arange(k, dtype=torch.int64)).reshape(-1) if k > 1 else ids

    def pack(self, end: Any, x: torch.Tensor, at: dict, ids: Optional[torch.Tensor],
             mask: Optional[torch.Tensor]) -> Tuple[torch.Tensor, torch.Tensor]:
        """Encodes x with `end` into a new wire; returns (wire as float32, payload view)."""
        wire = torch.zeros(self.nbytes, dtype=torch.uint8)
        n_ids = 0 if ids is None else ids.numel()
        payload = end.encode(x, **at, sample_ids=self.row_ids(ids), mask=mask, out=wire[self.start:])
        wire[:8 * _HEADER].view(torch.int64).copy_(torch.tensor(
            [_MAGIC, payload.numel(), x.shape[0], n_ids, at["step"], at["epoch"], at["seed"], int(at["training"])]))
        if ids is not None:
            wire[8 * _HEADER:8 * (_HEADER + n_ids)].view(torch.int64).copy_(ids)
        return wire.view(torch.float32), payload

    def unpack(self, wire: torch.Tensor, at: dict) -> Tuple[torch.Tensor, int, Optional[torch.Tensor], int]:
        """(payload, micro-batch size, sample ids or None, seed) of a wire from the other end,
        checked against this end's step arguments."""
        w = wire.detach().contiguous().view(torch.uint8)
        if w.numel() != self.nbytes:
            raise WireError(f"wire of {w.numel()} bytes, expected {self.nbytes}")
        magic, used, n, n_ids, step, epoch, seed, training = w[:8 * _HEADER].view(torch.int64).tolist()
        if magic != _MAGIC or not 0 < used <= self.nbytes - self.start or not 0 < n <= self.shape[0] or n_ids not in (0, n):
            raise WireError(f"bad wire header (magic {magic:#x}, {used} payload bytes, {n} samples, {n_ids} ids)")
        if (step, epoch, bool(training)) != (at["step"], at["epoch"], at["training"]):
            raise WireError(f"wire of step {step} epoch {epoch} training {bool(training)} reached an end at "
                            f"step {at['step']} epoch {at['epoch']} training {at['training']}: call set_step "
                            "with the same arguments on every stage")
        ids = w[8 * _HEADER:8 * (_HEADER + n_ids)].view(torch.int64).clone() if n_ids else None
        return w[self.start:self.start + used], n, ids, seed


class _SendActivation(torch.autograd.Function):
    """Stage output -> forward wire; the gradient wire -> the output's gradient."""

    @staticmethod
    def forward(ctx: Any, y: torch.Tensor, slot: "_CodecModule") -> torch.Tensor:  # type: ignore[override]
        w = slot.out_wire
        at = slot.step_args(seed=slot.next_seed())
        wire, payload = w.pack(w.fwd, y.detach().contiguous(), at, slot.ids, None)
        slot.trace("fwd", "sent", payload, y, at, slot.ids)
        ctx.slot, ctx.at, ctx.ids, ctx.payload, ctx.shape = slot, at, slot.ids, payload, y.shape
        return wire

    @staticmethod
    def backward(ctx: Any, gwire: torch.Tensor) -> Tuple[torch.Tensor, None]:  # type: ignore[override]
        w = ctx.slot.out_wire
        payload, _, _, _ = w.unpack(gwire, ctx.at)
        grad = torch.empty(ctx.shape, dtype=w.dtype)
        w.bwd.decode(payload, grad, **ctx.at, sample_ids=w.row_ids(ctx.ids), mask=ctx.payload)
        ctx.slot.trace("bwd", "received", payload, grad, ctx.at, ctx.ids)
        return grad, None


class _ReceiveActivation(torch.autograd.Function):
    """Forward wire -> this stage's input; the input's gradient -> the gradient wire."""

    @staticmethod
    def forward(ctx: Any, wire: torch.Tensor, slot: "_CodecModule") -> torch.Tensor:  # type: ignore[override]
        w = slot.in_wire
        at = slot.step_args(seed=0)
        payload, n, ids, at["seed"] = w.unpack(wire, at)
        x = torch.empty((n,) + w.shape[1:], dtype=w.dtype)
        w.fwd.decode(payload, x, **at, sample_ids=w.row_ids(ids))
        slot.trace("fwd", "received", payload, x, at, ids)
        slot.ids = ids
        ctx.slot, ctx.at, ctx.ids, ctx.payload = slot, at, ids, payload.clone()
        return x

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> Tuple[torch.Tensor, None]:  # type: ignore[override]
        w = ctx.slot.in_wire
        grad = grad.contiguous()
        wire, payload = w.pack(w.bwd, grad, ctx.at, ctx.ids, ctx.payload)
        ctx.slot.trace("bwd", "sent", payload, grad, ctx.at, ctx.ids)
        return wire, None


class _CodecModule(torch.nn.Module):
    """The stage's module between the wires: decode the input, run the module, encode the output."""

    def __init__(self, module: torch.nn.Module, in_wire: Optional[_Wire], out_wire: Optional[_Wire],
                 takes_ids: bool) -> None:
        super().__init__()
        self.module, self.in_wire, self.out_wire, self.takes_ids = module, in_wire, out_wire, takes_ids
        self.step, self.epoch, self.micro_batch = 0, 0, 0
        self.ids: Optional[torch.Tensor] = None
        # Called with (direction, "sent" | "received", payload, tensor, step arguments, sample ids)
        # at every end: the tensor encoded or decoded. For tests and byte counting.
        self.on_payload: Optional[Callable[..., None]] = None

    def step_args(self, seed: int) -> dict:
        return dict(step=self.step, epoch=self.epoch, training=self.module.training, seed=seed)

    def next_seed(self) -> int:
        """A distinct seed per step and micro-batch (stochastic rounding, RandK)."""
        self.micro_batch += 1
        return (self.step << 20) + self.micro_batch

    def trace(self, *args: Any) -> None:
        if self.on_payload is not None:
            self.on_payload(*args)

    def forward(self, *args: torch.Tensor) -> torch.Tensor:
        if self.in_wire is not None:
            x = _ReceiveActivation.apply(args[0], self)
            y = self.module(x)
        else:
            self.ids = args[1].to(torch.int64) if self.takes_ids else None
            y = self.module(*args[:1 if self.takes_ids else len(args)])
        return y if self.out_wire is None else _SendActivation.apply(y, self)


class CodecPipelineStage(PipelineStage):
    """A PipelineStage whose activations and gradients cross each stage boundary as pipecodec
    payloads, following `policy` (docs/POLICY.md: codec and state per boundary and direction,
    warm-up, inference mode). Arguments as PipelineStage, plus:

    - `input_args`: this stage's example micro-batch input (required: its shape sizes the wires);
      the stage runs its module once on it to learn the output shape.
    - `sample_ids`: stage 0's module also receives the micro-batch's sample ids (pass them to
      ``schedule.step(x, ids)``: the schedule splits them with x); they travel in every wire, for
      AQ-SGD, per-sample EF and rng=sample. Every stage must be given the same value.
    - `samples`: the number of distinct sample ids (the per-sample stores' capacity).

    Call ``set_step(step, epoch)`` on every stage before each ``schedule.step``; every end derives
    its mode (warm-up, compressed) from it, and a wire checks both ends agree. ``module.train()``
    / ``eval()`` on the stage's submodule selects training or inference mode.
    """

    def __init__(self, submodule: torch.nn.Module, stage_index: int, num_stages: int, device: torch.device,
                 input_args: Union[torch.Tensor, Tuple[torch.Tensor, ...]], *, policy: Union[str, pc.Policy],
                 sample_ids: bool = False, samples: int = 0, group: Any = None, dtype: Any = torch.float32) -> None:
        if torch.device(device).type != "cpu":
            raise NotImplementedError("CodecPipelineStage runs on CPU tensors (the host backend) for now")
        example = input_args if isinstance(input_args, tuple) else (input_args,)
        pol = policy if isinstance(policy, pc.Policy) else pc.Policy(policy)
        with torch.no_grad():
            example_out = submodule(*example)
        last = stage_index == num_stages - 1
        in_wire = None if stage_index == 0 else _Wire(pol, stage_index - 1, example[0].shape, dtype, samples, False)
        out_wire = None if last else _Wire(pol, stage_index, example_out.shape, dtype, samples, True)
        codec = _CodecModule(submodule, in_wire, out_wire, sample_ids and stage_index == 0)
        # Example inputs and outputs as the runtime will see them: wires between stages. They
        # require grad where gradients travel (newer torch reads that from the examples).
        if in_wire is not None:
            inputs: Tuple[torch.Tensor, ...] = (in_wire.empty().requires_grad_(),)
        elif sample_ids:
            inputs = example[:1] + (torch.zeros(example[0].shape[0], dtype=torch.int64),)
        else:
            inputs = example
        outputs = out_wire.empty() if out_wire is not None else example_out.detach()
        outputs.requires_grad_(outputs.is_floating_point())
        super().__init__(codec, stage_index, num_stages, device, inputs, output_args=outputs, group=group)
        self.codec = codec

    def set_step(self, step: int, epoch: int = 0) -> None:
        """The training step and epoch of the next schedule.step (the same on every stage)."""
        self.codec.step, self.codec.epoch, self.codec.micro_batch = step, epoch, 0

    @property
    def wire_bytes(self) -> Tuple[int, int]:
        """Bytes of the input and output wire tensors (0 at the pipeline's ends)."""
        return tuple(w.nbytes if w is not None else 0 for w in (self.codec.in_wire, self.codec.out_wire))

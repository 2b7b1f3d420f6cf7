"""pipecodec.torch on PyTorch 2: the custom ops, boundary() and its autograd formula, under
torch.compile; the stateful Boundary; CodecPipelineStage in torch.distributed.pipelining runs
over gloo (GPipe and 1F1B, 2 and 4 stages), every payload checked against the host codec."""
import os
import socket
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
if not hasattr(torch.library, "custom_op"):
    pytest.skip(f"pipecodec.torch needs PyTorch >= 2.4, this is {torch.__version__}", allow_module_level=True)

import pipecodec as pc  # noqa: E402
import pipecodec.torch as pct  # noqa: E402

WORKER = os.path.join(os.path.dirname(__file__), "pipelining_worker.py")


def test_ops_are_the_package_codec():
    x = torch.randn(12, 96)
    for spec in ("quant:bits=3,group=32", "topk:ratio=0.1,scope=row", "fp8:format=e5m2", "plain:dtype=bf16"):
        payload = pct.encode(x, spec, 5)
        assert torch.equal(payload, pc.encode(spec, x, seed=5))
        assert payload.numel() == pc.encoded_bytes(spec, x.shape)
        assert torch.equal(pct.decode(payload, spec, [12, 96], torch.float32), pc.decode(payload))
        assert torch.equal(pct.roundtrip(x, spec, 5), pc.decode(payload))
    assert pct.decode(pct.encode(x, "quant:bits=8"), "quant:bits=8", [3, 4, 96], torch.float16).shape == (3, 4, 96)


def test_boundary_compresses_the_activation_forward_and_its_gradient_back():
    x = torch.randn(16, 128, requires_grad=True)
    y = pct.boundary(x, fwd="quant:bits=4,round=stochastic", bwd="topk:ratio=0.25", seed=9)
    assert torch.equal(y, pc.decode(pc.encode("quant:bits=4,round=stochastic", x.detach(), seed=9)))
    g = torch.randn(16, 128)
    y.backward(g)
    assert torch.equal(x.grad, pc.decode(pc.encode("topk:ratio=0.25", g, seed=9)))


def test_bad_spec_and_hostile_payload_raise():
    with pytest.raises(ValueError, match="bits"):
        pct.boundary(torch.randn(4, 32), fwd="quant:bits=99")
    payload = pct.encode(torch.randn(4, 32), "quant:bits=4")
    payload[3] ^= 0xFF
    with pytest.raises(pc.CodecError):
        pct.decode(payload, "quant:bits=4", [4, 32], torch.float32)


def _model(x):
    h = torch.tanh(x * 1.5)
    h = pct.boundary(h, "quant:bits=4,group=32", "quant:bits=8,group=32")
    return (h * x).sum()


def test_compiles_without_graph_breaks():
    x = torch.randn(8, 64)
    explained = torch._dynamo.explain(_model)(x)
    assert explained.graph_break_count == 0 and explained.graph_count == 1
    ops = lambda t: pct.decode(pct.encode(t, "fp8", 0), "fp8", [8, 64], torch.float32) + 1  # noqa: E731
    assert torch._dynamo.explain(ops)(x).graph_break_count == 0


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_compiled_forward_and_backward_equal_eager(backend):
    torch._dynamo.reset()
    x0 = torch.randn(8, 64)
    grads = []
    for fn in (_model, torch.compile(_model, backend=backend, fullgraph=True)):
        x = x0.clone().requires_grad_(True)
        loss = fn(x)
        loss.backward()
        grads.append((loss.detach(), x.grad))
    # The boundary's codec output is bit for bit eager's; the float ops around it may fuse.
    assert torch.allclose(grads[0][0], grads[1][0], rtol=1e-5)
    assert torch.allclose(grads[0][1], grads[1][1], rtol=1e-5, atol=1e-6)
    assert torch.equal(torch.compile(pct.roundtrip, backend=backend, fullgraph=True)(x0, "quant:bits=4", 0),
                       pct.roundtrip(x0, "quant:bits=4", 0))


def test_stateful_boundary_is_a_sender_and_receiver_pair():
    policy = "fwd=topk:ratio=0.25+ef21; bwd=topk:ratio=0.25,mask=shared; warmup=1steps"
    b = pct.Boundary(policy, 0, (8, 32))
    tx, rx = pc.Sender(policy, 0, "fwd", (8, 32)), pc.Receiver(policy, 0, "fwd", (8, 32))
    gtx, grx = pc.Sender(policy, 0, "bwd", (8, 32)), pc.Receiver(policy, 0, "bwd", (8, 32))
    for step in range(3):
        x = torch.randn(8, 32, requires_grad=True)
        y = b(x, step=step, seed=step)
        mask = tx.encode(x.detach(), step=step, seed=step)
        assert torch.equal(y, rx.decode(mask, torch.empty(8, 32), step=step, seed=step))
        g = torch.randn(8, 32)
        y.backward(g)
        gp = gtx.encode(g, step=step, seed=step, mask=mask)
        assert torch.equal(x.grad, grx.decode(gp, torch.empty(8, 32), step=step, seed=step, mask=mask))
    assert b.bytes[0] > 0 and b.bytes[1] > 0


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(tmp_path, world, *args):
    """Runs the worker on `world` ranks; returns each rank's saved result."""
    out = tmp_path / f"run{len(list(tmp_path.iterdir()))}"
    out.mkdir()
    port = str(_free_port())
    procs = [subprocess.Popen([sys.executable, WORKER, "--rank", str(r), "--world", str(world), "--port", port,
                               "--out", str(out), *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for r in range(world)]
    logs = [p.communicate(timeout=300)[0] for p in procs]
    for r, (p, log) in enumerate(zip(procs, logs)):
        assert p.returncode == 0, f"rank {r} exited {p.returncode}:\n{log[-4000:]}"
    return [torch.load(out / f"rank{r}.pt", weights_only=False) for r in range(world)]


def _check_against_host_codec(ranks, policy, chunks=4, steps=3):
    """Each boundary's payloads arrived unchanged, and a host Sender/Receiver pair replaying the
    sent tensors in order (with the recorded step arguments and ids) makes the same payloads and
    decodes the received tensors bit for bit: state schemes included."""
    for b in range(len(ranks) - 1):
        fwd_payloads = {}
        for d, tx_rank, rx_rank in (("fwd", b, b + 1), ("bwd", b + 1, b)):
            sent = [r for r in ranks[tx_rank]["records"] if r["direction"] == d and r["role"] == "sent"]
            got = [r for r in ranks[rx_rank]["records"] if r["direction"] == d and r["role"] == "received"]
            assert len(sent) == len(got) == steps * chunks
            shape = tuple(sent[0]["tensor"].shape)
            tx, rx = (End(policy, b, d, shape, samples=64) for End in (pc.Sender, pc.Receiver))
            for s, r in zip(sent, got):
                assert torch.equal(s["payload"], r["payload"]) and s["at"] == r["at"]
                mask = fwd_payloads.get(s["at"]["seed"]) if d == "bwd" else None
                p = tx.encode(s["tensor"], **s["at"], sample_ids=s["ids"], mask=mask)
                assert torch.equal(p, s["payload"]), f"boundary {b} {d} step {s['at']}"
                out = rx.decode(p, torch.empty_like(r["tensor"]), **r["at"], sample_ids=r["ids"], mask=mask)
                assert torch.equal(out, r["tensor"]), f"boundary {b} {d} step {s['at']}"
                if d == "fwd":
                    fwd_payloads[s["at"]["seed"]] = p


def test_pipelining_plain_codec_trains_exactly_as_plain_pipeline_stage(tmp_path):
    plain = _run(tmp_path, 2)
    coded = _run(tmp_path, 2, "--policy", "fwd=plain; bwd=plain")
    assert plain[-1]["losses"] == coded[-1]["losses"] and len(coded[-1]["losses"]) == 3
    _check_against_host_codec(coded, "fwd=plain; bwd=plain")


@pytest.mark.parametrize("world,schedule,policy,ids", [
    (2, "1f1b", "fwd=quant:bits=4,round=stochastic+ef21; bwd=quant:bits=8+ef; warmup=1steps", False),
    (4, "gpipe", "fwd=topk:ratio=0.25,scope=row; bwd=topk:ratio=0.25,scope=row,mask=shared", False),
    (4, "1f1b", "fwd=quant:bits=4+aqsgd; bwd=quant:bits=4+ef(scope=sample); warmup=1steps", True),
])
def test_pipelining_codec_slot_matches_host_codec(tmp_path, world, schedule, policy, ids):
    ranks = _run(tmp_path, world, "--policy", policy, "--schedule", schedule, *(["--sample-ids"] if ids else []))
    _check_against_host_codec(ranks, policy)
    assert all(all(v == v for v in step) for step in ranks[-1]["losses"])  # finite


def test_wire_rejects_mismatched_steps_and_garbage():
    policy = "fwd=quant:bits=4; bwd=quant:bits=8"
    pol = pc.Policy(policy)
    tx = pct._Wire(pol, 0, (4, 16), torch.float32, 0, True)
    rx = pct._Wire(pol, 0, (4, 16), torch.float32, 0, False)
    at = dict(step=3, epoch=0, training=True, seed=11)
    wire, _ = tx.pack(tx.fwd, torch.randn(4, 16), at, None, None)
    payload, n, ids, seed = rx.unpack(wire, at)
    assert n == 4 and ids is None and seed == 11
    with pytest.raises(pct.WireError, match="step"):
        rx.unpack(wire, dict(at, step=4))
    with pytest.raises(pct.WireError, match="header"):
        rx.unpack(torch.zeros_like(wire), at)
    with pytest.raises(pct.WireError, match="bytes"):
        rx.unpack(wire[:-1], at)

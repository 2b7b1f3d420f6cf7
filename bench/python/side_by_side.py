#!/usr/bin/env python3
"""pipecodec beside the torch code it would replace, on the same fp32 tensors in one process.

  python3 bench/python/side_by_side.py [--quick] [--threads N] [--out FILE]

Compared, with preallocated outputs wherever the API takes one:
  - an AQ-SGD-style 4-bit quantizer in plain torch (per-row absmax / 7, round, clamp, two codes
    per byte) vs pipecodec quant:bits=4,group=row,scale=absmax;
  - hivemind's Uint8 "uniform" quantizer rewritten in torch (centred on the mean, 256 steps over
    6 standard deviations, codes decoded through a codebook of bucket means) vs pipecodec
    quant:bits=8,group=tensor,scale=minmax, the closest pipecodec grid (one uniform 8-bit grid per
    tensor; it spans min..max instead of clipping at 3 sigma and decodes to the grid points);
  - a randomized Hadamard rotation (blocks of 128: signs, matmul) and 2-bit min-max codes per
    128 values in torch (QuaRot / TAH-Quant style) vs pipecodec
    quant:bits=2,group=128,rotate=hadamard;
  - torch's float8 casts (torch >= 2.1; skipped on older torch) with one fp32 absmax scale per
    128 values vs pipecodec fp8:format=e4m3|e5m2,group=128;
  - torch.topk of |x| + gather (int64 indices, or narrowed to int32 for the wire) and
    zeros + scatter_ vs pipecodec topk:ratio=0.1, tensor and row scope;
  - the binding's cost per call on 64 elements: pc.encode / pc.decode against the raw
    pc._core.encode_into / decode_into.
Each time is the median of REPS repetitions after warm-up. Within a repetition the copy
baseline, the encode and the decode run back to back, and every time is also given as a ratio to
that baseline: dst.copy_(src) of the INPUT tensor's bytes, for decodes too (the payloads are
smaller; the input is what both sides start from), in wall time and, in the "(cpu)" columns, in
process CPU time. Only ratios from one run are comparable on a shared machine. pipecodec's host
backend is single-threaded: torch gets --threads (default 1).
"""
import argparse
import datetime
import math
import statistics
import sys
import time

import torch

import pipecodec as pc

RATIO = 0.1  # TopK keeps 10 %
TINY = torch.finfo(torch.float32).tiny


def median_times(fns, reps, warmup):
    """(wall, cpu) median seconds of each fn; all fns run once per repetition so that they share
    its conditions. The process CPU time leaves out waits for a core on an oversubscribed
    machine (and adds up torch's worker threads when --threads > 1)."""
    for _ in range(warmup):
        for f in fns:
            f()
    wall, cpu = [[] for _ in fns], [[] for _ in fns]
    for _ in range(reps):
        for w, c, f in zip(wall, cpu, fns):
            t0, c0 = time.perf_counter(), time.process_time()
            f()
            c.append(time.process_time() - c0)
            w.append(time.perf_counter() - t0)
    return [(statistics.median(w), statistics.median(c)) for w, c in zip(wall, cpu)]


def topk_k(unit_len):
    """pipecodec's k rule (docs/TOPK.md): ratio x unit_len rounded to nearest, ties up, >= 1."""
    v = RATIO * unit_len
    k = math.floor(v) + (1 if v >= math.floor(v) + 0.5 else 0)
    return max(1, min(unit_len, k))


# Each builder returns (encode, decode, y, payload bytes): decode writes the round trip into y.

def torch_aqsgd4(x):
    """AQ-SGD-style: one absmax scale per row (channel), codes -7..7 stored +8 as nibbles."""
    rows, cols = x.shape
    scale = torch.empty(rows, 1)
    packed = torch.empty(rows, cols // 2, dtype=torch.uint8)
    y = torch.empty_like(x)

    def encode():
        torch.amax(x.abs(), dim=1, keepdim=True, out=scale)
        scale.div_(7).clamp_(min=TINY)  # an all-zero row must not divide by zero
        q = torch.round(x / scale).clamp_(-7, 7).add_(8).to(torch.uint8)
        torch.bitwise_or(q[:, 0::2] << 4, q[:, 1::2], out=packed)

    def decode():
        q = torch.stack((packed >> 4, packed & 15), dim=2).view(rows, cols)
        torch.mul(q.to(torch.float32).sub_(8), scale, out=y)

    return encode, decode, y, packed.numel() + 4 * rows


def torch_hivemind8(x):
    """hivemind Uint8 uniform: quantize_per_tensor at zero point 128 (beyond +-3 sigma clips),
    payload = int64 codebook length + 256 fp32 bucket means + one byte per element."""
    n = x.numel()
    flat = x.view(-1)
    y = torch.empty_like(x)
    wire = {}

    def encode():
        centred = flat - flat.mean()
        step = 6 * float(centred.norm()) / math.sqrt(n - 1) / 256
        codes = torch.quantize_per_tensor(centred, step, 128, torch.quint8).int_repr()
        idx = codes.long()
        sums = torch.zeros(256).scatter_add_(0, idx, flat)
        wire["codes"] = codes
        wire["codebook"] = sums / torch.bincount(idx, minlength=256).clamp_min_(1)

    def decode():
        torch.index_select(wire["codebook"], 0, wire["codes"].long(), out=y.view(-1))

    return encode, decode, y, 8 + 4 * 256 + n


def torch_topk(x, scope, index_dtype):
    """sorted=False is torch's cheapest topk (pipecodec's positions come out ascending). Tensor
    scope is a (1, n) view so both scopes select along dim 1. scatter_ takes int64 only, so an
    int32 wire costs a narrowing on the sender and a widening on the receiver."""
    xv = x.view(1, -1) if scope == "tensor" else x
    units, k = xv.shape[0], topk_k(xv.shape[1])
    mag = torch.empty_like(xv)
    top = torch.empty(units, k)
    idx = torch.empty(units, k, dtype=torch.int64)
    vals = torch.empty(units, k)
    wire_idx = idx if index_dtype is torch.int64 else torch.empty(units, k, dtype=index_dtype)
    recv_idx = idx if index_dtype is torch.int64 else torch.empty(units, k, dtype=torch.int64)
    y = torch.empty_like(x)
    yv = y.view(xv.shape)

    def encode():
        torch.abs(xv, out=mag)
        torch.topk(mag, k, dim=1, sorted=False, out=(top, idx))
        torch.gather(xv, 1, idx, out=vals)
        if wire_idx is not idx:
            wire_idx.copy_(idx)

    def decode():
        if recv_idx is not wire_idx:
            recv_idx.copy_(wire_idx)
        yv.zero_()
        yv.scatter_(1, recv_idx, vals)

    return encode, decode, y, 4 * vals.numel() + wire_idx.element_size() * wire_idx.numel()


def torch_hadamard2(x):
    """QuaRot / TAH-Quant style in torch: random column signs, a 128 x 128 orthonormal
    Hadamard matmul per block of each row, then 2-bit min-max codes per 128 values (fp32 scale
    and offset), four codes per byte; decode inverts both (H is symmetric and orthonormal)."""
    rows, cols = x.shape
    b = 128
    h = torch.ones(1, 1)
    while h.shape[0] < b:
        h = torch.cat((torch.cat((h, h), 1), torch.cat((h, -h), 1)), 0)
    h /= math.sqrt(b)
    signs = torch.randint(0, 2, (cols,), generator=torch.Generator().manual_seed(1)).float() * 2 - 1
    groups = rows * cols // b
    lo, step = torch.empty(groups, 1), torch.empty(groups, 1)
    packed = torch.empty(rows * cols // 4, dtype=torch.uint8)
    y = torch.empty_like(x)

    def encode():
        r = torch.mm((x * signs).view(groups, b), h)
        torch.amin(r, dim=1, keepdim=True, out=lo)
        torch.amax(r, dim=1, keepdim=True, out=step)
        step.sub_(lo).div_(3).clamp_(min=TINY)
        q = torch.round((r - lo) / step).clamp_(0, 3).to(torch.uint8).view(-1, 4)
        torch.bitwise_or(torch.bitwise_or(q[:, 0] << 6, q[:, 1] << 4), torch.bitwise_or(q[:, 2] << 2, q[:, 3]),
                         out=packed)

    def decode():
        q = torch.stack((packed >> 6, (packed >> 4) & 3, (packed >> 2) & 3, packed & 3), dim=1)
        r = q.view(groups, b).to(torch.float32).mul_(step).add_(lo)
        torch.mul(torch.mm(r, h).view(rows, cols), signs, out=y)

    return encode, decode, y, packed.numel() + 8 * groups


def torch_fp8(dtype, fmax):
    """torch's float8 cast with one fp32 scale per 128 values: absmax / the format's largest
    finite value, so the scaled values stay in range (torch's cast does not saturate: beyond it
    gives NaN or Inf); decode casts back and multiplies."""
    def build(x):
        groups = x.numel() // 128
        xv = x.view(groups, 128)
        scale = torch.empty(groups, 1)
        codes = torch.empty(groups, 128, dtype=dtype)
        y = torch.empty_like(x)

        def encode():
            torch.amax(xv.abs(), dim=1, keepdim=True, out=scale)
            scale.div_(fmax).clamp_(min=TINY)
            codes.copy_(xv / scale)

        def decode():
            torch.mul(codes.to(torch.float32), scale, out=y.view(groups, 128))

        return encode, decode, y, codes.numel() + 4 * groups
    return build


def pipecodec_case(spec):
    def build(x):
        buf = torch.empty(pc.encoded_bytes(spec, x.shape), dtype=torch.uint8)
        ws = torch.empty(pc.workspace_bytes(spec, x.shape), dtype=torch.uint8)
        y = torch.empty_like(x)
        wire = {}

        def encode():
            wire["p"] = pc.encode(spec, x, out=buf, workspace=ws)

        def decode():
            pc.decode(wire["p"], out=y)

        return encode, decode, y, buf.numel()  # encoded_bytes is exact
    return build


CASES = [  # (comparison, method, builder)
    ("4-bit, per-row absmax", "torch AQ-SGD-style", torch_aqsgd4),
    ("4-bit, per-row absmax", "pipecodec quant:bits=4,group=row,scale=absmax",
     pipecodec_case("quant:bits=4,group=row,scale=absmax")),
    ("8-bit uniform, per tensor", "torch hivemind Uint8 uniform", torch_hivemind8),
    ("8-bit uniform, per tensor", "pipecodec quant:bits=8,group=tensor,scale=minmax",
     pipecodec_case("quant:bits=8,group=tensor,scale=minmax")),
    ("2-bit, Hadamard 128, min-max 128", "torch signs + matmul + quantize", torch_hadamard2),
    ("2-bit, Hadamard 128, min-max 128", "pipecodec quant:bits=2,group=128,rotate=hadamard",
     pipecodec_case("quant:bits=2,group=128,rotate=hadamard")),
] + ([  # torch 2.1 and later
    ("fp8 e4m3, scale per 128", "torch float8_e4m3fn cast", torch_fp8(getattr(torch, "float8_e4m3fn", None), 448.0)),
    ("fp8 e4m3, scale per 128", "pipecodec fp8:format=e4m3,group=128",
     pipecodec_case("fp8:format=e4m3,group=128")),
    ("fp8 e5m2, scale per 128", "torch float8_e5m2 cast", torch_fp8(getattr(torch, "float8_e5m2", None), 57344.0)),
    ("fp8 e5m2, scale per 128", "pipecodec fp8:format=e5m2,group=128",
     pipecodec_case("fp8:format=e5m2,group=128")),
] if hasattr(torch, "float8_e4m3fn") else []) + [
    ("TopK 10 %, tensor", "torch topk+gather, int64 idx", lambda x: torch_topk(x, "tensor", torch.int64)),
    ("TopK 10 %, tensor", "torch topk+gather, int32 idx", lambda x: torch_topk(x, "tensor", torch.int32)),
    ("TopK 10 %, tensor", "pipecodec topk:ratio=0.1", pipecodec_case("topk:ratio=0.1")),
    ("TopK 10 %, row", "torch topk+gather, int64 idx", lambda x: torch_topk(x, "row", torch.int64)),
    ("TopK 10 %, row", "torch topk+gather, int32 idx", lambda x: torch_topk(x, "row", torch.int32)),
    ("TopK 10 %, row", "pipecodec topk:ratio=0.1,scope=row", pipecodec_case("topk:ratio=0.1,scope=row")),
]


def run_cases(shapes, reps, warmup, log):
    rows = []
    for shape in shapes:
        x = torch.randn(shape, generator=torch.Generator().manual_seed(0))
        dst = torch.empty_like(x)
        copy = lambda: dst.copy_(x)  # noqa: E731 - the common baseline of every row
        for comparison, method, build in CASES:
            encode, decode, y, nbytes = build(x)
            (t_copy, c_copy), (t_enc, c_enc), (t_dec, c_dec) = median_times(
                [copy, encode, decode], reps, warmup)
            err = float((y - x).norm() / x.norm())
            r = dict(shape="%dx%d" % shape, comparison=comparison, method=method, copy=t_copy,
                     enc=t_enc, dec=t_dec, enc_cpu=c_enc / c_copy, dec_cpu=c_dec / c_copy,
                     bytes=nbytes, frac=nbytes / (4 * x.numel()), err=err)
            rows.append(r)
            log("%-9s %-26s %-49s encode %8.3f ms %6.2fx copy, decode %8.3f ms %6.2fx copy, "
                "%9d B, rel L2 %.4f" % (r["shape"], comparison, method, t_enc * 1e3, t_enc / t_copy,
                                        t_dec * 1e3, t_dec / t_copy, nbytes, err))
    return rows


def overhead(batch, reps, log):
    """Per-call microseconds on 64 fp32 elements, where the binding's fixed cost dominates."""
    x = torch.randn(64)
    xn = x.numpy()
    y = torch.empty_like(x)
    q8, plain = pc.Spec("quant:bits=8"), pc.Spec("plain")
    qbuf = torch.empty(q8.encoded_bytes([64]), dtype=torch.uint8)
    pbuf = torch.empty(plain.encoded_bytes([64]), dtype=torch.uint8)
    qbuf_np = qbuf.numpy()
    payload = pc.encode(q8, x, out=qbuf)
    calls = [
        ("torch y.copy_(x) (reference)", lambda: y.copy_(x)),
        ('pc.encode("quant:bits=8", x, out=buf)', lambda: pc.encode("quant:bits=8", x, out=qbuf)),
        ("pc.encode(Spec quant:bits=8, x, out=buf)", lambda: pc.encode(q8, x, out=qbuf)),
        ("_core.encode_into(Spec quant:bits=8, x, buf)", lambda: pc._core.encode_into(q8, x, qbuf)),
        ("_core.encode_into(Spec quant:bits=8, numpy x, numpy buf)",
         lambda: pc._core.encode_into(q8, xn, qbuf_np)),
        ('pc.encode("plain", x, out=buf)', lambda: pc.encode("plain", x, out=pbuf)),
        ("pc.encode(Spec plain, x, out=buf)", lambda: pc.encode(plain, x, out=pbuf)),
        ("_core.encode_into(Spec plain, x, buf)", lambda: pc._core.encode_into(plain, x, pbuf)),
        ("pc.decode(quant:bits=8 payload, out=y)", lambda: pc.decode(payload, out=y)),
        ("_core.decode_into(quant:bits=8 payload, y)", lambda: pc._core.decode_into(payload, y)),
    ]

    def batched(f):
        def run():
            for _ in range(batch):
                f()
        return run

    secs = median_times([batched(f) for _, f in calls], reps, warmup=1)
    us = [wall / batch * 1e6 for wall, _ in secs]
    for (name, _), u in zip(calls, us):
        log("64 fp32   %-58s %7.2f us/call" % (name, u))
    return [(name, u, u / us[0]) for (name, _), u in zip(calls, us)]


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            return next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "?")
    except OSError:
        return "?"


def markdown(meta, rows, calls):
    out = [meta, "",
           "| shape | comparison | method | copy ms | encode ms | encode x copy | (cpu) "
           "| decode ms | decode x copy | (cpu) | payload B | payload / input | rel L2 err |",
           "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        out.append("| %s | %s | %s | %.3f | %.3f | %.2f | %.2f | %.3f | %.2f | %.2f | %d | %.3f "
                   "| %.4f |" % (
                       r["shape"], r["comparison"], r["method"], r["copy"] * 1e3, r["enc"] * 1e3,
                       r["enc"] / r["copy"], r["enc_cpu"], r["dec"] * 1e3, r["dec"] / r["copy"],
                       r["dec_cpu"], r["bytes"], r["frac"], r["err"]))
    out += ["", "| call (64 fp32 elements) | us per call | x torch copy_ |", "|---|---:|---:|"]
    out += ["| %s | %.2f | %.1f |" % c for c in calls]
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, few repetitions (a smoke test)")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch intra-op threads (default 1: pipecodec's host backend uses one)")
    ap.add_argument("--out", help="also write the markdown tables to this file")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    if a.quick:
        shapes, reps, warmup, batch, call_reps = [(64, 1024), (16, 4096)], 5, 1, 100, 5
    else:
        shapes, reps, warmup, batch, call_reps = [(1024, 1024), (64, 16384), (4096, 4096)], 21, 3, 1000, 31

    def log(line):
        print(line, file=sys.stderr, flush=True)

    meta = ("%s UTC; %s (%s); torch %s, %d intra-op thread(s); pipecodec %s; fp32 randn input "
            "(seed 0); medians of %d repetitions after %d warm-up; per-call figures: median of %d "
            "batches of %d calls%s" % (
                datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M"), cpu_model(),
                "%d logical CPUs" % torch.multiprocessing.cpu_count(), torch.__version__,
                torch.get_num_threads(), pc.__version__, reps, warmup, call_reps, batch,
                "; --quick" if a.quick else ""))
    log(meta)
    rows = run_cases(shapes, reps, warmup, log)
    calls = overhead(batch, call_reps, log)
    table = markdown(meta, rows, calls)
    print(table, end="")
    if a.out:
        with open(a.out, "w") as f:
            f.write(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""End-to-end tests of the pipecodec CLI (python3 stdlib only; numpy is not needed).

Usage: test_cli.py PATH_TO_PIPECODEC
Prints one line per check and a summary; exits 1 if any check failed.
"""
import atexit
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile

EXE = sys.argv[1]
TMP = tempfile.mkdtemp(prefix="pipecodec-cli-")
atexit.register(shutil.rmtree, TMP, ignore_errors=True)
failures = []
checks = 0


def check(cond, what):
    global checks
    checks += 1
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def path(name):
    return os.path.join(TMP, name)


def run(*args):
    p = subprocess.run([EXE, *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def npy_bytes(descr, shape, payload, fortran=False, version=1, header=None):
    if header is None:
        dims = "(%d,)" % shape[0] if len(shape) == 1 else "(" + ", ".join(str(d) for d in shape) + ")"
        header = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, "True" if fortran else "False", dims)
    lenfmt = "<H" if version == 1 else "<I"
    pre = 6 + 2 + struct.calcsize(lenfmt)
    header += " " * ((64 - (pre + len(header) + 1) % 64) % 64) + "\n"
    return b"\x93NUMPY" + bytes([version, 0]) + struct.pack(lenfmt, len(header)) + header.encode() + payload


def write(name, data):
    with open(path(name), "wb") as f:
        f.write(data)
    return path(name)


def read_npy(name):
    """Returns (descr, shape, values) of a .npy file written by the CLI."""
    data = open(path(name), "rb").read()
    assert data[:6] == b"\x93NUMPY", "bad magic"
    hlen = struct.unpack("<H", data[8:10])[0]
    header = data[10:10 + hlen].decode()
    d = eval(header)  # a dict literal, as the format specifies
    assert not d["fortran_order"]
    n = 1
    for s in d["shape"]:
        n *= s
    body = data[10 + hlen:]
    fmt = {"<f4": "f", "<f2": "e"}[d["descr"]]
    assert len(body) == n * struct.calcsize(fmt), "data size"
    return d["descr"], d["shape"], list(struct.unpack("<%d%s" % (n, fmt), body))


def bf16_bits(x):
    """Round-to-nearest-even bf16 of a float32 value, as its 16-bit pattern."""
    u = struct.unpack("<I", struct.pack("<f", x))[0]
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF


def bf16_value(bits):
    return struct.unpack("<f", struct.pack("<I", bits << 16))[0]


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def kv(text):
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition(": ")
        check(sep == ": " and key and key not in out, "well-formed `key: value` line %r" % line)
        out[key] = value
    return out


# Inputs: a 2-D fp32 tensor of activation-like values and a 1-D fp16 one.
ROWS, COLS = 6, 100
X = [f32(math.sin(i * 0.37) * (1 + (i % 7)) - 0.5) for i in range(ROWS * COLS)]
A32 = write("a32.npy", npy_bytes("<f4", (ROWS, COLS), struct.pack("<%df" % len(X), *X)))
XH = [struct.unpack("<e", struct.pack("<e", v))[0] for v in X[:333]]
A16 = write("a16.npy", npy_bytes("<f2", (333,), struct.pack("<333e", *XH)))

# --- plain fp32 round trip is exact; quant round trip within half a step per group.
rc, _, err = run("encode", "--spec", "plain:dtype=fp32", A32, path("p.pc"))
check(rc == 0 and err == "", "encode plain exits 0 silently")
rc, _, _ = run("decode", path("p.pc"), path("p.npy"))
descr, shape, vals = read_npy("p.npy")
check(rc == 0 and descr == "<f4" and shape == (ROWS, COLS) and vals == X, "plain fp32 round trip is exact")

SPEC = "quant:bits=8,group=32,scale=minmax,round=nearest,scale_dtype=fp32"
rc, _, _ = run("encode", "--spec", SPEC, A32, path("q.pc"))
check(rc == 0, "encode quant 2-D fp32 .npy")
rc, _, _ = run("decode", path("q.pc"), path("q.npy"))
descr, shape, vals = read_npy("q.npy")
worst = 0.0
for g in range(0, len(X), 32):
    grp = X[g:g + 32]
    step = (max(grp) - min(grp)) / 255
    for a, b in zip(grp, vals[g:g + 32]):
        worst = max(worst, abs(a - b) / (step * 0.5 * (1 + 2**-10) + 1e-6))
check(rc == 0 and descr == "<f4" and shape == (ROWS, COLS), "decode quant keeps dtype and shape")
check(worst <= 1.0, "8-bit decode within half a step of every input (worst %.3f of bound)" % worst)

# --- decode to each dtype: fp16 .npy, bf16 raw, both the fp32 decode rounded once.
rc, _, _ = run("decode", "--dtype", "f16", path("q.pc"), path("q16.npy"))
descr, shape, v16 = read_npy("q16.npy")
check(rc == 0 and descr == "<f2" and shape == (ROWS, COLS), "decode --dtype f16 writes <f2 .npy")
check(v16 == [struct.unpack("<e", struct.pack("<e", v))[0] for v in vals], "fp16 decode = fp32 decode rounded")
rc, _, _ = run("decode", "--dtype", "bf16", path("q.pc"), path("q.bf16"))
raw = open(path("q.bf16"), "rb").read()
check(rc == 0 and len(raw) == 2 * ROWS * COLS, "decode --dtype bf16 writes raw 2-byte elements")
check(list(struct.unpack("<%dH" % (ROWS * COLS), raw)) == [bf16_bits(v) for v in vals], "bf16 decode = fp32 decode rounded")
rc, _, _ = run("decode", "--dtype", "f32", path("q.pc"), path("q32.npy"))
check(rc == 0 and read_npy("q32.npy")[2] == vals, "decode --dtype f32 equals the default decode")

# --- fp16 1-D .npy in, default decode dtype is the encoded one.
rc, _, _ = run("encode", "--spec", "quant:bits=4,group=row", A16, path("h.pc"))
rc2, _, _ = run("decode", path("h.pc"), path("h.npy"))
descr, shape, vals = read_npy("h.npy")
check(rc == 0 and rc2 == 0 and descr == "<f2" and shape == (333,), "1-D fp16 .npy round trip keeps <f2 and shape")

# --- raw input in each dtype.
for dt, blob in (("f32", struct.pack("<%df" % len(X), *X)),
                 ("f16", struct.pack("<%de" % len(X), *X)),
                 ("bf16", struct.pack("<%dH" % len(X), *[bf16_bits(v) for v in X]))):
    raw_in = write("in." + dt, blob)
    rc, _, err = run("encode", "--spec", "plain:dtype=fp32", "--dtype", dt, "--shape", "%dx%d" % (ROWS, COLS), raw_in, path("r.pc"))
    rc2, out, _ = run("info", path("r.pc"))
    info = kv(out)
    check(rc == 0 and rc2 == 0 and info.get("shape") == "%dx%d" % (ROWS, COLS)
          and info.get("dtype") == {"f32": "fp32", "f16": "fp16", "bf16": "bf16"}[dt],
          "raw %s input with --shape RxC is encoded with its dtype and shape" % dt)
    out_name = "r.out" if dt == "bf16" else "r.npy"
    rc, _, _ = run("decode", path("r.pc"), path(out_name))
    if dt == "bf16":
        check(rc == 0 and open(path(out_name), "rb").read() == blob, "raw bf16 plain round trip is exact")
    else:
        check(rc == 0 and read_npy(out_name)[1] == (ROWS, COLS), "raw %s decodes to .npy" % dt)
raw_1d = write("in1d.f32", struct.pack("<%df" % len(X), *X))
rc, _, _ = run("encode", "--spec", "quant", "--dtype", "f32", "--shape", str(len(X)), raw_1d, path("r1.pc"))
rc2, out, _ = run("info", path("r1.pc"))
check(rc == 0 and kv(out).get("ndim") == "1" and kv(out).get("shape") == str(len(X)), "raw --shape N is 1-D")

# --- info: every key, canonical spec that reproduces the payload byte for byte.
rc, _, _ = run("encode", "--spec", "quant:bits=3,round=stochastic,scale=absmax,scale_dtype=fp16", "--seed", "99", A32, path("s.pc"))
rc2, out, err = run("info", path("s.pc"))
info = kv(out)
want = ["format_version", "codec", "spec", "seed", "dtype", "ndim", "shape", "elements", "sample_ids",
        "total_bytes", "file_bytes", "bits_per_element", "ratio"]
check(rc == 0 and rc2 == 0 and err == "" and list(info) == want, "info prints exactly the documented keys")
check(info.get("spec") == "quant:bits=3,group=128,scale=absmax,round=stochastic,scale_dtype=fp16", "info spec is canonical")
check(info.get("seed") == "99" and info.get("codec") == "quant" and info.get("format_version") == "1", "info seed/codec/version")
size = os.path.getsize(path("s.pc"))
check(info.get("total_bytes") == str(size) and info.get("elements") == str(ROWS * COLS), "info sizes match the file")
check(abs(float(info["bits_per_element"]) - 8.0 * size / (ROWS * COLS)) < 1e-3, "info bits_per_element = 8 * bytes / n")
rc, _, _ = run("encode", "--spec", info["spec"], "--seed", info["seed"], A32, path("s2.pc"))
check(rc == 0 and open(path("s.pc"), "rb").read() == open(path("s2.pc"), "rb").read(),
      "re-encoding with info's spec and seed reproduces the payload")
rc, out, _ = run("info", path("p.pc"))
check(rc == 0 and kv(out).get("spec") == "plain:dtype=fp32" and kv(out).get("codec") == "plain", "info on a plain payload")

# --- TopK / RandK through the CLI: info reproduces the payload; decode keeps exactly k per row.
K_ROW = 10
rc, _, _ = run("encode", "--spec", "topk:k=%d,scope=row,values=fp32" % K_ROW, A32, path("t.pc"))
rc2, out, _ = run("info", path("t.pc"))
info = kv(out)
check(rc == 0 and rc2 == 0 and info.get("codec") == "topk", "info on a topk payload")
rc, _, _ = run("encode", "--spec", info.get("spec", "?"), "--seed", info.get("seed", "0"), A32, path("t2.pc"))
check(rc == 0 and open(path("t.pc"), "rb").read() == open(path("t2.pc"), "rb").read(),
      "re-encoding with info's topk spec reproduces the payload")
rc, _, _ = run("decode", path("t.pc"), path("t.npy"))
descr, shape, vals = read_npy("t.npy")
kept_ok = rc == 0 and shape == (ROWS, COLS)
for r in range(ROWS if kept_ok else 0):
    row, got = X[r * COLS:(r + 1) * COLS], vals[r * COLS:(r + 1) * COLS]
    kept = [i for i in range(COLS) if got[i] != 0]
    want_kept = sorted(sorted(range(COLS), key=lambda i: (-abs(row[i]), i))[:K_ROW])
    kept_ok = kept_ok and kept == want_kept and all(got[i] == row[i] for i in kept)
check(kept_ok, "topk decode keeps the k largest magnitudes of each row, exactly")
rc, _, _ = run("encode", "--spec", "randk:ratio=0.25,seed=3", "--seed", "4", A32, path("rk.pc"))
rc2, out, _ = run("info", path("rk.pc"))
rc3, _, _ = run("decode", path("rk.pc"), path("rk.npy"))
check(rc == 0 and rc2 == 0 and rc3 == 0 and kv(out).get("codec") == "randk" and kv(out).get("seed") == "7",
      "randk payload: info reports the recorded seed (spec seed + call seed), decode works")

# --- eval: keys, consistency with encode, zero error for plain fp32.
rc, out, err = run("eval", "--spec", SPEC, A32)
ev = kv(out)
want = ["spec", "dtype", "shape", "elements", "input_bytes", "payload_bytes", "bits_per_element", "ratio",
        "max_abs_err", "rmse", "rel_l2_err", "nonfinite_inputs", "encode_GBps", "decode_GBps"]
check(rc == 0 and err == "" and list(ev) == want, "eval prints exactly the documented keys")
check(all(math.isfinite(float(ev[k])) for k in want[6:]), "eval figures are numbers")
check(ev.get("payload_bytes") == str(os.path.getsize(path("q.pc"))), "eval payload size = encode output size")
check(abs(float(ev["ratio"]) - 4.0 * ROWS * COLS / os.path.getsize(path("q.pc"))) < 1e-3, "eval ratio = input/payload bytes")
check(0 < float(ev["max_abs_err"]) and float(ev["rmse"]) <= float(ev["max_abs_err"]), "eval errors are consistent")
check(float(ev["encode_GBps"]) > 0 and float(ev["decode_GBps"]) > 0, "eval throughputs are positive")
rc, out, _ = run("eval", "--spec", "plain:dtype=fp32", A32)
ev = kv(out)
check(rc == 0 and float(ev["max_abs_err"]) == 0 and float(ev["rel_l2_err"]) == 0, "eval of plain fp32 has zero error")

# --- eval --state: successive steps through one boundary, sender and receiver.
def a16(n):
    return (n + 15) // 16 * 16


def payload_size(spec, rows, cols):
    """Size of a stateless payload of a rows x cols fp32 tensor (the codec's size for that shape)."""
    f = write("sz.npy", npy_bytes("<f4", (rows, cols), b"\0" * (4 * rows * cols)))
    rc, _, err = run("encode", "--spec", spec, f, path("sz.pc"))
    assert rc == 0, err
    return os.path.getsize(path("sz.pc"))


def step_file(name, rows, cols, phase):
    vals = [f32(math.sin(i * 0.37 + phase) * (1 + (i % 5)) + 0.25 * phase) for i in range(rows * cols)]
    return write(name, npy_bytes("<f4", (rows, cols), struct.pack("<%df" % len(vals), *vals)))


def ids_file(name, rows_of_ids, descr="<i8"):
    flat = [v for r in rows_of_ids for v in r]
    fmt = {"<i8": "q", "<i4": "i", "<f8": "d"}[descr]
    return write(name, npy_bytes(descr, (len(rows_of_ids), len(rows_of_ids[0])), struct.pack("<%d%s" % (len(flat), fmt), *flat)))


def state_lines(out, steps):
    """Parses the --state output; returns [(bytes, err)] or None when it is not as documented."""
    lines = out.splitlines()
    if len(lines) != steps + 1 or lines[-1] not in ("state_equal: yes", "state_equal: no"):
        return None
    rows = []
    for n, line in enumerate(lines[:-1], 1):
        f = line.split(" ")
        if len(f) != 6 or f[0:2] != ["step:", str(n)] or f[2] != "bytes:" or f[4] != "rel_l2_err:":
            return None
        rows.append((int(f[3]), float(f[5])))
    return rows


SR, SC = 8, 64
QS = "quant:bits=2,group=32,scale=minmax,round=nearest,scale_dtype=fp32"
S0 = step_file("s0.npy", SR, SC, 0.0)
S1 = step_file("s1.npy", SR, SC, 1.0)
S2 = step_file("s2.npy", SR, SC, 2.0)
qbytes = payload_size(QS, SR, SC)
for scheme in ("ef", "ef21"):
    rc, out, err = run("eval", "--spec", QS, "--state", scheme, S0, S1, S2, S1)
    rows = state_lines(out, 4)
    check(rc == 0 and err == "" and rows is not None, "eval --state %s prints 4 step lines and state_equal" % scheme)
    check(out.endswith("state_equal: yes\n"), "eval --state %s: sender and receiver states equal" % scheme)
    check(rows is not None and all(b == qbytes for b, _ in rows), "eval --state %s: bytes = payload size of the spec (%d)" % (scheme, qbytes))
    check(rows is not None and all(math.isfinite(e) and 0 < e < 1 for _, e in rows), "eval --state %s: errors in (0, 1)" % scheme)
# EF21 on one repeated tensor: g -> x, so the error shrinks every step.
rc, out, _ = run("eval", "--spec", QS, "--state", "ef21", S1, S1, S1, S1, S1)
rows = state_lines(out, 5)
errs = [e for _, e in rows or []]
check(rc == 0 and len(errs) == 5 and all(b < a for a, b in zip(errs, errs[1:])) and out.endswith("yes\n"),
      "ef21 on a repeated step: rel_l2_err strictly decreasing %s" % errs)
for sd in ("fp16", "bf16"):
    rc, out, _ = run("eval", "--spec", QS, "--state", "ef21", "--state-dtype", sd, S0, S1, S1)
    check(rc == 0 and state_lines(out, 3) is not None and out.endswith("yes\n"), "ef21 --state-dtype %s: states equal" % sd)
SQ = "quant:bits=3,round=stochastic,group=32"
r1, r2, r3 = (run("eval", "--spec", SQ, "--state", "ef", "--seed", sd, S0, S1, S2) for sd in ("7", "7", "8"))
check(r1[0] == 0 and r1[1] == r2[1] and r1[1] != r3[1], "eval --state --seed: same seed reproduces, another differs")

ID3 = ids_file("ids3.npy", [list(range(SR))] * 3)
# fp8, mx, rotated and outlier-keeping quantization under every state scheme: the same step
# lines, states equal on both sides.
for fs in ("fp8:format=e4m3,group=32,round=stochastic", "mx:format=fp4_e2m1",
           "quant:bits=2,group=32,rotate=hadamard,rotate_block=32", "quant:bits=3,group=32,outliers=2"):
    for scheme in ("ef", "ef21", "ef-sample", "aqsgd"):
        ids = ["--ids", ID3] if scheme in ("ef-sample", "aqsgd") else []
        rc, out, err = run("eval", "--spec", fs, "--state", scheme, *ids, S0, S1, S2)
        check(rc == 0 and err == "" and state_lines(out, 3) is not None and out.endswith("state_equal: yes\n"),
              "eval --spec %s --state %s: 3 steps, states equal" % (fs, scheme))
    rc, _, _ = run("encode", "--spec", fs, "--seed", "5", S1, path("f.pc"))
    info = kv(run("info", path("f.pc"))[1]) if rc == 0 else {}
    rc2, _, _ = run("encode", "--spec", info.get("spec", "?"), "--seed", info.get("seed", "0"), S1, path("f2.pc"))
    check(rc == 0 and rc2 == 0 and open(path("f.pc"), "rb").read() == open(path("f2.pc"), "rb").read(),
          "%s: info's spec and seed re-encode the same bytes" % fs)

# rng=sample: rows keyed by their sample ids; the same ids re-encode the same bytes, reversed
# rows with reversed ids decode to the reversed rows.
KS = "quant:bits=2,group=row,round=stochastic,rng=sample"
ID1 = ids_file("ids1.npy", [list(range(40, 40 + SR))])
rc, _, err = run("encode", "--spec", KS, "--seed", "3", "--ids", ID1, S1, path("k.pc"))
info = kv(run("info", path("k.pc"))[1]) if rc == 0 else {}
rc2, _, _ = run("encode", "--spec", info.get("spec", "?"), "--seed", "3", "--ids", ID1, S1, path("k2.pc"))
check(rc == 0 and err == "" and rc2 == 0 and open(path("k.pc"), "rb").read() == open(path("k2.pc"), "rb").read(),
      "encode rng=sample --ids: info's spec re-encodes the same bytes")
for ks in ("randk:k=9,scope=row,rng=sample", "fp8:group=row,round=stochastic,rng=sample"):
    rc, _, _ = run("encode", "--spec", ks, "--seed", "4", "--ids", ID1, S1, path("k3.pc"))
    info = kv(run("info", path("k3.pc"))[1]) if rc == 0 else {}
    rc2, _, _ = run("encode", "--spec", info.get("spec", "?"), "--seed", info.get("seed", "0"), "--ids", ID1, S1,
                    path("k4.pc"))
    check(rc == 0 and "rng=sample" in info.get("spec", "") and rc2 == 0 and
          open(path("k3.pc"), "rb").read() == open(path("k4.pc"), "rb").read(),
          "%s: info's spec (rng=sample kept) and seed re-encode the same bytes" % ks)
rc, out, _ = run("eval", "--spec", KS, "--ids", ID1, S1)
check(rc == 0 and "rel_l2_err" in out, "eval rng=sample --ids")

# AQ-SGD: step 1 all samples unseen (sent plain fp32: exact), then one other tensor repeated
# for the same samples: m -> a, so the error shrinks every step.
ID4 = ids_file("ids4.npy", [list(range(100, 100 + SR))] * 4)
rc, out, err = run("eval", "--spec", QS, "--state", "aqsgd", "--ids", ID4, S0, S1, S1, S1)
rows = state_lines(out, 4)
check(rc == 0 and err == "" and rows is not None and out.endswith("state_equal: yes\n"), "eval --state aqsgd: 4 steps, states equal")
warm = 64 + a16(SR) + a16(payload_size("plain:dtype=fp32", SR, SC) + a16(8 * SR))
delta = 64 + a16(SR) + a16(qbytes + a16(8 * SR))
check(rows is not None and [b for b, _ in rows] == [warm, delta, delta, delta],
      "aqsgd bytes: step 1 warm frame (%d), then delta frames (%d)" % (warm, delta))
errs = [e for _, e in rows or []]
check(len(errs) == 4 and errs[0] == 0 and 0 < errs[1] and all(b < a for a, b in zip(errs[1:], errs[2:])),
      "aqsgd: warm step exact, then rel_l2_err strictly decreasing %s" % errs)
# Mixed step: 3 samples seen before, 5 new -> a frame with both parts.
IDM = ids_file("idsm.npy", [list(range(SR)), [5, 6, 7] + list(range(50, 55))])
rc, out, _ = run("eval", "--spec", QS, "--state", "aqsgd", "--ids", IDM, S0, S1)
rows = state_lines(out, 2)
mixed = 64 + a16(SR) + a16(payload_size("plain:dtype=fp32", 5, SC) + a16(8 * 5)) + a16(payload_size(QS, 3, SC) + a16(8 * 3))
check(rc == 0 and rows is not None and rows[1][0] == mixed and out.endswith("yes\n"),
      "aqsgd mixed step: warm + delta parts, %d bytes" % mixed)
rc, out, _ = run("eval", "--spec", QS, "--state", "aqsgd", "--ids", ID4, "--warmup-steps", "2", S0, S1, S1, S1)
rows = state_lines(out, 4)
check(rc == 0 and rows is not None and [b for b, _ in rows] == [warm, warm, delta, delta] and rows[1][1] == 0,
      "aqsgd --warmup-steps 2: two exact warm frames, then deltas")

# Per-sample EF: when every row keeps its sample it is classic EF, line for line; when the
# samples change rows, their residuals follow them and the output differs.
rc_e, out_e, _ = run("eval", "--spec", QS, "--state", "ef", S0, S1, S2, S1)
rc, out, err = run("eval", "--spec", QS, "--state", "ef-sample", "--ids", ID4, S0, S1, S2, S1)
check(rc == 0 and rc_e == 0 and err == "" and state_lines(out, 4) is not None and out == out_e,
      "eval --state ef-sample with fixed ids = eval --state ef")
IDR = ids_file("idsr.npy", [list(range(SR)), list(range(SR))[::-1], list(range(SR)), list(range(SR))])
rc, out, _ = run("eval", "--spec", QS, "--state", "ef-sample", "--ids", IDR, S0, S1, S2, S1)
rows = state_lines(out, 4)
check(rc == 0 and rows is not None and all(b == qbytes for b, _ in rows) and out != out_e and out.endswith("yes\n"),
      "eval --state ef-sample: shuffled rows move the residuals (output differs from ef)")

# --- a tiny payload declaring a huge tensor: decode refuses it before allocating (exit 3, one
# line naming the declared size and the flag); info only reads the header. A TopK payload of
# k = 1 is 96 bytes whatever n, so rewriting its cols field is still a valid payload.
rc, _, _ = run("encode", "--spec", "topk:k=1,scope=tensor,index=u32,values=fp32", A16, path("k1.pc"))
k1 = open(path("k1.pc"), "rb").read()
check(rc == 0 and len(k1) == 96, "topk k=1 payload is 96 bytes")
for n in (2**31, 2**32):
    huge = write("huge.pc", k1[:24] + struct.pack("<Q", n) + k1[32:])
    rc, out, _ = run("info", huge)
    check(rc == 0 and kv(out).get("elements") == str(n), "info on a 96-byte payload declaring %d elements" % n)
    try:
        p = subprocess.run([EXE, "decode", huge, path("huge.npy")], capture_output=True, text=True, timeout=20)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        rc, out, err = None, "", "(still running after 20 s)"
    lines = err.splitlines()
    check(rc == 3 and out == "" and len(lines) == 1 and str(n) in lines[0] and "--max-elements" in lines[0]
          and not os.path.exists(path("huge.npy")),
          "decode of a payload declaring %d elements: exit %s, %r" % (n, rc, err.strip()))
rc, _, err = run("decode", "--max-elements", "332", path("k1.pc"), path("k1.npy"))
check(rc == 3 and "333" in err and not os.path.exists(path("k1.npy")), "decode --max-elements below n: exit 3")
rc, _, _ = run("decode", "--max-elements", "333", path("k1.pc"), path("k1.npy"))
check(rc == 0 and read_npy("k1.npy")[1] == (333,), "decode --max-elements = n decodes")

# --- every bad input: non-zero exit, nothing on stdout, exactly one line on stderr.
good = open(path("q.pc"), "rb").read()
corrupt = bytearray(good)
corrupt[64:68] = struct.pack("<f", float("nan"))  # first stored scale
bad_version = bytearray(good)
bad_version[4] = 9
payload = {
    "bad-magic.pc": b"XXXX" + good[4:],
    "truncated.pc": good[:100],
    "short.pc": good[:10],
    "version.pc": bytes(bad_version),
    "nan-scale.pc": bytes(corrupt),
    "empty.pc": b"",
}
for name, data in payload.items():
    write(name, data)
F64 = write("f8.npy", npy_bytes("<f8", (4,), b"\0" * 32))
FORT = write("fortran.npy", npy_bytes("<f4", (2, 2), b"\0" * 16, fortran=True))
BIGE = write("bigendian.npy", npy_bytes(">f4", (4,), b"\0" * 16))
D3 = write("3d.npy", npy_bytes("<f4", (2, 2, 2), b"\0" * 32))
D0 = write("0d.npy", npy_bytes("<f4", (), b"\0" * 4, header="{'descr': '<f4', 'fortran_order': False, 'shape': (), }"))
SHORT = write("short-data.npy", npy_bytes("<f4", (10,), b"\0" * 36))
NOSHAPE = write("noshape.npy", npy_bytes("<f4", (4,), b"\0" * 16, header="{'descr': '<f4', 'fortran_order': False, }"))
GARBLED = write("garbled.npy", npy_bytes("<f4", (4,), b"\0" * 16, header="{'descr': '<f4', 'fortran_order': False, 'shape': (4x,), }"))
HLEN = write("hlen.npy", b"\x93NUMPY\x01\x00\xff\xff{'descr'")
NOTNPY = write("text.npy", b"hello world, not an array\n")
RAW = write("raw.f32", b"\0" * 40)
missing = path("does-not-exist.npy")
spec = ["--spec", "quant:bits=4"]
cases = [
    ("no command", []),
    ("unknown command", ["compress", A32]),
    ("unknown option", ["encode", "--bits", "4", A32, path("o")]),
    ("option without value", ["encode", A32, path("o"), "--spec"]),
    ("option twice", ["encode", "--spec", "quant", "--spec", "quant", A32, path("o")]),
    ("missing --spec", ["encode", A32, path("o")]),
    ("too few arguments", ["encode", *spec, A32]),
    ("too many arguments", ["info", path("q.pc"), path("q.pc")]),
    ("spec: unknown codec", ["encode", "--spec", "zip:bits=4", A32, path("o")]),
    ("spec: unknown key", ["encode", "--spec", "quant:bitz=4", A32, path("o")], "bitz"),
    ("spec: bad value", ["eval", "--spec", "quant:bits=9", A32], "bits"),
    ("spec: bad group", ["encode", "--spec", "quant:group=33", A32, path("o")], "group"),
    ("bad --seed", ["encode", *spec, "--seed", "x1", A32, path("o")]),
    ("missing input file", ["encode", *spec, missing, path("o")]),
    ("missing input file (eval)", ["eval", *spec, missing]),
    ("missing payload file", ["decode", missing, path("o.npy")]),
    ("output in a missing directory", ["encode", *spec, A32, path("no/such/dir/o.pc")]),
    ("npy: float64", ["encode", *spec, F64, path("o")], "<f8"),
    ("npy: fortran order", ["encode", *spec, FORT, path("o")], "fortran"),
    ("npy: big-endian", ["encode", *spec, BIGE, path("o")]),
    ("npy: 3-D", ["encode", *spec, D3, path("o")]),
    ("npy: 0-D", ["eval", *spec, D0]),
    ("npy: data shorter than shape", ["encode", *spec, SHORT, path("o")]),
    ("npy: no shape key", ["encode", *spec, NOSHAPE, path("o")]),
    ("npy: garbled shape", ["encode", *spec, GARBLED, path("o")]),
    ("npy: header longer than file", ["encode", *spec, HLEN, path("o")]),
    ("not a .npy file", ["encode", *spec, NOTNPY, path("o")]),
    ("raw: --dtype without --shape", ["encode", *spec, "--dtype", "f32", RAW, path("o")]),
    ("raw: size does not match shape", ["encode", *spec, "--dtype", "f32", "--shape", "3x4", RAW, path("o")]),
    ("raw: bad --dtype", ["encode", *spec, "--dtype", "f64", "--shape", "10", RAW, path("o")]),
    ("raw: bad --shape", ["encode", *spec, "--dtype", "f32", "--shape", "2y5", RAW, path("o")]),
    ("decode: bad --dtype", ["decode", "--dtype", "int8", path("q.pc"), path("o.npy")]),
    ("decode: bad --max-elements", ["decode", "--max-elements", "1e9", path("q.pc"), path("o.npy")], "max-elements"),
    ("info: --max-elements (decode only)", ["info", "--max-elements", "5", path("q.pc")]),
    ("decode: bf16 into a .npy name", ["decode", "--dtype", "bf16", path("q.pc"), path("o.npy")], "bf16"),
    ("state: aqsgd without --ids", ["eval", *spec, "--state", "aqsgd", S0, S1], "--ids"),
    ("state: ef-sample without --ids", ["eval", *spec, "--state", "ef-sample", S0, S1], "--ids"),
    ("state: ids for fewer steps", ["eval", *spec, "--state", "aqsgd", "--ids", ID4, S0, S1, S1], "ids"),
    ("state: ids row length != step rows", ["eval", *spec, "--state", "aqsgd", "--ids", ids_file("ids7.npy", [list(range(7))] * 2), S0, S1], "rows"),
    ("state: ids 1-D", ["eval", *spec, "--state", "aqsgd", "--ids", write("ids1d.npy", npy_bytes("<i8", (SR,), struct.pack("<%dq" % SR, *range(SR)))), S0], "ids"),
    ("state: ids as int32", ["eval", *spec, "--state", "aqsgd", "--ids", ids_file("ids32.npy", [list(range(SR))] * 2, "<i4"), S0, S1], "<i4"),
    ("state: ids as float64", ["eval", *spec, "--state", "aqsgd", "--ids", ids_file("idsf.npy", [list(range(SR))] * 2, "<f8"), S0, S1], "<f8"),
    ("state: ids big-endian", ["eval", *spec, "--state", "aqsgd", "--ids", write("idsbe.npy", npy_bytes(">i8", (1, SR), b"\0" * 8 * SR)), S0], ">i8"),
    ("state: negative id", ["eval", *spec, "--state", "aqsgd", "--ids", ids_file("idsneg.npy", [[-1] + list(range(1, SR))]), S0], "negative"),
    ("state: duplicate id in a step", ["eval", *spec, "--state", "aqsgd", "--ids", ids_file("idsdup.npy", [[3] * SR]), S0], "twice"),
    ("state: ids not a .npy", ["eval", *spec, "--state", "aqsgd", "--ids", NOTNPY, S0]),
    ("state: unknown scheme", ["eval", *spec, "--state", "powersgd", S0, S1], "powersgd"),
    ("state: mismatched step shapes", ["eval", *spec, "--state", "ef21", S0, step_file("s9.npy", SR + 1, SC, 0.0)], "shape"),
    ("state: mismatched step shapes (ef)", ["eval", *spec, "--state", "ef", S0, A32], "shape"),
    ("state: aqsgd cols differ", ["eval", *spec, "--state", "aqsgd", "--ids", ids_file("ids6.npy", [list(range(6))] * 2), A32, step_file("s6.npy", 6, SC, 0.0)], "cols"),
    ("state: aqsgd 1-D step", ["eval", *spec, "--state", "aqsgd", "--ids", ID4, A16], "1-D"),
    ("state: --ids without aqsgd", ["eval", *spec, "--state", "ef", "--ids", ID4, S0], "--ids"),
    ("state: --ids without --state", ["eval", *spec, "--ids", ID4, S0], "--state"),
    ("rng=sample without --ids", ["encode", "--spec", KS, S0, path("o")], "--ids"),
    ("rng=sample: ids for two steps", ["encode", "--spec", KS, "--ids", ID4, S0, path("o")], "1xROWS"),
    ("state: bad --state-dtype", ["eval", *spec, "--state", "ef21", "--state-dtype", "f64", S0], "f64"),
    ("state: bad --warmup-steps", ["eval", *spec, "--state", "aqsgd", "--ids", ID4, "--warmup-steps", "-1", S0], "warmup"),
    ("state: no step files", ["eval", *spec, "--state", "ef"]),
    ("state: missing step file", ["eval", *spec, "--state", "ef", S0, missing]),
]
for name in payload:
    if name != "nan-scale.pc":  # info checks the header only; section contents are decode's job
        cases.append(("payload %s: info" % name, ["info", path(name)]))
    cases.append(("payload %s: decode" % name, ["decode", path(name), path("o.npy")]))
cases.append(("info on a .npy file", ["info", A32]))
for case in cases:
    name, argv = case[0], case[1]
    rc, out, err = run(*argv)
    lines = err.splitlines()
    good_err = rc != 0 and out == "" and len(lines) == 1 and lines[0].startswith("pipecodec: ")
    if len(case) > 2:
        good_err = good_err and case[2] in err
    check(good_err, "%s: exit %d, one stderr line %r" % (name, rc, err.strip()))
check(not os.path.exists(path("o.npy")), "failed decodes write no output file")

rc, out, err = run("--help")
check(rc == 0 and "encode" in out and err == "", "--help prints usage and exits 0")

print("%d checks, %d failed" % (checks, len(failures)))
sys.exit(1 if failures else 0)

"""fp8 and mx element conversions against an independent implementation of the OCP formats,
ml_dtypes (NumPy's float8 / float6 / float4 types from the JAX project). A group whose largest
magnitude is the format's largest finite value (fp8) or 2^emax (mx) has scale exactly 1, so its
decoded values are the element conversion itself: nearest-even, as ml_dtypes casts."""
import numpy as np
import pytest

import pipecodec as pc

ml = pytest.importorskip("ml_dtypes", reason="ml_dtypes (tools/test-python installs it)")

# format name -> (ml_dtypes type, bits, emax, largest finite)
MX = {
    "fp8_e4m3": (ml.float8_e4m3fn, 8, 8, 448.0),
    "fp8_e5m2": (ml.float8_e5m2, 8, 15, 57344.0),
    "fp6_e3m2": (ml.float6_e3m2fn, 6, 4, 28.0),
    "fp6_e2m3": (ml.float6_e2m3fn, 6, 2, 7.5),
    "fp4_e2m1": (ml.float4_e2m1fn, 4, 2, 6.0),
}


def probe(t, bits, top, n, rng):
    """Every finite value of the format, the midpoints between neighbours (ties), values next
    to them, and uniform values over the whole range."""
    codes = np.arange(1 << bits, dtype=np.uint8).view(t).astype(np.float32)
    reps = np.unique(codes[np.isfinite(codes)])
    mids = ((reps[:-1].astype(np.float64) + reps[1:]) / 2).astype(np.float32)
    near = np.concatenate([np.nextafter(mids, np.float32(np.inf)), np.nextafter(mids, np.float32(-np.inf))])
    x = np.concatenate([reps, mids, near, rng.uniform(-top, top, n).astype(np.float32)])
    return np.clip(x, -top, top).astype(np.float32)


def with_anchor(x, block, anchor):
    """x cut into blocks of `block` values with `anchor` first in each (sets the scale to 1)."""
    per = block - 1
    x = np.resize(x, -(-len(x) // per) * per).reshape(-1, per)
    return np.concatenate([np.full((len(x), 1), anchor, np.float32), x], axis=1).reshape(-1)


@pytest.mark.parametrize("fmt", list(MX))
def test_mx_elements_equal_ml_dtypes(fmt, rng):
    t, bits, emax, top = MX[fmt]
    x = with_anchor(probe(t, bits, top, 20000, rng), 32, 2.0 ** emax)
    y = pc.decode(pc.encode(f"mx:format={fmt}", x))
    np.testing.assert_array_equal(y, x.astype(t).astype(np.float32))


def test_mxint8_equals_rounding_to_64ths(rng):
    x = with_anchor(np.clip(rng.uniform(-2, 2, 20000), -127 / 64, 127 / 64).astype(np.float32), 32, 1.0)
    y = pc.decode(pc.encode("mx:format=int8", x))
    np.testing.assert_array_equal(y, (np.rint(x.astype(np.float64) * 64) / 64).astype(np.float32))


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
def test_fp8_elements_equal_ml_dtypes(fmt, rng):
    t, bits, _, top = MX["fp8_" + fmt]
    x = with_anchor(probe(t, bits, top, 20000, rng), 128, top)
    y = pc.decode(pc.encode(f"fp8:format={fmt},group=128", x))
    np.testing.assert_array_equal(y, x.astype(t).astype(np.float32))

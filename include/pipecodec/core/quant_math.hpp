// The arithmetic of k-bit quantization, shared by both backends.
//
// A group is stored as a scale s (and, for minmax, an offset o); code c decodes to
//   minmax: o + c * s            absmax: (c - z) * s
// Stored scales carry at most 16 significant bits (fp32 with the low 8 mantissa bits zero,
// or fp16), so c * s and (c - z) * s are exact and each decoded value has at most one
// rounding, whether or not a compiler fuses it into an FMA: decoded values are
// bit-identical on every backend and flag set.
// minmax: o = min rounded down to the scale dtype, s = (max - o) / (2^b - 1) rounded up.
// absmax: for b >= 2, z = 2^(b-1) and s = absmax / (z - 1) rounded up: codes 1..2^b-1,
//         zero exact at code z; for b = 1, z = 1/2 and s = 2 absmax: codes 0, 1 -> -+s/2.
// Group statistics ignore NaN and +-Inf; a group with no finite value has min = max = 0.
// Rounding the scale up keeps every finite element within s/2 (nearest) of its code.
// Scales are capped so that every code decodes to a finite value: a minmax group whose
// max - min exceeds FLT_MAX saturates at o + FLT_MAX (see docs/FORMAT.md).
#pragma once

#include "dtype.hpp"
#include "spec.hpp"

namespace pipecodec::detail {

// Finite minimum and maximum; lo > hi while no finite value has been seen.
struct group_stats {
  float lo = __builtin_inff();
  float hi = -__builtin_inff();
};

// Comparisons are false for NaN, and the bounds reject +-Inf, so only finite values count.
PIPECODEC_HD void stats_add(group_stats& s, float x) {
  s.lo = (x < s.lo && x >= -flt_max) ? x : s.lo;
  s.hi = (x > s.hi && x <= flt_max) ? x : s.hi;
}

PIPECODEC_HD group_stats stats_merge(group_stats a, group_stats b) {
  a.lo = b.lo < a.lo ? b.lo : a.lo;
  a.hi = b.hi > a.hi ? b.hi : a.hi;
  return a;
}

struct quant_consts {
  float levels;  // 2^b - 1: largest code
  float zero;    // code offset z added after rounding: absmax zero point, 0 for minmax
  float lo, hi;  // clamp range of (x - o) / s before z is added
};

PIPECODEC_HD quant_consts consts_for(uint32_t bits, scale_mode mode) {
  quant_consts c{};
  c.levels = float((1u << bits) - 1u);
  if (mode == scale_mode::minmax) {
    c.zero = 0.0F;
    c.lo = 0.0F;
    c.hi = c.levels;
  } else {
    c.zero = bits == 1 ? 0.5F : float(1u << (bits - 1));
    c.hi = bits == 1 ? 0.5F : c.zero - 1.0F;
    c.lo = -c.hi;
  }
  return c;
}

struct group_params {
  float scale = 0;   // stored scale
  float offset = 0;  // stored offset (minmax), 0 for absmax
  float pre = 1;     // power of two applied before inv, so inv stays finite for tiny scales
  float inv = 0;     // 1 / (scale * pre), or 0 when scale is 0
};

// Smallest float >= s (s >= 0), and largest float <= s. Which way float(s) rounded is
// data-dependent, so the step is added arithmetically: a branch here mispredicts on about
// half of the encoder's groups.
PIPECODEC_HD float ceil_to_f32(double s) {
  const float f = float(s);
  return bit_cast<float>(bit_cast<uint32_t>(f) + uint32_t(double(f) < s));
}
PIPECODEC_HD float floor_to_f32(double s) {
  const float f = float(s);
  return bit_cast<float>(bit_cast<uint32_t>(f) - uint32_t(double(f) > s));
}

// The smallest fp16 value >= f (up) or the largest <= f (down), as a float, for
// 0 <= f < 65504: integer and exact float operations only, no fp16 conversions (they sat
// on the encoder's per-group path). The grid is fp32 with the low 13 mantissa bits zero in
// the normal fp16 range, and multiples of 2^-24 below 2^-14 (fp16 subnormals).
PIPECODEC_HD float round_to_f16_grid(float f, bool up) {
  const uint32_t u = bit_cast<uint32_t>(f);
  if (u >= 0x38800000u) return bit_cast<float>((up ? u + 0x1FFFu : u) & ~0x1FFFu);
  const float y = mul_rn(f, 16777216.0F);  // exact: f * 2^24 < 2^10
  const int32_t t = int32_t(y) + int32_t(up && float(int32_t(y)) < y);
  return mul_rn(float(t), 5.9604644775390625e-8F);  // exact: t * 2^-24
}

constexpr uint32_t scale_f32_max_bits = 0x7F7FFF00u;  // largest 16-significant-bit float
constexpr float f16_max = 65504.0F;

// A non-negative scale rounded up (or down) to a storable value.
PIPECODEC_HD float round_scale(double s, dtype scale_dtype, bool up) {
  if (!(s > 0)) return 0.0F;
  if (scale_dtype == dtype::f32) {
    uint32_t u = bit_cast<uint32_t>(up ? ceil_to_f32(s) : floor_to_f32(s));
    u = up ? (u + 0xFFu) & ~0xFFu : u & ~0xFFu;
    const uint32_t cap = scale_f32_max_bits;  // a copy: device code cannot odr-use the constant
    return bit_cast<float>(u < cap ? u : cap);
  }
  const float f = up ? ceil_to_f32(s) : floor_to_f32(s);
  if (!(f < f16_max)) return f16_max;
  return round_to_f16_grid(f, up);
}

// The group minimum rounded down to the offset dtype.
PIPECODEC_HD float round_offset(float lo, dtype scale_dtype) {
  if (scale_dtype == dtype::f32) return lo;
  if (lo >= f16_max) return f16_max;
  if (lo <= -f16_max) return -f16_max;
  // lo < 0 rounds away from zero, so the result is never -0.
  return lo >= 0.0F ? round_to_f16_grid(lo, false) : -round_to_f16_grid(-lo, true);
}

// Largest |code - z| * s the decoder can form; it must stay finite.
PIPECODEC_HD double max_code_magnitude(const quant_consts& c) {
  return c.zero > 0 ? double(c.zero) : double(c.levels);
}

// Whether (scale, offset) decode every code to a finite value.
PIPECODEC_HD bool decodes_finite(float scale, float offset, const quant_consts& c) {
  const double span = dmul_rn(max_code_magnitude(c), double(scale));
  return span <= double(flt_max) && dadd_rn(double(offset), span) <= double(flt_max);
}

// Derived encoder constants for a stored (scale, offset).
PIPECODEC_HD group_params to_params(float scale, float offset) {
  group_params p;
  p.scale = scale;
  p.offset = offset;
  if (scale > 0.0F) {
    // 1/s overflows for s below 2^-126; scaling by 2^64 first keeps it finite and exact.
    p.pre = scale < 1.1754943508222875e-38F ? 1.8446744073709552e19F : 1.0F;
    p.inv = div_rn(1.0F, mul_rn(scale, p.pre));
  }
  return p;
}

PIPECODEC_HD group_params make_params(group_stats st, const quant_params& q) {
  const quant_consts c = consts_for(q.bits, q.scale);
  if (st.lo > st.hi) st.lo = st.hi = 0.0F;
  // +0 and -0 compare equal, so which one a reduction keeps depends on order: canonicalise.
  if (st.lo == 0.0F) st.lo = 0.0F;
  if (st.hi == 0.0F) st.hi = 0.0F;
  float offset = 0.0F;
  double step;
  if (q.scale == scale_mode::minmax) {
    offset = round_offset(st.lo, q.scale_dtype);
    const double range = dsub_rn(double(st.hi), double(offset));
    step = range > 0 ? ddiv_rn(range, double(c.levels)) : 0.0;
  } else {
    const float a = st.hi > -st.lo ? st.hi : -st.lo;
    step = ddiv_rn(double(a), double(c.hi));
  }
  float scale = round_scale(step, q.scale_dtype, true);
  if (!decodes_finite(scale, offset, c)) {
    const double room = q.scale == scale_mode::minmax && offset > 0
                            ? dsub_rn(double(flt_max), double(offset))
                            : double(flt_max);
    scale = round_scale(ddiv_rn(room, max_code_magnitude(c)), q.scale_dtype, false);
  }
  return to_params(scale, offset);
}

// Clamp to [lo, hi]; NaN maps to lo.
PIPECODEC_HD float clamp_code(float y, float lo, float hi) {
  y = y > lo ? y : lo;
  return y < hi ? y : hi;
}

// (x - o) / s clamped to the code range, then shifted by z: a value in [0, 2^b - 1].
// The clamp sits between the product and the addition, so nothing can be contracted.
PIPECODEC_HD float code_position(float x, const group_params& p, const quant_consts& c) {
  const float y = clamp_code(mul_rn(mul_rn(sub_rn(x, p.offset), p.pre), p.inv), c.lo, c.hi);
  return add_rn(y, c.zero);
}

PIPECODEC_HD uint32_t quantize_nearest(float x, const group_params& p, const quant_consts& c) {
  // Adding 1.5 * 2^23 rounds y (0 <= y <= 255) to the nearest integer, ties to even,
  // leaving it in the low mantissa bits: no SSE4.1 rounding instruction needed.
  return bit_cast<uint32_t>(add_rn(code_position(x, p, c), 12582912.0F)) & 0xFFu;
}

// Rounds up with probability equal to the fractional part: E[decode] = x.
PIPECODEC_HD uint32_t quantize_stochastic(float x, const group_params& p, const quant_consts& c,
                                          float u) {
  const float y = code_position(x, p, c);
  const int32_t t = int32_t(y);
  const float frac = sub_rn(y, float(t));  // exact
  return uint32_t(t) + (u < frac ? 1u : 0u);
}

// Exact product, one rounding in the addition (none for absmax, where offset is 0).
PIPECODEC_HD float dequantize(uint32_t code, float scale, float offset, float zero) {
  return add_rn(offset, mul_rn(sub_rn(float(code), zero), scale));
}

// Decoder-side check of stored group parameters: rejects anything the encoder cannot
// produce, so a hostile payload cannot make decoded values non-finite or backend-dependent.
PIPECODEC_HD bool valid_scale(float s, dtype scale_dtype) {
  const uint32_t u = bit_cast<uint32_t>(s);
  if (u >= 0x7F800000u) return false;  // negative (sign bit), Inf or NaN
  return scale_dtype != dtype::f32 || (u & 0xFFu) == 0;
}

PIPECODEC_HD bool valid_group(float scale, float offset, const quant_params& q) {
  if (!valid_scale(scale, q.scale_dtype) || !is_finite(offset)) return false;
  return decodes_finite(scale, offset, consts_for(q.bits, q.scale));
}

// Upper bound of the stored scale for an exact step d > 0 (make_params' `step`, when no cap
// applies): d rounded up to the next storable scale, below d (1 + 2^-15) + 2^-141 for fp32
// (16 significant bits; below 2^-126 storable fp32 scales are subnormals with the low 8 bits
// zero, multiples of 2^-141) and d (1 + 2^-10) + 2^-24 for fp16 (11 bits; fp16 subnormals are
// multiples of 2^-24). The absolute term is what tiny (e.g. all-subnormal) groups pay.
inline double max_stored_scale(double d, dtype scale_dtype) {
  return scale_dtype == dtype::f32 ? d * (1.0 + 1.0 / 32768) + 0x1p-141 : d * (1.0 + 1.0 / 1024) + 0x1p-24;
}

// Worst-case |x - decode(encode(x))| for nearest rounding of a finite x inside the group's
// range: half a step, plus the float rounding of the subtraction, the reciprocal, the
// product and the final addition (documented in docs/FORMAT.md).
inline double nearest_error_bound(double scale, float offset, float x) {
  const double ax = x < 0 ? -double(x) : double(x);
  const double ao = offset < 0 ? -double(offset) : double(offset);
  return scale * (0.5 + 1.0 / 16384) + (ax + ao) * 1.2e-7;
}

}  // namespace pipecodec::detail

// Element formats of the fp8 and mx codecs, converted with integer operations on the bits (and,
// below a format's smallest normal, one correctly rounded addition), so both backends produce
// the same code for the same input whatever the compiler does with float expressions.
//
//   format   bits  exponent/mantissa  bias  largest finite  special codes
//   e4m3     8     4 / 3              7     448             S.1111.111 NaN, no Inf ("fn")
//   e5m2     8     5 / 2              15    57344           S.11111.00 Inf, S.11111.{01,10,11} NaN
//   e3m2     6     3 / 2              3     28              none
//   e2m3     6     2 / 3              1     7.5             none
//   e2m1     4     2 / 1              1     6               none
//   int8     8     two's complement, value = code * 2^-6     127/64 (-2 is never written)
// as the OCP 8-bit floating point specification (OFP8 r1.0) and the OCP Microscaling
// specification v1.0 define them. Conversion is saturating ("satfinite"): finite values
// beyond the largest finite value, and +-Inf, become +-largest; NaN becomes the format's
// NaN (0x7F) where it has one. Rounding is to nearest, ties to even, or stochastic: up with
// probability equal to the distance from the lower neighbour in quanta, read from a 32-bit
// random word (exact for every |y| of at least 2^-9 times the format's smallest subnormal).
#pragma once

#include "config.hpp"
#include "spec.hpp"

namespace pipecodec::detail {

// Host compilers are left to decide on inlining (PIPECODEC_HD is plain `inline` there) and keep
// these as calls; forced inline into loops whose element format is a template argument, the
// format's constants fold and the conversion is a handful of integer operations.
#if defined(__CUDACC__) || !defined(__GNUC__)
#define PIPECODEC_FOLD PIPECODEC_HD
#else
#define PIPECODEC_FOLD __attribute__((always_inline)) inline
#endif

struct elem_traits {
  uint32_t width;     // bits per code on the wire
  uint32_t ebits;     // exponent bits (0: int8)
  uint32_t mbits;     // mantissa bits (int8: 6 fraction bits)
  int32_t emin;       // exponent of the smallest normal (int8: of the quantum + mbits)
  uint32_t max_mag;   // code of the largest finite magnitude
  int32_t emax;       // floor(log2(largest finite)): the OCP MX emax_elem
};

PIPECODEC_FOLD constexpr elem_traits traits_of(elem_format f) {
  switch (f) {
    case elem_format::e4m3: return {8, 4, 3, -6, 0x7E, 8};
    case elem_format::e5m2: return {8, 5, 2, -14, 0x7B, 15};
    case elem_format::e3m2: return {6, 3, 2, -2, 0x1F, 4};
    case elem_format::e2m3: return {6, 2, 3, 0, 0x1F, 2};
    case elem_format::e2m1: return {4, 2, 1, 0, 0x7, 2};
    case elem_format::int8: return {8, 0, 6, 0, 127, 0};
  }
  return {8, 4, 3, -6, 0x7E, 8};
}

PIPECODEC_HD bool has_nan(elem_format f) { return f == elem_format::e4m3 || f == elem_format::e5m2; }

// 2^k as a float for -149 <= k <= 127, built from its bits (exact).
PIPECODEC_HD float pow2f(int32_t k) {
  if (k >= -126) return bit_cast<float>(uint32_t(k + 127) << 23);
  return bit_cast<float>(uint32_t(1) << uint32_t(k + 149));
}

// Nearest-even code of y, branch-free (host loops vectorize it). Below the format's smallest
// normal (int8: everywhere) an IEEE addition rounds: `magic` has an ulp of one subnormal
// quantum, so the bits of |y| + magic past magic's count quanta, ties to even. Above it the
// fp32 mantissa is rounded in place (add half an ulp of the target, less one unless the kept
// bit is odd) and the exponent rebiased; a carry runs into the exponent field, as it should.
PIPECODEC_FOLD uint32_t encode_nearest(float y, elem_format f) {
  const elem_traits t = traits_of(f);
  const uint32_t bits = bit_cast<uint32_t>(y);
  const uint32_t sign = bits >> 31;
  const uint32_t a = bits & 0x7FFFFFFFu;
  const uint32_t shift = 23 - t.mbits;
  const float magic = pow2f(t.emin - int32_t(t.mbits) + 23);
  const uint32_t sub = bit_cast<uint32_t>(add_rn(bit_cast<float>(a), magic)) - bit_cast<uint32_t>(magic);
  const uint32_t rounded = a + ((1u << (shift - 1)) - 1u) + ((a >> shift) & 1u);
  const uint32_t normal = (rounded - (uint32_t(126 + t.emin) << 23)) >> shift;
  const uint32_t min_normal = uint32_t(127 + t.emin) << 23;
  const uint32_t big = 0x48000000u;  // 2^17: beyond every format's range, and where int8's `sub` stops being exact
  uint32_t mag = (t.ebits == 0 || a < min_normal) ? sub : normal;
  mag = a >= big || mag > t.max_mag ? t.max_mag : mag;  // saturate, +-Inf included
  const uint32_t code = t.ebits == 0 ? (sign ? (0x100u - mag) & 0xFFu : mag) : mag | (sign << (t.width - 1));
  return a > 0x7F800000u ? (has_nan(f) ? 0x7Fu : 0u) : code;  // callers keep NaN away from the others
}

// Stochastic code of y: up with probability equal to the distance from the lower neighbour in
// quanta, from the random word `rnd`.
PIPECODEC_HD uint32_t encode_stochastic(float y, elem_format f, uint32_t rnd) {
  const elem_traits t = traits_of(f);
  const uint32_t bits = bit_cast<uint32_t>(y);
  const uint32_t sign = bits >> 31;
  const uint32_t a = bits & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return has_nan(f) ? 0x7Fu : 0u;
  uint32_t mag;
  const int32_t e = a >= 0x00800000u ? int32_t(a >> 23) - 127 : -126;  // y = m * 2^(e - 23)
  if (a == 0) {
    mag = 0;
  } else if (e > 16) {  // beyond every format's range (Inf included): saturate
    mag = t.max_mag;
  } else {
    const uint64_t m = a >= 0x00800000u ? (a & 0x7FFFFFu) | 0x800000u : a;
    const int32_t et = t.ebits == 0 ? 0 : (e > t.emin ? e : t.emin);  // exponent of y's binade in the format
    const int32_t shift = 23 - int32_t(t.mbits) + et - e;             // y / quantum = m / 2^shift
    uint64_t q = 0;
    if (shift < 56) {
      q = m >> shift;
      const uint64_t rest = m & ((uint64_t(1) << shift) - 1u);
      const uint64_t frac32 = shift <= 32 ? rest << (32 - shift) : rest >> (shift - 32);
      q += frac32 > uint64_t(rnd);
    }
    // Normal and subnormal alike: the biased exponent field absorbs a mantissa carry.
    const uint64_t full = t.ebits == 0 ? q : (uint64_t(et - t.emin) << t.mbits) + q;
    mag = full > t.max_mag ? t.max_mag : uint32_t(full);
  }
  if (t.ebits == 0) return sign ? (0x100u - mag) & 0xFFu : mag;
  return mag | (sign << (t.width - 1));
}

// The code of y. `rnd` is used by stochastic rounding only.
PIPECODEC_FOLD uint32_t encode_element(float y, elem_format f, rounding r, uint32_t rnd) {
  return r == rounding::nearest ? encode_nearest(y, f) : encode_stochastic(y, f, rnd);
}

// The value of a code: exact (at most 5 significant bits times a power of two). NaN codes
// give the quiet NaN 0x7FC00000 (of the code's sign), e5m2's Inf codes +-Inf.
PIPECODEC_HD float decode_element(uint32_t code, elem_format f) {
  const elem_traits t = traits_of(f);
  if (t.ebits == 0) return mul_rn(float(int32_t(int8_t(uint8_t(code)))), 0.015625F);
  const uint32_t sign = (code >> (t.width - 1)) & 1u;
  const uint32_t mag = code & ((1u << (t.width - 1)) - 1u);
  const uint32_t ef = mag >> t.mbits, mf = mag & ((1u << t.mbits) - 1u);
  float v;
  if (f == elem_format::e4m3 && mag == 0x7Fu) {
    v = bit_cast<float>(0x7FC00000u);
  } else if (f == elem_format::e5m2 && ef == 31) {
    v = bit_cast<float>(mf == 0 ? 0x7F800000u : 0x7FC00000u);
  } else if (ef == 0) {
    v = mul_rn(float(mf), pow2f(t.emin - int32_t(t.mbits)));
  } else {
    v = mul_rn(float(mf + (1u << t.mbits)), pow2f(int32_t(ef) - 1 + t.emin - int32_t(t.mbits)));
  }
  return sign ? bit_cast<float>(bit_cast<uint32_t>(v) | 0x80000000u) : v;
}

// Largest finite value of a format.
PIPECODEC_HD float max_finite(elem_format f) { return decode_element(traits_of(f).max_mag, f); }

}  // namespace pipecodec::detail

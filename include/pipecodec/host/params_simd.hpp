// Group parameters 16 groups at a time, with AVX-512: make_params (core/quant_math.hpp) for
// the encoder, and the decoder's check of the stored scales and offsets. The same
// operations lane by lane, each correctly rounded in the same precision, so every lane equals
// the scalar result bit for bit (tests/host/test_params_simd.cpp compares them). Scalar, the
// per-group division chain and its branches took about a quarter of a 4-bit encode.
// A lane whose rounded-up scale would decode a code to a non-finite value (a range near
// FLT_MAX) is marked in the returned mask; the caller takes make_params for it.
#pragma once

#include "chunk_simd.hpp"

#if defined(PIPECODEC_HOST_AVX512)
#include "../core/quant_format.hpp"
#include "../core/quant_math.hpp"

namespace pipecodec::host::detail {

struct params_x16 {
  alignas(64) float scale[16];
  alignas(64) float offset[16];
  alignas(64) float pre[16];
  alignas(64) float inv[16];
};

// round_to_f16_grid lane-wise for 0 <= f < 65504, rounding up in the lanes of `up`.
inline __m512 f16_grid_x16(__m512 f, __mmask16 up) {
  const __m512i u = _mm512_castps_si512(f);
  const __m512i normal = _mm512_and_si512(_mm512_mask_add_epi32(u, up, u, _mm512_set1_epi32(0x1FFF)),
                                          _mm512_set1_epi32(~0x1FFF));
  const __m512 y = _mm512_mul_ps(f, _mm512_set1_ps(16777216.0F));  // exact: f * 2^24 < 2^10
  const __m512i t = _mm512_cvttps_epi32(y);
  const __mmask16 bump = up & _mm512_cmp_ps_mask(_mm512_cvtepi32_ps(t), y, _CMP_LT_OQ);
  const __m512 sub = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_mask_add_epi32(t, bump, t, _mm512_set1_epi32(1))),
                                   _mm512_set1_ps(5.9604644775390625e-8F));  // exact: t * 2^-24
  const __mmask16 is_normal = _mm512_cmpge_epu32_mask(u, _mm512_set1_epi32(0x38800000));
  return _mm512_mask_blend_ps(is_normal, sub, _mm512_castsi512_ps(normal));
}

// ceil_to_f32 of 8 doubles s >= 0: float(s) one ulp up where the conversion rounded down.
inline __m256 ceil_f32_x8(__m512d s) {
  const __m256 f = _mm512_cvtpd_ps(s);
  const __mmask8 below = _mm512_cmp_pd_mask(_mm512_cvtps_pd(f), s, _CMP_LT_OQ);
  const __m256i u = _mm256_castps_si256(f);
  return _mm256_castsi256_ps(_mm256_mask_add_epi32(u, below, u, _mm256_set1_epi32(1)));
}

// round_scale(step, scale_dtype, up = true) of 16 steps given as two halves of 8 doubles.
inline __m512 round_scale_up_x16(__m512d lo8, __m512d hi8, dtype scale_dtype) {
  const __m512 f = _mm512_insertf32x8(_mm512_castps256_ps512(ceil_f32_x8(lo8)), ceil_f32_x8(hi8), 1);
  const __mmask16 positive = __mmask16(_mm512_cmp_pd_mask(lo8, _mm512_setzero_pd(), _CMP_GT_OQ) |
                                       (_mm512_cmp_pd_mask(hi8, _mm512_setzero_pd(), _CMP_GT_OQ) << 8));
  __m512 r;
  if (scale_dtype == dtype::f32) {
    const __m512i u = _mm512_and_si512(_mm512_add_epi32(_mm512_castps_si512(f), _mm512_set1_epi32(0xFF)),
                                       _mm512_set1_epi32(~0xFF));
    r = _mm512_castsi512_ps(_mm512_min_epu32(u, _mm512_set1_epi32(int(pipecodec::detail::scale_f32_max_bits))));
  } else {
    const __mmask16 below_max = _mm512_cmp_ps_mask(f, _mm512_set1_ps(pipecodec::detail::f16_max), _CMP_LT_OQ);
    r = _mm512_mask_blend_ps(below_max, _mm512_set1_ps(pipecodec::detail::f16_max), f16_grid_x16(f, 0xFFFF));
  }
  return _mm512_maskz_mov_ps(positive, r);
}

// decodes_finite lane-wise: the lanes of 16 (scale, offset) pairs that decode every code to
// a finite value.
inline __mmask16 decodes_finite_x16(__m512 scale, __m512 offset, const pipecodec::detail::quant_consts& c) {
  const __m512d magnitude = _mm512_set1_pd(max_code_magnitude(c)), fmax = _mm512_set1_pd(double(pipecodec::detail::flt_max));
  __mmask16 fine = 0;
  for (int h = 0; h < 2; ++h) {
    const __m256 s8 = h == 0 ? _mm512_castps512_ps256(scale) : _mm512_extractf32x8_ps(scale, 1);
    const __m256 o8 = h == 0 ? _mm512_castps512_ps256(offset) : _mm512_extractf32x8_ps(offset, 1);
    const __m512d span = _mm512_mul_pd(magnitude, _mm512_cvtps_pd(s8));
    const __mmask8 f = _mm512_cmp_pd_mask(span, fmax, _CMP_LE_OQ) &
                       _mm512_cmp_pd_mask(_mm512_add_pd(_mm512_cvtps_pd(o8), span), fmax, _CMP_LE_OQ);
    fine |= __mmask16(f) << (8 * h);
  }
  return fine;
}

// Parameters of 16 groups from their statistics; the returned mask marks lanes to redo with
// make_params (decodes_finite failed).
inline __mmask16 make_params_x16(__m512 lo, __m512 hi, const quant_params& q, params_x16& out) {
  using namespace pipecodec::detail;
  const quant_consts c = consts_for(q.bits, q.scale);
  const __m512 zero = _mm512_setzero_ps();
  const __mmask16 empty = _mm512_cmp_ps_mask(lo, hi, _CMP_GT_OQ);
  lo = _mm512_mask_blend_ps(empty | _mm512_cmp_ps_mask(lo, zero, _CMP_EQ_OQ), lo, zero);  // canonical +0
  hi = _mm512_mask_blend_ps(empty | _mm512_cmp_ps_mask(hi, zero, _CMP_EQ_OQ), hi, zero);
  __m512 offset = zero;
  __m512d step[2];
  const __m512d dlo[2] = {_mm512_cvtps_pd(_mm512_castps512_ps256(lo)), _mm512_cvtps_pd(_mm512_extractf32x8_ps(lo, 1))};
  const __m512d dhi[2] = {_mm512_cvtps_pd(_mm512_castps512_ps256(hi)), _mm512_cvtps_pd(_mm512_extractf32x8_ps(hi, 1))};
  if (q.scale == scale_mode::minmax) {
    offset = lo;
    if (q.scale_dtype != dtype::f32) {  // round_offset: the fp16 grid, away from zero below 0
      const __mmask16 negative = _mm512_cmp_ps_mask(lo, zero, _CMP_LT_OQ);
      const __m512 a = _mm512_abs_ps(lo);
      const __m512 g = f16_grid_x16(_mm512_min_ps(a, _mm512_set1_ps(f16_max)), negative);
      const __m512 clamped = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, _mm512_set1_ps(f16_max), _CMP_GE_OQ), g,
                                                  _mm512_set1_ps(f16_max));
      offset = _mm512_mask_sub_ps(clamped, negative, zero, clamped);
    }
    const __m512d doff[2] = {_mm512_cvtps_pd(_mm512_castps512_ps256(offset)),
                             _mm512_cvtps_pd(_mm512_extractf32x8_ps(offset, 1))};
    for (int h = 0; h < 2; ++h) {
      const __m512d range = _mm512_sub_pd(dhi[h], doff[h]);
      step[h] = _mm512_maskz_div_pd(_mm512_cmp_pd_mask(range, _mm512_setzero_pd(), _CMP_GT_OQ), range,
                                    _mm512_set1_pd(double(c.levels)));
    }
  } else {
    for (int h = 0; h < 2; ++h) {
      const __m512d neg_lo = _mm512_sub_pd(_mm512_setzero_pd(), dlo[h]);
      const __m512d a = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(dhi[h], neg_lo, _CMP_GT_OQ), neg_lo, dhi[h]);
      step[h] = _mm512_div_pd(a, _mm512_set1_pd(double(c.hi)));
    }
  }
  const __m512 scale = round_scale_up_x16(step[0], step[1], q.scale_dtype);
  const __mmask16 redo = __mmask16(~decodes_finite_x16(scale, offset, c));
  // to_params: 2^64 before the reciprocal for scales below 2^-126; pre 1 and inv 0 at scale 0.
  const __mmask16 positive = _mm512_cmp_ps_mask(scale, zero, _CMP_GT_OQ);
  const __mmask16 tiny = positive & _mm512_cmp_ps_mask(scale, _mm512_set1_ps(1.1754943508222875e-38F), _CMP_LT_OQ);
  const __m512 pre = _mm512_mask_blend_ps(tiny, _mm512_set1_ps(1.0F), _mm512_set1_ps(1.8446744073709552e19F));
  _mm512_store_ps(out.scale, scale);
  _mm512_store_ps(out.offset, offset);
  _mm512_store_ps(out.pre, pre);
  _mm512_store_ps(out.inv, _mm512_maskz_div_ps(positive, _mm512_set1_ps(1.0F), _mm512_mul_ps(scale, pre)));
  return redo;
}

// valid_stored_group for groups g0 .. g0 + 15 of a payload without outliers or rotation:
// true when all 16 are valid. False only says that one is not; the caller's scalar check
// then finds which.
inline bool stored_groups_valid_x16(const pipecodec::detail::quant_payload& qp, uint64_t g0) {
  using namespace pipecodec::detail;
  const quant_layout& L = qp.layout;
  for (uint64_t k = 0; k < 16; ++k)
    if (!padded_lanes_zero(qp, g0 + k)) return false;
  const uint8_t* sec = qp.bytes + L.params_offset;
  __m512 scale, offset = _mm512_setzero_ps();
  if (L.scale_bytes == 2) {
    const __m256i s = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sec + 2 * g0));
    if (_mm256_cmpge_epu16_mask(s, _mm256_set1_epi16(0x7C00)) != 0) return false;  // negative, Inf or NaN
    scale = _mm512_cvtph_ps(s);
    if (L.has_offset) {
      const __m256i o = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sec + 2 * (L.groups + g0)));
      const __m256i exponent = _mm256_and_si256(o, _mm256_set1_epi16(0x7C00));
      if (_mm256_cmpeq_epi16_mask(exponent, _mm256_set1_epi16(0x7C00)) != 0) return false;
      offset = _mm512_cvtph_ps(o);
    }
  } else {
    const __m512i s = _mm512_loadu_si512(sec + 4 * g0);
    if (_mm512_cmpge_epu32_mask(s, _mm512_set1_epi32(0x7F800000)) != 0) return false;  // valid_scale
    if (_mm512_test_epi32_mask(s, _mm512_set1_epi32(0xFF)) != 0) return false;
    scale = _mm512_castsi512_ps(s);
    if (L.has_offset) {
      const __m512i o = _mm512_loadu_si512(sec + 4 * (L.groups + g0));
      const __m512i exponent = _mm512_and_si512(o, _mm512_set1_epi32(0x7F800000));
      if (_mm512_cmpeq_epi32_mask(exponent, _mm512_set1_epi32(0x7F800000)) != 0) return false;  // is_finite
      offset = _mm512_castsi512_ps(o);
    }
  }
  return decodes_finite_x16(scale, offset, consts_for(qp.q.bits, qp.q.scale)) == 0xFFFF;
}

}  // namespace pipecodec::host::detail

#endif

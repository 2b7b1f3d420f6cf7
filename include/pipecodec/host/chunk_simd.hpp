// x86 vector versions of the host codec's hottest steps, used where the compiler targets
// them (SSE2 is part of baseline x86-64; AVX2 with -march=native on recent CPUs); every
// other target uses the portable core/ code. Results are identical bit for bit:
// - fp32 group min/max: compilers do not vectorise the finite-only selects of stats_add
//   (the comparisons may trap), but min/max instructions implement them exactly;
// - bit-plane packing of one 32-code chunk: one shift and one movemask per plane, the
//   same planes as core/bitplane.hpp;
// - (AVX2) quantizing a full fp32 chunk in registers, and Philox for 8 blocks at once.
#pragma once

#include "../core/bitplane.hpp"
#include "../core/philox.hpp"
#include "../core/quant_math.hpp"

#if defined(__AVX2__)
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace pipecodec::host::detail {

// stats_add over x[0..len): finite values only. Lane-wise: v replaced by the neutral +-Inf
// unless -FLT_MAX <= v <= FLT_MAX (false for NaN), then min/max, which return the second
// operand on ties, as stats_add keeps the old value.
inline pipecodec::detail::group_stats minmax_f32(const float* x, uint64_t len) {
  using pipecodec::detail::flt_max;
  pipecodec::detail::group_stats s;
  uint64_t i = 0;
#if defined(__AVX2__)
  const __m256 inf = _mm256_set1_ps(__builtin_inff()), ninf = _mm256_set1_ps(-__builtin_inff());
  const __m256 lo_ok = _mm256_set1_ps(-flt_max), hi_ok = _mm256_set1_ps(flt_max);
  __m256 lo = inf, hi = ninf;
  for (; i + 8 <= len; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m256 fin = _mm256_and_ps(_mm256_cmp_ps(v, lo_ok, _CMP_GE_OQ), _mm256_cmp_ps(v, hi_ok, _CMP_LE_OQ));
    lo = _mm256_min_ps(_mm256_blendv_ps(inf, v, fin), lo);
    hi = _mm256_max_ps(_mm256_blendv_ps(ninf, v, fin), hi);
  }
  float l8[8], h8[8];
  _mm256_storeu_ps(l8, lo);
  _mm256_storeu_ps(h8, hi);
  for (uint32_t k = 0; k < 8; ++k) s = pipecodec::detail::stats_merge(s, {l8[k], h8[k]});
#elif defined(__SSE2__)
  const __m128 inf = _mm_set1_ps(__builtin_inff()), ninf = _mm_set1_ps(-__builtin_inff());
  const __m128 lo_ok = _mm_set1_ps(-flt_max), hi_ok = _mm_set1_ps(flt_max);
  __m128 lo = inf, hi = ninf;
  for (; i + 4 <= len; i += 4) {
    const __m128 v = _mm_loadu_ps(x + i);
    const __m128 fin = _mm_and_ps(_mm_cmpge_ps(v, lo_ok), _mm_cmple_ps(v, hi_ok));
    lo = _mm_min_ps(_mm_or_ps(_mm_and_ps(fin, v), _mm_andnot_ps(fin, inf)), lo);
    hi = _mm_max_ps(_mm_or_ps(_mm_and_ps(fin, v), _mm_andnot_ps(fin, ninf)), hi);
  }
  float l4[4], h4[4];
  _mm_storeu_ps(l4, lo);
  _mm_storeu_ps(h4, hi);
  for (uint32_t k = 0; k < 4; ++k) s = pipecodec::detail::stats_merge(s, {l4[k], h4[k]});
#endif
  for (; i < len; ++i) pipecodec::detail::stats_add(s, x[i]);
  return s;
}

// bit j of codes[l] -> bit l of planes[j]: shifting bit j of every byte up to bit 7 (the
// 16-bit shift cannot carry another byte's bit into bit 7) and reading the byte sign bits.
#if defined(__AVX2__)
template <uint32_t Bits>
inline void planes_from_bytes(__m256i v, uint32_t* planes) {
  for (uint32_t j = 0; j < Bits; ++j)
    planes[j] = uint32_t(_mm256_movemask_epi8(_mm256_sll_epi16(v, _mm_cvtsi32_si128(int(7 - j)))));
}
#endif

template <uint32_t Bits>
inline void pack_chunk(const uint8_t (&codes)[32], uint32_t* planes) {
#if defined(__AVX2__)
  planes_from_bytes<Bits>(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes)), planes);
#elif defined(__SSE2__)
  const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes));
  const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + 16));
  for (uint32_t j = 0; j < Bits; ++j) {
    const __m128i s = _mm_cvtsi32_si128(int(7 - j));
    planes[j] = uint32_t(_mm_movemask_epi8(_mm_sll_epi16(lo, s))) |
                uint32_t(_mm_movemask_epi8(_mm_sll_epi16(hi, s))) << 16;
  }
#else
  pipecodec::detail::pack_planes<Bits>(codes, planes);
#endif
}

#if defined(__AVX2__)
// quantize_nearest / quantize_stochastic of 32 fp32 values and their bit planes, all in
// registers. Same operations in the same order: (x - o) * pre * inv, clamp (max/min return
// the bound for NaN and on ties, as clamp_code does), + z, then round.
// u: the 32 uniforms of the chunk (stochastic only).
template <uint32_t Bits, rounding R>
inline void quantize_pack_f32(const float* x, const pipecodec::detail::group_params& p,
                              const pipecodec::detail::quant_consts& c, const float* u, uint32_t* planes) {
  const __m256 off = _mm256_set1_ps(p.offset), pre = _mm256_set1_ps(p.pre), inv = _mm256_set1_ps(p.inv);
  const __m256 lo = _mm256_set1_ps(c.lo), hi = _mm256_set1_ps(c.hi), zero = _mm256_set1_ps(c.zero);
  __m256i q[4];
  for (uint32_t k = 0; k < 4; ++k) {
    __m256 y = _mm256_mul_ps(_mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + 8 * k), off), pre), inv);
    y = _mm256_add_ps(_mm256_min_ps(_mm256_max_ps(y, lo), hi), zero);
    if constexpr (R == rounding::nearest) {
      q[k] = _mm256_and_si256(_mm256_castps_si256(_mm256_add_ps(y, _mm256_set1_ps(12582912.0F))),
                              _mm256_set1_epi32(0xFF));
    } else {
      const __m256i t = _mm256_cvttps_epi32(y);
      const __m256 frac = _mm256_sub_ps(y, _mm256_cvtepi32_ps(t));
      const __m256 up = _mm256_cmp_ps(_mm256_loadu_ps(u + 8 * k), frac, _CMP_LT_OQ);
      q[k] = _mm256_sub_epi32(t, _mm256_castps_si256(up));  // mask is -1 where rounding up
    }
  }
  // Codes are 0..255: saturating packs keep them; the dword permute undoes the per-lane order.
  const __m256i bytes = _mm256_packus_epi16(_mm256_packus_epi32(q[0], q[1]), _mm256_packus_epi32(q[2], q[3]));
  planes_from_bytes<Bits>(_mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)), planes);
}
#endif

// Inverse of pack_chunk: every byte picks its plane bit with a byte shuffle and a mask.
template <uint32_t Bits>
inline void unpack_chunk(const uint32_t* planes, uint8_t (&codes)[32]) {
#if defined(__AVX2__)
  // Byte l of the result reads byte l / 8 of the plane and tests bit l % 8.
  const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2,
                                          3, 3, 3, 3, 3, 3, 3, 3);
  const __m256i bit = _mm256_set1_epi64x(int64_t(0x8040201008040201ull));
  __m256i acc = _mm256_setzero_si256();
  for (uint32_t j = 0; j < Bits; ++j) {
    const __m256i w = _mm256_shuffle_epi8(_mm256_set1_epi32(int(planes[j])), spread);
    const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(w, bit), bit);
    acc = _mm256_or_si256(acc, _mm256_and_si256(set, _mm256_set1_epi8(char(1u << j))));
  }
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(codes), acc);
#else
  pipecodec::detail::unpack_planes<Bits>(planes, codes);
#endif
}

#if defined(__AVX2__)
// High 32 bits of the 32x32-bit products a * m, lane-wise (m: the same in every lane).
inline __m256i mulhi_epu32(__m256i a, __m256i m) {
  const __m256i even = _mm256_mul_epu32(a, m);
  const __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), m);
  return _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
}

// to_unit_float of the words of blocks b0 .. b0 + 8 Sets - 1 of random_block(key, stream, .)
// in element order (u[4b + k] = word k of block b): philox4x32_10 with
// lane l of set s = block 8s + l. Several sets interleave to hide the multiply latency.
template <uint32_t Sets>
inline void uniforms_avx2(uint64_t key, uint32_t stream, uint64_t b0, float* u) {
  __m256i c0[Sets], c1[Sets], c2[Sets], c3[Sets];
  for (uint32_t s = 0; s < Sets; ++s) {
    alignas(32) uint32_t lo[8], hi[8];
    for (uint32_t b = 0; b < 8; ++b) {
      lo[b] = uint32_t(b0 + 8 * s + b);
      hi[b] = uint32_t((b0 + 8 * s + b) >> 32);
    }
    c0[s] = _mm256_load_si256(reinterpret_cast<const __m256i*>(lo));
    c1[s] = _mm256_load_si256(reinterpret_cast<const __m256i*>(hi));
    c2[s] = _mm256_set1_epi32(int(stream));
    c3[s] = _mm256_setzero_si256();
  }
  const __m256i m0 = _mm256_set1_epi32(int(0xD2511F53u)), m1 = _mm256_set1_epi32(int(0xCD9E8D57u));
  uint32_t k0 = uint32_t(key), k1 = uint32_t(key >> 32);
  for (int r = 0; r < 10; ++r) {
    const __m256i key0 = _mm256_set1_epi32(int(k0)), key1 = _mm256_set1_epi32(int(k1));
    for (uint32_t s = 0; s < Sets; ++s) {
      const __m256i n0 = _mm256_xor_si256(_mm256_xor_si256(mulhi_epu32(c2[s], m1), c1[s]), key0);
      const __m256i n2 = _mm256_xor_si256(_mm256_xor_si256(mulhi_epu32(c0[s], m0), c3[s]), key1);
      c1[s] = _mm256_mullo_epi32(c2[s], m1);
      c3[s] = _mm256_mullo_epi32(c0[s], m0);
      c0[s] = n0;
      c2[s] = n2;
    }
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  // Lane b of c_k is word k of block b. 4x4 transposes inside each 128-bit half give one
  // block per half (e01: blocks 0 | 4, ...); the halves regroup into elements 0-7, ..., 24-31.
  const __m256 unit = _mm256_set1_ps(5.9604644775390625e-8F);
  for (uint32_t s = 0; s < Sets; ++s) {
    const __m256i a = _mm256_unpacklo_epi32(c0[s], c1[s]), b = _mm256_unpacklo_epi32(c2[s], c3[s]);
    const __m256i c = _mm256_unpackhi_epi32(c0[s], c1[s]), d = _mm256_unpackhi_epi32(c2[s], c3[s]);
    const __m256i e01 = _mm256_unpacklo_epi64(a, b), e23 = _mm256_unpackhi_epi64(a, b);
    const __m256i e45 = _mm256_unpacklo_epi64(c, d), e67 = _mm256_unpackhi_epi64(c, d);
    const __m256i w[4] = {_mm256_permute2x128_si256(e01, e23, 0x20), _mm256_permute2x128_si256(e45, e67, 0x20),
                          _mm256_permute2x128_si256(e01, e23, 0x31), _mm256_permute2x128_si256(e45, e67, 0x31)};
    for (uint32_t k = 0; k < 4; ++k)
      _mm256_storeu_ps(u + 32 * s + 8 * k, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(w[k], 8)), unit));
  }
}
#endif

}  // namespace pipecodec::host::detail

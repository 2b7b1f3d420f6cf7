// Comparisons over a block of 32 u32 keys, as a 32-bit mask (bit l for key l): the step every
// TopK scan takes before it visits the set bits. AVX-512 and AVX2 compare 16 or 8 keys an
// instruction; the portable loops give the same bits.
#pragma once

#include <cstdint>

#include "simd_isa.hpp"

namespace pipecodec::host::detail {

constexpr uint32_t key_block = 32;

// Bit l: (c[l] & mask) >= at_least, or == equal when Equal.
template <bool Equal>
inline uint32_t masked_key_bits(const uint32_t* c, uint32_t mask, uint32_t v) {
#if defined(PIPECODEC_HOST_AVX512)
  const __m512i m = _mm512_set1_epi32(int(mask)), t = _mm512_set1_epi32(int(v));
  const __m512i a = _mm512_and_si512(_mm512_loadu_si512(c), m);
  const __m512i b = _mm512_and_si512(_mm512_loadu_si512(c + 16), m);
  constexpr int op = Equal ? _MM_CMPINT_EQ : _MM_CMPINT_NLT;
  return uint32_t(_mm512_cmp_epu32_mask(a, t, op)) | uint32_t(_mm512_cmp_epu32_mask(b, t, op)) << 16;
#elif defined(__AVX2__)
  const __m256i m = _mm256_set1_epi32(int(mask)), t = _mm256_set1_epi32(int(v));
  uint32_t bits = 0;
  for (uint32_t q = 0; q < 4; ++q) {
    const __m256i a = _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(c + 8 * q)), m);
    const __m256i r = _mm256_cmpeq_epi32(Equal ? t : _mm256_max_epu32(a, t), a);  // unsigned a >= t
    bits |= uint32_t(_mm256_movemask_ps(_mm256_castsi256_ps(r))) << (8 * q);
  }
  return bits;
#else
  uint32_t bits = 0;
  for (uint32_t l = 0; l < key_block; ++l) {
    const uint32_t a = c[l] & mask;
    bits |= uint32_t(Equal ? a == v : a >= v) << l;
  }
  return bits;
#endif
}

// Bit l: lo <= c[l] <= lo + span.
inline uint32_t key_bits_within(const uint32_t* c, uint32_t lo, uint32_t span) {
#if defined(PIPECODEC_HOST_AVX512)
  const __m512i l = _mm512_set1_epi32(int(lo)), s = _mm512_set1_epi32(int(span));
  const __m512i a = _mm512_sub_epi32(_mm512_loadu_si512(c), l);
  const __m512i b = _mm512_sub_epi32(_mm512_loadu_si512(c + 16), l);
  return uint32_t(_mm512_cmp_epu32_mask(a, s, _MM_CMPINT_LE)) |
         uint32_t(_mm512_cmp_epu32_mask(b, s, _MM_CMPINT_LE)) << 16;
#elif defined(__AVX2__)
  const __m256i l = _mm256_set1_epi32(int(lo)), s = _mm256_set1_epi32(int(span));
  uint32_t bits = 0;
  for (uint32_t q = 0; q < 4; ++q) {
    const __m256i a = _mm256_sub_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(c + 8 * q)), l);
    const __m256i r = _mm256_cmpeq_epi32(_mm256_min_epu32(a, s), a);  // a <= span, unsigned
    bits |= uint32_t(_mm256_movemask_ps(_mm256_castsi256_ps(r))) << (8 * q);
  }
  return bits;
#else
  uint32_t bits = 0;
  for (uint32_t l = 0; l < key_block; ++l) bits |= uint32_t(c[l] - lo <= span) << l;
  return bits;
#endif
}

// How many of c[0, n) are at least v (Strict: greater than v).
template <bool Strict>
inline uint32_t count_keys(const uint32_t* c, uint32_t n, uint32_t v) {
  uint32_t count = 0;
#if defined(PIPECODEC_HOST_AVX512)
  const __m512i t = _mm512_set1_epi32(int(v));
  constexpr int op = Strict ? _MM_CMPINT_NLE : _MM_CMPINT_NLT;
  for (uint32_t j = 0; j < n; j += 16) {
    const __mmask16 valid = n - j >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - j)) - 1);
    const __m512i a = _mm512_maskz_loadu_epi32(valid, c + j);
    count += uint32_t(__builtin_popcount(_mm512_mask_cmp_epu32_mask(valid, a, t, op)));
  }
#else
  for (uint32_t j = 0; j < n; ++j) count += Strict ? c[j] > v : c[j] >= v;
#endif
  return count;
}

}  // namespace pipecodec::host::detail

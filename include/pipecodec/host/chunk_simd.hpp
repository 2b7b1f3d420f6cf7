// Bit-plane packing of one 32-code chunk with x86 byte masks where the compiler allows
// them: one shift and one movemask per plane (SSE2 is part of baseline x86-64; AVX2 does
// the 32 lanes at once). Same planes as core/bitplane.hpp, which other targets use.
#pragma once

#include "../core/bitplane.hpp"

#if defined(__AVX2__)
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace pipecodec::host::detail {

// bit j of codes[l] -> bit l of planes[j]: shifting bit j of every byte up to bit 7 (the
// 16-bit shift cannot carry another byte's bit into bit 7) and reading the byte sign bits.
template <uint32_t Bits>
inline void pack_chunk(const uint8_t (&codes)[32], uint32_t* planes) {
#if defined(__AVX2__)
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes));
  for (uint32_t j = 0; j < Bits; ++j)
    planes[j] = uint32_t(_mm256_movemask_epi8(_mm256_sll_epi16(v, _mm_cvtsi32_si128(int(7 - j)))));
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

}  // namespace pipecodec::host::detail

// Packs the selected lanes of a block of 32 (bit l of `bits` selects lane l) to the front of
// the destination, in lane order: the kept values and positions of a TopK block. AVX-512
// compresses 16 lanes an instruction; otherwise (and off x86) the lanes go one at a time.
// Destinations are little-endian like every payload field; the AVX-512 path is x86 only.
#pragma once

#include <cstdint>
#include <cstring>

#include "../core/format.hpp"
#include "key_bits.hpp"
#include "simd_isa.hpp"

namespace pipecodec::host::detail {

// The u32 words src[l] for the set bits l (src is read only at those lanes).
inline void compress_u32(const void* src, uint32_t bits, uint8_t* dst) {
#if defined(PIPECODEC_HOST_AVX512)
  for (uint32_t h = 0; h < 2; ++h) {
    // No branch on an empty half (unpredictable at 1-10 % kept): a masked load reads, and
    // can fault on, its selected lanes only, which lie within src.
    const __mmask16 sel = __mmask16(bits >> (16 * h));
    const __m512i v = _mm512_maskz_loadu_epi32(sel, static_cast<const uint8_t*>(src) + 64 * h);
    const uint32_t n = uint32_t(__builtin_popcount(sel));
    _mm512_mask_storeu_epi32(dst, __mmask16((1u << n) - 1), _mm512_maskz_compress_epi32(sel, v));
    dst += 4 * n;
  }
#else
  const auto* s = static_cast<const uint8_t*>(src);
  for (; bits != 0; bits &= bits - 1, dst += 4) {
    uint32_t w;
    memcpy(&w, s + 4 * __builtin_ctz(bits), 4);
    pipecodec::detail::put_u32(dst, w);
  }
#endif
}

// Keys c[l] of a block of key_block for the set bits l, to dst in native order (a selection's
// candidate buffer): no branch per key where AVX-512 compresses. With Room (dst has key_block
// slots), whole registers are stored and the slots past the kept keys get garbage that the
// caller ignores or overwrites: the masked store took a TopK row encode 5-8 % longer on Zen 4.
template <bool Room = false>
inline void compress_keys(const uint32_t* c, uint32_t bits, uint32_t* dst) {
#if defined(PIPECODEC_HOST_AVX512)
  for (uint32_t h = 0; h < 2; ++h) {  // compress in a register, then a store: the
    const __mmask16 sel = __mmask16(bits >> (16 * h));  // compressing store is slow on Zen 4
    const uint32_t n = uint32_t(__builtin_popcount(sel));
    const __m512i packed = _mm512_maskz_compress_epi32(sel, _mm512_loadu_si512(c + 16 * h));
    if (Room) _mm512_storeu_si512(dst, packed);
    else _mm512_mask_storeu_epi32(dst, __mmask16((1u << n) - 1), packed);
    dst += n;
  }
#else
  for (; bits != 0; bits &= bits - 1) *dst++ = c[__builtin_ctz(bits)];
#endif
}

// The positions first + l for the set bits l, as u32 (Wide) or u16 words.
template <bool Wide>
inline void compress_positions(uint32_t first, uint32_t bits, uint8_t* dst) {
#if defined(PIPECODEC_HOST_AVX512)
  const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  for (uint32_t h = 0; h < 2; ++h) {
    const __mmask16 sel = __mmask16(bits >> (16 * h));
    const uint32_t n = uint32_t(__builtin_popcount(sel));
    const __m512i at = _mm512_add_epi32(lane, _mm512_set1_epi32(int(first + 16 * h)));
    const __m512i packed = _mm512_maskz_compress_epi32(sel, at);
    if (Wide) {
      _mm512_mask_storeu_epi32(dst, __mmask16((1u << n) - 1), packed);
    } else {
      _mm256_mask_storeu_epi16(dst, __mmask16((1u << n) - 1), _mm512_cvtepi32_epi16(packed));
    }
    dst += (Wide ? 4 : 2) * n;
  }
#else
  for (; bits != 0; bits &= bits - 1, dst += Wide ? 4 : 2) {
    const uint32_t i = first + uint32_t(__builtin_ctz(bits));
    if (Wide) pipecodec::detail::put_u32(dst, i);
    else pipecodec::detail::put_u16(dst, uint16_t(i));
  }
#endif
}

}  // namespace pipecodec::host::detail

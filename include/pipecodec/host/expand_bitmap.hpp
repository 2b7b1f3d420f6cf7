// Decoding a TopK bitmap with fp32 values into fp32 (AVX-512 only): the inverse of the
// encoder's block compaction, 16 positions an instruction, writing every output element
// (zeros where the bitmap has none) so the output needs no clearing pass first.
#pragma once

#include <cstdint>

#include "../core/config.hpp"
#include "../core/format.hpp"
#include "simd_isa.hpp"

namespace pipecodec::host::detail {

#if defined(PIPECODEC_HOST_AVX512)
// out[i], i < n: the next of the little-endian fp32 values `vals` where bit i of the bitmap
// `bm` is set, else 0; with Accumulate, out[i] + that value where set, unchanged elsewhere.
template <bool Accumulate>
inline void expand_bitmap_f32(const uint8_t* bm, const uint8_t* vals, uint64_t n, float* out) {
  uint64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __mmask16 sel = __mmask16(pipecodec::detail::get_u16(bm + i / 8));
    const uint32_t count = uint32_t(__builtin_popcount(sel));
    const __m512 packed = _mm512_maskz_loadu_ps(__mmask16((1u << count) - 1), vals);
    const __m512 v = _mm512_maskz_expand_ps(sel, packed);
    if (Accumulate) {
      const __m512 o = _mm512_loadu_ps(out + i);
      _mm512_storeu_ps(out + i, _mm512_mask_add_ps(o, sel, o, v));
    } else {
      _mm512_storeu_ps(out + i, v);
    }
    vals += 4 * count;
  }
  for (; i < n; ++i) {
    if ((bm[i / 8] >> (i % 8)) & 1u) {
      const float v = pipecodec::detail::bit_cast<float>(pipecodec::detail::get_u32(vals));
      out[i] = Accumulate ? pipecodec::detail::add_rn(out[i], v) : v;
      vals += 4;
    } else if (!Accumulate) {
      out[i] = 0.0F;
    }
  }
}
#endif

}  // namespace pipecodec::host::detail

// Spans of fp32 / fp16 / bf16 converted to and from fp32 for the host state loops (EF, EF21,
// AQ-SGD, per-sample EF), bit for bit what core/dtype.hpp's load<T> / store<T> give element
// by element. Element-wise calls to the scalar fp16 conversion kept those loops at a few
// percent of copy speed with an fp16 store. With F16C (x86 with -march=native on any CPU since
// 2012) fp16 converts 8 lanes per instruction, 16 with AVX-512. The instruction treats NaN differently from
// core (core keeps an fp16 NaN's payload when widening and narrows every fp32 NaN to the
// canonical 0x7E00), so a block of 8 (16) that holds a NaN (or, widening, an Inf) goes through the
// scalar conversion. Elsewhere the scalar loops, which compilers vectorise for bf16.
#pragma once

#include <cstring>

#include "../core/dtype.hpp"
#include "simd_isa.hpp"

namespace pipecodec::host::detail {

using pipecodec::detail::load;
using pipecodec::detail::store;

inline constexpr uint64_t span_chunk = 256;  // elements per stack buffer of the span helpers

// dst[0..n) = fp32 of src[off .. off + n) (elements of type T).
template <dtype T>
inline void load_span(const void* src, uint64_t off, uint64_t n, float* dst) {
  if constexpr (T == dtype::f32) {
    if (n > 0) memcpy(dst, static_cast<const float*>(src) + off, n * sizeof(float));
  } else {
    const uint16_t* s = static_cast<const uint16_t*>(src) + off;
    uint64_t i = 0;
#if defined(PIPECODEC_HOST_F16C)
    if constexpr (T == dtype::f16) {
#if defined(PIPECODEC_HOST_AVX512)
      const __m256i exp16 = _mm256_set1_epi16(0x7C00);
      for (; i + 16 <= n; i += 16) {
        const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i));
        if (_mm256_cmpeq_epi16_mask(_mm256_and_si256(h, exp16), exp16) != 0) {
          for (uint64_t k = i; k < i + 16; ++k) dst[k] = load<T>(s, k);
        } else {
          _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(h));
        }
      }
#endif
      const __m128i exp_mask = _mm_set1_epi16(0x7C00);
      for (; i + 8 <= n; i += 8) {
        const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
        if (_mm_movemask_epi8(_mm_cmpeq_epi16(_mm_and_si128(h, exp_mask), exp_mask)) != 0) {
          for (uint64_t k = i; k < i + 8; ++k) dst[k] = load<T>(s, k);
        } else {
          _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
        }
      }
    }
#endif
    for (; i < n; ++i) dst[i] = load<T>(s, i);
  }
}

// dst[off .. off + n) = T(src[0..n)), each rounded once to nearest even (nothing to do for
// fp32 values already in place, see span_out).
template <dtype T>
inline void store_span(const float* src, uint64_t n, void* dst, uint64_t off) {
  if constexpr (T == dtype::f32) {
    if (n > 0 && src != static_cast<float*>(dst) + off) memcpy(static_cast<float*>(dst) + off, src, n * sizeof(float));
  } else {
    uint16_t* d = static_cast<uint16_t*>(dst) + off;
    uint64_t i = 0;
#if defined(PIPECODEC_HOST_F16C)
    if constexpr (T == dtype::f16) {
#if defined(PIPECODEC_HOST_AVX512)
      for (; i + 16 <= n; i += 16) {
        const __m512 v = _mm512_loadu_ps(src + i);
        if (_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q) != 0) {
          for (uint64_t k = i; k < i + 16; ++k) store<T>(d, k, src[k]);
        } else {
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
        }
      }
#endif
      for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(src + i);
        if (_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)) != 0) {
          for (uint64_t k = i; k < i + 8; ++k) store<T>(d, k, src[k]);
        } else {
          _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
        }
      }
    }
#endif
    for (; i < n; ++i) store<T>(d, i, src[i]);
  }
}

// Where a state loop puts the new fp32 values of dst[off ..] (type T) before store_span: in
// place for fp32 (no copy through a buffer), else tmp.
template <dtype T>
inline float* span_out(void* dst, uint64_t off, float* tmp) {
  if constexpr (T == dtype::f32) {
    return static_cast<float*>(dst) + off;
  } else {
    return tmp;
  }
}

// The fp32 values of src[off .. off + n): in place for fp32, else converted into tmp.
template <dtype T>
inline const float* span_f32(const void* src, uint64_t off, uint64_t n, float* tmp) {
  if constexpr (T == dtype::f32) {
    return static_cast<const float*>(src) + off;
  } else {
    load_span<T>(src, off, n, tmp);
    return tmp;
  }
}

// dst[doff ..] = D(src[soff ..]) for n elements: exact when widening, one rounding when narrowing.
template <dtype S, dtype D>
inline void convert_span(const void* src, uint64_t soff, void* dst, uint64_t doff, uint64_t n) {
  if constexpr (S == D) {
    if (n > 0) memcpy(static_cast<uint8_t*>(dst) + doff * dtype_bytes(D),
                      static_cast<const uint8_t*>(src) + soff * dtype_bytes(S), n * dtype_bytes(S));
  } else {
    float t[span_chunk];
    for (uint64_t j = 0; j < n; j += span_chunk) {
      const uint64_t len = n - j < span_chunk ? n - j : span_chunk;
      store_span<D>(span_f32<S>(src, soff + j, len, t), len, dst, doff + j);
    }
  }
}

// f(j, a, b, len) for consecutive chunks of [0, n): a and b point at the fp32 values of
// elements j .. j + len of the spans a[a_off ..] (type A) and b[b_off ..] (type B); for fp32
// they point into the spans themselves, so f writes a chunk back only after reading it.
template <dtype A, dtype B, class F>
inline void zip_spans(const void* a, uint64_t a_off, const void* b, uint64_t b_off, uint64_t n, F&& f) {
  float ta[span_chunk], tb[span_chunk];
  for (uint64_t j = 0; j < n; j += span_chunk) {
    const uint64_t len = n - j < span_chunk ? n - j : span_chunk;
    f(j, span_f32<A>(a, a_off + j, len, ta), span_f32<B>(b, b_off + j, len, tb), len);
  }
}

}  // namespace pipecodec::host::detail

// Spans of fp32 / fp16 / bf16 converted to and from fp32 for the host state loops (EF, EF21,
// AQ-SGD, per-sample EF), bit for bit what core/dtype.hpp's load<T> / store<T> give element
// by element. Element-wise calls to the scalar fp16 conversion kept those loops at a few
// percent of copy speed with an fp16 store. With F16C (x86 with -march=native on any CPU since
// 2012) fp16 converts 8 lanes per instruction, 16 with AVX-512. The instruction treats NaN differently from
// core (core keeps an fp16 NaN's payload when widening and narrows every fp32 NaN to the
// canonical 0x7E00), so a block of 8 (16) that holds a NaN (or, widening, an Inf) goes through the
// scalar conversion. Elsewhere the scalar loops, which compilers vectorise for bf16. The
// state updates with an fp16 state (sub_span, accumulate_span) run in one pass of 16 lanes
// with AVX-512, where the steps through fp32 buffers cost an AQ-SGD receiver a fifth of its time.
#pragma once

#include <cstring>

#include "../core/dtype.hpp"
#include "simd_isa.hpp"

namespace pipecodec::host::detail {

using pipecodec::detail::load;
using pipecodec::detail::store;
using pipecodec::detail::add_rn;
using pipecodec::detail::sub_rn;

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

// out[0 .. n) = fp32(a - b) for a[a_off ..] of type A and b[b_off ..] of type B: the codec
// input of EF21 (x - g) and of AQ-SGD's delta rows (a - m).
template <dtype A, dtype B>
inline void sub_span(const void* a, uint64_t a_off, const void* b, uint64_t b_off, uint64_t n, float* out) {
#if defined(PIPECODEC_HOST_AVX512)
  if constexpr (A == dtype::f32 && B == dtype::f16) {  // AQ-SGD's a - m with an fp16 store
    // No NaN lanes to set apart: the subtraction quiets an fp16 NaN however it was widened
    // (the instruction quiets it first, load<f16> keeps it signaling), same bits either way.
    const float* av = static_cast<const float*>(a) + a_off;
    const uint16_t* bv = static_cast<const uint16_t*>(b) + b_off;
    uint64_t i = 0;
    for (; i + 16 <= n; i += 16) {
      const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bv + i));
      _mm512_storeu_ps(out + i, _mm512_sub_ps(_mm512_loadu_ps(av + i), _mm512_cvtph_ps(h)));
    }
    for (; i < n; ++i) out[i] = sub_rn(av[i], load<B>(bv, i));
    return;
  }
#endif
  zip_spans<A, B>(a, a_off, b, b_off, n, [&](uint64_t j, const float* av, const float* bv, uint64_t len) {
    for (uint64_t k = 0; k < len; ++k) out[j + k] = sub_rn(av[k], bv[k]);
  });
}

// state[at .. at + n) = T(fp32(state + d)) for state of type T: the update decode_accumulate
// applies, for d already decoded.
template <dtype T>
inline void accumulate_span(void* state, uint64_t at, const float* d, uint64_t n) {
#if defined(PIPECODEC_HOST_AVX512)
  if constexpr (T == dtype::f16) {  // in one pass, not through fp32 buffers
    // A NaN or Inf in the state makes the sum NaN or Inf: only a NaN sum, which store<f16>
    // narrows differently from the instruction, sends its block to the scalar update.
    uint16_t* sv = static_cast<uint16_t*>(state) + at;
    uint64_t i = 0;
    for (; i + 16 <= n; i += 16) {
      const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sv + i));
      const __m512 r = _mm512_add_ps(_mm512_cvtph_ps(h), _mm512_loadu_ps(d + i));
      if (_mm512_cmp_ps_mask(r, r, _CMP_UNORD_Q) == 0) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(sv + i), _mm512_cvtps_ph(r, _MM_FROUND_TO_NEAREST_INT));
      } else {
        for (uint64_t k = i; k < i + 16; ++k) store<T>(sv, k, add_rn(load<T>(sv, k), d[k]));
      }
    }
    for (; i < n; ++i) store<T>(sv, i, add_rn(load<T>(sv, i), d[i]));
    return;
  }
#endif
  zip_spans<T, dtype::f32>(state, at, d, 0, n, [&](uint64_t j, const float* sv, const float* dv, uint64_t len) {
    float tmp[span_chunk];
    float* r = span_out<T>(state, at + j, tmp);
    for (uint64_t k = 0; k < len; ++k) r[k] = add_rn(sv[k], dv[k]);
    store_span<T>(r, len, state, at + j);
  });
}

}  // namespace pipecodec::host::detail

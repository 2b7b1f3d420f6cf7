// x86 vector versions of the host codec's hottest steps, used where the compiler targets
// them (SSE2 is part of baseline x86-64; AVX2 with -march=native on recent CPUs); every
// other target uses the portable core/ code. Results are identical bit for bit:
// - fp32 group min/max: compilers do not vectorise the finite-only selects of stats_add
//   (the comparisons may trap), but min/max instructions implement them exactly;
// - bit-plane packing of one 32-code chunk: one shift and one movemask per plane, the
//   same planes as core/bitplane.hpp;
// - (AVX2) quantizing a full fp32 chunk in registers, and Philox for 8 blocks at once;
// - (AVX-512 BW+VL+DQ) the same with 16 lanes, bit planes as mask registers (one test or one
//   masked or per plane), and decoding a chunk through a 16-entry table of the group's
//   values for up to 4 bits.
#pragma once

#include "../core/bitplane.hpp"
#include "../core/philox.hpp"
#include "../core/quant_math.hpp"
#include "simd_isa.hpp"

namespace pipecodec::host::detail {

// stats_add over x[0..len): finite values only. min/max return their second operand when
// the first is NaN and on ties, as stats_add keeps the old value, so NaN needs no filter;
// +-Inf would count, so a block whose result reaches one is redone with the finite filter
// (v replaced by the neutral +-Inf unless -FLT_MAX <= v <= FLT_MAX). Which of +0 and -0 a
// tie keeps does not matter: make_params canonicalises zeros.
inline pipecodec::detail::group_stats minmax_f32(const float* x, uint64_t len) {
  using pipecodec::detail::flt_max;
  pipecodec::detail::group_stats s;
  uint64_t i = 0;
#if defined(PIPECODEC_HOST_AVX512)
  const __m512 inf = _mm512_set1_ps(__builtin_inff()), ninf = _mm512_set1_ps(-__builtin_inff());
  __m512 lo = inf, hi = ninf;
  for (; i + 16 <= len; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    lo = _mm512_min_ps(v, lo);
    hi = _mm512_max_ps(v, hi);
  }
  if ((_mm512_cmp_ps_mask(lo, ninf, _CMP_EQ_OQ) | _mm512_cmp_ps_mask(hi, inf, _CMP_EQ_OQ)) != 0) {
    const __m512 lo_ok = _mm512_set1_ps(-flt_max), hi_ok = _mm512_set1_ps(flt_max);
    lo = inf;
    hi = ninf;
    for (uint64_t j = 0; j + 16 <= len; j += 16) {
      const __m512 v = _mm512_loadu_ps(x + j);
      const __mmask16 fin = _mm512_cmp_ps_mask(v, lo_ok, _CMP_GE_OQ) & _mm512_cmp_ps_mask(v, hi_ok, _CMP_LE_OQ);
      lo = _mm512_mask_min_ps(lo, fin, v, lo);
      hi = _mm512_mask_max_ps(hi, fin, v, hi);
    }
  }
  s.lo = _mm512_reduce_min_ps(lo);  // lanes hold finite values or the neutral +-Inf
  s.hi = _mm512_reduce_max_ps(hi);
#elif defined(__AVX2__)
  const __m256 inf = _mm256_set1_ps(__builtin_inff()), ninf = _mm256_set1_ps(-__builtin_inff());
  __m256 lo = inf, hi = ninf;
  for (; i + 8 <= len; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    lo = _mm256_min_ps(v, lo);
    hi = _mm256_max_ps(v, hi);
  }
  const __m256 reached = _mm256_or_ps(_mm256_cmp_ps(lo, ninf, _CMP_EQ_OQ), _mm256_cmp_ps(hi, inf, _CMP_EQ_OQ));
  if (_mm256_movemask_ps(reached) != 0) {  // an infinity: again, finite values only
    const __m256 lo_ok = _mm256_set1_ps(-flt_max), hi_ok = _mm256_set1_ps(flt_max);
    lo = inf;
    hi = ninf;
    for (uint64_t j = 0; j + 8 <= len; j += 8) {
      const __m256 v = _mm256_loadu_ps(x + j);
      const __m256 fin = _mm256_and_ps(_mm256_cmp_ps(v, lo_ok, _CMP_GE_OQ), _mm256_cmp_ps(v, hi_ok, _CMP_LE_OQ));
      lo = _mm256_min_ps(_mm256_blendv_ps(inf, v, fin), lo);
      hi = _mm256_max_ps(_mm256_blendv_ps(ninf, v, fin), hi);
    }
  }
  // Lanes fold pairwise; the lanes hold finite values or the neutral +-Inf, never NaN.
  __m128 l4 = _mm_min_ps(_mm256_castps256_ps128(lo), _mm256_extractf128_ps(lo, 1));
  __m128 h4 = _mm_max_ps(_mm256_castps256_ps128(hi), _mm256_extractf128_ps(hi, 1));
  l4 = _mm_min_ps(l4, _mm_movehl_ps(l4, l4));
  h4 = _mm_max_ps(h4, _mm_movehl_ps(h4, h4));
  s.lo = _mm_cvtss_f32(_mm_min_ss(l4, _mm_shuffle_ps(l4, l4, 1)));
  s.hi = _mm_cvtss_f32(_mm_max_ss(h4, _mm_shuffle_ps(h4, h4, 1)));
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
#if defined(__AVX2__) && !defined(PIPECODEC_HOST_AVX512)
template <uint32_t Bits>
inline void planes_from_bytes(__m256i v, void* planes) {
  for (uint32_t j = 0; j < Bits; ++j) {
    const uint32_t plane = uint32_t(_mm256_movemask_epi8(_mm256_sll_epi16(v, _mm_cvtsi32_si128(int(7 - j)))));
    memcpy(static_cast<uint8_t*>(planes) + 4 * j, &plane, 4);
  }
}
#endif

#if defined(PIPECODEC_HOST_GFNI)
// A chunk's Bits planes (4 bytes each) in the low dwords of a vector, the rest zero. Plain
// loads and stores where the planes fill 8, 16 or 32 bytes: the masked forms stalled the
// 4-bit decode (bench/RESULTS.md, "A host with twice the copy speed").
template <uint32_t Bits>
inline __m256i load_planes(const void* src) {
  if constexpr (Bits == 2) return _mm256_zextsi128_si256(_mm_loadl_epi64(static_cast<const __m128i*>(src)));
  if constexpr (Bits == 4) return _mm256_zextsi128_si256(_mm_loadu_si128(static_cast<const __m128i*>(src)));
  if constexpr (Bits == 8) return _mm256_loadu_si256(static_cast<const __m256i*>(src));
  return _mm256_maskz_loadu_epi32(__mmask8((1u << Bits) - 1u), src);
}

template <uint32_t Bits>
inline void store_planes(void* dst, __m256i p) {
  if constexpr (Bits == 2) _mm_storel_epi64(static_cast<__m128i*>(dst), _mm256_castsi256_si128(p));
  else if constexpr (Bits == 4) _mm_storeu_si128(static_cast<__m128i*>(dst), _mm256_castsi256_si128(p));
  else if constexpr (Bits == 8) _mm256_storeu_si256(static_cast<__m256i*>(dst), p);
  else _mm256_mask_storeu_epi32(dst, __mmask8((1u << Bits) - 1u), p);
}

// An 8x8 bit transpose per 8 codes: a GF(2) affine step with the codes (byte-reversed) as the
// matrix and byte j = 2^j as the vectors turns qword k into bit j of codes 8k..8k+7 in byte j;
// one byte permute then gathers byte j of the four qwords into plane j.
template <uint32_t Bits>
inline void planes_from_bytes(__m256i v, void* planes) {
  const __m256i reversed = _mm256_shuffle_epi8(v, _mm256_setr_epi8(7,6,5,4,3,2,1,0,15,14,13,12,11,10,9,8,7,6,5,4,3,2,1,0,15,14,13,12,11,10,9,8));
  const __m256i t = _mm256_gf2p8affine_epi64_epi8(_mm256_set1_epi64x(int64_t(0x8040201008040201ull)), reversed, 0);
  const __m256i p = _mm256_permutexvar_epi8(_mm256_setr_epi8(0,8,16,24,1,9,17,25,2,10,18,26,3,11,19,27,4,12,20,28,5,13,21,29,6,14,22,30,7,15,23,31), t);
  store_planes<Bits>(planes, p);
}
#elif defined(PIPECODEC_HOST_AVX512)
template <uint32_t Bits>
inline void planes_from_bytes(__m256i v, void* planes) {
  for (uint32_t j = 0; j < Bits; ++j) {
    const uint32_t plane = _cvtmask32_u32(_mm256_movepi8_mask(_mm256_slli_epi16(v, int(7 - j))));
    memcpy(static_cast<uint8_t*>(planes) + 4 * j, &plane, 4);
  }
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

template <uint32_t Bits>
struct code_values;

#if defined(PIPECODEC_HOST_AVX512)
// dequantize(code, s, o, z) of 16 code lanes: a lookup in the group's 16 values for up to
// 4 bits (the permute reads the low 4 bits of each lane), else the same operations in order.
template <uint32_t Bits>
struct code_values {
  __m512 scale, offset, zero, table;
  code_values(float s, float o, float z)
      : scale(_mm512_set1_ps(s)), offset(_mm512_set1_ps(o)), zero(_mm512_set1_ps(z)),
        table(values(_mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15))) {}
  __m512 values(__m512 codes) const { return _mm512_add_ps(offset, _mm512_mul_ps(_mm512_sub_ps(codes, zero), scale)); }
  // codes: the code in the low byte of each lane, other bits anything.
  __m512 operator()(__m512i codes) const {
    if constexpr (Bits <= 4) return _mm512_permutexvar_ps(codes, table);
    return values(_mm512_cvtepi32_ps(_mm512_and_si512(codes, _mm512_set1_epi32(0xFF))));
  }
};
#endif

#if defined(__AVX2__)
// quantize_nearest / quantize_stochastic of 32 fp32 values and their bit planes, all in
// registers. Same operations in the same order: (x - o) * pre * inv, clamp (max/min return
// the bound for NaN and on ties, as clamp_code does), + z, then round.
// u: the 32 uniforms of the chunk (stochastic only); planes: where the Bits planes go (4 bytes each).
// With Decode (AVX-512 only), decoded[0..32) receives the codes' values (what decode_group
// gives: `values` holds the group's stored scale and offset); it may be x itself.
template <uint32_t Bits, rounding R, bool Decode = false>
inline void quantize_pack_f32(const float* x, const pipecodec::detail::group_params& p,
                              const pipecodec::detail::quant_consts& c, const float* u, void* planes,
                              const code_values<Bits>* values = nullptr, float* decoded = nullptr) {
#if defined(PIPECODEC_HOST_AVX512)
  const __m512 off = _mm512_set1_ps(p.offset), pre = _mm512_set1_ps(p.pre), inv = _mm512_set1_ps(p.inv);
  const __m512 lo = _mm512_set1_ps(c.lo), hi = _mm512_set1_ps(c.hi), zero = _mm512_set1_ps(c.zero);
  __m128i b[2];
  for (uint32_t k = 0; k < 2; ++k) {
    __m512 y = _mm512_mul_ps(_mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(x + 16 * k), off), pre), inv);
    y = _mm512_add_ps(_mm512_min_ps(_mm512_max_ps(y, lo), hi), zero);
    __m512i q;
    if constexpr (R == rounding::nearest) {
      q = _mm512_castps_si512(_mm512_add_ps(y, _mm512_set1_ps(12582912.0F)));
    } else {
      const __m512i t = _mm512_cvttps_epi32(y);
      const __m512 frac = _mm512_sub_ps(y, _mm512_cvtepi32_ps(t));
      q = _mm512_mask_add_epi32(t, _mm512_cmp_ps_mask(_mm512_loadu_ps(u + 16 * k), frac, _CMP_LT_OQ), t,
                                _mm512_set1_epi32(1));
    }
    b[k] = _mm512_cvtepi32_epi8(q);  // the low byte of each lane: the code
    if constexpr (Decode) _mm512_storeu_ps(decoded + 16 * k, (*values)(q));
  }
  planes_from_bytes<Bits>(_mm256_inserti128_si256(_mm256_castsi128_si256(b[0]), b[1], 1), planes);
#else
  static_assert(!Decode, "decoded values need AVX-512");
  (void)values;
  (void)decoded;
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
#endif
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

#if defined(PIPECODEC_HOST_GFNI)
// Dequantized values of one chunk (planes at src) into v[0..32): the inverse transpose
// (planes_from_bytes), then dequantize's operations, or for up to 4 bits a lookup in the
// group's 16 values computed the same way.
template <uint32_t Bits>
struct chunk_values : code_values<Bits> {
  using code_values<Bits>::code_values;
  void operator()(const uint8_t* src, float* v) const {
    const __m256i p = load_planes<Bits>(src);
    // Qword k, byte 7 - j: byte k of plane j, so the affine step's row i is plane i.
    const __m256i t = _mm256_permutexvar_epi8(_mm256_setr_epi8(28,24,20,16,12,8,4,0,29,25,21,17,13,9,5,1,30,26,22,18,14,10,6,2,31,27,23,19,15,11,7,3), p);
    const __m256i codes = _mm256_gf2p8affine_epi64_epi8(_mm256_set1_epi64x(int64_t(0x8040201008040201ull)), t, 0);
    for (uint32_t h = 0; h < 2; ++h) {
      const __m512i c = _mm512_cvtepu8_epi32(h == 0 ? _mm256_castsi256_si128(codes) : _mm256_extracti128_si256(codes, 1));
      _mm512_storeu_ps(v + 16 * h, code_values<Bits>::operator()(c));
    }
  }
};
#endif

#if defined(__AVX2__)
// High 32 bits of the 32x32-bit products a * m, lane-wise (m: the same in every lane).
inline __m256i mulhi_epu32(__m256i a, __m256i m) {
  const __m256i even = _mm256_mul_epu32(a, m);
  const __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), m);
#if defined(PIPECODEC_HOST_AVX512)
  return _mm256_mask_shuffle_epi32(odd, 0x55, even, _MM_PERM_CDAB);  // one in-lane shuffle for shift + blend
#else
  return _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
#endif
}

// a ^ b ^ c
inline __m256i xor3(__m256i a, __m256i b, __m256i c) {
#if defined(PIPECODEC_HOST_AVX512)
  return _mm256_ternarylogic_epi32(a, b, c, 0x96);
#else
  return _mm256_xor_si256(_mm256_xor_si256(a, b), c);
#endif
}

// One Philox round on 8 blocks (lane l: block l), the products as philox4x32_10 takes them.
struct philox_x8 {
  __m256i c0, c1, c2, c3;
  void round(__m256i m0, __m256i m1, __m256i key0, __m256i key1) {
    const __m256i n0 = xor3(mulhi_epu32(c2, m1), c1, key0);
    const __m256i n2 = xor3(mulhi_epu32(c0, m0), c3, key1);
    c1 = _mm256_mullo_epi32(c2, m1);
    c3 = _mm256_mullo_epi32(c0, m0);
    c0 = n0;
    c2 = n2;
  }
};

// to_unit_float of the words of blocks b0 .. b0 + 8 Sets - 1 of random_block(key, stream, .)
// in element order (u[4b + k] = word k of block b): philox4x32_10 with
// lane l of set s = block 8s + l. Several sets interleave to hide the multiply latency.
// Where the blocks share their high counter word (every call whose blocks do not cross a
// multiple of 2^32), round 1's product of c2 (the stream) and round 2's product of c0 (by
// then a function of key, stream and that word) are the same in every lane: each is taken
// once in scalar, 2 of the 20 vector products fewer.
template <uint32_t Sets>
inline void uniforms_avx2(uint64_t key, uint32_t stream, uint64_t b0, float* u) {
  constexpr uint32_t M0 = 0xD2511F53u, M1 = 0xCD9E8D57u;
  const __m256i m0 = _mm256_set1_epi32(int(M0)), m1 = _mm256_set1_epi32(int(M1));
  philox_x8 x[Sets];
  for (uint32_t s = 0; s < Sets; ++s) {
    alignas(32) uint32_t lo[8], hi[8];
    for (uint32_t b = 0; b < 8; ++b) {
      lo[b] = uint32_t(b0 + 8 * s + b);
      hi[b] = uint32_t((b0 + 8 * s + b) >> 32);
    }
    x[s] = {_mm256_load_si256(reinterpret_cast<const __m256i*>(lo)),
            _mm256_load_si256(reinterpret_cast<const __m256i*>(hi)), _mm256_set1_epi32(int(stream)),
            _mm256_setzero_si256()};
  }
  uint32_t k0 = uint32_t(key), k1 = uint32_t(key >> 32);
  const auto next_key = [&] {
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  };
  const auto general_round = [&] {
    const __m256i key0 = _mm256_set1_epi32(int(k0)), key1 = _mm256_set1_epi32(int(k1));
    for (uint32_t s = 0; s < Sets; ++s) x[s].round(m0, m1, key0, key1);
    next_key();
  };
  if ((b0 >> 32) == ((b0 + 8 * Sets - 1) >> 32)) {
    // Round 1 (c1 = the shared high word, c3 = 0) and round 2 (c0 = round 1's n0).
    const uint64_t p1 = uint64_t(M1) * stream;
    const uint32_t c0 = uint32_t(p1 >> 32) ^ uint32_t(b0 >> 32) ^ k0;
    const uint64_t p0 = uint64_t(M0) * c0;
    const __m256i r1_key1 = _mm256_set1_epi32(int(k1)), r1_c1 = _mm256_set1_epi32(int(uint32_t(p1)));
    next_key();
    const __m256i r2_key0 = _mm256_set1_epi32(int(k0)), r2_hi0 = _mm256_set1_epi32(int(uint32_t(p0 >> 32) ^ k1));
    for (uint32_t s = 0; s < Sets; ++s) {
      const __m256i c2 = _mm256_xor_si256(mulhi_epu32(x[s].c0, m0), r1_key1), c3 = _mm256_mullo_epi32(x[s].c0, m0);
      x[s] = {xor3(mulhi_epu32(c2, m1), r1_c1, r2_key0), _mm256_mullo_epi32(c2, m1),
              _mm256_xor_si256(c3, r2_hi0), _mm256_set1_epi32(int(uint32_t(p0)))};
    }
    next_key();
  } else {
    general_round();
    general_round();
  }
#if defined(__GNUC__) && !defined(__CUDACC__)  // GCC leaves it rolled otherwise, 4 % slower
#pragma GCC unroll 8
#endif
  for (int round = 2; round < 10; ++round) general_round();
  // Lane b of c_k is word k of block b. 4x4 transposes inside each 128-bit half give one
  // block per half (e01: blocks 0 | 4, ...); the halves regroup into elements 0-7, ..., 24-31.
  const __m256 unit = _mm256_set1_ps(5.9604644775390625e-8F);
  for (uint32_t s = 0; s < Sets; ++s) {
    const __m256i a = _mm256_unpacklo_epi32(x[s].c0, x[s].c1), b = _mm256_unpacklo_epi32(x[s].c2, x[s].c3);
    const __m256i c = _mm256_unpackhi_epi32(x[s].c0, x[s].c1), d = _mm256_unpackhi_epi32(x[s].c2, x[s].c3);
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

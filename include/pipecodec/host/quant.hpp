// Host backend of k-bit quantization: one pass per group for statistics, one to quantize
// and pack. Loops work on fixed 32-lane chunks so compilers vectorise them at any -march.
#pragma once

#include <type_traits>

#include "../core/dispatch.hpp"
#include "../core/draw.hpp"
#include "../core/quant_format.hpp"
#include "../core/quant_math.hpp"
#include "chunk_simd.hpp"
#include "params_simd.hpp"
#include "prefetch.hpp"
#include "buffer_checks.hpp"
#include "rotation.hpp"

namespace pipecodec::host::detail {

using namespace pipecodec::detail;

template <dtype In>
inline group_stats group_statistics(const void* x, uint64_t begin, uint64_t len) {
  if constexpr (In == dtype::f32) {
    return minmax_f32(static_cast<const float*>(x) + begin, len);
  } else {
    group_stats s;
    for (uint64_t i = 0; i < len; ++i) stats_add(s, load<In>(x, begin + i));
    return s;
  }
}

// Outlier keeping (core/outliers.hpp): group g's best-ranked elements into `top`, sorted
// by position, and the statistics of the others. The group goes in blocks of up to 512 keys
// (signed, so a taken key can be marked -1 below every real one): up to `count` passes per
// block each take the block's largest key, the first index holding it (the ranking's tie
// rule), until the block has nothing that beats the list's last entry. The passes are plain
// max and compare loops, which compilers vectorize. The kept elements are then masked out of
// the min/max pass as NaN, which group statistics ignore.
template <dtype In>
inline group_stats select_outliers(const void* x, uint64_t x0, const quant_layout& L, uint64_t g, top_list& top) {
  const uint64_t begin = L.group_begin(g) - x0, len = L.group_size(g);
  const uint32_t count = outlier_count(L, g);
  constexpr uint32_t block = 512;
  for (uint64_t b = 0; b < len; b += block) {
    const uint32_t n = len - b < block ? uint32_t(len - b) : block;
    int32_t keys[block];
    for (uint32_t l = 0; l < n; ++l) keys[l] = int32_t(outlier_key(load<In>(x, begin + b + l)));
    for (uint32_t r = 0; r < count; ++r) {
      int32_t most = -1;
      for (uint32_t l = 0; l < n; ++l) most = keys[l] > most ? keys[l] : most;
      if (most < 0 || (top.count == count && uint32_t(most) <= top.key[count - 1])) break;
      uint32_t at = 0;
      while (keys[at] != most) ++at;
      top.offer(uint32_t(most), b + at, count);
      keys[at] = -1;
    }
  }
  for (uint32_t j = 1; j < count; ++j)  // by position
    for (uint32_t k = j; k > 0 && top.index[k] < top.index[k - 1]; --k) {
      const uint64_t i = top.index[k];
      top.index[k] = top.index[k - 1];
      top.index[k - 1] = i;
    }
  group_stats rest;
  uint32_t j = 0;  // next kept element
  for (uint64_t e = 0; e < len && count < len; e += 32) {
    const uint32_t n = len - e < 32 ? uint32_t(len - e) : 32u;
    float v[32];
    for (uint32_t l = 0; l < n; ++l) v[l] = load<In>(x, begin + e + l);
    for (; j < count && top.index[j] < e + n; ++j) v[top.index[j] - e] = __builtin_nanf("");
    rest = stats_merge(rest, minmax_f32(v, n));
  }
  return rest;
}

// Group g's entries, once its parameters are known (unused entries zero).
template <dtype In>
inline void store_outliers(const void* x, uint64_t x0, const quant_layout& L, uint64_t g, const top_list& top,
                           const group_params& p, const quant_consts& c, uint8_t* payload) {
  const uint64_t begin = L.group_begin(g) - x0;
  for (uint32_t j = 0; j < L.outliers; ++j) {
    if (j < top.count) put_outlier(payload, L, g, j, top.index[j], kept_value(load<In>(x, begin + top.index[j]), p, c));
    else put_outlier(payload, L, g, j, 0, 0.0F);
  }
}

// Uniforms in [0, 1) for elements i0 .. i0+31 of a run's draws. The block loop has a fixed
// trip count so compilers run the Philox blocks side by side in vector lanes.
inline void uniforms32(const draw& d, uint64_t i0, float* u) {
  const uint64_t w0 = d.first + i0;
#if defined(__AVX2__)
  if ((w0 & 3u) == 0) {
    uniforms_avx2<1>(d.key, d.stream, w0 >> 2, u);
    return;
  }
#endif
  uint32_t words[36];
  const uint64_t b0 = w0 >> 2;
  const uint32_t off = uint32_t(w0 & 3u);
  for (uint32_t b = 0; b < 8; ++b) {
    const philox_out r = random_block(d.key, d.stream, b0 + b);
    for (uint32_t k = 0; k < 4; ++k) words[4 * b + k] = r.v[k];
  }
  if (off != 0) {  // a chunk that starts mid-block (row groups) needs a ninth block
    const philox_out r = random_block(d.key, d.stream, b0 + 8);
    for (uint32_t k = 0; k < 4; ++k) words[32 + k] = r.v[k];
  }
  for (uint32_t l = 0; l < 32; ++l) u[l] = to_unit_float(words[off + l]);
}

// Codes of one chunk of 32 values (i0: index of v[0] in the run `d` draws for).
template <uint32_t Bits, rounding R>
inline void quantize_chunk(const float (&v)[32], const group_params& p, const quant_consts& c,
                           const draw& d, uint64_t i0, uint8_t (&codes)[32]) {
  if constexpr (R == rounding::nearest) {
    for (uint32_t l = 0; l < 32; ++l) codes[l] = uint8_t(quantize_nearest(v[l], p, c));
  } else {
    float u[32];
    uniforms32(d, i0, u);
    for (uint32_t l = 0; l < 32; ++l) codes[l] = uint8_t(quantize_stochastic(v[l], p, c, u[l]));
  }
}

// Group g's statistics and stored parameters (the outlier entries too, when kept).
// Flattened (GCC, Clang): make_params and its conversions inline instead of staying calls.
template <dtype In, uint32_t Bits>
#if defined(__GNUC__)
__attribute__((flatten))
#endif
inline group_params group_setup(const void* x, uint64_t x0, const quant_params& q, const quant_layout& L,
                                uint64_t g, uint8_t* payload) {
  const uint64_t begin = L.group_begin(g) - x0, len = L.group_size(g);
  top_list top;
  const group_stats st = L.outliers != 0 ? select_outliers<In>(x, x0, L, g, top) : group_statistics<In>(x, begin, len);
  const group_params p = make_params(st, q);
  store_group(payload, L, g, p);
  if (L.outliers != 0) store_outliers<In>(x, x0, L, g, top, p, consts_for(Bits, q.scale), payload);
  return p;
}

// Group g's code planes, once its parameters are known. With Decode (AVX-512, fp32 input),
// `decoded` (the tensor from element x0 on, as x; it may be x) receives the values decode
// gives for the group: p's scale and offset are the stored ones bit for bit (make_params
// rounds them onto the stored grid and never gives -0). `pf`, where given, steps once a chunk.
template <dtype In, uint32_t Bits, rounding R, bool Decode = false>
inline void encode_group_codes(const void* x, uint64_t x0, const quant_params& q, const quant_layout& L,
                               uint64_t g, const group_params& p, const randomness& rnd, uint8_t* payload,
                               float* decoded = nullptr, line_prefetcher* pf = nullptr) {
  const uint64_t len = L.group_size(g);
  const draw d = R == rounding::stochastic ? rounding_draw(rnd, q.rng, L.cols, L.group_begin(g)) : draw{};
  const uint64_t begin = L.group_begin(g) - x0;  // in x
  const quant_consts c = consts_for(Bits, q.scale);
  uint8_t* dst = payload + L.codes_offset + L.group_chunk(g) * Bits * 4;
#if defined(__AVX2__)
  float u[128];  // uniforms of elements u_begin .. u_end - 1 of the group
  uint64_t u_begin = 0, u_end = 0;
#endif
#if defined(PIPECODEC_HOST_AVX512)
  struct no_values {
    no_values(float, float, float) {}
  };  // the plain encode keeps its registers
  const std::conditional_t<Decode, code_values<Bits>, no_values> values(p.scale, p.offset, c.zero);
#endif
  for (uint64_t e = 0; e < len; e += 32, dst += Bits * 4) {
    float v[32];
    uint8_t codes[32];
    uint32_t planes[Bits];
    if (pf != nullptr) pf->step();
    if (len - e >= 32) {  // full chunk: branch-free loops the compiler vectorises
#if defined(__AVX2__)
      if constexpr (In == dtype::f32) {
        if constexpr (R == rounding::stochastic) {
          if (e >= u_end) {  // uniforms for 4 chunks at once where possible: 32 blocks interleave
            const bool four = len - e >= 128 && ((d.first + e) & 3u) == 0;
            if (four) uniforms_avx2<4>(d.key, d.stream, (d.first + e) >> 2, u);
            else uniforms32(d, e, u);
            u_begin = e;
            u_end = e + (four ? 128 : 32);
          }
        }
#if defined(PIPECODEC_HOST_AVX512)
        if constexpr (Decode) {
          quantize_pack_f32<Bits, R, true>(static_cast<const float*>(x) + begin + e, p, c, u + (e - u_begin), dst,
                                           &values, decoded + begin + e);
          continue;
        }
#endif
        quantize_pack_f32<Bits, R>(static_cast<const float*>(x) + begin + e, p, c, u + (e - u_begin), dst);
        continue;
      } else  // an else, not code after the continue: nvcc warns of an unreachable loop
#endif
      {
        for (uint32_t l = 0; l < 32; ++l) v[l] = load<In>(x, begin + e + l);
        quantize_chunk<Bits, R>(v, p, c, d, e, codes);
      }
    } else {
      const uint32_t cnt = uint32_t(len - e);
      for (uint32_t l = 0; l < 32; ++l) v[l] = l < cnt ? load<In>(x, begin + e + l) : 0.0F;
      quantize_chunk<Bits, R>(v, p, c, d, e, codes);
      for (uint32_t l = cnt; l < 32; ++l) codes[l] = 0;  // padding lanes are zero on the wire
    }
    if constexpr (Decode)
      for (uint32_t l = 0; l < 32 && e + l < len; ++l)
        decoded[begin + e + l] = dequantize(codes[l], p.scale, p.offset, c.zero);
    pack_chunk<Bits>(codes, planes);
    memcpy(dst, planes, sizeof(planes));
  }
}

template <dtype In, uint32_t Bits, bool Decode = false>
inline void encode_codes(const void* x, uint64_t x0, const quant_params& q, const quant_layout& L, uint64_t g,
                         const group_params& p, const randomness& rnd, uint8_t* payload, float* decoded = nullptr,
                         line_prefetcher* pf = nullptr) {
  if (q.round == rounding::nearest)
    encode_group_codes<In, Bits, rounding::nearest, Decode>(x, x0, q, L, g, p, rnd, payload, decoded, pf);
  else
    encode_group_codes<In, Bits, rounding::stochastic, Decode>(x, x0, q, L, g, p, rnd, payload, decoded, pf);
}

#if defined(PIPECODEC_HOST_AVX512)
// Groups g0 .. g0 + m - 1 (m <= 16, no outliers): statistics, parameters of all 16 at once
// (host/params_simd.hpp), the stored scales and offsets, then the codes (with Decode their
// decoded values too, and `pf`'s steps, as encode_group_codes).
template <dtype In, uint32_t Bits, bool Decode = false>
inline void encode_16_groups(const void* x, uint64_t x0, const quant_params& q, const quant_layout& L, uint64_t g0,
                             uint64_t m, const randomness& rnd, uint8_t* payload, float* decoded = nullptr,
                             line_prefetcher* pf = nullptr) {
  alignas(64) float lo[16] = {}, hi[16] = {};
  for (uint64_t k = 0; k < m; ++k) {
    const group_stats st = group_statistics<In>(x, L.group_begin(g0 + k) - x0, L.group_size(g0 + k));
    lo[k] = st.lo;
    hi[k] = st.hi;
  }
  params_x16 P;
  const __mmask16 lanes = __mmask16((1u << m) - 1u);
  const __mmask16 redo = make_params_x16(_mm512_load_ps(lo), _mm512_load_ps(hi), q, P) & lanes;
  uint8_t* sec = payload + L.params_offset;
  if (L.scale_bytes == 4) {
    _mm512_mask_storeu_ps(sec + 4 * g0, lanes, _mm512_load_ps(P.scale));
    if (L.has_offset) _mm512_mask_storeu_ps(sec + 4 * (L.groups + g0), lanes, _mm512_load_ps(P.offset));
  } else {  // values on the fp16 grid: the conversion is exact
    const __m256i s16 = _mm512_cvtps_ph(_mm512_load_ps(P.scale), _MM_FROUND_TO_NEAREST_INT);
    _mm256_mask_storeu_epi16(sec + 2 * g0, lanes, s16);
    if (L.has_offset)
      _mm256_mask_storeu_epi16(sec + 2 * (L.groups + g0), lanes,
                               _mm512_cvtps_ph(_mm512_load_ps(P.offset), _MM_FROUND_TO_NEAREST_INT));
  }
  for (uint64_t k = 0; k < m; ++k) {
    group_params p;
    if (redo >> k & 1u) {
      p = make_params(group_stats{lo[k], hi[k]}, q);
      store_group(payload, L, g0 + k, p);
    } else {
      p.scale = P.scale[k];
      p.offset = P.offset[k];
      p.pre = P.pre[k];
      p.inv = P.inv[k];
    }
    encode_codes<In, Bits, Decode>(x, x0, q, L, g0 + k, p, rnd, payload, decoded, pf);
  }
}
#endif

// The element just past group g1 - 1 (the last group may be short).
inline uint64_t groups_end(const quant_layout& L, uint64_t g1) { return g1 == L.groups ? L.n : L.group_begin(g1); }

// Groups g_begin .. g_end - 1, whose elements x holds from element x0 of the tensor on.
// Groups go in batches, the batch's parameters first, so the divisions and branches of
// make_params for several groups overlap instead of stalling each group's codes. In a large
// tensor the next batch's input is requested while a batch's codes are computed: otherwise
// the statistics pass waits on memory and the codes leave it idle (bench/RESULTS.md, "A host
// with twice the copy speed").
template <dtype In, uint32_t Bits>
inline void encode_groups(const void* x, uint64_t x0, const quant_params& q, const quant_layout& L,
                          uint64_t g_begin, uint64_t g_end, const randomness& rnd, uint8_t* payload) {
  constexpr uint64_t batch = 16;
  const bool prefetch = L.n >= line_prefetcher::min_elements;
  const auto next_batch = [&](uint64_t g0, uint64_t m, line_prefetcher& pf) {
    const uint64_t n0 = g0 + m, n1 = g_end - n0 < batch ? g_end : n0 + batch;
    if (n0 >= g_end) return;
    const uint64_t first = L.group_begin(n0), bytes = dtype_bytes(In);
    pf.add(static_cast<const uint8_t*>(x) + (first - x0) * bytes, (groups_end(L, n1) - first) * bytes);
    pf.pace(m * L.chunks_per_group);
  };
#if defined(PIPECODEC_HOST_AVX512)
  if (L.outliers == 0) {
    for (uint64_t g0 = g_begin; g0 < g_end; g0 += batch) {
      const uint64_t m = g_end - g0 < batch ? g_end - g0 : batch;
      line_prefetcher next;
      if (prefetch) next_batch(g0, m, next);
      encode_16_groups<In, Bits>(x, x0, q, L, g0, m, rnd, payload, nullptr, prefetch ? &next : nullptr);
    }
    return;
  }
#endif
  group_params params[batch];
  for (uint64_t g0 = g_begin; g0 < g_end; g0 += batch) {
    const uint64_t m = g_end - g0 < batch ? g_end - g0 : batch;
    line_prefetcher next;
    if (prefetch) next_batch(g0, m, next);
    for (uint64_t k = 0; k < m; ++k) params[k] = group_setup<In, Bits>(x, x0, q, L, g0 + k, payload);
    for (uint64_t k = 0; k < m; ++k)
      encode_codes<In, Bits>(x, x0, q, L, g0 + k, params[k], rnd, payload, nullptr, prefetch ? &next : nullptr);
  }
}

// load_group of a validated group: its values are finite, so a hardware fp16 conversion,
// where there is one, gives the same floats as the portable one.
inline void load_valid_group(const quant_payload& qp, uint64_t g, float& scale, float& offset) {
#if defined(__F16C__)
  const quant_layout& L = qp.layout;
  if (L.scale_bytes == 2) {
    const uint8_t* sec = qp.bytes + L.params_offset;
    scale = _cvtsh_ss(get_u16(sec + 2 * g));
    offset = L.has_offset ? _cvtsh_ss(get_u16(sec + 2 * (L.groups + g))) : 0.0F;
    if (offset == 0.0F) offset = 0.0F;  // canonical zero
    return;
  }
#endif
  load_group(qp, g, scale, offset);
}

// Group g of a validated payload into out, which holds the tensor from element out0 on.
template <dtype Out, uint32_t Bits, bool Accumulate>
inline void decode_group(const quant_payload& qp, uint64_t g, void* out, uint64_t out0 = 0) {
  const quant_layout& L = qp.layout;
  const uint64_t begin = L.group_begin(g) - out0, len = L.group_size(g);
  float scale, offset;
  load_valid_group(qp, g, scale, offset);
  const float zero = consts_for(Bits, qp.q.scale).zero;
  const uint8_t* src = qp.bytes + L.codes_offset + L.group_chunk(g) * Bits * 4;
  const uint32_t outliers = L.outliers != 0 ? outlier_count(L, g) : 0;
  uint32_t j = 0;  // next outlier entry (sorted by position)
#if defined(PIPECODEC_HOST_GFNI)
  const chunk_values<Bits> values(scale, offset, zero);
#endif
  for (uint64_t e = 0; e < len; e += 32, src += Bits * 4) {
    const uint32_t cnt = len - e < 32 ? uint32_t(len - e) : 32u;
    float v[32];
#if defined(PIPECODEC_HOST_GFNI)
    if constexpr (Out == dtype::f32 && !Accumulate) {  // straight to out: no round trip through v
      if (cnt == 32 && (j == outliers || outlier_position(qp.bytes, L, g, j) >= e + 32)) {
        values(src, static_cast<float*>(out) + begin + e);
        continue;
      }
    }
    values(src, v);
#else
    uint32_t planes[Bits];
    memcpy(planes, src, sizeof(planes));
    uint8_t codes[32];
    unpack_chunk<Bits>(planes, codes);
    for (uint32_t l = 0; l < 32; ++l) v[l] = dequantize(codes[l], scale, offset, zero);
#endif
    for (; j < outliers; ++j) {
      const uint64_t pos = outlier_position(qp.bytes, L, g, j);
      if (pos >= e + 32) break;
      v[pos - e] = outlier_value(qp.bytes, L, g, j);
    }
    if (cnt == 32) {  // a fixed count: vector loads and stores, not a call to memmove
      for (uint32_t l = 0; l < 32; ++l) put_decoded<Out, Accumulate>(out, begin + e + l, v[l]);
    } else {
      for (uint32_t l = 0; l < cnt; ++l) put_decoded<Out, Accumulate>(out, begin + e + l, v[l]);
    }
  }
}

// The checks of a quantization encode of `in`; sets its layout.
inline status check_quant_encode(const quant_params& q, const_tensor_view in, const void* payload, size_t capacity,
                                 const randomness& rnd, quant_layout& L) {
  if (!valid_quant_params(q)) return status::invalid_spec;
  if (!make_quant_layout(q, in.shp, L)) return status::size_overflow;
  const status bad = check_encode_buffers(in, L.n, payload, capacity, L.total);
  return ok(bad) ? check_sample_keyed(q.rng, rnd, in.shp, L.group_len) : bad;
}

// The header and the section paddings. Every scale, every chunk's planes and every outlier
// entry are written by encode_groups; only the paddings remain, and padding is zero on the wire.
inline void write_quant_frame(uint8_t* p, const quant_params& q, const_tensor_view in, const quant_layout& L,
                              uint64_t seed) {
  write_payload_header(p, codec_id::quant, in, L.total, [&](uint8_t* params) {
    write_quant_params(params, q, L.group_len, seed);
  });
  const uint64_t params_end = L.params_offset + L.groups * L.scale_bytes * (L.has_offset ? 2u : 1u);
  memset(p + params_end, 0, L.codes_offset - params_end);
  memset(p + L.codes_end(), 0, L.outliers_offset - L.codes_end());
  memset(p + L.outliers_end(), 0, L.total - L.outliers_end());  // outlier entries: store_outliers
}

// With rotation the rotated tensor goes to the workspace first (workspace_bytes is sized for it).
inline status encode_quant(const quant_params& q, const_tensor_view in, void* payload, size_t capacity,
                           void* workspace, size_t workspace_size, const randomness& rnd, size_t* written) {
  quant_layout L;
  const status bad = check_quant_encode(q, in, payload, capacity, rnd, L);
  if (!ok(bad)) return bad;
  const uint64_t seed = rnd.seed;
  const void* x = in.data;
  dtype type = in.type;
  if (q.rotate != rotation::none && L.n > 0) {
    const quant_workspace W = make_quant_workspace(L);
    const status ws_bad = check_encode_workspace(in, payload, L.total, workspace, workspace_size, W.used);
    if (!ok(ws_bad)) return ws_bad;
    float* y = reinterpret_cast<float*>(align16_ptr(workspace) + W.rotated_offset);
    const rotation_layout R = make_rotation_layout(q.rotate_log2, in.shp);
    (void)dispatch_dtype(in.type, [&](auto tc) {
      rotate_forward<decltype(tc)::value>(in.data, R, seed, y);
      return status::success;
    });
    x = y;
    type = dtype::f32;
  }

  uint8_t* p = static_cast<uint8_t*>(payload);
  write_quant_frame(p, q, in, L, seed);
  const status st = dispatch_dtype_bits(type, q.bits, [&](auto tc, auto bc) {
    constexpr dtype T = decltype(tc)::value;
    constexpr uint32_t B = decltype(bc)::value;
    encode_groups<T, B>(x, 0, q, L, 0, L.groups, rnd, p);
    return status::success;
  });
  if (ok(st) && written) *written = size_t(L.total);
  return st;
}

// Groups per tile of encode_quant_tiled: about 4096 elements (16 KiB of fp32, so the caller's
// operands and the tile stay in the first cache levels), whole batches of 16 groups where
// they fit, at least one group (also the empty group of an empty tensor or row).
inline uint64_t tile_groups(const quant_layout& L) {
  constexpr uint64_t tile = 4096;
  const uint64_t g = L.group_len == 0 || L.group_len >= tile ? 1 : tile / L.group_len;
  return g >= 16 ? g / 16 * 16 : g;
}

// The tile that starts at group g0: its groups g0 .. g1 - 1, elements first .. first + count - 1.
struct tile_span {
  uint64_t g0, g1, first, count;
};

inline tile_span tile_at(const quant_layout& L, uint64_t g0) {
  const uint64_t step = tile_groups(L), g1 = L.groups - g0 < step ? L.groups : g0 + step;
  const uint64_t first = L.group_begin(g0);
  return {g0, g1, first, groups_end(L, g1) - first};
}

// f(g0, g1, first, count) for the tiles of a layout: groups g0 .. g1 - 1, elements first ..
// first + count - 1.
template <class F>
inline void for_each_tile(const quant_layout& L, F&& f) {
  for (uint64_t g0 = 0; g0 < L.groups;) {
    const tile_span t = tile_at(L, g0);
    f(t.g0, t.g1, t.first, t.count);
    g0 = t.g1;
  }
}

// A quantization encode (no rotation) of an fp32 tensor that the caller produces a tile of
// whole groups at a time, for the stateful sender steps (host/state_common.hpp): they would
// otherwise write their codec input to memory, encode it, decode the payload and update their
// state in four passes over the tensor. fill(first, count, buf) writes elements first ..
// first + count - 1 of the input to buf[0 .. count); once they are encoded, update(first,
// count, buf) receives their decoded values (what decode gives) in buf. reads(first, count,
// pf) adds to pf the memory fill(first, count, .) will read: the next tile's, requested
// while the current one is encoded. buf has room for the whole tensor of shape shp (a tile
// uses its start). The payload is the one encode_quant writes for the same input.
template <class Fill, class Update, class Reads>
inline status encode_quant_tiled(const quant_params& q, const shape& shp, float* buf, Fill&& fill, Update&& update,
                                 Reads&& reads, void* payload, size_t capacity, const randomness& rnd,
                                 size_t* written) {
  if (q.rotate != rotation::none) return status::invalid_argument;
  const const_tensor_view in(buf, dtype::f32, shp);
  quant_layout L;
  status st = check_quant_encode(q, in, payload, capacity, rnd, L);
  if (!ok(st)) return st;
  uint8_t* p = static_cast<uint8_t*>(payload);
  write_quant_frame(p, q, in, L, rnd.seed);
  quant_payload qp;
  st = parse_quant_payload(p, L.total, qp);
  if (!ok(st)) return st;
  st = dispatch_bits(q.bits, [&](auto bc) {
    constexpr uint32_t B = decltype(bc)::value;
    for_each_tile(L, [&](uint64_t g0, uint64_t g1, uint64_t first, uint64_t count) {
      fill(first, count, buf);
      line_prefetcher next_reads;
      line_prefetcher* pf = L.n >= line_prefetcher::min_elements && g1 < L.groups ? &next_reads : nullptr;
      if (pf != nullptr) {
        const tile_span next = tile_at(L, g1);
        reads(next.first, next.count, *pf);
      }
#if defined(PIPECODEC_HOST_AVX512)
      if (L.outliers == 0) {  // the codes' values replace the tile as they are encoded
        next_reads.pace((g1 - g0) * L.chunks_per_group);
        for (uint64_t g = g0; g < g1; g += 16)
          encode_16_groups<dtype::f32, B, true>(buf, first, q, L, g, g1 - g < 16 ? g1 - g : 16, rnd, p, buf, pf);
        update(first, count, static_cast<const float*>(buf));
        return;
      }
#endif
      encode_groups<dtype::f32, B>(buf, first, q, L, g0, g1, rnd, p);
      next_reads.pace(g1 - g0);  // a step a group while the tile is decoded
      for (uint64_t g = g0; g < g1; ++g) {
        if (pf != nullptr) pf->step();
        decode_group<dtype::f32, B, false>(qp, g, buf, first);
      }
      update(first, count, static_cast<const float*>(buf));
    });
    return status::success;
  });
  if (ok(st) && written) *written = size_t(L.total);
  return st;
}

// Validates the whole payload (header, paddings, every group's stored fields) for decoding
// into `out`, before any output is written.
inline status check_quant_payload(const void* payload, size_t len, tensor_view out, quant_payload& qp) {
  status st = parse_quant_payload(payload, len, qp);
  if (!ok(st)) return st;
  st = check_decode_output(qp.hdr, qp.layout.n, out, payload);
  if (!ok(st)) return st;
  if (!quant_padding_zero(qp)) return status::corrupt_payload;
  uint64_t g = 0;
#if defined(PIPECODEC_HOST_AVX512)
  if (qp.layout.outliers == 0 && qp.q.rotate == rotation::none)
    while (g + 16 <= qp.layout.groups && stored_groups_valid_x16(qp, g)) g += 16;
#endif
  for (; g < qp.layout.groups; ++g)
    if (!valid_stored_group(qp, g)) return status::corrupt_payload;
  return status::success;
}

struct no_tile_hook {
  void operator()(uint64_t, uint64_t) const {}
};

struct no_tile_reads {
  void operator()(uint64_t, uint64_t, line_prefetcher&) const {}
};

// Decodes (Accumulate: adds) the payload into `out` a tile of whole groups at a time, and
// hands each tile to after(first, count) while it is in cache: the EF21 receiver copies its
// state out there, the AQ-SGD receiver applies the tile to its store. With Reuse every tile
// is written to the start of out (whose room is still the whole tensor's), so the decoded
// values never leave the cache; without, element i goes to out[i]. reads(first, count, pf)
// adds to pf the memory after(first, count) will read that no stream leads the hardware
// prefetcher to (the AQ-SGD store's rows, at their slots): the next tile's, requested while
// the current one is decoded. A rotated payload decodes whole, as one tile. The whole
// payload is validated first: a rejected one leaves `out` untouched, which accumulating
// callers rely on.
template <bool Accumulate, bool Reuse = false, class After = no_tile_hook, class Reads = no_tile_reads>
inline status decode_quant(const void* payload, size_t len, tensor_view out, After&& after = {},
                           Reads&& reads = {}) {
  quant_payload qp;
  const status st = check_quant_payload(payload, len, out, qp);
  if (!ok(st)) return st;
  const quant_layout& L = qp.layout;
  return dispatch_dtype_bits(out.type, qp.q.bits, [&](auto tc, auto bc) {
    constexpr dtype T = decltype(tc)::value;
    constexpr uint32_t B = decltype(bc)::value;
    if (qp.q.rotate != rotation::none) {
      decode_rotated<T, B, Accumulate>(qp, out.data);
      after(uint64_t(0), L.n);
      return status::success;
    }
    const bool prefetch = L.n >= line_prefetcher::min_elements;
    for_each_tile(L, [&](uint64_t g0, uint64_t g1, uint64_t first, uint64_t count) {
      line_prefetcher next_reads;
      if (prefetch && g1 < L.groups) {
        const tile_span next = tile_at(L, g1);
        reads(next.first, next.count, next_reads);
        next_reads.pace(g1 - g0);
      }
      for (uint64_t g = g0; g < g1; ++g) {
        next_reads.step();
        decode_group<T, B, Accumulate>(qp, g, out.data, Reuse ? first : 0);
      }
      after(first, count);
    });
    return status::success;
  });
}

}  // namespace pipecodec::host::detail

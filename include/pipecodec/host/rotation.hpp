// Host side of quant's Hadamard rotation (core/hadamard.hpp): the forward rotation of the
// input into an fp32 scratch before quantization, and a decoder that dequantizes one block
// at a time into a buffer on the stack and rotates it back (no workspace needed to decode).
#pragma once

#include "../core/hadamard.hpp"
#include "../core/quant_format.hpp"
#include "chunk_simd.hpp"

namespace pipecodec::host::detail {

using namespace pipecodec::detail;

// Sign bits of columns c0 .. c0 + len - 1 (one Philox block per 128 columns).
inline void column_signs(uint64_t seed, uint64_t c0, uint32_t len, uint32_t* bits) {
  philox_out r{};
  for (uint32_t j = 0; j < len; ++j) {
    const uint64_t c = c0 + j;
    if (j == 0 || (c & 127u) == 0) r = random_block(seed, stream_rotation, c >> 7);
    bits[j] = (r.v[(c >> 5) & 3u] >> (c & 31u)) & 1u;
  }
}

// y = rotation of x (dtype In, rows x cols as R describes), in fp32.
template <dtype In>
inline void rotate_forward(const void* x, const rotation_layout& R, uint64_t seed, float* y) {
  uint32_t signs[1u << max_rotate_log2];
  const float factor = rotation_factor(R.log2, false), limit = rotated_limit(R.log2);
  for (uint64_t b = 0; b < R.blocks(); ++b) {
    const uint64_t begin = R.block_begin(b);
    column_signs(seed, R.first_column(b), R.block, signs);
    float* v = y + begin;
    for (uint32_t k = 0; k < R.block; ++k) v[k] = flip_sign(load<In>(x, begin + k), signs[k]);
    hadamard_inplace(v, R.log2);
    for (uint32_t k = 0; k < R.block; ++k) v[k] = saturate_rotated(mul_rn(v[k], factor), limit);
  }
  for (uint64_t r = 0; r < R.rows && R.tail > 0; ++r) {
    const uint64_t begin = R.tail_begin(r);
    for (uint64_t k = 0; k < R.tail; ++k) y[begin + k] = saturate_rotated(load<In>(x, begin + k), limit);
  }
}

// Decoded values (before the inverse rotation) of elements begin .. begin + len - 1.
template <uint32_t Bits>
inline void dequantize_range(const quant_payload& qp, uint64_t begin, uint64_t len, float* dst) {
  const quant_layout& L = qp.layout;
  const float zero = consts_for(Bits, qp.q.scale).zero;
  for (uint64_t i = begin, end = begin + len; i < end;) {
    const uint64_t g = i / L.group_len, o = i - g * L.group_len;
    const uint32_t lane = uint32_t(o % 32);
    uint64_t cnt = 32 - lane;
    if (cnt > end - i) cnt = end - i;
    if (cnt > L.group_size(g) - o) cnt = L.group_size(g) - o;
    float scale, offset;
    load_group(qp, g, scale, offset);
    uint32_t planes[Bits];
    memcpy(planes, qp.bytes + L.codes_offset + (L.group_chunk(g) + o / 32) * Bits * 4, sizeof(planes));
    uint8_t codes[32];
    unpack_chunk<Bits>(planes, codes);
    for (uint64_t l = 0; l < cnt; ++l) dst[i - begin + l] = dequantize(codes[lane + l], scale, offset, zero);
    i += cnt;
  }
}

template <dtype Out, bool Accumulate>
inline void put_decoded(void* out, uint64_t i, float v) {
  if constexpr (Accumulate) store<Out>(out, i, add_rn(load<Out>(out, i), v));
  else store<Out>(out, i, v);
}

// Decodes a validated rotated payload into out: each block is dequantized, rotated back and
// stored; the tails of the rows are stored as decoded.
template <dtype Out, uint32_t Bits, bool Accumulate>
inline void decode_rotated(const quant_payload& qp, void* out) {
  const rotation_layout R = make_rotation_layout(qp.q.rotate_log2, qp.hdr.shp);
  const float factor = rotation_factor(R.log2, true);
  float v[1u << max_rotate_log2];
  uint32_t signs[1u << max_rotate_log2];
  for (uint64_t b = 0; b < R.blocks(); ++b) {
    const uint64_t begin = R.block_begin(b);
    dequantize_range<Bits>(qp, begin, R.block, v);
    hadamard_inplace(v, R.log2);
    column_signs(qp.seed, R.first_column(b), R.block, signs);
    for (uint32_t k = 0; k < R.block; ++k)
      put_decoded<Out, Accumulate>(out, begin + k, flip_sign(mul_rn(v[k], factor), signs[k]));
  }
  for (uint64_t r = 0; r < R.rows && R.tail > 0; ++r) {
    const uint64_t begin = R.tail_begin(r);
    dequantize_range<Bits>(qp, begin, R.tail, v);
    for (uint64_t k = 0; k < R.tail; ++k) put_decoded<Out, Accumulate>(out, begin + k, v[k]);
  }
}

}  // namespace pipecodec::host::detail

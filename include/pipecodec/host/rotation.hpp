// Host side of quant's Hadamard rotation (core/hadamard.hpp): the forward rotation of the
// input into an fp32 scratch before quantization, and a decoder that dequantizes one block
// at a time into a buffer on the stack and rotates it back (no workspace needed to decode).
#pragma once

#include "../core/hadamard.hpp"
#include "../core/quant_format.hpp"
#include "chunk_simd.hpp"

namespace pipecodec::host::detail {

using namespace pipecodec::detail;

// The sign bits of a row's first `cols` columns, packed 32 to a word (bit c of word c / 32),
// for rows of up to row_sign_words * 32 columns; longer rows draw them block by block.
constexpr uint32_t row_sign_words = 4096;

struct row_signs {
  uint32_t words[row_sign_words];
  bool whole_row = false;

  // Words for columns [c0, c0 + len) (len a multiple of 32): the whole row once, or just
  // this block.
  void prepare(uint64_t seed, uint64_t c0, uint64_t len, uint64_t cols) {
    if (whole_row) return;
    whole_row = cols <= uint64_t(row_sign_words) * 32;
    const uint64_t first = whole_row ? 0 : c0, end = whole_row ? cols : c0 + len;
    for (uint64_t c = first; c < end; c += 32)
      words[(c - first) >> 5] = random_block(seed, stream_rotation, c >> 7).v[(c >> 5) & 3u];
  }
  uint32_t bit(uint64_t c0, uint32_t k) const {
    const uint64_t c = whole_row ? c0 + k : k;
    return (words[c >> 5] >> (c & 31u)) & 1u;
  }
};

// y = rotation of x (dtype In, rows x cols as R describes), in fp32.
template <dtype In>
inline void rotate_forward(const void* x, const rotation_layout& R, uint64_t seed, float* y) {
  row_signs signs;
  const float factor = rotation_factor(R.log2, false), limit = rotated_limit(R.log2);
  for (uint64_t b = 0; b < R.blocks(); ++b) {
    const uint64_t begin = R.block_begin(b), c0 = R.first_column(b);
    signs.prepare(seed, c0, R.block, R.cols);
    float* v = y + begin;
    for (uint32_t k = 0; k < R.block; ++k) v[k] = flip_sign(load<In>(x, begin + k), signs.bit(c0, k));
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
  row_signs signs;
  for (uint64_t b = 0; b < R.blocks(); ++b) {
    const uint64_t begin = R.block_begin(b), c0 = R.first_column(b);
    signs.prepare(qp.seed, c0, R.block, R.cols);
    dequantize_range<Bits>(qp, begin, R.block, v);
    hadamard_inplace(v, R.log2);
    for (uint32_t k = 0; k < R.block; ++k) v[k] = flip_sign(mul_rn(v[k], factor), signs.bit(c0, k));
    for (uint32_t k = 0; k < R.block; ++k) put_decoded<Out, Accumulate>(out, begin + k, v[k]);
  }
  for (uint64_t r = 0; r < R.rows && R.tail > 0; ++r) {
    const uint64_t begin = R.tail_begin(r);
    dequantize_range<Bits>(qp, begin, R.tail, v);
    for (uint64_t k = 0; k < R.tail; ++k) put_decoded<Out, Accumulate>(out, begin + k, v[k]);
  }
}

}  // namespace pipecodec::host::detail

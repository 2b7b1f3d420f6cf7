// The randomized block Hadamard rotation of quant's `rotate=hadamard` (docs/FORMAT.md,
// "Rotation"). Each row is cut into blocks of B = 2^k consecutive elements (a shorter last
// block of a row is left as it is); a block x becomes
//   y = 2^-a * H (D x),   and back   x = D (2^-(k-a) * H y),   a = floor(k / 2),
// with H the B x B Sylvester-Hadamard matrix (H H = B I) and D the diagonal of random signs of
// the block's columns. Power-of-two factors keep the scaling exact, and the butterflies add
// and subtract in one fixed order, so the host and every CUDA thread split give the same bits.
#pragma once

#include "philox.hpp"
#include "shape.hpp"

namespace pipecodec::detail {

constexpr uint32_t stream_rotation = 3;  // rng_stream of the sign flips (philox.hpp has 1 and 2)
constexpr uint8_t min_rotate_log2 = 5, max_rotate_log2 = 12;

// Where the blocks of a shape lie: `per_row` whole blocks of `block` elements from the start
// of every row, then `tail` elements per row that stay as they are.
struct rotation_layout {
  uint64_t rows = 0, cols = 0;
  uint32_t block = 0;  // 0: no rotation
  uint32_t log2 = 0;
  uint64_t per_row = 0, tail = 0;
  PIPECODEC_HD uint64_t blocks() const { return rows * per_row; }
  PIPECODEC_HD uint64_t block_begin(uint64_t b) const { return (b / per_row) * cols + (b % per_row) * block; }
  PIPECODEC_HD uint64_t first_column(uint64_t b) const { return (b % per_row) * block; }
  PIPECODEC_HD uint64_t tail_begin(uint64_t row) const { return row * cols + per_row * block; }
};

PIPECODEC_HD rotation_layout make_rotation_layout(uint32_t log2, const shape& s) {
  rotation_layout r;
  r.rows = s.rows;
  r.cols = s.cols;
  if (log2 == 0) return r;
  r.log2 = log2;
  r.block = 1u << log2;
  r.per_row = s.cols / r.block;
  r.tail = s.cols - r.per_row * r.block;
  return r;
}

// Sign of column c: bit c mod 128 of Philox block c / 128 of the rotation stream (1: negate).
PIPECODEC_HD uint32_t sign_bit(uint64_t seed, uint64_t c) {
  const philox_out r = random_block(seed, stream_rotation, c >> 7);
  return (r.v[(c >> 5) & 3u] >> (c & 31u)) & 1u;
}

PIPECODEC_HD float flip_sign(float v, uint32_t bit) { return bit_cast<float>(bit_cast<uint32_t>(v) ^ (bit << 31)); }

// 2^-e as a float (0 <= e <= 12).
PIPECODEC_HD float pow2_neg(uint32_t e) { return bit_cast<float>((127u - e) << 23); }

// The factor after H: forward 2^-a, inverse 2^-(k-a).
PIPECODEC_HD float rotation_factor(uint32_t log2, bool inverse) {
  const uint32_t a = log2 / 2;
  return pow2_neg(inverse ? log2 - a : a);
}

// A rotated payload holds values within +-2^(126-k) only (the encoder saturates there, the
// decoder rejects groups whose codes reach beyond 2^(127-k)), so the 2^k-fold sums of the
// inverse transform stay below 2^127 and every decoded value is finite. NaN passes through.
PIPECODEC_HD float rotated_limit(uint32_t log2) { return bit_cast<float>((127u + 126u - log2) << 23); }
PIPECODEC_HD float saturate_rotated(float v, float limit) { return v > limit ? limit : v < -limit ? -limit : v; }

// Butterfly t (0 <= t < B/2) of the stage with half-width h: elements j and j + h.
PIPECODEC_HD uint32_t butterfly_low(uint32_t t, uint32_t h) { return (t / h) * 2 * h + t % h; }

PIPECODEC_HD void butterfly(float* x, uint32_t j, uint32_t h) {
  const float a = x[j], b = x[j + h];
  x[j] = add_rn(a, b);
  x[j + h] = sub_rn(a, b);
}

// H x in place, stage after stage (h = 1, 2, 4, ...); x holds B = 2^log2 >= 8 values. The
// stages h = 1, 2, 4 only mix aligned groups of 8, so they run group by group (unrolled)
// before the wider stages: the same additions on the same operands, in a faster order.
inline void hadamard_inplace(float* x, uint32_t log2) {
  const uint32_t n = 1u << log2;
  for (uint32_t j = 0; j < n; j += 8) {
    float* g = x + j;
    for (uint32_t h = 1; h < 8; h *= 2)
      for (uint32_t i = 0; i < 8; ++i)
        if ((i & h) == 0) butterfly(g, i, h);
  }
  for (uint32_t h = 8; h < n; h *= 2)
    for (uint32_t j = 0; j < n; j += 2 * h) {
      float* __restrict lo = x + j;  // disjoint halves: the loop vectorizes
      float* __restrict hi = x + j + h;
      for (uint32_t i = 0; i < h; ++i) {
        const float a = lo[i], b = hi[i];
        lo[i] = add_rn(a, b);
        hi[i] = sub_rn(a, b);
      }
    }
}

}  // namespace pipecodec::detail

// Outlier keeping (quant `outliers=N`): in each group the N elements of largest magnitude
// travel exactly, as fp32 values with their positions in the group, and the group's scale
// is taken from the other elements only, so a few large channels no longer set the step
// for the whole group. Ranking: finite values by magnitude, larger first, then the non-finite
// ones; equal keys by lower index: a total order, hence one selected set on every backend.
// A group of fewer than N elements sends them all. Kept values are finite, so every decode
// of a quant payload stays finite: a NaN or Inf is kept only when its group has fewer than N
// finite values, and then stored as the value its code would decode to (NaN and -Inf the
// lowest code, +Inf the highest, as without outlier keeping).
// Section (after the codes, docs/FORMAT.md "Outliers"): values[groups * N] fp32, then
// positions[groups * N] in 1, 2 or 4 bytes (group length <= 256, <= 65536, larger);
// group g's entries j < count are sorted by position, entries beyond are zero.
// The codes at outlier positions are what the encoder's clamp gives; decoders ignore them.
// Not with rotation: the Hadamard transform spreads a large value over its whole block
// already, and the spec parser says so.
#pragma once

#include "quant_layout.hpp"
#include "quant_math.hpp"

namespace pipecodec::detail {

// The ranking key: |x| as bits plus one for finite x (order-preserving), 0 for NaN and +-Inf.
PIPECODEC_HD uint32_t outlier_key(float x) {
  const uint32_t a = bit_cast<uint32_t>(x) & 0x7FFFFFFFu;
  return a < 0x7F800000u ? a + 1 : 0u;
}

// What a kept element stores: itself when finite, else what its code decodes to.
PIPECODEC_HD float kept_value(float x, const group_params& p, const quant_consts& c) {
  return is_finite(x) ? x : dequantize(quantize_nearest(x, p, c), p.scale, p.offset, c.zero);
}

// Whether element (ka, ia) ranks before (kb, ib).
PIPECODEC_HD bool ranks_before(uint32_t ka, uint64_t ia, uint32_t kb, uint64_t ib) {
  return ka > kb || (ka == kb && ia < ib);
}

// The top `cap` elements seen so far, best first (insertion into a short sorted list).
struct top_list {
  uint32_t count = 0;
  uint32_t key[max_outliers];
  uint64_t index[max_outliers];

  // Elements must be offered in increasing index order (ties then keep the earlier one).
  PIPECODEC_HD void offer(uint32_t k, uint64_t i, uint32_t cap) {
    if (count == cap && !(k > key[cap - 1])) return;
    uint32_t j = count < cap ? count++ : cap - 1;
    for (; j > 0 && k > key[j - 1]; --j) {
      key[j] = key[j - 1];
      index[j] = index[j - 1];
    }
    key[j] = k;
    index[j] = i;
  }
};

// Entries group g uses: N, or the whole group when it is shorter.
PIPECODEC_HD uint32_t outlier_count(const quant_layout& L, uint64_t g) {
  const uint64_t size = L.group_size(g);
  return size < L.outliers ? uint32_t(size) : L.outliers;
}

PIPECODEC_HD uint64_t get_position(const uint8_t* p, uint32_t bytes) {
  return bytes == 1 ? p[0] : bytes == 2 ? get_u16(p) : get_u32(p);
}

PIPECODEC_HD void put_position(uint8_t* p, uint32_t bytes, uint64_t v) {
  if (bytes == 1) p[0] = uint8_t(v);
  else if (bytes == 2) put_u16(p, uint16_t(v));
  else put_u32(p, uint32_t(v));
}

// Entry j of group g: position in the group and value bits.
PIPECODEC_HD uint64_t outlier_position(const uint8_t* payload, const quant_layout& L, uint64_t g, uint32_t j) {
  return get_position(payload + L.positions_offset() + (g * L.outliers + j) * L.position_bytes, L.position_bytes);
}
PIPECODEC_HD float outlier_value(const uint8_t* payload, const quant_layout& L, uint64_t g, uint32_t j) {
  return bit_cast<float>(get_u32(payload + L.outliers_offset + (g * L.outliers + j) * 4));
}
PIPECODEC_HD void put_outlier(uint8_t* payload, const quant_layout& L, uint64_t g, uint32_t j, uint64_t pos,
                              float value) {
  put_u32(payload + L.outliers_offset + (g * L.outliers + j) * 4, bit_cast<uint32_t>(value));
  put_position(payload + L.positions_offset() + (g * L.outliers + j) * L.position_bytes, L.position_bytes, pos);
}

// Group g's entries as an encoder writes them: positions strictly increasing and inside the
// group, values finite, unused entries zero.
PIPECODEC_HD bool valid_outliers(const uint8_t* payload, const quant_layout& L, uint64_t g) {
  const uint32_t count = outlier_count(L, g);
  const uint64_t size = L.group_size(g);
  for (uint32_t j = 0; j < L.outliers; ++j) {
    const uint64_t pos = outlier_position(payload, L, g, j);
    if (j >= count) {
      if (pos != 0 || bit_cast<uint32_t>(outlier_value(payload, L, g, j)) != 0) return false;
    } else if (pos >= size || (j > 0 && pos <= outlier_position(payload, L, g, j - 1)) ||
               !is_finite(outlier_value(payload, L, g, j))) {
      return false;
    }
  }
  return true;
}

}  // namespace pipecodec::detail

// Where everything lives in a k-bit quantization payload, derived from (params, shape) alone.
//
// Elements are split into groups of group_len consecutive elements (flat order). Each group
// owns ceil(group_len / 32) chunks of 32 codes; the last chunk of a group is zero-padded, so
// a chunk never straddles two groups (a warp holds exactly one group's chunk). A chunk is
// stored as `bits` little-endian u32 bit planes: bit l of plane j is bit j of the code of
// lane l. Sections:
//   header (64) | scales[groups] (+ offsets[groups] for minmax), padded to 16 | planes, padded to 16
//   [outliers=N: values[groups * N] (fp32) | positions[groups * N] (u8/u16/u32), padded to 16]
#pragma once

#include "format.hpp"

namespace pipecodec::detail {

struct quant_layout {
  uint64_t n = 0;                 // elements
  uint64_t cols = 0;              // elements per row (rng=sample draws by row and column)
  uint64_t group_len = 0;         // elements per group (the last may be shorter)
  uint64_t groups = 0;
  uint64_t chunks_per_group = 0;  // chunks of a full group
  uint64_t chunks = 0;            // total chunks
  uint32_t bits = 0;
  uint32_t scale_bytes = 0;       // bytes of one stored scale or offset (4 or 2)
  bool has_offset = false;        // minmax stores an offset per group
  uint32_t rotate_log2 = 0;       // rotation block (0: none), core/hadamard.hpp
  uint32_t outliers = 0;          // entries per group of the outlier section (core/outliers.hpp)
  uint32_t position_bytes = 0;    // bytes of one outlier position: 1, 2 or 4
  uint64_t params_offset = 0;     // byte offset of the scales section
  uint64_t codes_offset = 0;      // byte offset of the bit-plane section
  uint64_t outliers_offset = 0;   // byte offset of the outlier values (their positions follow)
  uint64_t total = 0;             // whole payload, header included

  PIPECODEC_HD uint64_t codes_end() const { return codes_offset + chunks * bits * 4; }
  PIPECODEC_HD uint64_t positions_offset() const { return outliers_offset + groups * outliers * 4; }
  PIPECODEC_HD uint64_t outliers_end() const { return positions_offset() + groups * outliers * position_bytes; }

  PIPECODEC_HD uint64_t group_begin(uint64_t g) const { return g * group_len; }
  PIPECODEC_HD uint64_t group_size(uint64_t g) const {
    const uint64_t b = g * group_len;
    return n - b < group_len ? n - b : group_len;
  }
  PIPECODEC_HD uint64_t group_chunk(uint64_t g) const { return g * chunks_per_group; }
};

// Elements per group of a grouping (quant's, and fp8's, which groups as quant does).
PIPECODEC_HD uint64_t group_len_of(group_kind g, uint32_t size, const shape& s) {
  switch (g) {
    case group_kind::elements: return size;
    case group_kind::row: return s.cols;
    case group_kind::tensor: return s.rows * s.cols;
  }
  return 0;
}

PIPECODEC_HD uint64_t effective_group_len(const quant_params& q, const shape& s) {
  return group_len_of(q.group, q.group_size, s);
}

// False when the parameters are invalid or the shape is too large.
PIPECODEC_HD bool make_quant_layout(const quant_params& q, const shape& s, quant_layout& L) {
  uint64_t n = 0;
  if (!valid_quant_params(q) || !s.count(n) || n > max_elements) return false;
  L = quant_layout{};
  L.n = n;
  L.cols = s.cols;
  L.bits = q.bits;
  L.scale_bytes = q.scale_dtype == dtype::f32 ? 4u : 2u;
  L.has_offset = q.scale == scale_mode::minmax;
  L.rotate_log2 = q.rotate_log2;
  L.group_len = effective_group_len(q, s);
  if (n > 0 && L.group_len > 0) {
    L.groups = ceil_div(n, L.group_len);
    L.chunks_per_group = ceil_div(L.group_len, 32);
    const uint64_t last = n - (L.groups - 1) * L.group_len;
    L.chunks = (L.groups - 1) * L.chunks_per_group + ceil_div(last, 32);
  }
  L.params_offset = header_bytes;
  L.codes_offset = L.params_offset + align16(L.groups * L.scale_bytes * (L.has_offset ? 2u : 1u));
  L.outliers_offset = L.codes_offset + align16(L.chunks * L.bits * 4u);
  L.outliers = q.outliers;
  if (L.outliers != 0 && L.group_len > 0xFFFFFFFFu) return false;  // positions are at most u32
  L.position_bytes = L.group_len <= 256 ? 1u : L.group_len <= 65536 ? 2u : 4u;
  L.total = L.outliers_offset + align16(L.groups * L.outliers * (4u + L.position_bytes));
  return true;
}

}  // namespace pipecodec::detail

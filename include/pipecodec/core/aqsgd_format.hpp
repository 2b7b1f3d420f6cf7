// The AQ-SGD message: one per batch, framing up to two ordinary pipecodec payloads so a batch
// may mix samples seen before (delta rows) with unseen ones or a warm-up step (warm rows).
//   frame header (64) | row kinds: one byte per batch row (0 warm, 1 delta), zero-padded to 16 |
//   warm payload (warm-up codec, rows = warm rows in batch order, sample-id section), padded to 16 |
//   delta payload (delta codec, rows = delta rows in batch order, sample-id section), padded to 16
// A part with no rows is absent (0 bytes). Header fields (little-endian):
//   0 magic "PCAQ" | 4 u16 version | 6 u16 header bytes (64) | 8 u64 zero | 16 u64 rows |
//   24 u64 cols | 32 u64 warm rows | 40 u64 warm payload bytes | 48 u64 delta payload bytes |
//   56 u64 total bytes
#pragma once

#include "format.hpp"
#include "sample_ids.hpp"
#include "sizes.hpp"

namespace pipecodec {

constexpr uint16_t aqsgd_format_version = 1;
constexpr uint32_t aqsgd_header_bytes = 64;
constexpr uint8_t aqsgd_row_warm = 0;
constexpr uint8_t aqsgd_row_delta = 1;

struct aqsgd_frame {
  uint64_t rows = 0, cols = 0;
  uint64_t warm_rows = 0;
  uint64_t warm_bytes = 0, delta_bytes = 0;  // sizes of the two payloads (0 when absent)
  uint64_t total_bytes = 0;

  PIPECODEC_HD uint64_t kinds_offset() const { return aqsgd_header_bytes; }
  PIPECODEC_HD uint64_t warm_offset() const { return aqsgd_header_bytes + detail::align16(rows); }
  PIPECODEC_HD uint64_t delta_offset() const { return warm_offset() + detail::align16(warm_bytes); }
  PIPECODEC_HD uint64_t end_offset() const { return delta_offset() + detail::align16(delta_bytes); }
};

// Bytes of one part (the codec's payload and its sample-id section) of `rows` rows of `cols`;
// 0 for no rows or a shape the spec cannot encode. Both backends size the parts with it.
inline uint64_t aqsgd_part_bytes(const spec& s, uint64_t rows, uint64_t cols) {
  if (rows == 0) return 0;
  const uint64_t b = encoded_bytes(s, shape(rows, cols));
  return b == 0 ? 0 : detail::align16(b) + sample_ids_bytes(rows);
}

namespace detail {

// A function, not an array constant, so device code can read it.
PIPECODEC_HD const char* aqsgd_magic() { return "PCAQ"; }

PIPECODEC_HD void write_aqsgd_header(uint8_t* p, const aqsgd_frame& f) {
  for (int i = 0; i < 4; ++i) p[i] = uint8_t(aqsgd_magic()[i]);
  put_u16(p + 4, aqsgd_format_version);
  put_u16(p + 6, uint16_t(aqsgd_header_bytes));
  put_u64(p + 8, 0);
  put_u64(p + 16, f.rows);
  put_u64(p + 24, f.cols);
  put_u64(p + 32, f.warm_rows);
  put_u64(p + 40, f.warm_bytes);
  put_u64(p + 48, f.delta_bytes);
  put_u64(p + 56, f.total_bytes);
}

// Parses and checks the frame: header fields, sizes against `len`, the row kinds and their
// padding, and that each present part is a pipecodec header with the declared size, shape
// (part rows x cols) and a sample-id section. The parts' codec sections are left to the
// codec decoders.
PIPECODEC_HD status parse_aqsgd_frame(const void* msg, uint64_t len, aqsgd_frame& f) {
  const uint8_t* p = static_cast<const uint8_t*>(msg);
  if (p == nullptr) return status::invalid_argument;
  if (len < 4) return status::truncated;
  for (int i = 0; i < 4; ++i)
    if (p[i] != uint8_t(aqsgd_magic()[i])) return status::bad_magic;
  if (len < aqsgd_header_bytes) return status::truncated;
  if (get_u16(p + 4) != aqsgd_format_version) return status::unsupported_version;
  if (get_u16(p + 6) != aqsgd_header_bytes || get_u64(p + 8) != 0) return status::invalid_header;
  f.rows = get_u64(p + 16);
  f.cols = get_u64(p + 24);
  f.warm_rows = get_u64(p + 32);
  f.warm_bytes = get_u64(p + 40);
  f.delta_bytes = get_u64(p + 48);
  f.total_bytes = get_u64(p + 56);
  if (f.cols == 0 || f.cols > max_elements || f.rows > max_elements / f.cols || f.warm_rows > f.rows)
    return status::invalid_header;
  // Bounding each size by max_elements-scale figures keeps the sums below 2^64.
  const uint64_t limit = uint64_t(1) << 60;
  if (f.warm_bytes > limit || f.delta_bytes > limit) return status::invalid_header;
  if (f.total_bytes != f.end_offset()) return status::size_mismatch;
  if (f.total_bytes > len) return status::truncated;
  const uint64_t delta_rows = f.rows - f.warm_rows;
  if ((f.warm_rows == 0) != (f.warm_bytes == 0) || (delta_rows == 0) != (f.delta_bytes == 0))
    return status::invalid_header;
  uint64_t warm_seen = 0;
  for (uint64_t r = 0; r < f.rows; ++r) {
    const uint8_t k = p[f.kinds_offset() + r];
    if (k != aqsgd_row_warm && k != aqsgd_row_delta) return status::corrupt_payload;
    warm_seen += k == aqsgd_row_warm;
  }
  for (uint64_t b = f.rows; b < align16(f.rows); ++b)
    if (p[f.kinds_offset() + b] != 0) return status::corrupt_payload;
  if (warm_seen != f.warm_rows) return status::corrupt_payload;
  const uint64_t part_off[2] = {f.warm_offset(), f.delta_offset()};
  const uint64_t part_bytes[2] = {f.warm_bytes, f.delta_bytes};
  const uint64_t part_rows[2] = {f.warm_rows, delta_rows};
  for (int i = 0; i < 2; ++i) {
    if (part_rows[i] == 0) continue;
    header h;
    const status st = read_header(p + part_off[i], part_bytes[i], h);
    if (!ok(st)) return st;
    if (h.total_bytes != part_bytes[i]) return status::size_mismatch;
    if (h.shp.ndim != 2 || h.shp.rows != part_rows[i] || h.shp.cols != f.cols) return status::shape_mismatch;
    if ((h.flags & flag_sample_ids) == 0) return status::id_mismatch;
    if (ids_section_bytes(h) > h.total_bytes - header_bytes) return status::size_mismatch;
    if (!sample_ids_padding_zero(sample_ids_section(p + part_off[i], h), h))
      return status::corrupt_payload;
    for (uint64_t b = part_bytes[i]; b < align16(part_bytes[i]); ++b)
      if (p[part_off[i] + b] != 0) return status::corrupt_payload;
  }
  return status::success;
}

}  // namespace detail
}  // namespace pipecodec

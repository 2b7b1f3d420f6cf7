// Checkpoint format v1 for stateful-scheme state (EF residual, EF21 g, AQ-SGD store, per-sample
// EF store), so a
// training job can resume with both sides of a boundary still bit-identical.
//   header (64) | sections, each zero-padded to 16 | trailer (16)
// Header (little-endian): 0 magic "PCST" | 4 u16 version | 6 u16 header bytes (64) |
//   8 u8 kind | 9 u8 dtype | 10 u8 ndim | 11 u8 zero | 12 u32 zero | 16 u64 rows | 24 u64 cols |
//   32 u64 capacity | 40 u64 count | 48 u64 total bytes | 56 u64 zero
// Sections: ef_residual, ef21_state, lowrank_q: the state tensor (rows x cols elements of dtype).
//   aqsgd_store, ef_sample_store (shape = one sample's row, ndim 1, rows 1): ids by slot
//   (u64[count]), then the rows (AQ-SGD m, EF residual e) by slot (count x cols of dtype). The id table is not stored: it is
//   rebuilt from the ids in slot order, which reproduces it exactly.
// Trailer: u64 FNV-1a 64 of every byte before the trailer | u64 zero.
#pragma once

#include "format.hpp"

namespace pipecodec {

enum class checkpoint_kind : uint8_t {
  ef_residual = 1, ef21_state = 2, aqsgd_store = 3, ef_sample_store = 4,
  lowrank_q = 5  // lowrank's warm-start Q (cols x rank fp32), as ef_state::lowrank_q() holds it
};

constexpr uint16_t checkpoint_version = 1;
constexpr uint32_t checkpoint_header_bytes = 64;
constexpr uint32_t checkpoint_trailer_bytes = 16;

struct checkpoint_header {
  checkpoint_kind kind = checkpoint_kind::ef_residual;
  dtype type = dtype::f32;
  shape shp{};
  uint64_t capacity = 0, count = 0;
  uint64_t total_bytes = 0;

  PIPECODEC_HD bool is_store() const {
    return kind == checkpoint_kind::aqsgd_store || kind == checkpoint_kind::ef_sample_store;
  }
  // Bytes of the first section (state tensor, or AQ-SGD ids) and of the second (AQ-SGD rows).
  PIPECODEC_HD uint64_t section0() const {
    return detail::align16(is_store() ? 8 * count : shp.rows * shp.cols * dtype_bytes(type));
  }
  PIPECODEC_HD uint64_t section1() const {
    return is_store() ? detail::align16(count * shp.cols * dtype_bytes(type)) : 0;
  }
  PIPECODEC_HD uint64_t expected_total() const {
    return checkpoint_header_bytes + section0() + section1() + checkpoint_trailer_bytes;
  }
};

namespace detail {

// A function, not an array constant, so device code can read it.
PIPECODEC_HD const char* checkpoint_magic() { return "PCST"; }

// FNV-1a 64, fed incrementally.
struct fnv1a64 {
  uint64_t h = 0xCBF29CE484222325ull;
  PIPECODEC_HD void update(const void* p, uint64_t n) {
    const uint8_t* b = static_cast<const uint8_t*>(p);
    for (uint64_t i = 0; i < n; ++i) h = (h ^ b[i]) * 0x100000001B3ull;
  }
};

PIPECODEC_HD void write_checkpoint_header(uint8_t* p, const checkpoint_header& h) {
  for (int i = 0; i < 4; ++i) p[i] = uint8_t(checkpoint_magic()[i]);
  put_u16(p + 4, checkpoint_version);
  put_u16(p + 6, uint16_t(checkpoint_header_bytes));
  p[8] = uint8_t(h.kind);
  p[9] = uint8_t(h.type);
  p[10] = h.shp.ndim;
  p[11] = 0;
  put_u32(p + 12, 0);
  put_u64(p + 16, h.shp.rows);
  put_u64(p + 24, h.shp.cols);
  put_u64(p + 32, h.capacity);
  put_u64(p + 40, h.count);
  put_u64(p + 48, h.total_bytes);
  put_u64(p + 56, 0);
}


// Validates a whole checkpoint the way a decoder validates a payload: every header field,
// the size against `len`, the padding and the checksum. Contents are the caller's to check
// against its target (kind, dtype, shape, capacity, duplicate ids).
PIPECODEC_HD status parse_checkpoint(const void* buf, uint64_t len, checkpoint_header& h) {
  const uint8_t* p = static_cast<const uint8_t*>(buf);
  if (p == nullptr) return status::invalid_argument;
  if (len < 4) return status::truncated;
  for (int i = 0; i < 4; ++i)
    if (p[i] != uint8_t(checkpoint_magic()[i])) return status::bad_magic;
  if (len < checkpoint_header_bytes) return status::truncated;
  if (get_u16(p + 4) != checkpoint_version) return status::unsupported_version;
  if (get_u16(p + 6) != checkpoint_header_bytes || p[11] != 0 || get_u32(p + 12) != 0 || get_u64(p + 56) != 0)
    return status::invalid_header;
  if (p[8] < 1 || p[8] > 5 || !valid_dtype(p[9]) || (p[10] != 1 && p[10] != 2)) return status::invalid_header;
  h.kind = checkpoint_kind(p[8]);
  h.type = dtype(p[9]);
  h.shp.ndim = p[10];
  h.shp.rows = get_u64(p + 16);
  h.shp.cols = get_u64(p + 24);
  h.capacity = get_u64(p + 32);
  h.count = get_u64(p + 40);
  h.total_bytes = get_u64(p + 48);
  uint64_t n = 0;
  if (!h.shp.count(n) || n > max_elements || (h.shp.ndim == 1 && h.shp.rows != 1)) return status::invalid_header;
  if (h.is_store()) {
    if (h.shp.ndim != 1 || h.shp.cols == 0 || h.count > h.capacity || h.capacity > max_elements / h.shp.cols)
      return status::invalid_header;
  } else if (h.capacity != 0 || h.count != 0) {
    return status::invalid_header;
  }
  if (h.total_bytes != h.expected_total()) return status::size_mismatch;
  if (h.total_bytes > len) return status::truncated;
  const uint64_t body = h.total_bytes - checkpoint_trailer_bytes;
  const uint64_t used0 = h.is_store() ? 8 * h.count : n * dtype_bytes(h.type);
  const uint64_t used1 = h.count * h.shp.cols * dtype_bytes(h.type);
  if (!all_zero(p + checkpoint_header_bytes + used0, h.section0() - used0)) return status::corrupt_payload;
  if (h.is_store() && !all_zero(p + checkpoint_header_bytes + h.section0() + used1, h.section1() - used1))
    return status::corrupt_payload;
  fnv1a64 sum;
  sum.update(p, body);
  if (get_u64(p + body) != sum.h || get_u64(p + body + 8) != 0) return status::corrupt_payload;
  return status::success;
}

}  // namespace detail
}  // namespace pipecodec

// Wire format v1: the 64-byte header every payload starts with (docs/FORMAT.md).
// Fields are little-endian and written byte by byte, so the code is endian-neutral and
// runs unchanged on the device.
#pragma once

#include "shape.hpp"
#include "spec.hpp"

namespace pipecodec {

constexpr uint8_t format_magic[4] = {'P', 'C', 'D', 'C'};
constexpr uint16_t format_version = 1;
constexpr uint32_t header_bytes = 64;
constexpr uint32_t header_param_bytes = 24;
// Largest element count a payload may describe; keeps every derived size far from 2^64.
constexpr uint64_t max_elements = uint64_t(1) << 50;

// Header flag bits. flag_sample_ids: a section of one u64 sample id per row follows the
// codec's own sections (AQ-SGD lets the receiver check it updates the right rows).
constexpr uint8_t flag_sample_ids = 1;

struct header {
  uint16_t version = format_version;
  codec_id codec = codec_id::quant;
  uint8_t flags = 0;
  dtype type = dtype::f32;     // dtype of the tensor that was encoded
  shape shp{};
  uint64_t total_bytes = 0;    // size of the whole payload, header included
  uint8_t params[header_param_bytes] = {};  // codec-specific, see docs/FORMAT.md
};

namespace detail {

PIPECODEC_HD void put_u16(uint8_t* p, uint16_t v) {
  p[0] = uint8_t(v);
  p[1] = uint8_t(v >> 8);
}
PIPECODEC_HD void put_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = uint8_t(v >> (8 * i));
}
PIPECODEC_HD void put_u64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = uint8_t(v >> (8 * i));
}
PIPECODEC_HD uint16_t get_u16(const uint8_t* p) { return uint16_t(p[0] | (p[1] << 8)); }
PIPECODEC_HD uint32_t get_u32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t(p[i]) << (8 * i);
  return v;
}
PIPECODEC_HD uint64_t get_u64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t(p[i]) << (8 * i);
  return v;
}

// Byte offsets inside the header.
enum header_offset : uint32_t {
  off_magic = 0, off_version = 4, off_codec = 6, off_flags = 7, off_dtype = 8, off_ndim = 9,
  off_header_size = 10, off_reserved = 12, off_rows = 16, off_cols = 24, off_total = 32,
  off_params = 40
};

PIPECODEC_HD bool known_codec(uint8_t c) { return c >= 1 && c <= 7; }

}  // namespace detail

// True when the n bytes at p are zero: padding is always written as zero, and every decoder
// rejects anything else (corrupt_payload), so a payload has exactly one valid encoding.
PIPECODEC_HD bool all_zero(const uint8_t* p, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i)
    if (p[i] != 0) return false;
  return true;
}

PIPECODEC_HD bool valid_flags(uint8_t flags) { return (flags & ~flag_sample_ids) == 0; }

// Size of a sample-id section of `rows` ids, 16-byte aligned.
PIPECODEC_HD uint64_t sample_ids_bytes(uint64_t rows) { return detail::align16(8 * rows); }

// Size of the optional sample-id section of a payload.
PIPECODEC_HD uint64_t ids_section_bytes(const header& h) {
  return (h.flags & flag_sample_ids) ? sample_ids_bytes(h.shp.rows) : 0;
}

PIPECODEC_HD void write_header(uint8_t* p, const header& h) {
  using namespace detail;
  for (int i = 0; i < 4; ++i) p[off_magic + i] = uint8_t("PCDC"[i]);  // format_magic (device-usable)
  put_u16(p + off_version, h.version);
  p[off_codec] = uint8_t(h.codec);
  p[off_flags] = h.flags;
  p[off_dtype] = uint8_t(h.type);
  p[off_ndim] = h.shp.ndim;
  put_u16(p + off_header_size, uint16_t(header_bytes));
  put_u32(p + off_reserved, 0);
  put_u64(p + off_rows, h.shp.rows);
  put_u64(p + off_cols, h.shp.cols);
  put_u64(p + off_total, h.total_bytes);
  for (uint32_t i = 0; i < header_param_bytes; ++i) p[off_params + i] = h.params[i];
}

// Reads and checks the fields common to every codec. It does not check the codec
// parameters or that total_bytes matches them: each codec's parser does that.
PIPECODEC_HD status read_header(const uint8_t* p, uint64_t len, header& h) {
  using namespace detail;
  if (p == nullptr) return status::invalid_argument;
  if (len < 4) return status::truncated;
  for (int i = 0; i < 4; ++i)
    if (p[off_magic + i] != uint8_t("PCDC"[i])) return status::bad_magic;
  if (len < header_bytes) return status::truncated;
  h.version = get_u16(p + off_version);
  if (h.version != format_version) return status::unsupported_version;
  if (!known_codec(p[off_codec])) return status::unknown_codec;
  h.codec = codec_id(p[off_codec]);
  h.flags = p[off_flags];
  if (!valid_dtype(p[off_dtype])) return status::invalid_header;
  h.type = dtype(p[off_dtype]);
  const uint8_t ndim = p[off_ndim];
  if (ndim != 1 && ndim != 2) return status::invalid_header;
  if (get_u16(p + off_header_size) != header_bytes) return status::invalid_header;
  if (get_u32(p + off_reserved) != 0) return status::invalid_header;
  h.shp.ndim = ndim;
  h.shp.rows = get_u64(p + off_rows);
  h.shp.cols = get_u64(p + off_cols);
  if (ndim == 1 && h.shp.rows != 1) return status::invalid_header;
  uint64_t n = 0;
  if (!h.shp.count(n) || n > max_elements) return status::invalid_header;
  // Each dimension too: rows of an empty tensor size the sample-id section and RandK's units.
  if (h.shp.rows > max_elements || h.shp.cols > max_elements) return status::invalid_header;
  h.total_bytes = get_u64(p + off_total);
  if (h.total_bytes < header_bytes) return status::invalid_header;
  if (h.total_bytes > len) return status::truncated;
  for (uint32_t i = 0; i < header_param_bytes; ++i) h.params[i] = p[off_params + i];
  return status::success;
}

namespace detail {
// The rounding byte of quant, fp8 and mx parameters: 1 nearest, 2 stochastic keyed by flat
// position, 3 stochastic keyed by sample id (rng=sample).
PIPECODEC_HD uint8_t rounding_byte(rounding r, rng_key k) { return k == rng_key::sample ? 3 : uint8_t(r); }

PIPECODEC_HD void read_rounding_byte(uint8_t b, rounding& r, rng_key& k) {
  k = b == 3 ? rng_key::sample : rng_key::position;
  r = b == 3 ? rounding::stochastic : rounding(b);
}
}  // namespace detail

}  // namespace pipecodec

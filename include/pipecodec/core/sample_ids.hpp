// The optional sample-id section of a payload (flag_sample_ids, core/format.hpp): one
// little-endian u64 per row right after the codec's own sections, zero-padded to 16 bytes
// and counted in total_bytes. AQ-SGD sets it so a receiver can check it updates the rows
// of the samples it expects.
#pragma once

#include "format.hpp"

namespace pipecodec::detail {

// Appends the id section to a payload an encoder just wrote (flag not yet set): sets the
// flag, grows total_bytes, writes ids[0..rows) and the zero padding. `total` receives the
// new payload size.
PIPECODEC_HD status append_sample_ids(void* payload, uint64_t capacity, const uint64_t* ids,
                                      uint64_t* total) {
  uint8_t* p = static_cast<uint8_t*>(payload);
  header h;
  const status st = read_header(p, capacity, h);
  if (!ok(st)) return st;
  if ((h.flags & flag_sample_ids) != 0 || (ids == nullptr && h.shp.rows > 0))
    return status::invalid_argument;
  h.flags |= flag_sample_ids;
  const uint64_t section = ids_section_bytes(h);
  if (capacity - h.total_bytes < section) return status::buffer_too_small;
  uint8_t* dst = p + h.total_bytes;
  for (uint64_t r = 0; r < h.shp.rows; ++r) put_u64(dst + 8 * r, ids[r]);
  for (uint64_t b = 8 * h.shp.rows; b < section; ++b) dst[b] = 0;
  h.total_bytes += section;
  p[off_flags] = h.flags;
  put_u64(p + off_total, h.total_bytes);
  if (total) *total = h.total_bytes;
  return status::success;
}

// The id section of a payload whose header `h` a codec parser has already validated
// (so total_bytes covers it); nullptr when the flag is not set.
PIPECODEC_HD const uint8_t* sample_ids_section(const uint8_t* payload, const header& h) {
  if ((h.flags & flag_sample_ids) == 0) return nullptr;
  return payload + h.total_bytes - ids_section_bytes(h);
}

PIPECODEC_HD uint64_t sample_id(const uint8_t* section, uint64_t row) {
  return get_u64(section + 8 * row);
}

// True when the section's padding is zero (an encoder never writes anything else there).
PIPECODEC_HD bool sample_ids_padding_zero(const uint8_t* section, const header& h) {
  for (uint64_t b = 8 * h.shp.rows; b < ids_section_bytes(h); ++b)
    if (section[b] != 0) return false;
  return true;
}

// The same for a whole payload: true when it has no sample-id section.
PIPECODEC_HD bool ids_padding_zero(const uint8_t* payload, const header& h) {
  return (h.flags & flag_sample_ids) == 0 || sample_ids_padding_zero(sample_ids_section(payload, h), h);
}

}  // namespace pipecodec::detail

// The plain codec: the tensor itself in a chosen wire dtype (for warm-up steps and plain
// inference). Params: 0 wire dtype | 1..23 zero. Sections: header | elements, padded to 16.
#pragma once

#include "sample_ids.hpp"

namespace pipecodec::detail {

struct plain_layout {
  uint64_t n = 0;
  uint64_t data_offset = header_bytes;
  uint64_t total = 0;
};

PIPECODEC_HD bool make_plain_layout(const plain_params& p, const shape& s, plain_layout& L) {
  uint64_t n = 0;
  if (!valid_dtype(uint8_t(p.wire)) || !s.count(n) || n > max_elements) return false;
  L.n = n;
  L.total = header_bytes + align16(n * dtype_bytes(p.wire));
  return true;
}

PIPECODEC_HD void write_plain_params(uint8_t* p, const plain_params& pp) {
  for (uint32_t i = 0; i < header_param_bytes; ++i) p[i] = 0;
  p[0] = uint8_t(pp.wire);
}

struct plain_payload {
  header hdr;
  plain_params pp;
  plain_layout layout;
  const uint8_t* bytes;
};

PIPECODEC_HD status parse_plain_payload(const void* payload, uint64_t len, plain_payload& out) {
  const uint8_t* p = static_cast<const uint8_t*>(payload);
  status st = read_header(p, len, out.hdr);
  if (!ok(st)) return st;
  if (out.hdr.codec != codec_id::plain) return status::unknown_codec;
  if (!valid_flags(out.hdr.flags)) return status::invalid_header;
  for (uint32_t i = 1; i < header_param_bytes; ++i)
    if (out.hdr.params[i] != 0) return status::invalid_header;
  if (!valid_dtype(out.hdr.params[0])) return status::invalid_header;
  out.pp.wire = dtype(out.hdr.params[0]);
  if (!make_plain_layout(out.pp, out.hdr.shp, out.layout)) return status::invalid_header;
  if (out.hdr.total_bytes != out.layout.total + ids_section_bytes(out.hdr)) return status::size_mismatch;
  out.bytes = p;
  return status::success;
}

// The bytes after the last element up to the 16-byte boundary, and the sample-id padding.
PIPECODEC_HD bool plain_padding_zero(const plain_payload& pl) {
  const uint64_t end = pl.layout.data_offset + pl.layout.n * dtype_bytes(pl.pp.wire);
  return all_zero(pl.bytes + end, pl.layout.total - end) && ids_padding_zero(pl.bytes, pl.hdr);
}

}  // namespace pipecodec::detail

// What a payload says about itself: its header and the spec that produced it, read back
// without decoding (the CLI's `info`, logging, a receiver checking what it was sent).
// Each codec adds one case to inspect() that parses (and size-checks) its own parameters.
#pragma once

#include "plain_format.hpp"
#include "quant_format.hpp"

namespace pipecodec {

struct payload_info {
  header hdr{};       // common header fields (codec, dtype, shape, total size, flags)
  spec codec_spec{};  // the spec an encoder would need to produce this payload
  uint64_t seed = 0;  // seed recorded in the payload (stochastic rounding), 0 if none
};

namespace detail {

PIPECODEC_HD status inspect_quant(const void* payload, uint64_t len, payload_info& out) {
  quant_payload qp;
  const status st = parse_quant_payload(payload, len, qp);
  if (!ok(st)) return st;
  out.hdr = qp.hdr;
  out.codec_spec.codec = codec_id::quant;
  out.codec_spec.quant = qp.q;
  out.seed = get_u64(qp.hdr.params + 16);
  return status::success;
}

PIPECODEC_HD status inspect_plain(const void* payload, uint64_t len, payload_info& out) {
  plain_payload pl;
  const status st = parse_plain_payload(payload, len, pl);
  if (!ok(st)) return st;
  out.hdr = pl.hdr;
  out.codec_spec.codec = codec_id::plain;
  out.codec_spec.plain = pl.pp;
  out.seed = 0;
  return status::success;
}

}  // namespace detail

// Validates the header and the codec's parameters against `len` (the same checks decode
// starts with; section contents such as stored scales are checked only by decode).
// `out` is written only on success.
PIPECODEC_HD status inspect(const void* payload, size_t len, payload_info& out) {
  header h;
  const status st = read_header(static_cast<const uint8_t*>(payload), len, h);
  if (!ok(st)) return st;
  payload_info info;
  status r = status::not_supported;
  switch (h.codec) {
    case codec_id::quant: r = detail::inspect_quant(payload, len, info); break;
    case codec_id::plain: r = detail::inspect_plain(payload, len, info); break;
    default: break;  // a codec this build knows by id but cannot inspect yet
  }
  if (ok(r)) out = info;
  return r;
}

}  // namespace pipecodec

// What a payload says about itself: its header and the spec that produced it, read back
// without decoding (the CLI's `info`, logging, a receiver checking what it was sent).
// Each codec adds one case to inspect() that parses (and size-checks) its own parameters.
#pragma once

#include "float_format.hpp"
#include "lowrank_format.hpp"
#include "plain_format.hpp"
#include "quant_format.hpp"
#include "topk_format.hpp"

namespace pipecodec {

struct payload_info {
  header hdr{};       // common header fields (codec, dtype, shape, total size, flags)
  spec codec_spec{};  // the spec an encoder would need to produce this payload
  uint64_t seed = 0;  // seed recorded in the payload (stochastic rounding, randk positions), 0 if none
};

namespace detail {

// What each codec's parsed payload says about the spec that produced it.
PIPECODEC_HD void describe(const quant_payload& qp, payload_info& out) {
  out.codec_spec.codec = codec_id::quant;
  out.codec_spec.quant = qp.q;
  out.seed = get_u64(qp.hdr.params + 16);
}

PIPECODEC_HD void describe(const plain_payload& pl, payload_info& out) {
  out.codec_spec.codec = codec_id::plain;
  out.codec_spec.plain = pl.pp;
}

PIPECODEC_HD void describe(const float_payload& fp, payload_info& out) {
  out.codec_spec.codec = fp.hdr.codec;
  out.codec_spec.flt = fp.f;
  out.seed = get_u64(fp.hdr.params + 16);
}

PIPECODEC_HD void describe(const lowrank_payload& lp, payload_info& out) {
  out.codec_spec.codec = codec_id::lowrank;
  out.codec_spec.lowrank = lp.l;
  out.seed = get_u64(lp.hdr.params + 16);
}

// k is the resolved count per unit (a ratio is not recorded), the index layout the
// resolved one; the recorded seed (spec seed + call seed) is reported as `seed`.
PIPECODEC_HD void describe(const topk_payload& tp, payload_info& out) {
  const topk_desc& d = tp.desc;
  out.codec_spec.codec = d.codec;
  topk_params& t = out.codec_spec.topk;
  t.k = d.k;
  t.scope = d.scope;
  t.index = d.index;
  t.values = d.values;
  t.vquant = d.vquant;
  t.shared_mask = d.shared_mask;
  t.unbiased = d.unbiased;
  t.rng = d.sample_keyed ? rng_key::sample : rng_key::position;
  out.seed = d.seed;
}

template <class Payload, class Parse>
PIPECODEC_HD status inspect_as(const void* payload, uint64_t len, payload_info& out, Parse parse) {
  Payload p;
  const status st = parse(payload, len, p);
  if (!ok(st)) return st;
  out.hdr = p.hdr;
  describe(p, out);
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
    case codec_id::quant:
      r = detail::inspect_as<detail::quant_payload>(payload, len, info, detail::parse_quant_payload);
      break;
    case codec_id::plain:
      r = detail::inspect_as<detail::plain_payload>(payload, len, info, detail::parse_plain_payload);
      break;
    case codec_id::topk:
    case codec_id::randk:
      r = detail::inspect_as<detail::topk_payload>(payload, len, info, detail::parse_topk_payload);
      break;
    case codec_id::fp8:
    case codec_id::mx:
      r = detail::inspect_as<detail::float_payload>(payload, len, info, detail::parse_float_payload);
      break;
    case codec_id::lowrank:
      r = detail::inspect_as<detail::lowrank_payload>(payload, len, info, detail::parse_lowrank_payload);
      break;
  }
  if (ok(r)) out = info;
  return r;
}

}  // namespace pipecodec

// Harness (c): the spec-string parser on any text. Properties: no crash; a rejected text
// gives invalid_spec and a message; an accepted one prints (to_string) to a text that parses
// back to the same spec and prints identically.
#pragma once

#include <string>
#include <string_view>

#include "common.hpp"

namespace pcfuzz {

inline bool same_quant(const pipecodec::quant_params& a, const pipecodec::quant_params& b) {
  using pipecodec::group_kind;
  return a.bits == b.bits && a.group == b.group &&
         (a.group != group_kind::elements || a.group_size == b.group_size) && a.scale == b.scale &&
         a.round == b.round && a.scale_dtype == b.scale_dtype && a.rotate == b.rotate && a.rotate_log2 == b.rotate_log2 &&
         a.outliers == b.outliers;
}

// Equality of the fields that are meaningful for the spec's codec.
inline bool same_spec(const pipecodec::spec& a, const pipecodec::spec& b) {
  using namespace pipecodec;
  if (a.codec != b.codec) return false;
  switch (a.codec) {
    case codec_id::quant: return same_quant(a.quant, b.quant);
    case codec_id::plain: return a.plain.wire == b.plain.wire;
    case codec_id::topk:
    case codec_id::randk: {
      const topk_params &x = a.topk, &y = b.topk;
      const bool randk = a.codec == codec_id::randk;
      return x.k == y.k && (x.k != 0 || x.ratio == y.ratio) && x.scope == y.scope &&
             x.values == y.values && (x.values != value_kind::quant || same_quant(x.vquant, y.vquant)) &&
             (randk ? x.seed == y.seed && x.unbiased == y.unbiased
                    : x.index == y.index && x.shared_mask == y.shared_mask);
    }
    case codec_id::fp8:
    case codec_id::mx: {
      const float_params &x = a.flt, &y = b.flt;
      const bool groups = a.codec == codec_id::mx ||
                          (x.group == y.group && (x.group != group_kind::elements || x.group_size == y.group_size) &&
                           x.scale_dtype == y.scale_dtype);
      return x.format == y.format && x.round == y.round && groups;
    }
    case codec_id::lowrank: return a.lowrank.rank == b.lowrank.rank;
  }
  return false;
}

inline int fuzz_spec_string(const uint8_t* data, size_t size) {
  using namespace pipecodec;
  const std::string text(reinterpret_cast<const char*>(data), size);
  spec s;
  std::string err;
  const status st = parse_spec(text, s, &err);
  if (!ok(st)) {
    PCFUZZ_CHECK(st == status::invalid_spec && !err.empty(), "rejection without invalid_spec + message");
    return 0;
  }
  const std::string canon = to_string(s);
  spec back;
  const status sb = parse_spec(canon, back, &err);
  PCFUZZ_CHECK(ok(sb), "canonical text '%s' rejected: %s", canon.c_str(), err.c_str());
  PCFUZZ_CHECK(same_spec(s, back), "'%s' parses to a different spec", canon.c_str());
  PCFUZZ_CHECK(to_string(back) == canon, "'%s' prints differently the second time", canon.c_str());
  return 0;
}

}  // namespace pcfuzz

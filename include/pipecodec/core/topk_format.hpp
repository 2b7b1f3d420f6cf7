// The 24 codec-parameter bytes of a TopK / RandK header, spec resolution and payload parsing.
//   0 scope (1 tensor, 2 row) | 1 index layout (0 none, 1 u32, 2 u16, 3 bitmap)
//   2 values (1 fp32, 2 fp16, 3 bf16, 4 quant) | 3 mode: bit 0 shared mask (values only),
//   bit 1 unbiased (randk), other bits zero
//   4..7 value quantization word (u32, 0 unless values = quant): bits 0-3 bits,
//        4-5 scale mode, 6-7 rounding, 8-9 scale dtype, 10-11 group kind,
//        12-31 group size / 32 (group kind elements; 0 otherwise)
//   8..15 k per unit (u64) | 16..23 seed (u64): randk positions and stochastic rounding of
//        quantized values; 0 when neither uses it
#pragma once

#include "quant_format.hpp"
#include "topk_key.hpp"
#include "topk_layout.hpp"

namespace pipecodec::detail {

constexpr uint8_t topk_mode_shared = 1, topk_mode_unbiased = 2, topk_mode_sample = 4;
constexpr uint32_t vquant_max_group_size = 32u * ((1u << 20) - 1u);

PIPECODEC_HD bool uses_seed(const topk_desc& d) {
  return d.codec == codec_id::randk || (d.values == value_kind::quant && d.vquant.round == rounding::stochastic);
}

// The RandK draws of unit u (a row, or the whole tensor) of m elements: by flat index under
// the seed, or (rng=sample, rows only) by column under the row's sample key; `ids` is the
// payload's sample-id section, read only for rng=sample payloads (which always carry one).
PIPECODEC_HD draw randk_draw(const topk_desc& d, const uint8_t* ids, uint64_t u, uint64_t m) {
  if (d.sample_keyed) return draw{sample_key(d.seed, sample_id(ids, u)), stream_randk_sample, 0};
  return draw{d.seed, stream_randk, u * m};
}

// The whole payload: the layout's sections, and the rows' ids for rng=sample.
PIPECODEC_HD uint64_t topk_payload_bytes(const topk_desc& d, const topk_layout& L, uint64_t rows) {
  return L.total + (d.sample_keyed ? sample_ids_bytes(rows) : 0);
}

// Resolves a topk/randk spec against a shape. `seed` is the encode call's seed; the header
// records spec.topk.seed + seed (mod 2^64) when the payload uses a seed.
PIPECODEC_HD status resolve_topk(const spec& s, const shape& shp, uint64_t seed, topk_desc& d) {
  const topk_params& t = s.topk;
  if (s.codec != codec_id::topk && s.codec != codec_id::randk) return status::invalid_spec;
  d = topk_desc{};
  d.codec = s.codec;
  d.scope = t.scope;
  d.values = t.values;
  d.shared_mask = s.codec == codec_id::topk && t.shared_mask;
  d.unbiased = s.codec == codec_id::randk && t.unbiased;
  d.sample_keyed = t.rng == rng_key::sample;
  if (t.scope != topk_scope::tensor && t.scope != topk_scope::row) return status::invalid_spec;
  // Only RandK's positions within a row, with values that stay in their row, can be drawn
  // per sample (rng=sample).
  if (t.rng != rng_key::position && (t.rng != rng_key::sample || s.codec != codec_id::randk ||
                                     t.scope != topk_scope::row || t.values == value_kind::quant))
    return status::invalid_spec;
  if (uint8_t(t.values) < 1 || uint8_t(t.values) > 4) return status::invalid_spec;
  if (t.values == value_kind::quant) {
    // Kept values are scattered, not rows (no blocks to rotate), and the largest already.
    if (!valid_quant_params(t.vquant) || t.vquant.rotate != rotation::none || t.vquant.outliers != 0 ||
        t.vquant.rng != rng_key::position)
      return status::invalid_spec;
    if (t.vquant.group == group_kind::elements && t.vquant.group_size > vquant_max_group_size)
      return status::invalid_spec;
    d.vquant = t.vquant;
  }
  uint64_t n = 0;
  if (!shp.count(n) || n > max_elements || shp.rows > max_elements || shp.cols > max_elements)
    return status::size_overflow;
  const uint64_t unit_len = topk_unit_len(t.scope, shp);
  if (!topk_k_for(t, unit_len, d.k)) return status::invalid_spec;
  if (has_index_section(d)) {
    if (t.index == index_layout::automatic) {
      d.index = choose_index(topk_units(t.scope, shp) * d.k, n, unit_len);
    } else {
      if (uint8_t(t.index) > 3) return status::invalid_spec;
      if (!index_fits(t.index, unit_len)) return status::invalid_shape;
      d.index = t.index;
    }
  }
  d.seed = uses_seed(d) ? t.seed + seed : 0;
  return status::success;
}

PIPECODEC_HD uint32_t vquant_word(const topk_desc& d) {
  if (d.values != value_kind::quant) return 0;
  const quant_params& q = d.vquant;
  const uint32_t gs = q.group == group_kind::elements ? q.group_size / 32u : 0u;
  return uint32_t(q.bits) | uint32_t(q.scale) << 4 | uint32_t(q.round) << 6 |
         uint32_t(q.scale_dtype) << 8 | uint32_t(q.group) << 10 | gs << 12;
}

PIPECODEC_HD void write_topk_params(uint8_t* p, const topk_desc& d) {
  p[0] = uint8_t(d.scope);
  p[1] = uint8_t(d.index);
  p[2] = uint8_t(d.values);
  p[3] = uint8_t((d.shared_mask ? topk_mode_shared : 0) | (d.unbiased ? topk_mode_unbiased : 0) |
                 (d.sample_keyed ? topk_mode_sample : 0));
  put_u32(p + 4, vquant_word(d));
  put_u64(p + 8, d.k);
  put_u64(p + 16, d.seed);
}

// Reads the parameters back; invalid_header for anything an encoder could not have written.
// The k and index range checks against the shape happen in make_topk_layout.
PIPECODEC_HD status read_topk_params(const uint8_t* p, codec_id codec, topk_desc& d) {
  d = topk_desc{};
  d.codec = codec;
  if (p[0] != uint8_t(topk_scope::tensor) && p[0] != uint8_t(topk_scope::row)) return status::invalid_header;
  d.scope = topk_scope(p[0]);
  if (p[1] > 3 || p[2] < 1 || p[2] > 4) return status::invalid_header;
  d.index = index_layout(p[1]);
  d.values = value_kind(p[2]);
  if ((p[3] & ~(topk_mode_shared | topk_mode_unbiased | topk_mode_sample)) != 0) return status::invalid_header;
  d.shared_mask = (p[3] & topk_mode_shared) != 0;
  d.unbiased = (p[3] & topk_mode_unbiased) != 0;
  d.sample_keyed = (p[3] & topk_mode_sample) != 0;
  if (codec == codec_id::randk ? d.shared_mask : d.unbiased || d.sample_keyed) return status::invalid_header;
  if (d.sample_keyed && (d.scope != topk_scope::row || d.values == value_kind::quant)) return status::invalid_header;
  const uint32_t w = get_u32(p + 4);
  if (d.values == value_kind::quant) {
    quant_params& q = d.vquant;
    q.bits = uint8_t(w & 0xFu);
    q.scale = scale_mode((w >> 4) & 3u);
    q.round = rounding((w >> 6) & 3u);
    q.scale_dtype = dtype((w >> 8) & 3u);
    q.group = group_kind((w >> 10) & 3u);
    q.group_size = (w >> 12) * 32u;
    if (q.group != group_kind::elements) {
      if (q.group_size != 0) return status::invalid_header;
      q.group_size = 128;  // unused; keeps the aggregate valid
    }
    if (!valid_quant_params(q)) return status::invalid_header;
  } else if (w != 0) {
    return status::invalid_header;
  }
  d.k = get_u64(p + 8);
  d.seed = get_u64(p + 16);
  if (!uses_seed(d) && d.seed != 0) return status::invalid_header;
  return status::success;
}

// A parsed, size-checked TopK / RandK payload. Section contents are not checked here.
struct topk_payload {
  header hdr;
  topk_desc desc;
  topk_layout layout;
  const uint8_t* bytes;
};

PIPECODEC_HD status parse_topk_payload(const void* payload, uint64_t len, topk_payload& out) {
  const uint8_t* p = static_cast<const uint8_t*>(payload);
  status st = read_header(p, len, out.hdr);
  if (!ok(st)) return st;
  if (out.hdr.codec != codec_id::topk && out.hdr.codec != codec_id::randk) return status::unknown_codec;
  if (!valid_flags(out.hdr.flags)) return status::invalid_header;
  st = read_topk_params(out.hdr.params, out.hdr.codec, out.desc);
  if (!ok(st)) return st;
  if (!make_topk_layout(out.desc, out.hdr.shp, out.layout)) return status::invalid_header;
  if (out.desc.sample_keyed && (out.hdr.flags & flag_sample_ids) == 0) return status::invalid_header;
  if (out.hdr.total_bytes != out.layout.total + ids_section_bytes(out.hdr)) return status::size_mismatch;
  out.bytes = p;
  return status::success;
}

// The values section seen as a quantization payload (for value quantization).
PIPECODEC_HD quant_payload values_as_quant(const topk_payload& tp) {
  quant_payload qp{};
  qp.hdr = tp.hdr;
  qp.q = tp.desc.vquant;
  qp.layout = tp.layout.vq;
  qp.bytes = tp.bytes + quant_base(tp.layout);
  return qp;
}

// Every padding byte of a TopK / RandK payload: after the last u16/u32 index (a bitmap's
// tail bits are checked with its positions), after the last raw value or inside a
// quantized values section, and in the sample-id section.
PIPECODEC_HD bool topk_padding_zero(const topk_payload& tp) {
  const topk_layout& L = tp.layout;
  if (tp.desc.index == index_layout::u16 || tp.desc.index == index_layout::u32) {
    const uint64_t end = L.index_offset + L.kept * (tp.desc.index == index_layout::u16 ? 2u : 4u);
    if (!all_zero(tp.bytes + end, L.values_offset - end)) return false;
  }
  if (tp.desc.values == value_kind::quant) {
    if (!quant_sections_padding_zero(values_as_quant(tp))) return false;
  } else {
    const uint64_t end = L.values_offset + L.kept * raw_value_bytes(tp.desc.values);
    if (!all_zero(tp.bytes + end, L.total - end)) return false;
  }
  return ids_padding_zero(tp.bytes, tp.hdr);
}

}  // namespace pipecodec::detail

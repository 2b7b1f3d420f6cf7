// The 24 codec-parameter bytes of a quantization header, and its full validation.
//   0 bits | 1 scale mode | 2 rounding (format.hpp: 3 = stochastic, rng=sample) | 3 scale dtype | 4 group kind
//   5 rotation (0 none, 1 hadamard) | 6 log2 of the rotation block (0 without)
//   7 outliers per group (0..16, core/outliers.hpp)
//   8..15 effective group length (u64) | 16..23 seed of stochastic rounding and rotation signs (u64)
#pragma once

#include "hadamard.hpp"
#include "outliers.hpp"
#include "quant_layout.hpp"
#include "quant_math.hpp"
#include "sample_ids.hpp"

namespace pipecodec::detail {

// `seed`: the encode call's; recorded when stochastic rounding or the rotation signs use it.
PIPECODEC_HD void write_quant_params(uint8_t* p, const quant_params& q, uint64_t group_len,
                                     uint64_t seed) {
  const bool seeded = q.round == rounding::stochastic || q.rotate != rotation::none;
  p[0] = q.bits;
  p[1] = uint8_t(q.scale);
  p[2] = rounding_byte(q.round, q.rng);
  p[3] = uint8_t(q.scale_dtype);
  p[4] = uint8_t(q.group);
  p[5] = uint8_t(q.rotate);
  p[6] = q.rotate_log2;
  p[7] = q.outliers;
  put_u64(p + 8, group_len);
  put_u64(p + 16, seeded ? seed : 0);
}

// Reads the parameters back and checks them against the shape; returns invalid_header
// for anything an encoder could not have written.
PIPECODEC_HD status read_quant_params(const uint8_t* p, const shape& s, quant_params& q) {
  q.bits = p[0];
  q.scale = scale_mode(p[1]);
  read_rounding_byte(p[2], q.round, q.rng);
  q.scale_dtype = dtype(p[3]);
  q.group = group_kind(p[4]);
  q.rotate = rotation(p[5]);
  q.rotate_log2 = p[6];
  q.outliers = p[7];
  const uint64_t group_len = get_u64(p + 8);
  q.group_size = q.group == group_kind::elements && group_len <= 0xFFFFFFFFu ? uint32_t(group_len) : 128u;
  if (!valid_quant_params(q)) return status::invalid_header;
  return group_len == effective_group_len(q, s) ? status::success : status::invalid_header;
}

// A parsed, size-checked quantization payload.
struct quant_payload {
  header hdr;
  quant_params q;
  quant_layout layout;
  const uint8_t* bytes;
  uint64_t seed = 0;  // of the rotation signs
};

PIPECODEC_HD status parse_quant_payload(const void* payload, uint64_t len, quant_payload& out) {
  const uint8_t* p = static_cast<const uint8_t*>(payload);
  status st = read_header(p, len, out.hdr);
  if (!ok(st)) return st;
  if (out.hdr.codec != codec_id::quant) return status::unknown_codec;
  if (!valid_flags(out.hdr.flags)) return status::invalid_header;
  st = read_quant_params(out.hdr.params, out.hdr.shp, out.q);
  if (!ok(st)) return st;
  if (!make_quant_layout(out.q, out.hdr.shp, out.layout)) return status::invalid_header;
  if (out.hdr.total_bytes != out.layout.total + ids_section_bytes(out.hdr)) return status::size_mismatch;
  out.bytes = p;
  out.seed = get_u64(out.hdr.params + 16);
  return status::success;
}

// Group g's stored scale and offset (0 for absmax).
PIPECODEC_HD void load_group(const quant_payload& qp, uint64_t g, float& scale, float& offset) {
  const quant_layout& L = qp.layout;
  const uint8_t* sec = qp.bytes + L.params_offset;
  if (L.scale_bytes == 4) {
    scale = bit_cast<float>(get_u32(sec + 4 * g));
    offset = L.has_offset ? bit_cast<float>(get_u32(sec + 4 * (L.groups + g))) : 0.0F;
  } else {
    scale = f16_to_f32(get_u16(sec + 2 * g));
    offset = L.has_offset ? f16_to_f32(get_u16(sec + 2 * (L.groups + g))) : 0.0F;
  }
  if (offset == 0.0F) offset = 0.0F;  // canonical zero
}

PIPECODEC_HD void store_group(uint8_t* payload, const quant_layout& L, uint64_t g,
                              const group_params& gp) {
  uint8_t* sec = payload + L.params_offset;
  if (L.scale_bytes == 4) {
    put_u32(sec + 4 * g, bit_cast<uint32_t>(gp.scale));
    if (L.has_offset) put_u32(sec + 4 * (L.groups + g), bit_cast<uint32_t>(gp.offset));
  } else {
    put_u16(sec + 2 * g, f32_to_f16(gp.scale));
    if (L.has_offset) put_u16(sec + 2 * (L.groups + g), f32_to_f16(gp.offset));
  }
}

// The padding of the sections: after the last scale/offset up to the planes, after the last
// plane up to the outlier section, and after that up to the layout's end. Offsets are
// relative to qp.bytes, so this also serves the values section of a TopK payload
// (values_as_quant). Unused outlier entries are checked per group (valid_outliers).
PIPECODEC_HD bool quant_sections_padding_zero(const quant_payload& qp) {
  const quant_layout& L = qp.layout;
  const uint64_t params_end = L.params_offset + L.groups * L.scale_bytes * (L.has_offset ? 2u : 1u);
  return all_zero(qp.bytes + params_end, L.codes_offset - params_end) &&
         all_zero(qp.bytes + L.codes_end(), L.outliers_offset - L.codes_end()) &&
         all_zero(qp.bytes + L.outliers_end(), L.total - L.outliers_end());
}

// Every padding byte of a quantization payload, the sample-id section's included.
PIPECODEC_HD bool quant_padding_zero(const quant_payload& qp) {
  return quant_sections_padding_zero(qp) && ids_padding_zero(qp.bytes, qp.hdr);
}

// The lanes of group g's last chunk beyond the group's end hold no code: their bit is zero
// in every plane (one masked word test per plane).
PIPECODEC_HD bool padded_lanes_zero(const quant_payload& qp, uint64_t g) {
  const quant_layout& L = qp.layout;
  const uint64_t size = L.group_size(g);
  const uint32_t used = uint32_t(size % 32);
  if (used == 0) return true;
  const uint64_t c = L.group_chunk(g) + size / 32;
  const uint32_t mask = ~0u << used;
  const uint8_t* planes = qp.bytes + L.codes_offset + c * L.bits * 4u;
  for (uint32_t j = 0; j < L.bits; ++j)
    if ((get_u32(planes + 4 * j) & mask) != 0) return false;
  return true;
}

// Group g's stored fields: raw scale and offset are checked (not the derived offset), so
// fp16 Inf/NaN or a negative scale is rejected before conversion hides it; the padded
// lanes of its last chunk must be zero, and its outlier entries well-formed.
PIPECODEC_HD bool valid_stored_group(const quant_payload& qp, uint64_t g) {
  const quant_layout& L = qp.layout;
  if (!padded_lanes_zero(qp, g)) return false;
  if (L.outliers != 0 && !valid_outliers(qp.bytes, L, g)) return false;
  if (L.scale_bytes == 2) {
    const uint8_t* sec = qp.bytes + L.params_offset;
    const uint16_t s = get_u16(sec + 2 * g);
    if (s >= 0x7C00u) return false;  // negative, Inf or NaN
    if (L.has_offset && (get_u16(sec + 2 * (L.groups + g)) & 0x7C00u) == 0x7C00u) return false;
  }
  float scale, offset;
  load_group(qp, g, scale, offset);
  if (!valid_group(scale, offset, qp.q)) return false;
  if (qp.q.rotate == rotation::none) return true;
  // Rotated: the codes stay within 2^(127-k) (core/hadamard.hpp, rotated_limit).
  const quant_consts c = consts_for(qp.q.bits, qp.q.scale);
  const float reach = 2 * rotated_limit(qp.q.rotate_log2);
  const float lo = dequantize(0, scale, offset, c.zero), hi = dequantize((1u << qp.q.bits) - 1u, scale, offset, c.zero);
  return lo >= -reach && hi <= reach;
}

}  // namespace pipecodec::detail

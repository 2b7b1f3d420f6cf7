// Where everything lives in a TopK / RandK payload, derived from (description, shape) alone.
//
// A *unit* is what one selection covers: a row (scope=row) or the whole tensor
// (scope=tensor); units = rows or 1, unit_len = cols or rows * cols. Every unit keeps the
// same k, so kept = units * k. Sections, each starting 16-byte aligned, padding zero:
//   header (64) | index section (topk with positions only) | values section
// Index section:
//   u32    kept u32, the position inside the unit (absolute in tensor scope, row-local in
//          row scope), ascending within each unit, units in order
//   u16    the same as u16 (unit_len <= 65536)
//   bitmap one bit per element in flat row-major order: bit i%8 of byte i/8 (= bit i%32 of
//          little-endian u32 word i/32); exactly k bits set in each unit, none beyond n
// Values section: the kept values in position order, as a (units x k) tensor (a 1-D (k)
// tensor in tensor scope): fp32/fp16/bf16 little-endian, or the sections of a k-bit
// quantization payload of that tensor (scales, then bit planes; core/quant_layout.hpp).
//
// k rule: an absolute k is clamped to unit_len; a ratio r gives k = floor(r * unit_len + 1/2)
// (nearest, ties up, from the double product) clamped to [1, unit_len]; an empty unit keeps 0.
// index=auto: the smallest index section among u16 (when unit_len <= 65536), u32 (when
// unit_len <= 2^32) and bitmap, comparing 16-byte aligned sizes, ties in that order. With
// u32 indices a bitmap is smaller once kept / n > 1/32 (1/16 against u16).
#pragma once

#include "quant_layout.hpp"
#include "workspace.hpp"

namespace pipecodec::detail {

// A spec resolved against a shape: what the header records.
struct topk_desc {
  codec_id codec = codec_id::topk;
  topk_scope scope = topk_scope::tensor;
  index_layout index = index_layout::automatic;  // resolved; automatic = no index section
  value_kind values = value_kind::f32;
  quant_params vquant{};   // when values == quant
  bool shared_mask = false;  // topk values only; positions come from a paired payload
  bool unbiased = false;     // randk: kept values scaled by unit_len / k
  bool sample_keyed = false; // randk, row scope: row r's positions drawn under sample_key(seed, id r);
                             // the payload carries the ids (core/sample_ids.hpp)
  uint64_t k = 0;            // per unit
  uint64_t seed = 0;         // randk positions and stochastic rounding of quantized values
};

PIPECODEC_HD uint64_t topk_units(topk_scope sc, const shape& s) { return sc == topk_scope::row ? s.rows : 1; }
PIPECODEC_HD uint64_t topk_unit_len(topk_scope sc, const shape& s) {
  return sc == topk_scope::row ? s.cols : s.rows * s.cols;
}

// k per unit from the spec's ratio or absolute k (rule above); false for a bad ratio.
PIPECODEC_HD bool topk_k_for(const topk_params& t, uint64_t unit_len, uint64_t& k) {
  if (unit_len == 0) {
    k = 0;
    return t.k != 0 || (t.ratio > 0.0 && t.ratio <= 1.0);
  }
  if (t.k != 0) {
    k = t.k < unit_len ? t.k : unit_len;
    return true;
  }
  if (!(t.ratio > 0.0 && t.ratio <= 1.0)) return false;
  // The product is only compared, never added to, so no FMA contraction can change k.
  const double x = dmul_rn(t.ratio, double(unit_len));
  const uint64_t whole = uint64_t(x);
  const uint64_t r = whole + (x >= double(whole) + 0.5 ? 1u : 0u);
  k = r < 1 ? 1 : r > unit_len ? unit_len : r;
  return true;
}

PIPECODEC_HD bool index_fits(index_layout ix, uint64_t unit_len) {
  switch (ix) {
    case index_layout::u16: return unit_len <= 65536u;
    case index_layout::u32: return unit_len <= (uint64_t(1) << 32);
    case index_layout::bitmap: return true;
    default: return false;
  }
}

PIPECODEC_HD uint64_t index_section_bytes(index_layout ix, uint64_t kept, uint64_t n) {
  switch (ix) {
    case index_layout::u16: return align16(2 * kept);
    case index_layout::u32: return align16(4 * kept);
    case index_layout::bitmap: return align16(ceil_div(n, 8));
    default: return 0;
  }
}

PIPECODEC_HD index_layout choose_index(uint64_t kept, uint64_t n, uint64_t unit_len) {
  index_layout best = index_layout::bitmap;
  uint64_t best_bytes = index_section_bytes(best, kept, n);
  const index_layout order[2] = {index_layout::u32, index_layout::u16};  // later wins ties
  for (index_layout ix : order) {
    const uint64_t b = index_section_bytes(ix, kept, n);
    if (index_fits(ix, unit_len) && b <= best_bytes) {
      best = ix;
      best_bytes = b;
    }
  }
  return best;
}

struct topk_layout {
  uint64_t n = 0;
  uint64_t units = 0;
  uint64_t unit_len = 0;
  uint64_t k = 0;      // per unit
  uint64_t kept = 0;   // units * k
  uint64_t index_offset = header_bytes;
  uint64_t values_offset = header_bytes;
  uint64_t total = 0;
  quant_layout vq{};   // values == quant: layout of the kept-values tensor; its offsets are
                       // relative to values_offset - header_bytes (see quant_base)
};

// Shape of the kept-values tensor (what value quantization sees).
PIPECODEC_HD shape topk_values_shape(const topk_desc& d, uint64_t units) {
  shape v;  // set field by field: shape's constructors are host-only constexpr
  const bool row = d.scope == topk_scope::row;
  v.rows = row ? units : 1;
  v.cols = row ? d.k : units * d.k;
  v.ndim = row ? 2 : 1;
  return v;
}

PIPECODEC_HD bool has_index_section(const topk_desc& d) {
  return d.codec == codec_id::topk && !d.shared_mask;
}

// Bytes of one kept value stored raw (fp32, fp16 or bf16; not quantized values).
PIPECODEC_HD uint64_t raw_value_bytes(value_kind v) { return v == value_kind::f32 ? 4u : 2u; }

// False when the description is inconsistent with itself or with the shape.
PIPECODEC_HD bool make_topk_layout(const topk_desc& d, const shape& s, topk_layout& L) {
  uint64_t n = 0;
  if (!s.count(n) || n > max_elements) return false;
  if (d.scope != topk_scope::tensor && d.scope != topk_scope::row) return false;
  L = topk_layout{};
  L.n = n;
  L.units = topk_units(d.scope, s);
  L.unit_len = topk_unit_len(d.scope, s);
  if (L.unit_len == 0 ? d.k != 0 : (d.k < 1 || d.k > L.unit_len)) return false;
  L.k = d.k;
  L.kept = L.units * d.k;
  if (has_index_section(d) != (d.index != index_layout::automatic)) return false;
  if (has_index_section(d) && !index_fits(d.index, L.unit_len)) return false;
  L.values_offset = L.index_offset + index_section_bytes(d.index, L.kept, n);
  uint64_t values_bytes = 0;
  switch (d.values) {
    case value_kind::f32:
    case value_kind::f16:
    case value_kind::bf16: values_bytes = align16(raw_value_bytes(d.values) * L.kept); break;
    case value_kind::quant:
      if (!make_quant_layout(d.vquant, topk_values_shape(d, L.units), L.vq)) return false;
      values_bytes = L.vq.total - header_bytes;
      break;
    default: return false;
  }
  L.total = L.values_offset + values_bytes;
  return true;
}

// Scratch for an encode (and a RandK decode), one figure for both backends, laid out after
// the status area every workspace starts with (core/workspace.hpp; the pointer is first
// aligned up to 16):
//   candidate keys  4 * (unit_len / 4) u32 per unit, when positions are selected
//                   (a unit whose candidates do not fit re-reads its keys instead)
//   kept values     4 * kept, fp32, when values are quantized (gathered, then quantized)
//   value tiles     when values are quantized: what make_quant_workspace(vq) uses after its
//                   status area (per-tile statistics of groups too large for one warp);
//                   CUDA path only
//   state           16 bytes per unit + topk_grid_state_bytes: selection state of the CUDA
//                   path (global histogram, pass control, per-chunk counts of the multi-block
//                   tensor-scope select); unused by the host
// each region 16-byte aligned; workspace_bytes() = workspace_request(used).
constexpr uint64_t topk_grid_chunks = 4096;  // compaction chunks of the multi-block select
constexpr uint64_t topk_grid_state_bytes = 8 * 2048 + 256 + 16 * topk_grid_chunks;

struct topk_workspace {
  uint64_t cand_offset = 0;
  uint64_t values_offset = 0;
  uint64_t qtiles_offset = 0;
  uint64_t state_offset = 0;
  uint64_t used = 0;
  // CUDA, bitmap positions into a payload that is not 4-byte aligned: the bits are set in
  // this aligned area, then copied into the payload. total = used plus this area: what
  // workspace_bytes() asks for, so one allocation serves every payload address.
  uint64_t staging_offset = 0;
  uint64_t total = 0;
};

PIPECODEC_HD bool selects_positions(const topk_desc& d) { return d.codec == codec_id::randk || !d.shared_mask; }

PIPECODEC_HD topk_workspace make_topk_workspace(const topk_desc& d, const topk_layout& L) {
  topk_workspace w;
  w.cand_offset = workspace_status_bytes;
  w.values_offset = w.cand_offset + (selects_positions(d) ? align16(4 * L.units * (L.unit_len / 4)) : 0);
  w.qtiles_offset = w.values_offset + (d.values == value_kind::quant ? align16(4 * L.kept) : 0);
  w.state_offset = w.qtiles_offset;
  if (d.values == value_kind::quant) w.state_offset += align16(make_quant_workspace(L.vq).used - workspace_status_bytes);
  w.used = w.state_offset + align16(16 * L.units) + topk_grid_state_bytes;
  w.staging_offset = w.used;
  w.total = w.used + (d.index == index_layout::bitmap ? align16(index_section_bytes(d.index, L.kept, L.n)) : 0);
  return w;
}

// Workspace of the CUDA decoder of a TopK / RandK payload of n elements: the status area,
// the chunk offsets of one large unit's positions, and (positions not from a mask) the
// candidates of a RandK re-selection. workspace_bytes(spec, shape) of any TopK / RandK spec
// of that shape is at least this.
PIPECODEC_HD uint64_t topk_decode_workspace(uint64_t n, bool mask) {
  return workspace_status_bytes + topk_grid_state_bytes + (mask ? 0 : align16(n));
}

// Base pointer that makes the quant layout's offsets land inside the values section.
PIPECODEC_HD uint64_t quant_base(const topk_layout& L) { return L.values_offset - header_bytes; }

}  // namespace pipecodec::detail

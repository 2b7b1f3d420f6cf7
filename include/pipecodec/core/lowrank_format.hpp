// The payload of the lowrank codec and the arithmetic both backends share.
//
// A tensor is a matrix M of rows x cols (1-D: one row). With Q0 (cols x R) the encoder makes
// one PowerSGD power iteration:
//   P = orthonormalize(M Q0)  (rows x R)     Q = M^T P  (cols x R)     decode: M' = P Q^T
// Q0 is the previous call's Q when the caller keeps it (warm start, host::lowrank_encode) and
// drawn from the seed otherwise; a column of Q0 that is all zero is drawn from the seed too,
// so a zeroed state starts cold.
//
// Parameters (24 bytes): 0 rank R (1..32) | 1..15 zero | 16..23 the call's seed (Q0's random columns)
// Sections: header (64) | P: rows x R f32, P[i * R + r], padded to 16 | Q: cols x R f32, padded to 16
//
// Byte identity without fused multiply-adds: every product that feeds a sum is a product of
// two floats taken in double, which is exact, so contraction cannot change it; sums are in
// double in the order canonical_sum() fixes; one division and one square root per column,
// both correctly rounded. Non-finite elements of M (and of a warm Q0) count as zero; values
// beyond the float range saturate to +-FLT_MAX, so every factor and every decoded value is
// finite.
#pragma once

#include "format.hpp"
#include "philox.hpp"
#include "sample_ids.hpp"

namespace pipecodec::detail {

constexpr uint32_t lowrank_lanes = 32;
constexpr uint64_t lowrank_chunk = 1024;  // terms per chunk of canonical_sum: 32 per lane
constexpr uint32_t stream_lowrank = 3;    // rng_stream of Q0's random columns

struct lowrank_layout {
  uint64_t rows = 0, cols = 0, n = 0;
  uint32_t rank = 0;
  uint64_t p_offset = 0;  // rows * rank f32
  uint64_t q_offset = 0;  // cols * rank f32
  uint64_t total = 0;
  PIPECODEC_HD uint64_t p_end() const { return p_offset + rows * rank * 4; }
  PIPECODEC_HD uint64_t q_end() const { return q_offset + cols * rank * 4; }
};

PIPECODEC_HD bool make_lowrank_layout(const lowrank_params& l, const shape& s, lowrank_layout& L) {
  uint64_t n = 0;
  if (!valid_lowrank_params(l) || !s.count(n) || n > max_elements) return false;
  L = lowrank_layout{};
  L.rows = s.rows;
  L.cols = s.cols;
  L.n = n;
  L.rank = l.rank;
  L.p_offset = header_bytes;
  L.q_offset = L.p_offset + align16(L.rows * L.rank * 4);
  L.total = L.q_offset + align16(L.cols * L.rank * 4);
  return true;
}

PIPECODEC_HD void write_lowrank_params(uint8_t* p, const lowrank_params& l, uint64_t seed) {
  for (uint32_t i = 0; i < header_param_bytes; ++i) p[i] = 0;
  p[0] = uint8_t(l.rank);
  put_u64(p + 16, seed);
}

PIPECODEC_HD status read_lowrank_params(const uint8_t* p, lowrank_params& l) {
  for (uint32_t i = 1; i < 16; ++i)
    if (p[i] != 0) return status::invalid_header;
  l = lowrank_params{};
  l.rank = p[0];
  return valid_lowrank_params(l) ? status::success : status::invalid_header;
}

struct lowrank_payload {
  header hdr;
  lowrank_params l;
  lowrank_layout layout;
  const uint8_t* bytes;
};

PIPECODEC_HD status parse_lowrank_payload(const void* payload, uint64_t len, lowrank_payload& out) {
  const uint8_t* p = static_cast<const uint8_t*>(payload);
  status st = read_header(p, len, out.hdr);
  if (!ok(st)) return st;
  if (out.hdr.codec != codec_id::lowrank) return status::unknown_codec;
  if (!valid_flags(out.hdr.flags)) return status::invalid_header;
  st = read_lowrank_params(out.hdr.params, out.l);
  if (!ok(st)) return st;
  if (!make_lowrank_layout(out.l, out.hdr.shp, out.layout)) return status::invalid_header;
  if (out.hdr.total_bytes != out.layout.total + ids_section_bytes(out.hdr)) return status::size_mismatch;
  out.bytes = p;
  return status::success;
}

PIPECODEC_HD float load_factor(const uint8_t* p, uint64_t i) {
  float v;
  memcpy(&v, p + 4 * i, 4);
  return v;
}

PIPECODEC_HD void store_factor(uint8_t* p, uint64_t i, float v) { memcpy(p + 4 * i, &v, 4); }

// Padding after each section (and the sample ids') zero.
PIPECODEC_HD bool lowrank_padding_zero(const lowrank_payload& lp) {
  const lowrank_layout& L = lp.layout;
  return all_zero(lp.bytes + L.p_end(), L.q_offset - L.p_end()) && all_zero(lp.bytes + L.q_end(), L.total - L.q_end()) &&
         ids_padding_zero(lp.bytes, lp.hdr);
}

// Factor k (P's entries first, then Q's) is finite: then every decode is (it saturates).
PIPECODEC_HD bool lowrank_factor_finite(const lowrank_payload& lp, uint64_t k) {
  const lowrank_layout& L = lp.layout;
  const uint64_t in_p = L.rows * L.rank;
  return is_finite(k < in_p ? load_factor(lp.bytes + L.p_offset, k) : load_factor(lp.bytes + L.q_offset, k - in_p));
}

PIPECODEC_HD uint64_t lowrank_factor_count(const lowrank_layout& L) { return (L.rows + L.cols) * L.rank; }

PIPECODEC_HD float finite_or_zero(float x) { return is_finite(x) ? x : 0.0f; }

// A double rounded to float, saturating at +-FLT_MAX.
PIPECODEC_HD float to_float_sat(double d) {
  if (d > double(flt_max)) return flt_max;
  if (d < -double(flt_max)) return -flt_max;
  return float(d);
}

// The exact product of two floats.
PIPECODEC_HD double exact_mul(float a, float b) { return double(a) * double(b); }

// A sum of `len` terms in the one order both backends use: chunks of lowrank_chunk
// consecutive terms; in a chunk, lane l (0..31) adds terms l, l + 32, ... in turn, then the
// lanes combine as a tree (lane l adds lane l + 16, then l + 8, 4, 2, 1, as a warp's
// shuffle-down reduction does); the chunks' sums are added in order. term(i) is a double.
// The host's form (the device spreads lanes over a warp: cuda/detail/lowrank_kernels.cuh).
template <class Term>
inline double canonical_sum(uint64_t len, Term term) {
  double total = 0.0;
  for (uint64_t base = 0; base < len; base += lowrank_chunk) {
    double lane[lowrank_lanes];
    for (uint32_t l = 0; l < lowrank_lanes; ++l) {
      double acc = 0.0;
      for (uint64_t i = base + l; i < len && i < base + lowrank_chunk; i += lowrank_lanes) acc += term(i);
      lane[l] = acc;
    }
    for (uint32_t off = lowrank_lanes / 2; off > 0; off /= 2)
      for (uint32_t l = 0; l < off; ++l) lane[l] += lane[l + off];
    total += lane[0];
  }
  return total;
}

// Q0's entry (j, r) when its column is drawn from the seed: uniform in [-1, 1).
PIPECODEC_HD float lowrank_random(uint64_t seed, uint32_t rank, uint64_t j, uint32_t r) {
  const uint64_t e = j * rank + r;
  const float u = to_unit_float(random_block(seed, stream_lowrank, e >> 2).v[e & 3u]);
  return sub_rn(add_rn(u, u), 1.0f);
}

// Gram-Schmidt projects each column against the earlier ones twice (columns 0..c-1, then
// again): one pass in float loses orthogonality in proportion to P's condition number, two
// keep it near rounding ("twice is enough"), so a tensor of rank <= R comes back.
constexpr uint32_t lowrank_projection_passes = 2;

// One step of the Gram-Schmidt of P's column c against an orthonormal column: with
// d = float(sum_i P[i,c] P[i,p]), P[i,c] = float(P[i,c] - d P[i,p]), both products exact.
PIPECODEC_HD float project_out(float pc, float d, float pp) {
  return float(double(pc) - exact_mul(d, pp));
}

// Columns c >= rows of P are zero: R^rows holds at most `rows` orthonormal columns, and what
// Gram-Schmidt leaves of a later one is rounding noise, which normalized would break the
// bound |x'[i,j]| <= ||x[:,j]|| (a fuzzer found it at rank 32 of 8 rows).
// P's column c before orthogonalization, from M Q0 in double: divided by its largest
// magnitude (a maximum, the same in any order), so it fits a float.
PIPECODEC_HD float scaled_column_value(double raw, double col_max) { return float(ddiv_rn(raw, col_max)); }

// A column whose squared norm after the projections is below 2^-24 of what it was before
// (norm ratio 2^-12) is taken as dependent and set to zero: what remains of a dependent column
// is rounding noise, which can lie in the earlier columns' span (structured data: a constant
// tensor's noise is constant), and normalized it would not be orthogonal to them.
PIPECODEC_HD bool lowrank_dependent(double after, double before) { return !(after > before * 0x1p-24); }

// The column divided by its norm sqrt(sum_i P[i,c]^2) (0 keeps a zero column zero).
PIPECODEC_HD float normalized_value(float pc, double norm) { return float(ddiv_rn(double(pc), norm)); }

// Decoded element (i, j): sum_r P[i,r] Q[j,r], in order of r.
PIPECODEC_HD float lowrank_element(const uint8_t* prow, const uint8_t* qrow, uint32_t rank) {
  double acc = 0.0;
  for (uint32_t r = 0; r < rank; ++r) acc += exact_mul(load_factor(prow, r), load_factor(qrow, r));
  return to_float_sat(acc);
}

}  // namespace pipecodec::detail

// The codecs the round-trip harness exercises: one line of rt_cases per codec, naming how
// fuzzer bytes become a valid spec and which codec-specific properties the result must have.
#pragma once

#include "common.hpp"
#include "pipecodec/core/float_format.hpp"
#include "pipecodec/core/hadamard.hpp"
#include "pipecodec/core/lowrank_format.hpp"
#include "pipecodec/core/plain_format.hpp"
#include "pipecodec/core/quant_format.hpp"

namespace pcfuzz {

struct rt_run {
  const pipecodec::spec& s;
  pipecodec::shape shp;
  pipecodec::dtype in_type;
  const std::vector<uint8_t>& in;       // input bytes
  const std::vector<uint8_t>& payload;  // encoded
  const std::vector<float>& xhat;       // fp32 decode
  uint64_t seed;
};

struct rt_case {
  const char* name;
  bool exact_size;                        // encoded_bytes() is exact, not a bound
  void (*make_spec)(reader&, pipecodec::spec&);
  void (*check)(const rt_run&);
};

inline float input_at(const rt_run& r, uint64_t i) {
  using namespace pipecodec;
  switch (r.in_type) {
    case dtype::f32: return detail::load<dtype::f32>(r.in.data(), i);
    case dtype::f16: return detail::load<dtype::f16>(r.in.data(), i);
    case dtype::bf16: return detail::load<dtype::bf16>(r.in.data(), i);
  }
  return 0;
}

// ---- quant: fields match the spec; nearest within detail::nearest_error_bound of the input
// clamped to the group's representable range; stochastic within one step; NaN and -Inf decode
// to the lowest code, +Inf to the highest; every decoded value finite; with outliers, the kept
// elements exact and the group's largest.
inline void make_quant_spec(reader& r, pipecodec::spec& s) {
  using namespace pipecodec;
  s.codec = codec_id::quant;
  s.quant.bits = uint8_t(1 + r.u8() % 8);
  s.quant.group = group_kind(1 + r.u8() % 3);
  s.quant.group_size = 32u * (1u + r.u8() % 16u);
  const uint8_t m = r.u8();
  s.quant.scale = m & 1 ? scale_mode::absmax : scale_mode::minmax;
  s.quant.round = m & 2 ? rounding::stochastic : rounding::nearest;
  s.quant.scale_dtype = m & 4 ? dtype::f16 : dtype::f32;
  if (m & 8) {
    s.quant.rotate = rotation::hadamard;
    s.quant.rotate_log2 = uint8_t(detail::min_rotate_log2 + (m >> 4) % 8);
  } else if (m & 16) {
    s.quant.outliers = uint8_t(1 + (m >> 5) * 2);  // 1, 3, .., 15
  }
}

// Outlier keeping: group g's kept elements decode bit-exactly to the input (a kept NaN or Inf
// to a finite value), and every other element ranks after all of them (the kept set is the
// group's top of the ranking).
inline void check_outliers(const rt_run& r, const pipecodec::detail::quant_payload& qp, uint64_t g,
                           std::vector<bool>& kept) {
  using namespace pipecodec;
  const detail::quant_layout& L = qp.layout;
  const uint64_t b = L.group_begin(g), len = L.group_size(g);
  kept.assign(len, false);
  uint32_t worst_key = 0xFFFFFFFFu;
  uint64_t worst = 0;
  for (uint32_t j = 0; j < detail::outlier_count(L, g); ++j) {
    const uint64_t pos = detail::outlier_position(r.payload.data(), L, g, j);
    kept[pos] = true;
    const float x = input_at(r, b + pos), y = r.xhat[b + pos];
    PCFUZZ_CHECK(detail::is_finite(x) ? std::memcmp(&x, &y, 4) == 0 : detail::is_finite(y),
                 "kept element %llu: %a decodes to %a", (unsigned long long)(b + pos), double(x), double(y));
    const uint32_t k = detail::outlier_key(x);
    if (detail::ranks_before(worst_key, worst, k, pos) || worst_key == 0xFFFFFFFFu) {
      worst_key = k;
      worst = pos;
    }
  }
  for (uint64_t i = 0; i < len; ++i)
    PCFUZZ_CHECK(kept[i] || detail::ranks_before(worst_key, worst, detail::outlier_key(input_at(r, b + i)), i),
                 "element %llu outranks a kept one", (unsigned long long)(b + i));
}

// Rotated payloads: every decoded value is finite, and each element of a block whose
// rotated values (computed here in binary64) are finite and inside their groups' code range
// keeps the documented bound |x - x'| <= 2^-(k-a) * sum of the block's per-element bounds,
// plus the transforms' float roundings (docs/FORMAT.md, "Rotation"). Blocks that saturate
// (fp16 scales, huge values) are skipped; tails are checked by check_quant's rule.
inline bool check_rotated_blocks(const rt_run& r, const pipecodec::detail::quant_payload& qp) {
  using namespace pipecodec;
  for (uint64_t i = 0; i < r.xhat.size(); ++i)
    PCFUZZ_CHECK(detail::is_finite(r.xhat[i]), "element %llu decodes to a non-finite value", (unsigned long long)i);
  const detail::rotation_layout R = detail::make_rotation_layout(qp.q.rotate_log2, r.shp);
  const detail::quant_consts c = detail::consts_for(qp.q.bits, qp.q.scale);
  const double slack = qp.q.round == rounding::nearest ? 1.0 : 2.0;
  const double fwd = std::ldexp(1.0, -int(R.log2 / 2)), inv = std::ldexp(1.0, -int(R.log2 - R.log2 / 2));
  std::vector<double> y(R.block);
  for (uint64_t b = 0; b < R.blocks(); ++b) {
    const uint64_t begin = R.block_begin(b), c0 = R.first_column(b);
    double mass = 0;
    for (uint64_t k = 0; k < R.block; ++k) {
      const double x = input_at(r, begin + k);
      y[k] = detail::sign_bit(r.seed, c0 + k) ? -x : x;
      mass += std::fabs(x);
    }
    for (uint64_t h = 1; h < R.block; h *= 2)
      for (uint64_t j = 0; j < R.block; j += 2 * h)
        for (uint64_t i = j; i < j + h; ++i) {
          const double u = y[i], v = y[i + h];
          y[i] = u + v;
          y[i + h] = u - v;
        }
    bool usable = std::isfinite(mass);
    double sum = 0, ymass = 0;
    for (uint64_t k = 0; k < R.block && usable; ++k) {
      float sc, off;
      detail::load_group(qp, (begin + k) / qp.layout.group_len, sc, off);
      const double lo = detail::dequantize(0, sc, off, c.zero), hi = detail::dequantize((1u << qp.q.bits) - 1u, sc, off, c.zero);
      const double yk = y[k] * fwd;
      usable = yk >= lo && yk <= hi;
      sum += slack * detail::nearest_error_bound(sc, off, float(yk));
      ymass += std::max(std::fabs(lo), std::fabs(hi));
    }
    if (!usable) continue;
    const double limit = inv * (sum + R.block * R.log2 * 0x1p-24 * mass * fwd) + (R.log2 + 1) * 0x1p-24 * ymass * inv;
    for (uint64_t k = 0; k < R.block; ++k) {
      const double err = std::fabs(double(input_at(r, begin + k)) - double(r.xhat[begin + k]));
      PCFUZZ_CHECK(err <= limit, "rotated element %llu err=%g bound=%g", (unsigned long long)(begin + k), err, limit);
    }
  }
  return R.tail > 0 || R.per_row == 0;
}

inline void check_quant(const rt_run& r) {
  using namespace pipecodec;
  detail::quant_payload qp;
  PCFUZZ_CHECK(ok(detail::parse_quant_payload(r.payload.data(), r.payload.size(), qp)), "parse");
  const quant_params& q = r.s.quant;
  PCFUZZ_CHECK(qp.hdr.type == r.in_type && qp.hdr.shp == r.shp && qp.q.bits == q.bits &&
                   qp.q.scale == q.scale && qp.q.round == q.round && qp.q.scale_dtype == q.scale_dtype &&
                   qp.q.group == q.group && qp.layout.group_len == detail::effective_group_len(q, r.shp) &&
                   qp.q.rotate == q.rotate && qp.q.rotate_log2 == q.rotate_log2 && qp.q.outliers == q.outliers,
               "header fields differ from the spec");
  const detail::rotation_layout R = detail::make_rotation_layout(q.rotate_log2, r.shp);
  if (q.rotate != rotation::none && !check_rotated_blocks(r, qp)) return;
  const detail::quant_consts c = detail::consts_for(q.bits, q.scale);
  const uint32_t code_lo = q.scale == scale_mode::absmax && q.bits > 1 ? 1u : 0u;
  const uint32_t code_hi = (1u << q.bits) - 1u;
  const double slack = q.round == rounding::nearest ? 1.0 : 2.0;
  std::vector<bool> kept;
  for (uint64_t g = 0; g < qp.layout.groups; ++g) {
    if (q.outliers != 0) check_outliers(r, qp, g, kept);
    float sc, off;
    detail::load_group(qp, g, sc, off);
    const float v_lo = detail::dequantize(code_lo, sc, off, c.zero);
    const float v_hi = detail::dequantize(code_hi, sc, off, c.zero);
    const uint64_t b = qp.layout.group_begin(g);
    for (uint64_t i = b; i < b + qp.layout.group_size(g); ++i) {
      if (q.rotate != rotation::none && i % r.shp.cols < R.per_row * R.block) continue;  // rotated: checked above
      if (q.outliers != 0 && kept[i - b]) continue;  // checked above
      // A rotated payload's tails are saturated at +-2^(126-k) first (+-Inf included).
      const float x = q.rotate != rotation::none ? detail::saturate_rotated(input_at(r, i), detail::rotated_limit(R.log2))
                                                 : input_at(r, i);
      const float y = r.xhat[i];
      PCFUZZ_CHECK(detail::is_finite(y), "element %llu decodes to a non-finite value", (unsigned long long)i);
      if (x != x || x < -detail::flt_max) {
        PCFUZZ_CHECK(y == v_lo, "NaN/-Inf element %llu: %g, lowest code %g", (unsigned long long)i, double(y), double(v_lo));
        continue;
      }
      if (x > detail::flt_max) {
        PCFUZZ_CHECK(y == v_hi, "+Inf element %llu: %g, highest code %g", (unsigned long long)i, double(y), double(v_hi));
        continue;
      }
      const float cx = x < v_lo ? v_lo : (x > v_hi ? v_hi : x);
      const double err = std::fabs(double(cx) - double(y));
      const double bound = slack * detail::nearest_error_bound(sc, off, cx);
      PCFUZZ_CHECK(err <= bound, "element %llu x=%a xhat=%a err=%g bound=%g scale=%a offset=%a",
                   (unsigned long long)i, double(x), double(y), err, bound, double(sc), double(off));
    }
  }
}

// ---- plain: the decode is exactly the input converted to the wire dtype (bit for bit).
inline void make_plain_spec(reader& r, pipecodec::spec& s) {
  s.codec = pipecodec::codec_id::plain;
  s.plain.wire = dtype_from(r.u8());
}

inline void check_plain(const rt_run& r) {
  using namespace pipecodec;
  detail::plain_payload pp;
  PCFUZZ_CHECK(ok(detail::parse_plain_payload(r.payload.data(), r.payload.size(), pp)), "parse");
  PCFUZZ_CHECK(pp.hdr.type == r.in_type && pp.hdr.shp == r.shp && pp.pp.wire == r.s.plain.wire, "header fields");
  const dtype w = r.s.plain.wire;
  for (uint64_t i = 0; i < r.shp.size(); ++i) {
    float want = input_at(r, i);
    if (w != r.in_type) {
      uint8_t tmp[4];
      (void)detail::dispatch_dtype(w, [&](auto wc) {
        detail::store<decltype(wc)::value>(tmp, 0, want);
        want = detail::load<decltype(wc)::value>(tmp, 0);
        return status::success;
      });
    }
    PCFUZZ_CHECK(std::memcmp(&want, &r.xhat[i], 4) == 0, "element %llu not exact", (unsigned long long)i);
  }
}

// ---- fp8 / mx: fields match the spec; every finite element within the documented bound
// (docs/FORMAT.md) of its group's scale X: 2^-(m+1)|x| + X 2^(emin-m-1) (int8: X 2^-7), twice
// that for stochastic rounding, plus 2^-23 |x| for fp8's division, plus what saturation cuts
// off; fp8 keeps NaN and saturates +-Inf; an mx block holding NaN or Inf decodes to NaN.
inline void make_float_spec(reader& r, pipecodec::spec& s) {
  using namespace pipecodec;
  const uint8_t m = r.u8();
  s.codec = m & 1 ? codec_id::mx : codec_id::fp8;
  s.flt.format = s.codec == codec_id::mx ? elem_format(1 + r.u8() % 6) : (m & 2 ? elem_format::e5m2 : elem_format::e4m3);
  s.flt.round = m & 4 ? rounding::stochastic : rounding::nearest;
  s.flt.scale_dtype = m & 8 ? dtype::f16 : dtype::f32;
  s.flt.group = group_kind(1 + r.u8() % 3);
  s.flt.group_size = 32u * (1u + r.u8() % 16u);
}

inline void check_float(const rt_run& r) {
  using namespace pipecodec;
  detail::float_payload fp;
  PCFUZZ_CHECK(ok(detail::parse_float_payload(r.payload.data(), r.payload.size(), fp)), "parse");
  const float_params& f = r.s.flt;
  PCFUZZ_CHECK(fp.hdr.type == r.in_type && fp.hdr.shp == r.shp && fp.hdr.codec == r.s.codec &&
                   fp.f.format == f.format && fp.f.round == f.round &&
                   fp.layout.group_len == detail::float_group_len(r.s.codec, f, r.shp),
               "header fields differ from the spec");
  const detail::elem_traits t = detail::traits_of(f.format);
  const double k = f.round == rounding::nearest ? 1.0 : 2.0;
  const double fmax = double(detail::max_finite(f.format));
  const bool mx = r.s.codec == codec_id::mx;
  for (uint64_t g = 0; g < fp.layout.groups; ++g) {
    const detail::float_scale sc = detail::load_float_scale(fp, g);
    const uint64_t b = fp.layout.group_begin(g);
    for (uint64_t i = b; i < b + fp.layout.group_size(g); ++i) {
      const float x = input_at(r, i), y = r.xhat[i];
      if (sc.nan_block || x != x) {
        PCFUZZ_CHECK(y != y, "element %llu: NaN expected, got %g", (unsigned long long)i, double(y));
        continue;
      }
      const double X = double(sc.decode_mul);
      const double cx = detail::is_finite(x) ? double(x) : (x > 0 ? fmax * X : -fmax * X);
      const double over = std::fabs(cx) - fmax * X;
      const double sat = over > 0 ? over : 0;
      const double bound =
          t.ebits == 0 ? k * X * std::ldexp(1.0, -7) + sat
                       : k * ((std::ldexp(1.0, -int(t.mbits) - 1) + (mx ? 0 : std::ldexp(1.0, -23))) * std::fabs(cx) +
                              X * std::ldexp(1.0, t.emin - int(t.mbits) - 1)) + sat;
      PCFUZZ_CHECK(std::fabs(cx - double(y)) <= bound, "element %llu x=%a xhat=%a bound=%g X=%a",
                   (unsigned long long)i, double(x), double(y), bound, X);
    }
  }
}

// ---- lowrank: fields match the spec; every decoded element finite and within its column's
// norm (x' = P P^T x projects each column; non-finite inputs count as zero), the relative
// slack covering P's rounding from orthonormal.
inline void make_lowrank_spec(reader& r, pipecodec::spec& s) {
  s.codec = pipecodec::codec_id::lowrank;
  s.lowrank.rank = 1 + r.u8() % pipecodec::max_lowrank_rank;
}

inline void check_lowrank(const rt_run& r) {
  using namespace pipecodec;
  detail::lowrank_payload lp;
  PCFUZZ_CHECK(ok(detail::parse_lowrank_payload(r.payload.data(), r.payload.size(), lp)), "parse");
  PCFUZZ_CHECK(lp.hdr.type == r.in_type && lp.hdr.shp == r.shp && lp.l.rank == r.s.lowrank.rank,
               "header fields differ from the spec");
  const uint64_t rows = r.shp.rows, cols = r.shp.cols;
  for (uint64_t j = 0; j < cols; ++j) {
    double col = 0;
    for (uint64_t i = 0; i < rows; ++i) {
      const double x = detail::finite_or_zero(input_at(r, i * cols + j));
      col += x * x;
    }
    const double bound = std::sqrt(col) * (1 + 1e-4) + r.s.lowrank.rank * 0x1p-149;  // + float rounding at the subnormal floor
    for (uint64_t i = 0; i < rows; ++i) {
      const float y = r.xhat[i * cols + j];
      PCFUZZ_CHECK(detail::is_finite(y) && std::fabs(double(y)) <= bound, "element (%llu, %llu) = %a beyond %g",
                   (unsigned long long)i, (unsigned long long)j, double(y), bound);
    }
  }
}

inline const rt_case rt_cases[] = {
    {"quant", true, make_quant_spec, check_quant},
    {"plain", true, make_plain_spec, check_plain},
    {"fp8/mx", true, make_float_spec, check_float},
    {"lowrank", true, make_lowrank_spec, check_lowrank},
};

}  // namespace pcfuzz

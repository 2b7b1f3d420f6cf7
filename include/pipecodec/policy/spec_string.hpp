// The text form of a spec, shared by the CLI, the policy parser and users' config files.
//
//   spec  := codec [ ":" key "=" value { "," key "=" value } ]
//   quant: bits=1..8 (8)  group=N|row|tensor (128, N a multiple of 32)
//          scale=minmax|absmax (minmax)  round=nearest|stochastic (nearest)
//          scale_dtype=fp32|fp16 (fp32)  rotate=none|hadamard (none)
//          rotate_block=32|64|..|4096 (128; with rotate=hadamard only)
//          outliers=0..16 (0; largest-magnitude values per group sent exactly; not with rotate)
//          rng=position|sample (position; sample: stochastic rounding keyed by sample id and
//          column, round=stochastic and groups inside a row only)
//   plain: dtype=fp32|fp16|bf16 (fp32)
//   topk:  ratio=R (0.1) | k=N   scope=tensor|row (tensor)   index=auto|u32|u16|bitmap (auto)
//          values=fp32|fp16|bf16|quant (fp32), with values=quant the quant keys above apply
//          to the values; mask=shared (values at the positions of a paired payload)
//   randk: as topk (no index, no mask) plus seed=N (0) and unbiased=0|1 (0);
//          rng=position|sample (position; sample: positions keyed by sample id, scope=row and
//          values fp32/fp16/bf16 only)
//   fp8:   format=e4m3|e5m2 (e4m3)  group=N|row|tensor (128)  scale_dtype=fp32|fp16 (fp32)
//          round=nearest|stochastic (nearest)  rng=position|sample (as quant)
//   mx:    format=fp8_e4m3|fp8_e5m2|fp6_e3m2|fp6_e2m3|fp4_e2m1|int8 (fp8_e4m3)
//          round=nearest|stochastic (nearest); blocks of 32 along each row, E8M0 scales
//          rng=position|sample (as quant)
//   lowrank: rank=1..32 (4); factors of the rows x cols matrix after one power iteration
// Unknown codecs, unknown keys and bad values are errors whose message names the token.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "../core/hadamard.hpp"
#include "../core/spec.hpp"

namespace pipecodec {

namespace detail {

inline bool parse_u64(std::string_view v, uint64_t& out) {
  if (v.empty() || v.size() > 19) return false;
  uint64_t r = 0;
  for (char ch : v) {
    if (ch < '0' || ch > '9') return false;
    r = r * 10 + uint64_t(ch - '0');
  }
  out = r;
  return true;
}

inline bool parse_ratio(std::string_view v, double& out) {
  if (v.empty() || v.size() > 32) return false;
  const std::string s(v);
  char* end = nullptr;
  const double r = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !(r > 0.0 && r <= 1.0)) return false;
  out = r;
  return true;
}

inline bool parse_dtype(std::string_view v, dtype& out) {
  if (v == "fp32" || v == "f32") out = dtype::f32;
  else if (v == "fp16" || v == "f16") out = dtype::f16;
  else if (v == "bf16") out = dtype::bf16;
  else return false;
  return true;
}

// The group, round and scale_dtype keys quant and fp8 share; each returns 1 if it applied,
// 0 if the key is not its own, -1 on a bad value.
inline int apply_group_key(std::string_view k, std::string_view v, group_kind& g, uint32_t& size) {
  if (k != "group") return 0;
  uint64_t n = 0;
  if (v == "row") g = group_kind::row;
  else if (v == "tensor") g = group_kind::tensor;
  else if (parse_u64(v, n) && n >= 32 && n % 32 == 0 && n <= 0x7FFFFFE0u) {
    g = group_kind::elements;
    size = uint32_t(n);
  } else return -1;
  return 1;
}

inline int apply_round_key(std::string_view k, std::string_view v, rounding& r) {
  if (k != "round") return 0;
  if (v == "nearest") r = rounding::nearest;
  else if (v == "stochastic") r = rounding::stochastic;
  else return -1;
  return 1;
}

inline int apply_rng_key(std::string_view k, std::string_view v, rng_key& r) {
  if (k != "rng") return 0;
  if (v == "position") r = rng_key::position;
  else if (v == "sample") r = rng_key::sample;
  else return -1;
  return 1;
}

inline int apply_scale_dtype_key(std::string_view k, std::string_view v, dtype& d) {
  if (k != "scale_dtype") return 0;
  dtype t;
  if (!parse_dtype(v, t) || t == dtype::bf16) return -1;
  d = t;
  return 1;
}

// One quant key; returns 1 if it applied, 0 if the key is not a quant key, -1 on a bad value.
inline int apply_quant_key(std::string_view k, std::string_view v, quant_params& q) {
  uint64_t n = 0;
  if (k == "bits") {
    if (!parse_u64(v, n) || n < 1 || n > 8) return -1;
    q.bits = uint8_t(n);
  } else if (k == "scale") {
    if (v == "minmax") q.scale = scale_mode::minmax;
    else if (v == "absmax") q.scale = scale_mode::absmax;
    else return -1;
  } else if (k == "rotate") {  // rotate_block is checked against it once all keys are read
    if (v == "hadamard") q.rotate = rotation::hadamard;
    else if (v == "none") q.rotate = rotation::none;
    else return -1;
  } else if (k == "outliers") {
    if (!parse_u64(v, n) || n > max_outliers) return -1;
    q.outliers = uint8_t(n);
  } else if (k == "rotate_block") {
    if (!parse_u64(v, n) || n < (1u << min_rotate_log2) || n > (1u << max_rotate_log2) || (n & (n - 1)) != 0)
      return -1;
    q.rotate_log2 = 0;
    while ((uint64_t(1) << q.rotate_log2) < n) ++q.rotate_log2;
  } else {
    if (const int r = apply_group_key(k, v, q.group, q.group_size); r != 0) return r;
    if (const int r = apply_round_key(k, v, q.round); r != 0) return r;
    if (const int r = apply_rng_key(k, v, q.rng); r != 0) return r;
    return apply_scale_dtype_key(k, v, q.scale_dtype);
  }
  return 1;
}

inline int apply_sparse_key(std::string_view k, std::string_view v, topk_params& t, bool randk) {
  uint64_t n = 0;
  if (k == "ratio") {
    if (!parse_ratio(v, t.ratio)) return -1;
    t.k = 0;
  } else if (k == "k") {
    if (!parse_u64(v, n) || n == 0) return -1;
    t.k = n;
  } else if (k == "scope") {
    if (v == "tensor") t.scope = topk_scope::tensor;
    else if (v == "row") t.scope = topk_scope::row;
    else return -1;
  } else if (k == "values") {
    dtype d;
    if (v == "quant") t.values = value_kind::quant;
    else if (parse_dtype(v, d)) t.values = value_kind(uint8_t(d));
    else return -1;
  } else if (!randk && k == "index") {
    if (v == "auto") t.index = index_layout::automatic;
    else if (v == "u32") t.index = index_layout::u32;
    else if (v == "u16") t.index = index_layout::u16;
    else if (v == "bitmap") t.index = index_layout::bitmap;
    else return -1;
  } else if (!randk && k == "mask") {
    if (v != "shared") return -1;
    t.shared_mask = true;
  } else if (randk && k == "seed") {
    if (!parse_u64(v, t.seed)) return -1;
  } else if (randk && k == "unbiased") {
    if (v != "0" && v != "1") return -1;
    t.unbiased = v == "1";
  } else if (k == "rng") {
    return randk ? apply_rng_key(k, v, t.rng) : 0;  // TopK draws nothing per element
  } else if (k == "rotate" || k == "rotate_block" || k == "outliers") {
    return 0;  // kept values are scattered, not rows, and already the largest ones
  } else {
    return apply_quant_key(k, v, t.vquant);
  }
  return 1;
}

inline const char* mx_format_name(elem_format f) {
  switch (f) {
    case elem_format::e4m3: return "fp8_e4m3";
    case elem_format::e5m2: return "fp8_e5m2";
    case elem_format::e3m2: return "fp6_e3m2";
    case elem_format::e2m3: return "fp6_e2m3";
    case elem_format::e2m1: return "fp4_e2m1";
    case elem_format::int8: return "int8";
  }
  return "unknown";
}

// One fp8 or mx key, as apply_quant_key.
inline int apply_float_key(std::string_view k, std::string_view v, float_params& f, bool mx) {
  if (k == "format") {
    if (!mx && v == "e4m3") f.format = elem_format::e4m3;
    else if (!mx && v == "e5m2") f.format = elem_format::e5m2;
    else if (!mx) return -1;
    else {
      for (uint8_t i = 1; i <= 6; ++i)
        if (v == mx_format_name(elem_format(i))) {
          f.format = elem_format(i);
          return 1;
        }
      return -1;
    }
    return 1;
  }
  if (const int r = apply_round_key(k, v, f.round); r != 0) return r;
  if (const int r = apply_rng_key(k, v, f.rng); r != 0 || mx) return r;
  if (const int r = apply_group_key(k, v, f.group, f.group_size); r != 0) return r;
  return apply_scale_dtype_key(k, v, f.scale_dtype);
}

// Why the spec's rng key does not apply to it (nullptr when it does or is not set).
inline const char* rng_conflict(const spec& s) {
  auto rounding_conflict = [](rounding r, rng_key k, group_kind g) -> const char* {
    if (k == rng_key::position) return nullptr;
    if (r != rounding::stochastic) return "key 'rng=sample' needs round=stochastic (nearest rounding draws nothing)";
    if (g == group_kind::tensor) return "key 'rng=sample' does not go with group=tensor (one scale mixes every sample)";
    return nullptr;
  };
  switch (s.codec) {
    case codec_id::quant: return rounding_conflict(s.quant.round, s.quant.rng, s.quant.group);
    case codec_id::fp8: return rounding_conflict(s.flt.round, s.flt.rng, s.flt.group);
    case codec_id::mx: return rounding_conflict(s.flt.round, s.flt.rng, group_kind::row);
    case codec_id::topk:
    case codec_id::randk:
      if (s.topk.rng == rng_key::sample && s.topk.scope != topk_scope::row)
        return "key 'rng=sample' needs scope=row (a tensor-wide selection mixes every sample)";
      if (s.topk.rng == rng_key::sample && s.topk.values == value_kind::quant)
        return "key 'rng=sample' does not go with values=quant (kept values are quantized across rows)";
      return nullptr;
    default: return nullptr;
  }
}

inline status spec_error(std::string* error, std::string msg) {
  if (error) *error = std::move(msg);
  return status::invalid_spec;
}

}  // namespace detail

inline status parse_spec(std::string_view text, spec& out, std::string* error = nullptr) {
  const size_t colon = text.find(':');
  const std::string_view name = text.substr(0, colon);
  spec s;
  if (name == "quant") s.codec = codec_id::quant;
  else if (name == "plain") s.codec = codec_id::plain;
  else if (name == "topk") s.codec = codec_id::topk;
  else if (name == "randk") s.codec = codec_id::randk;
  else if (name == "fp8") s.codec = codec_id::fp8;
  else if (name == "mx") s.codec = codec_id::mx;
  else if (name == "lowrank") s.codec = codec_id::lowrank;
  else return detail::spec_error(error, "unknown codec '" + std::string(name) + "'");
  if (s.codec == codec_id::topk || s.codec == codec_id::randk) s.topk.vquant.bits = 8;

  std::string_view rest = colon == std::string_view::npos ? std::string_view{} : text.substr(colon + 1);
  if (colon != std::string_view::npos && rest.empty())
    return detail::spec_error(error, "empty parameter list after ':'");
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    if (comma != std::string_view::npos && rest.empty())
      return detail::spec_error(error, "trailing ',' after '" + std::string(item) + "'");
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0)
      return detail::spec_error(error, "expected key=value, got '" + std::string(item) + "'");
    const std::string_view k = item.substr(0, eq), v = item.substr(eq + 1);
    int r = 0;
    switch (s.codec) {
      case codec_id::quant: r = detail::apply_quant_key(k, v, s.quant); break;
      case codec_id::plain: {
        r = 0;
        if (k == "dtype") r = detail::parse_dtype(v, s.plain.wire) ? 1 : -1;
        break;
      }
      case codec_id::topk: r = detail::apply_sparse_key(k, v, s.topk, false); break;
      case codec_id::randk: r = detail::apply_sparse_key(k, v, s.topk, true); break;
      case codec_id::fp8:
      case codec_id::mx: r = detail::apply_float_key(k, v, s.flt, s.codec == codec_id::mx); break;
      case codec_id::lowrank: {
        uint64_t rank = 0;
        if (k == "rank") r = detail::parse_u64(v, rank) && rank >= 1 && rank <= max_lowrank_rank ? 1 : -1;
        if (r == 1) s.lowrank.rank = uint32_t(rank);
        break;
      }
    }
    if (r == 0)
      return detail::spec_error(error, "unknown key '" + std::string(k) + "' for codec '" +
                                           std::string(name) + "'");
    if (r < 0)
      return detail::spec_error(error, "bad value '" + std::string(v) + "' for key '" +
                                           std::string(k) + "'");
  }
  if (s.codec == codec_id::quant) {
    quant_params& q = s.quant;
    if (q.rotate == rotation::none && q.rotate_log2 != 0)
      return detail::spec_error(error, "key 'rotate_block' needs rotate=hadamard");
    if (q.rotate == rotation::hadamard && q.rotate_log2 == 0) q.rotate_log2 = 7;  // blocks of 128
    if (q.outliers != 0 && q.rotate != rotation::none)
      return detail::spec_error(error, "key 'outliers' does not go with rotate=hadamard (rotation spreads outliers "
                                       "over the block already)");
  }
  if (const char* why = detail::rng_conflict(s)) return detail::spec_error(error, why);
  out = s;
  return status::success;
}

namespace detail {
// Shortest decimal text that reads back as the same double.
inline std::string format_double(double v) {
  char buf[40];
  for (int prec = 6; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

inline std::string group_text(group_kind kind, uint32_t size) {
  return kind == group_kind::row ? "row" : kind == group_kind::tensor ? "tensor" : std::to_string(size);
}

inline const char* rounding_text(rounding r) { return r == rounding::nearest ? "nearest" : "stochastic"; }

inline const char* rng_text(rng_key k) { return k == rng_key::sample ? ",rng=sample" : ""; }

inline std::string quant_keys(const quant_params& q) {
  return "bits=" + std::to_string(q.bits) + ",group=" + group_text(q.group, q.group_size) +
         ",scale=" + (q.scale == scale_mode::minmax ? "minmax" : "absmax") +
         ",round=" + rounding_text(q.round) +
         ",scale_dtype=" + to_string(q.scale_dtype) +
         (q.rotate == rotation::hadamard ? ",rotate=hadamard,rotate_block=" + std::to_string(1u << q.rotate_log2) : "") +
         (q.outliers != 0 ? ",outliers=" + std::to_string(q.outliers) : "") + rng_text(q.rng);
}
}  // namespace detail

// Canonical text of a spec: every key spelled out, so parse_spec(to_string(s)) == s.
inline std::string to_string(const spec& s) {
  switch (s.codec) {
    case codec_id::quant: return "quant:" + detail::quant_keys(s.quant);
    case codec_id::plain: return std::string("plain:dtype=") + to_string(s.plain.wire);
    case codec_id::topk:
    case codec_id::randk: {
      const topk_params& t = s.topk;
      const bool randk = s.codec == codec_id::randk;
      std::string r = randk ? "randk:" : "topk:";
      r += t.k ? "k=" + std::to_string(t.k) : "ratio=" + detail::format_double(t.ratio);
      r += std::string(",scope=") + (t.scope == topk_scope::row ? "row" : "tensor");
      if (!randk) {
        static const char* const idx[] = {"auto", "u32", "u16", "bitmap"};
        r += std::string(",index=") + idx[uint8_t(t.index) & 3u];
        if (t.shared_mask) r += ",mask=shared";
      } else {
        r += ",seed=" + std::to_string(t.seed) + ",unbiased=" + (t.unbiased ? "1" : "0") + detail::rng_text(t.rng);
      }
      if (t.values == value_kind::quant) r += ",values=quant," + detail::quant_keys(t.vquant);
      else r += std::string(",values=") + to_string(dtype(uint8_t(t.values)));
      return r;
    }
    case codec_id::fp8: {
      const float_params& f = s.flt;
      return std::string("fp8:format=") + (f.format == elem_format::e5m2 ? "e5m2" : "e4m3") +
             ",group=" + detail::group_text(f.group, f.group_size) + ",scale_dtype=" + to_string(f.scale_dtype) +
             ",round=" + detail::rounding_text(f.round) + detail::rng_text(f.rng);
    }
    case codec_id::mx:
      return std::string("mx:format=") + detail::mx_format_name(s.flt.format) +
             ",round=" + detail::rounding_text(s.flt.round) + detail::rng_text(s.flt.rng);
    case codec_id::lowrank: return "lowrank:rank=" + std::to_string(s.lowrank.rank);
  }
  return "unknown";
}

}  // namespace pipecodec

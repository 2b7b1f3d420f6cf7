// Helpers for the stateful-scheme tests: byte snapshots of state, random step tensors.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "data.hpp"
#include "pipecodec/host/aqsgd.hpp"
#include "pipecodec/host/ef_sample.hpp"
#include "pipecodec/host/ef.hpp"
#include "pipecodec/host/ef21.hpp"
#include "pipecodec/policy/spec_string.hpp"
#include "print.hpp"

namespace tstate {

using namespace pipecodec;

inline std::vector<uint8_t> bytes_of(const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  return std::vector<uint8_t>(b, b + n);
}

inline std::vector<uint8_t> snapshot(const_tensor_view v) {
  return bytes_of(v.data, v.shp.size() * dtype_bytes(v.type));
}

// Table and rows of a per-sample store (AQ-SGD side, per-sample EF sender), byte for byte.
inline std::vector<uint8_t> snapshot(const host::aqsgd_config& c, const host::aqsgd_store& s) {
  auto out = bytes_of(s.table.words, aqsgd_table_bytes(c.capacity));
  const auto rows = snapshot(s.rows);
  out.insert(out.end(), rows.begin(), rows.end());
  return out;
}
inline std::vector<uint8_t> snapshot(const host::aqsgd_state& s) { return snapshot(s.config(), s.store()); }
inline std::vector<uint8_t> snapshot(const host::ef_sample_state& s) { return snapshot(s.config(), s.store()); }

inline spec parse(const char* text) {
  spec s;
  const status st = parse_spec(text, s);
  REQUIRE_MESSAGE(ok(st), text);
  return s;
}

inline const char* storage_name(dtype t) { return to_string(t); }

// An AQ-SGD / per-sample-EF store of `capacity` samples of `cols` features stored as t, codec
// and warm-up codec given as spec strings (per-sample EF does not use the warm-up codec).
inline host::aqsgd_config store_config(const char* codec, uint64_t cols, dtype t, uint64_t capacity,
                                       const char* warm = "plain") {
  host::aqsgd_config c;
  c.codec = parse(codec);
  c.warmup = parse(warm);
  c.cols = cols;
  c.state_type = t;
  c.capacity = capacity;
  return c;
}

inline constexpr dtype all_dtypes[] = {dtype::f32, dtype::f16, dtype::bf16};

// Rounding unit and absolute floor (half the smallest subnormal) of a storage dtype.
inline double unit(dtype t) { return t == dtype::f32 ? 0.0 : t == dtype::f16 ? 0x1p-11 : 0x1p-8; }
inline double floor_abs(dtype t) { return t == dtype::f16 ? 0x1p-25 : 0x1p-149; }

// Step tensor stored as dtype t, with its exact float values in `f`.
struct step_tensor {
  std::vector<uint8_t> bytes;
  std::vector<float> f;
  dtype type;
};

inline step_tensor make_step(uint64_t n, uint64_t seed, dtype t) {
  step_tensor s;
  s.type = t;
  s.bytes = testdata::as_bytes(testdata::activations(n, seed), t);
  s.f.resize(n);
  for (uint64_t i = 0; i < n; ++i) s.f[i] = testdata::element(s.bytes, t, i);
  return s;
}

inline double rel_l2(const std::vector<float>& ref, const std::vector<float>& x) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    num += (double(ref[i]) - x[i]) * (double(ref[i]) - x[i]);
    den += double(ref[i]) * ref[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

inline std::vector<float> to_f32(const_tensor_view v) {
  std::vector<float> out(v.shp.size());
  const status st = detail::dispatch_dtype(v.type, [&](auto tc) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = detail::load<decltype(tc)::value>(v.data, i);
    return status::success;
  });
  REQUIRE(ok(st));
  return out;
}

}  // namespace tstate

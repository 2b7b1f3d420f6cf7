// Pieces of the state_seq harness (state_seq.hpp) shared by its EF21 and AQ-SGD halves:
// a small fuzzer-chosen spec, step data, payload corruption and byte snapshots.
#pragma once

#include <string>

#include "common.hpp"

namespace pcfuzz {

inline std::vector<uint8_t> bytes_of(const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  return n == 0 ? std::vector<uint8_t>() : std::vector<uint8_t>(b, b + n);
}

inline std::vector<uint8_t> view_bytes(const pipecodec::tensor_view& v) {
  return bytes_of(v.data, size_t(v.shp.size() * pipecodec::dtype_bytes(v.type)));
}

// A small spec from two bytes, valid for any tensor with at least `min_cols` columns and a row
// (TopK/RandK keep k <= min_cols, so row and tensor scope both fit every batch).
inline pipecodec::spec pick_state_spec(reader& r, uint64_t min_cols) {
  using namespace pipecodec;
  const uint8_t a = r.u8(), b = r.u8();
  static const char* const groups[] = {"32", "64", "row", "tensor"};
  static const char* const dtypes[] = {"fp32", "fp16", "bf16"};
  static const char* const values[] = {"fp32", "fp16", "bf16", "quant,bits=3,group=32"};
  const uint64_t k = 1 + b % (min_cols < 8 ? min_cols : 8);
  std::string text;
  switch (a % 4) {
    case 0:
      text = "quant:bits=" + std::to_string(1 + b % 8) + ",group=" + groups[(b >> 3) % 4] +
             ((b >> 5) & 1 ? ",round=stochastic" : "") + ((b >> 6) & 1 ? ",scale=absmax" : "") +
             ((b >> 7) ? ",scale_dtype=fp16" : "");
      break;
    case 1: text = std::string("plain:dtype=") + dtypes[b % 3]; break;
    case 2:
      text = "topk:k=" + std::to_string(k) + ((a >> 2) & 1 ? ",scope=row" : "") + ",values=" + values[(a >> 3) % 4];
      break;
    default:
      text = "randk:k=" + std::to_string(k) + ((a >> 2) & 1 ? ",scope=row" : "") + ",seed=" + std::to_string(b) +
             ((a >> 3) & 1 ? ",unbiased=1" : "") + ",values=" + values[(a >> 4) % 3];
  }
  spec s;
  std::string err;
  PCFUZZ_CHECK(ok(parse_spec(text, s, &err)), "harness spec '%s' rejected: %s", text.c_str(), err.c_str());
  return s;
}

inline uint64_t mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// n elements of dtype t: style 0 smooth values, 1 any bit pattern (NaN, Inf, subnormals),
// 2 a constant, 3 small integers and signed zeros; the seed comes from the fuzzer.
inline std::vector<uint8_t> step_data(reader& r, uint64_t n, pipecodec::dtype t) {
  using namespace pipecodec;
  const uint8_t style = r.u8() % 4;
  const uint64_t seed = r.u16() | (uint64_t(r.u8()) << 16);
  std::vector<uint8_t> out(size_t(n * dtype_bytes(t)));
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t z = mix64(seed * 0x100000001B3ull + i);
    float v = 0;
    switch (style) {
      case 0: v = float(int64_t(z % 20001) - 10000) / 997.0F; break;
      case 1: v = detail::bit_cast<float>(uint32_t(z)); break;
      case 2: v = float(seed % 7) - 3.5F; break;
      default: v = (z & 1 ? -1.0F : 1.0F) * float((z >> 1) % 5) * (seed & 1 ? 1.0F : 0.0F); break;
    }
    (void)detail::dispatch_dtype(t, [&](auto tc) {
      detail::store<decltype(tc)::value>(out.data(), i, v);
      return status::success;
    });
  }
  return out;
}

// Possibly corrupts a copy of a genuine payload of `len` bytes: a bit flip, a truncation or a
// byte set anywhere, or a bit flip in the first 64 bytes (header fields). Returns false (and
// the genuine bytes) when the fuzzer chose no corruption.
inline bool corrupt(reader& r, std::vector<uint8_t>& bytes, size_t& len) {
  const uint8_t op = r.u8() % 8;
  if (op < 4 || len == 0) return false;
  const size_t pos = r.u16() % len;
  const uint8_t v = r.u8();
  switch (op) {
    case 4: bytes[pos] ^= uint8_t(1u << (v % 8)); break;
    case 5: len = pos; break;
    case 6: bytes[pos] = v; break;
    default: bytes[pos % (len < 64 ? len : 64)] ^= uint8_t(1u << (v % 8)); break;
  }
  return true;
}

// The status a proper prefix of a genuine payload must give: truncated, or invalid_argument
// for the empty prefix (an empty exact-size copy has a null data pointer).
inline bool cut_status(pipecodec::status st, size_t len) {
  return st == pipecodec::status::truncated || (len == 0 && st == pipecodec::status::invalid_argument);
}

}  // namespace pcfuzz

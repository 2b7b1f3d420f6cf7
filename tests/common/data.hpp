// Deterministic test inputs built with integer operations only, so they are identical
// whatever flags the test is compiled with (the golden test builds with -ffp-contract=fast).
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "pipecodec/core/dtype.hpp"

namespace testdata {

inline uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

inline float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Activation-like values: mostly magnitudes in [2^-4, 2^3), some exact zeros (ReLU),
// a few large outliers; signs mixed.
inline std::vector<float> activations(uint64_t n, uint64_t seed) {
  std::vector<float> v(n);
  for (auto& x : v) {
    const uint64_t r = splitmix(seed);
    if ((r & 7) == 0) {
      x = 0.0F;
      continue;
    }
    const uint32_t exp = (r >> 8) % 97 == 0 ? 127 + 6 + uint32_t((r >> 16) % 4) : 123 + uint32_t((r >> 16) % 7);
    const uint32_t mant = uint32_t(r >> 24) & 0x7FFFFFu;
    const uint32_t sign = uint32_t(r >> 3) & 1u;
    x = from_bits((sign << 31) | (exp << 23) | mant);
  }
  return v;
}

// Uniform-ish values in [-1, 1) with 24-bit resolution, exact.
inline std::vector<float> uniform(uint64_t n, uint64_t seed) {
  std::vector<float> v(n);
  for (auto& x : v) {
    const int32_t k = int32_t(splitmix(seed) >> 40) - (1 << 23);
    x = float(k) * 1.1920928955078125e-7F;  // k * 2^-23, exact
  }
  return v;
}

// Hostile values: +-0, +-FLT_MAX and neighbours, +-Inf, quiet and signalling NaNs,
// subnormals, +-2^-126, values above fp16 range, mixed with ordinary activations.
inline std::vector<float> extreme(uint64_t n, uint64_t seed) {
  static const uint32_t special[] = {0x00000000u, 0x80000000u, 0x7F7FFFFFu, 0xFF7FFFFFu,
                                     0x7F7FFF00u, 0x7F800000u, 0xFF800000u, 0x7FC00000u,
                                     0xFFC00001u, 0x7F800001u, 0x00000001u, 0x807FFFFFu,
                                     0x00800000u, 0x477FF000u, 0xC7800000u, 0x3F800000u};
  std::vector<float> v = activations(n, seed);
  for (auto& x : v) {
    const uint64_t r = splitmix(seed);
    if (r % 3 == 0) x = from_bits(special[(r >> 8) % 16]);
  }
  return v;
}

// Converts float data to the bytes of dtype t (fp16/bf16 by round-to-nearest-even).
inline std::vector<uint8_t> as_bytes(const std::vector<float>& v, pipecodec::dtype t) {
  std::vector<uint8_t> out(v.size() * pipecodec::dtype_bytes(t));
  for (size_t i = 0; i < v.size(); ++i) {
    switch (t) {
      case pipecodec::dtype::f32: std::memcpy(&out[4 * i], &v[i], 4); break;
      case pipecodec::dtype::f16: {
        const uint16_t h = pipecodec::detail::f32_to_f16(v[i]);
        std::memcpy(&out[2 * i], &h, 2);
        break;
      }
      case pipecodec::dtype::bf16: {
        const uint16_t h = pipecodec::detail::f32_to_bf16(v[i]);
        std::memcpy(&out[2 * i], &h, 2);
        break;
      }
    }
  }
  return out;
}

// Reads element i of a buffer of dtype t as float.
inline float element(const std::vector<uint8_t>& b, pipecodec::dtype t, size_t i) {
  using namespace pipecodec;
  switch (t) {
    case dtype::f32: return detail::load<dtype::f32>(b.data(), i);
    case dtype::f16: return detail::load<dtype::f16>(b.data(), i);
    case dtype::bf16: return detail::load<dtype::bf16>(b.data(), i);
  }
  return 0;
}

}  // namespace testdata

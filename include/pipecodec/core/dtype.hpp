// Element types and their exact, round-to-nearest-even conversions, written with integer
// operations so host and device agree bit for bit.
#pragma once

#include "config.hpp"

namespace pipecodec {

enum class dtype : uint8_t { f32 = 1, f16 = 2, bf16 = 3 };

PIPECODEC_HD constexpr bool valid_dtype(uint8_t t) { return t >= 1 && t <= 3; }
PIPECODEC_HD constexpr uint32_t dtype_bytes(dtype t) { return t == dtype::f32 ? 4u : 2u; }

inline const char* to_string(dtype t) {
  switch (t) {
    case dtype::f32: return "fp32";
    case dtype::f16: return "fp16";
    case dtype::bf16: return "bf16";
  }
  return "unknown";
}

namespace detail {

PIPECODEC_HD float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1Fu;
  const uint32_t m = h & 0x3FFu;
  if (e == 0x1F) return bit_cast<float>(sign | 0x7F800000u | (m << 13));
  if (e == 0) {
    // subnormal: m * 2^-24, exact in binary32
    const float v = mul_rn(float(m), 5.9604644775390625e-8F);
    return bit_cast<float>(sign | bit_cast<uint32_t>(v));
  }
  return bit_cast<float>(sign | ((e + 112u) << 23) | (m << 13));
}

PIPECODEC_HD uint16_t f32_to_f16(float f) {
  const uint32_t x = bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t ax = x & 0x7FFFFFFFu;
  if (ax >= 0x7F800000u) return uint16_t(sign | (ax > 0x7F800000u ? 0x7E00u : 0x7C00u));
  if (ax >= 0x477FF000u) return uint16_t(sign | 0x7C00u);  // >= 65520 rounds to inf
  if (ax < 0x38800000u) {                                   // below 2^-14: half subnormal
    const uint32_t e = ax >> 23;
    if (e < 102) return uint16_t(sign);
    const uint32_t m = (ax & 0x7FFFFFu) | 0x800000u;
    const uint32_t s = 126 - e;  // 14..24
    uint32_t h = m >> s;
    const uint32_t rem = m & ((1u << s) - 1u), half = 1u << (s - 1);
    if (rem > half || (rem == half && (h & 1u))) ++h;
    return uint16_t(sign | h);
  }
  uint32_t h = (ax - 0x38000000u) >> 13;
  const uint32_t rem = ax & 0x1FFFu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return uint16_t(sign | h);
}

PIPECODEC_HD float bf16_to_f32(uint16_t b) { return bit_cast<float>(uint32_t(b) << 16); }

PIPECODEC_HD uint16_t f32_to_bf16(float f) {
  const uint32_t x = bit_cast<uint32_t>(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return uint16_t((x >> 16) | 0x40u);  // quiet NaN
  return uint16_t((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

// Load element i of a buffer of type T as float, and store a float as T.
template <dtype T>
PIPECODEC_HD float load(const void* p, uint64_t i) {
  if constexpr (T == dtype::f32) {
    return static_cast<const float*>(p)[i];
  } else if constexpr (T == dtype::f16) {
    return f16_to_f32(static_cast<const uint16_t*>(p)[i]);
  } else {
    return bf16_to_f32(static_cast<const uint16_t*>(p)[i]);
  }
}

template <dtype T>
PIPECODEC_HD void store(void* p, uint64_t i, float v) {
  if constexpr (T == dtype::f32) {
    static_cast<float*>(p)[i] = v;
  } else if constexpr (T == dtype::f16) {
    static_cast<uint16_t*>(p)[i] = f32_to_f16(v);
  } else {
    static_cast<uint16_t*>(p)[i] = f32_to_bf16(v);
  }
}

}  // namespace detail
}  // namespace pipecodec

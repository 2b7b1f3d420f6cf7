// Valid payloads to corrupt, shared by the hostile-input tests: the golden cases, looked up
// by name (tests/common/golden_cases.hpp).
#pragma once

#include <doctest/doctest.h>

#include <stdexcept>
#include <string>

#include "golden_cases.hpp"
#include "print.hpp"

namespace hostile {

constexpr const char* quant_f32 = "q4_g128_minmax_near_s32_f32_1000";  // f32 scales, minmax, 1-D
constexpr const char* quant_f16 = "q3_row_absmax_near_s16_bf16_5x77";  // f16 scales, absmax, 2-D
constexpr const char* plain_2d = "plain_f32_from_f32_3x50";

inline const golden::gcase& case_of(const char* name) {
  const golden::gcase* c = golden::find(name);
  if (c == nullptr) throw std::runtime_error(std::string("no golden case ") + name);
  return *c;
}

inline std::vector<uint8_t> payload_of(const char* name) {
  std::vector<uint8_t> p = golden::encode(case_of(name));
  REQUIRE_MESSAGE(!p.empty(), name);
  return p;
}

}  // namespace hostile

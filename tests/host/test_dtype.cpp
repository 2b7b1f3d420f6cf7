#include <doctest/doctest.h>

#include <cmath>

#include "../common/data.hpp"
#include "pipecodec/core/dtype.hpp"

using namespace pipecodec::detail;

TEST_CASE("fp16 conversion round-trips every half value and rounds to nearest even") {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = f16_to_f32(uint16_t(h));
    if (std::isnan(f)) {
      CHECK((f32_to_f16(f) & 0x7C00) == 0x7C00);
      continue;
    }
    REQUIRE(f32_to_f16(f) == h);
  }
  // Midpoints between consecutive positive halves go to the even neighbour.
  for (uint32_t h = 0; h < 0x7BFF; ++h) {
    const double a = f16_to_f32(uint16_t(h)), b = f16_to_f32(uint16_t(h + 1));
    const float mid = float((a + b) / 2);
    if (double(mid) != (a + b) / 2) continue;  // midpoint not representable in fp32
    const uint16_t expect = (h & 1) ? uint16_t(h + 1) : uint16_t(h);
    REQUIRE(f32_to_f16(mid) == expect);
  }
  CHECK(f32_to_f16(65520.0F) == 0x7C00);
  CHECK(f32_to_f16(65519.0F) == 0x7BFF);
  CHECK(f32_to_f16(1e-8F) == 0);
  CHECK(f32_to_f16(3e-8F) == 1);  // above half of the smallest subnormal
}

TEST_CASE("bf16 conversion rounds to nearest even and keeps NaN a NaN") {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const float f = bf16_to_f32(uint16_t(b));
    if (std::isnan(f)) {
      CHECK(std::isnan(bf16_to_f32(f32_to_bf16(f))));
      continue;
    }
    REQUIRE(f32_to_bf16(f) == b);
  }
  CHECK(f32_to_bf16(testdata::from_bits(0x3F808000u)) == 0x3F80);  // tie -> even
  CHECK(f32_to_bf16(testdata::from_bits(0x3F818000u)) == 0x3F82);  // tie -> even
  CHECK(f32_to_bf16(testdata::from_bits(0x3F808001u)) == 0x3F81);
  CHECK(std::isnan(bf16_to_f32(f32_to_bf16(testdata::from_bits(0x7F800001u)))));
}

// The encoder rounds scales and offsets onto the fp16 grid with integer tricks (no fp16
// conversions on its per-group path); these tests pin them to a reference built from the
// conversions, so the fast path cannot drift from "smallest/largest fp16 at or beyond f".
#include <doctest/doctest.h>

#include <initializer_list>

#include "pipecodec/core/quant_math.hpp"

using namespace pipecodec;
using namespace pipecodec::detail;

namespace {

// Nearest-even conversion, then one fp16 step towards the requested side if it overshot.
float reference_grid(float f, bool up) {
  uint16_t h = f32_to_f16(f);
  const float back = f16_to_f32(h);
  if (up && back < f) ++h;
  if (!up && back > f) --h;
  return f16_to_f32(h);
}

void check_grid(float f) {
  INFO("f = " << f);
  REQUIRE(bit_cast<uint32_t>(round_to_f16_grid(f, true)) == bit_cast<uint32_t>(reference_grid(f, true)));
  REQUIRE(bit_cast<uint32_t>(round_to_f16_grid(f, false)) == bit_cast<uint32_t>(reference_grid(f, false)));
}

}  // namespace

TEST_CASE("fp16 grid rounding matches the conversion-based reference on [0, 65504)") {
  const uint32_t top = bit_cast<uint32_t>(f16_max);
  // Every fp16 value and its fp32 neighbours (grid points, just above, just below) ...
  for (uint32_t h = 0; h < 0x7BFF; ++h) {
    const uint32_t u = bit_cast<uint32_t>(f16_to_f32(uint16_t(h)));
    for (uint32_t v : {u, u + 1u, u + 0x0FFFu, u + 0x1000u, u + 0x1001u})
      if (v < top) check_grid(bit_cast<float>(v));
    if (u > 0) check_grid(bit_cast<float>(u - 1u));
  }
  // ... and a stride through every fp32 pattern below 65504, fp32 subnormals included.
  for (uint32_t u = 0; u < top; u += 4099u) check_grid(bit_cast<float>(u));
}

TEST_CASE("fp16 offsets round down, to the canonical +0 and saturating at +-65504") {
  for (float lo : {1.0F, -1.0F, 1e-6F, -1e-6F, 3e-8F, -3e-8F, 1e-40F, -1e-40F, 0.1F, -0.1F,
                   65503.0F, -65503.0F, 70000.0F, -70000.0F, 0.0F}) {
    INFO("lo = " << lo);
    const float r = round_offset(lo, dtype::f16);
    if (lo > -f16_max && lo < f16_max) {
      CHECK(r <= lo);
      CHECK(bit_cast<uint32_t>(r) == bit_cast<uint32_t>(lo >= 0 ? reference_grid(lo, false)
                                                                 : -reference_grid(-lo, true)));
    }
    CHECK(bit_cast<uint32_t>(r) != 0x80000000u);  // never -0
  }
  CHECK(round_offset(70000.0F, dtype::f16) == f16_max);
  CHECK(round_offset(-70000.0F, dtype::f16) == -f16_max);
}

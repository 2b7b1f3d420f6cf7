// All-subnormal groups (every |x| < 2^-126): the error bound docs/FORMAT.md states for them.
// The nearest bound holds in the stored scale s, as everywhere; what differs is how far s sits
// above the exact step d, because storable scales are coarse there (fp32: multiples of 2^-141,
// fp16: of 2^-24). Held-out checks measured 0.75 d at 8 bits against a documented
// "half a step plus 2^-14 steps": these tests pin the stated bound and that it is needed.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>

#include "../common/quant_check.hpp"

using namespace pipecodec;
using testq::decode_f32;
using testq::encode;
using testq::quant_spec;

namespace {

// The exact step the encoder rounds up (docs/FORMAT.md, "Encoding"), from the group's finite
// values and its stored offset, in the encoder's own double arithmetic.
double exact_step(const float* x, uint64_t n, uint32_t bits, scale_mode sm, float offset) {
  double lo = 0, hi = 0;
  for (uint64_t i = 0; i < n; ++i) {
    lo = i == 0 || x[i] < lo ? double(x[i]) : lo;
    hi = i == 0 || x[i] > hi ? double(x[i]) : hi;
  }
  if (sm == scale_mode::minmax) return (hi - double(offset)) / double((1u << bits) - 1);
  const double a = hi > -lo ? hi : -lo;
  return bits == 1 ? 2 * a : a / double((1u << (bits - 1)) - 1);
}

// Subnormal fp32 values below 2^-(126 + shift): the group's magnitude sets d, and with it how
// much the 2^-141 (fp32) spacing of storable scales costs in steps.
std::vector<float> subnormals(size_t n, uint32_t shift, uint64_t& rng) {
  std::vector<float> x(n);
  for (float& v : x) {
    const uint64_t r = testdata::splitmix(rng);
    const uint32_t bits = uint32_t(r & (0x7FFFFFu >> shift)) | (r & (uint64_t(1) << 40) ? 0x80000000u : 0u);
    std::memcpy(&v, &bits, 4);
  }
  return x;
}

}  // namespace

TEST_CASE("all-subnormal groups: d <= s <= max_stored_scale(d), and the nearest bound in s and in d") {
  uint64_t rng = 7;
  double worst_in_steps = 0;  // fp32 scales: largest |x - x_hat| / d seen
  for (dtype sd : {dtype::f32, dtype::f16})
    for (scale_mode sm : {scale_mode::minmax, scale_mode::absmax})
      for (uint32_t bits = 1; bits <= 8; ++bits)
        for (uint32_t gsize : {32u, 96u, 256u}) {
          CAPTURE(int(sd));
          CAPTURE(int(sm));
          CAPTURE(bits);
          CAPTURE(gsize);
          const spec s = quant_spec(bits, group_kind::elements, gsize, sm, rounding::nearest, sd);
          const uint64_t groups = 24, n = groups * gsize;
          std::vector<float> x;
          for (uint64_t g = 0; g < groups; ++g) {  // shifts 0..23: magnitudes 2^-126 .. 2^-149
            const auto part = subnormals(gsize, uint32_t(g), rng);
            x.insert(x.end(), part.begin(), part.end());
          }
          const auto payload = encode(s, testdata::as_bytes(x, dtype::f32), dtype::f32, shape(n));
          const auto xhat = decode_f32(payload, shape(n));
          testq::check_nearest_bound(x, xhat, payload);
          detail::quant_payload qp;
          REQUIRE(ok(detail::parse_quant_payload(payload.data(), payload.size(), qp)));
          for (uint64_t g = 0; g < groups; ++g) {
            float sc, off;
            detail::load_group(qp, g, sc, off);
            const double d = exact_step(&x[g * gsize], gsize, bits, sm, off);
            CAPTURE(g);
            CAPTURE(d);
            CAPTURE(sc);
            REQUIRE(double(sc) >= d);
            REQUIRE(double(sc) <= detail::max_stored_scale(d, sd));
            // Hence the bound in exact steps: (1/2 + 2^-14) max_stored_scale(d) + 1.2e-7 (|x| + |o|).
            for (uint64_t i = g * gsize; i < (g + 1) * gsize; ++i) {
              const double err = std::fabs(double(x[i]) - double(xhat[i]));
              REQUIRE(err <= detail::nearest_error_bound(detail::max_stored_scale(d, sd), off, x[i]));
              if (sd == dtype::f32 && d > 0) worst_in_steps = std::fmax(worst_in_steps, err / d);
            }
          }
        }
  // The absolute term is real: in exact steps, tiny fp32 groups err far beyond half a step
  // (the old claim), which is why FORMAT.md states the bound through s.
  CHECK(worst_in_steps > 1.0);
}

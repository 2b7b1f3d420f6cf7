#include <doctest/doctest.h>

#include <cfloat>
#include <cmath>
#include <limits>

#include "../common/quant_check.hpp"

using namespace pipecodec;
using testq::check_nearest_bound;
using testq::decode_f32;
using testq::encode;
using testq::quant_spec;

TEST_CASE("nearest rounding stays within the documented bound (random specs, shapes, dtypes)") {
  uint64_t rng = 42;
  for (int trial = 0; trial < 300; ++trial) {
    const uint32_t bits = 1 + uint32_t(testdata::splitmix(rng) % 8);
    const auto gk = group_kind(1 + testdata::splitmix(rng) % 3);
    const uint32_t gsize = 32 * (1 + uint32_t(testdata::splitmix(rng) % 8));
    const auto sm = scale_mode(1 + testdata::splitmix(rng) % 2);
    const dtype sd = testdata::splitmix(rng) % 2 ? dtype::f32 : dtype::f16;
    const dtype in_t = dtype(1 + testdata::splitmix(rng) % 3);
    const uint64_t rows = 1 + testdata::splitmix(rng) % 5, cols = testdata::splitmix(rng) % 700;
    const shape shp = testdata::splitmix(rng) % 2 ? shape(rows, cols) : shape(rows * cols);
    CAPTURE(trial);
    CAPTURE(bits);
    CAPTURE(int(gk));
    CAPTURE(gsize);
    CAPTURE(int(sm));
    CAPTURE(int(sd));
    CAPTURE(int(in_t));
    CAPTURE(rows);
    CAPTURE(cols);
    const spec s = quant_spec(bits, gk, gsize, sm, rounding::nearest, sd);
    const auto xf = testdata::activations(shp.size(), trial);
    const auto in = testdata::as_bytes(xf, in_t);
    std::vector<float> x(shp.size());
    for (size_t i = 0; i < x.size(); ++i) x[i] = testdata::element(in, in_t, i);
    const auto payload = encode(s, in, in_t, shp);
    const auto xhat = decode_f32(payload, shp);
    check_nearest_bound(x, xhat, payload);

    // Every other output dtype is the fp32 decode rounded once.
    for (dtype out_t : {dtype::f16, dtype::bf16}) {
      std::vector<uint8_t> out(shp.size() * 2);
      REQUIRE(ok(host::decode(payload.data(), payload.size(), tensor_view{out.data(), out_t, shp})));
      for (size_t i = 0; i < x.size(); ++i) {
        const float want = out_t == dtype::f16 ? detail::f16_to_f32(detail::f32_to_f16(xhat[i]))
                                               : detail::bf16_to_f32(detail::f32_to_bf16(xhat[i]));
        REQUIRE(testdata::element(out, out_t, i) == want);
      }
    }
  }
}

TEST_CASE("payload size is exact and follows the documented layout") {
  const spec s = quant_spec(4, group_kind::elements, 128, scale_mode::minmax, rounding::nearest, dtype::f16);
  // 1000 elements: 8 groups (last has 104), chunks 7*4 + 4 = 32, params 8 * 2 * 2 = 32 bytes.
  CHECK(encoded_bytes(s, shape(1000)) == 64 + 32 + 32 * 4 * 4);
  const spec t = quant_spec(3, group_kind::row, 0, scale_mode::absmax, rounding::nearest, dtype::f32);
  // 3 rows of 33: each row 2 chunks (padded), 3 scales of 4 bytes -> 16 bytes.
  CHECK(encoded_bytes(t, shape(3, 33)) == 64 + 16 + 80);  // 6 chunks * 3 planes * 4 = 72 -> 80
  CHECK(encoded_bytes(s, shape(0)) == 64);
  spec bad = s;
  bad.quant.bits = 9;
  CHECK(encoded_bytes(bad, shape(10)) == 0);
  bad = s;
  bad.quant.group_size = 48;
  CHECK(encoded_bytes(bad, shape(10)) == 0);
  CHECK(encoded_bytes(s, shape(uint64_t(1) << 40, uint64_t(1) << 40)) == 0);  // overflow
}

TEST_CASE("stochastic rounding is unbiased") {
  const uint64_t n = 256;
  const auto x = testdata::uniform(n, 7);
  const auto in = testdata::as_bytes(x, dtype::f32);
  for (uint32_t bits : {1u, 2u, 4u}) {
    CAPTURE(bits);
    const spec s = quant_spec(bits, group_kind::elements, 64, scale_mode::minmax, rounding::stochastic, dtype::f32);
    const int trials = 400;
    std::vector<double> sum(n, 0.0);
    double max_scale = 0;
    bool varies = false;
    std::vector<float> first;
    for (int t = 0; t < trials; ++t) {
      const auto payload = encode(s, in, dtype::f32, shape(n), 1000 + t);
      const auto xhat = decode_f32(payload, shape(n));
      if (t == 0) first = xhat;
      else varies = varies || xhat != first;
      for (uint64_t i = 0; i < n; ++i) sum[i] += double(xhat[i]) - double(x[i]);
      detail::quant_payload qp;
      REQUIRE(ok(detail::parse_quant_payload(payload.data(), payload.size(), qp)));
      for (uint64_t g = 0; g < qp.layout.groups; ++g) {
        float sc, o;
        detail::load_group(qp, g, sc, o);
        max_scale = std::max(max_scale, double(sc));
      }
    }
    CHECK(varies);
    // Per element the error is bounded by one step with variance <= s^2/4: the mean over
    // `trials` draws has sd <= s / (2 sqrt(trials)). Allow 5 sd per element, 4 sd overall.
    const double sd = max_scale / (2 * std::sqrt(double(trials)));
    double total = 0;
    for (uint64_t i = 0; i < n; ++i) {
      REQUIRE(std::fabs(sum[i] / trials) <= 5 * sd);
      total += sum[i] / trials;
    }
    CHECK(std::fabs(total / n) <= 4 * sd / std::sqrt(double(n)));
  }
}

TEST_CASE("stochastic rounding is reproducible from the seed and independent of chunking") {
  const auto x = testdata::activations(1000, 3);
  const auto in = testdata::as_bytes(x, dtype::f32);
  const spec s = quant_spec(3, group_kind::row, 0, scale_mode::minmax, rounding::stochastic, dtype::f32);
  const auto a = encode(s, in, dtype::f32, shape(10, 100), 99);
  const auto b = encode(s, in, dtype::f32, shape(10, 100), 99);
  const auto c = encode(s, in, dtype::f32, shape(10, 100), 100);
  CHECK(a == b);
  CHECK(a != c);
}

TEST_CASE("edge cases: empty, single element, constant and zero groups") {
  for (dtype sd : {dtype::f32, dtype::f16}) {
    for (scale_mode sm : {scale_mode::minmax, scale_mode::absmax}) {
      for (uint32_t bits : {1u, 2u, 8u}) {
        CAPTURE(int(sd));
        CAPTURE(int(sm));
        CAPTURE(bits);
        const spec s = quant_spec(bits, group_kind::elements, 32, sm, rounding::nearest, sd);
        const auto empty = encode(s, {}, dtype::f32, shape(0));
        CHECK(empty.size() == 64);
        CHECK(decode_f32(empty, shape(0)).empty());

        const std::vector<float> one{0.75F};
        auto p1 = encode(s, testdata::as_bytes(one, dtype::f32), dtype::f32, shape(1));
        const float got = decode_f32(p1, shape(1))[0];
        if (sm == scale_mode::minmax) CHECK(got == 0.75F);  // min is stored exactly
        else CHECK(std::fabs(got - 0.75F) <= 0.75F * 1.001F);

        const std::vector<float> zeros(77, 0.0F);
        auto pz = encode(s, testdata::as_bytes(zeros, dtype::f32), dtype::f32, shape(77));
        const auto dz = decode_f32(pz, shape(77));
        if (!(sm == scale_mode::absmax && bits == 1)) {
          for (float v : dz) REQUIRE(v == 0.0F);
        }
        const std::vector<float> consts(70, -3.25F);
        auto pc = encode(s, testdata::as_bytes(consts, dtype::f32), dtype::f32, shape(70));
        const auto dc = decode_f32(pc, shape(70));
        if (sm == scale_mode::minmax) {
          for (float v : dc) REQUIRE(v == -3.25F);  // -3.25 is exact in fp16 too
        }
        check_nearest_bound(consts, dc, pc);
      }
    }
  }
}

TEST_CASE("extreme values: near FLT_MAX, subnormals, mixed huge signs") {
  const float big = FLT_MAX;
  for (dtype sd : {dtype::f32}) {
    for (scale_mode sm : {scale_mode::minmax, scale_mode::absmax}) {
      for (uint32_t bits = 1; bits <= 8; ++bits) {
        CAPTURE(bits);
        CAPTURE(int(sm));
        const spec s = quant_spec(bits, group_kind::elements, 32, sm, rounding::nearest, sd);
        // In-range group of huge values: the bound holds and nothing overflows.
        std::vector<float> x(64);
        for (size_t i = 0; i < 32; ++i) x[i] = big * (0.5F + float(i) / 64.0F);
        // Mixed-sign huge group: max - min exceeds FLT_MAX. Decoded values stay finite.
        for (size_t i = 32; i < 64; ++i) x[i] = (i % 2 ? big : -big) * 0.99F;
        const auto p = encode(s, testdata::as_bytes(x, dtype::f32), dtype::f32, shape(64));
        const auto d = decode_f32(p, shape(64));
        for (float v : d) REQUIRE(std::isfinite(v));
        if (sm == scale_mode::minmax && bits > 1) {
          std::vector<float> first(x.begin(), x.begin() + 32), dfirst(d.begin(), d.begin() + 32);
          auto p32 = encode(s, testdata::as_bytes(first, dtype::f32), dtype::f32, shape(32));
          check_nearest_bound(first, decode_f32(p32, shape(32)), p32);
        }
        // Subnormals: the bound holds at the bottom of the range too.
        std::vector<float> sub(96);
        for (size_t i = 0; i < sub.size(); ++i)
          sub[i] = testdata::from_bits(uint32_t(i * 0x1357u) | (i % 3 ? 0x80000000u : 0u));
        const auto ps = encode(s, testdata::as_bytes(sub, dtype::f32), dtype::f32, shape(96));
        check_nearest_bound(sub, decode_f32(ps, shape(96)), ps);
      }
    }
  }
}

TEST_CASE("non-finite inputs: ignored by statistics, NaN -> lowest code, +-Inf saturate") {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> x{1.0F, 2.0F, 3.0F, 4.0F, nan, inf, -inf, 2.5F};
  x.resize(32, 2.0F);
  const spec s = quant_spec(2, group_kind::elements, 32, scale_mode::minmax, rounding::nearest, dtype::f32);
  const auto p = encode(s, testdata::as_bytes(x, dtype::f32), dtype::f32, shape(32));
  const auto d = decode_f32(p, shape(32));
  CHECK(d[0] == 1.0F);  // min of the finite values, exact
  CHECK(d[3] == 4.0F);  // max of the finite values, exact (scale 1)
  CHECK(d[4] == 1.0F);  // NaN -> lowest code
  CHECK(d[5] == 4.0F);  // +Inf -> highest code
  CHECK(d[6] == 1.0F);  // -Inf -> lowest code
  const std::vector<float> all_nan(40, nan);
  const auto pn = encode(s, testdata::as_bytes(all_nan, dtype::f32), dtype::f32, shape(40));
  for (float v : decode_f32(pn, shape(40))) CHECK(v == 0.0F);
  // stochastic rounding handles them the same way
  spec st = s;
  st.quant.round = rounding::stochastic;
  const auto ps = encode(st, testdata::as_bytes(x, dtype::f32), dtype::f32, shape(32), 5);
  const auto ds = decode_f32(ps, shape(32));
  CHECK(ds[4] == 1.0F);
  CHECK(ds[5] == 4.0F);
  CHECK(ds[6] == 1.0F);
}

TEST_CASE("decode_accumulate adds the decoded tensor") {
  const auto x = testdata::activations(500, 11);
  const spec s = quant_spec(4, group_kind::elements, 128, scale_mode::absmax, rounding::nearest, dtype::f16);
  const auto p = encode(s, testdata::as_bytes(x, dtype::f32), dtype::f32, shape(500));
  const auto d = decode_f32(p, shape(500));
  std::vector<float> acc(500, 1.5F);
  REQUIRE(ok(host::decode_accumulate(p.data(), p.size(), tensor_view{acc.data(), dtype::f32, shape(500)})));
  for (size_t i = 0; i < acc.size(); ++i) REQUIRE(acc[i] == 1.5F + d[i]);
}

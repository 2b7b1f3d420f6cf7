// RandK: positions from (seed, flat index) only; reproducible; uniform; unbiased scaling.
#include <doctest/doctest.h>

#include <numeric>

#include "../common/print.hpp"
#include "../common/topk_check.hpp"

using namespace pipecodec;

namespace {

// Positions of a RandK payload: decode a tensor with no zeros and see what survived.
std::vector<uint8_t> kept_mask(const std::vector<uint8_t>& payload, shape shp) {
  std::vector<float> acc(shp.size(), 0.0F);
  REQUIRE(ok(host::decode_accumulate(payload.data(), payload.size(), tensor_view{acc.data(), dtype::f32, shp})));
  std::vector<uint8_t> m(shp.size());
  for (size_t i = 0; i < m.size(); ++i) m[i] = acc[i] != 0.0F;
  return m;
}

}  // namespace

TEST_CASE("randk keeps exactly k per unit, the k smallest hash words, reproducibly") {
  const shape shp(4, 1000);
  const auto x = testdata::uniform(shp.size(), 3);  // no zeros in practice; checked below
  for (size_t i = 0; i < x.size(); ++i) REQUIRE(x[i] != 0.0F);
  for (const char* text : {"randk:k=37,scope=row,seed=11", "randk:ratio=0.05,scope=tensor,seed=11"}) {
    CAPTURE_TEXT(text);
    spec s;
    REQUIRE(ok(parse_spec(text, s)));
    const bool row = s.topk.scope == topk_scope::row;
    const auto a = testk::encode(s, x.data(), dtype::f32, shp, /*seed=*/5);
    const auto b = testk::encode(s, x.data(), dtype::f32, shp, 5);
    CHECK(a == b);
    const auto c = testk::encode(s, x.data(), dtype::f32, shp, 6);
    const auto ma = kept_mask(a, shp), mc = kept_mask(c, shp);
    CHECK(ma != mc);
    // Expected positions straight from Philox: header seed = spec seed + call seed.
    const uint64_t units = row ? shp.rows : 1, m = row ? shp.cols : shp.size();
    const uint64_t k = row ? 37 : 200;
    for (uint64_t u = 0; u < units; ++u) {
      std::vector<uint64_t> idx(m);
      std::iota(idx.begin(), idx.end(), uint64_t(0));
      auto h = [&](uint64_t i) { return detail::random_block(16, detail::stream_randk, (u * m + i) >> 2).v[(u * m + i) & 3]; };
      std::sort(idx.begin(), idx.end(), [&](uint64_t p, uint64_t q) { return h(p) != h(q) ? h(p) < h(q) : p < q; });
      idx.resize(k);
      std::sort(idx.begin(), idx.end());
      uint64_t count = 0;
      for (uint64_t i = 0; i < m; ++i) count += ma[u * m + i];
      CHECK(count == k);
      for (uint64_t i : idx) REQUIRE(ma[u * m + i] == 1);
    }
    // Values only on the wire: header + fp32 values.
    CHECK(a.size() == 64 + detail::align16(4 * units * k));
    // Decoding without a workspace re-derives the same positions.
    std::vector<float> y1(shp.size()), y2(shp.size());
    auto ws = testk::workspace_for(s, shp);
    REQUIRE(ok(host::decode(a.data(), a.size(), tensor_view{y1.data(), dtype::f32, shp})));
    REQUIRE(ok(host::decode(a.data(), a.size(), tensor_view{y2.data(), dtype::f32, shp}, ws.data(), ws.size())));
    CHECK(y1 == y2);
    for (size_t i = 0; i < x.size(); ++i) REQUIRE(y1[i] == (ma[i] ? x[i] : 0.0F));
  }
}

TEST_CASE("randk is uniform and, with unbiased=1, E[decode(x)] = x (statistical: can fail)") {
  const shape shp(2, 48);
  const uint64_t k = 6, m = 48, trials = 6000;
  const auto x = testdata::activations(shp.size(), 8);
  spec s;
  REQUIRE(ok(parse_spec("randk:k=6,scope=row,unbiased=1", s)));
  std::vector<double> sum(shp.size(), 0.0), hits(shp.size(), 0.0);
  for (uint64_t t = 0; t < trials; ++t) {
    const auto payload = testk::encode(s, x.data(), dtype::f32, shp, t);
    std::vector<float> y(shp.size());
    REQUIRE(ok(host::decode(payload.data(), payload.size(), tensor_view{y.data(), dtype::f32, shp})));
    for (size_t i = 0; i < y.size(); ++i) {
      sum[i] += y[i];
      hits[i] += y[i] != 0.0F;
    }
  }
  const double p = double(k) / double(m);
  for (size_t i = 0; i < x.size(); ++i) {
    CAPTURE(i);
    if (x[i] == 0.0F) continue;
    // Inclusion frequency: binomial(trials, p); 5 sigma.
    const double sd_hits = std::sqrt(double(trials) * p * (1 - p));
    CHECK(std::fabs(hits[i] - double(trials) * p) < 5 * sd_hits);
    // Mean of x * (m/k) * Bernoulli(p): x, with sd |x| sqrt((1-p)/p / trials).
    const double mean = sum[i] / double(trials);
    const double sd = std::fabs(double(x[i])) * std::sqrt((1 - p) / p / double(trials));
    CHECK(std::fabs(mean - double(x[i])) < 5 * sd);
  }
  // Without unbiased the kept values are the inputs themselves (mean x * k / m).
  s.topk.unbiased = false;
  const auto pl = testk::encode(s, x.data(), dtype::f32, shp, 1);
  std::vector<float> y(shp.size());
  REQUIRE(ok(host::decode(pl.data(), pl.size(), tensor_view{y.data(), dtype::f32, shp})));
  for (size_t i = 0; i < y.size(); ++i) REQUIRE((y[i] == 0.0F || y[i] == x[i]));
}

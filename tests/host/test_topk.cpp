// TopK: the kept set equals a sort-based reference (ties, zeros, denormals, NaN, Inf),
// exactly k per unit, every index layout, decode error equals the dropped part.
#include <doctest/doctest.h>

#include <limits>

#include "../common/print.hpp"
#include "../common/topk_check.hpp"

using namespace pipecodec;
using testdata::splitmix;

namespace {

// Adversarial distributions, built with integer operations only.
std::vector<float> make_values(int kind, uint64_t n, uint64_t seed) {
  std::vector<float> v = testdata::activations(n, seed);
  uint64_t r = seed * 31 + 7;
  for (auto& x : v) {
    const uint64_t z = splitmix(r);
    const uint32_t sign = uint32_t(z >> 63) << 31;
    switch (kind) {
      case 1: x = testdata::uniform(1, z)[0]; break;
      case 2: x = testdata::from_bits(sign | 0x40600000u); break;                          // all +-3.5
      case 3: x = testdata::from_bits(sign | (z % 4 ? 0x3F000000u + uint32_t(z % 4) * 0x00800000u : 0)); break;  // few values
      case 4: x = z % 16 ? testdata::from_bits(sign) : x; break;                           // mostly +-0
      case 5: x = testdata::from_bits(sign | uint32_t(z >> 8) % 64u); break;              // denormals, many equal
      case 6: {
        const uint32_t sel = uint32_t(z % 16);
        if (sel == 0) x = testdata::from_bits(0x7FC00000u | uint32_t(z >> 40) % 8u);     // NaNs (several payloads)
        else if (sel == 1) x = testdata::from_bits(sign | 0x7F800000u);                  // +-Inf
        else if (sel == 2) x = testdata::from_bits(sign | 0x7F7FFFFFu);                  // +-FLT_MAX
        break;
      }
      default: break;
    }
  }
  return v;
}

}  // namespace

TEST_CASE("kept set equals the sort-based reference (random shapes, scopes, layouts, dtypes, distributions)") {
  uint64_t rng = 2024;
  for (int trial = 0; trial < 400; ++trial) {
    const int kind = int(splitmix(rng) % 7);
    const bool row = splitmix(rng) % 2;
    const uint64_t rows = 1 + splitmix(rng) % 4;
    const uint64_t cols = splitmix(rng) % 600 + (trial % 10 == 0 ? 70000 : 0);
    const shape shp = row || splitmix(rng) % 2 ? shape(rows, cols) : shape(rows * cols);
    const auto sc = row ? topk_scope::row : topk_scope::tensor;
    const uint64_t m = row ? shp.cols : shp.size();
    const auto ix = index_layout(splitmix(rng) % 4);
    const uint64_t kabs = splitmix(rng) % 3 == 0 ? 1 + splitmix(rng) % (m + 2) : 0;
    const double ratio = double(1 + splitmix(rng) % 1000) / 1000.0;
    const dtype t = dtype(1 + splitmix(rng) % 3);
    CAPTURE(trial);
    CAPTURE(kind);
    CAPTURE(row);
    CAPTURE(shp.rows);
    CAPTURE(shp.cols);
    CAPTURE(int(ix));
    CAPTURE(kabs);
    CAPTURE(ratio);
    CAPTURE(int(t));
    const spec s = testk::topk_spec(ratio, kabs, sc, ix, value_kind::f32);
    if (ix == index_layout::u16 && m > 65536) {
      CHECK(encoded_bytes(s, shp) == 0);
      continue;
    }
    const auto in = testdata::as_bytes(make_values(kind, shp.size(), trial), t);
    std::vector<float> x(shp.size());
    for (size_t i = 0; i < x.size(); ++i) x[i] = testdata::element(in, t, i);

    const auto payload = testk::encode(s, in.data(), t, shp);
    const auto pos = testk::positions_of(payload);
    const uint64_t units = row ? shp.rows : 1;
    REQUIRE(pos.size() == units);
    const uint64_t k = m == 0 ? 0 : kabs ? std::min(kabs, m) : std::max<uint64_t>(1, std::min<uint64_t>(m, uint64_t(std::floor(ratio * double(m) + 0.5))));
    std::vector<uint8_t> kept(shp.size(), 0);
    for (uint64_t u = 0; u < units; ++u) {
      REQUIRE(pos[u].size() == k);
      REQUIRE(pos[u] == testk::reference_topk(x.data() + u * m, m, k));
      for (uint64_t i : pos[u]) kept[u * m + i] = 1;
    }
    // Decode error equals the dropped part: kept elements exact, the rest zero.
    const auto y = testk::decode_f32(payload, shp);
    for (size_t i = 0; i < x.size(); ++i) {
      if (kept[i]) REQUIRE(testk::same_bits(y[i], x[i]));
      else REQUIRE(testk::same_bits(y[i], 0.0F));
    }
  }
}

TEST_CASE("NaN ranks above +-Inf, equal magnitudes keep the lower index, -0 equals +0") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x = {1.0F, -inf, nan, -2.0F, inf, 2.0F, -nan, 0.0F, -0.0F};
  const shape shp(x.size());
  auto kept = [&](uint64_t k) {
    return testk::positions_of(testk::encode(testk::topk_spec(0, k, topk_scope::tensor, index_layout::u32,
                                                              value_kind::f32),
                                             x.data(), dtype::f32, shp))[0];
  };
  CHECK(kept(1) == std::vector<uint64_t>{2});
  CHECK(kept(2) == std::vector<uint64_t>{2, 6});
  CHECK(kept(3) == std::vector<uint64_t>{1, 2, 6});
  CHECK(kept(5) == std::vector<uint64_t>{1, 2, 3, 4, 6});
  CHECK(kept(8) == std::vector<uint64_t>{0, 1, 2, 3, 4, 5, 6, 7});
}

TEST_CASE("k rule: nearest of ratio * unit_len, clamped to [1, unit_len]; absolute k clamped") {
  auto k_of = [](double ratio, uint64_t kabs, uint64_t m) {
    uint64_t k = 0;
    topk_params t;
    t.ratio = ratio;
    t.k = kabs;
    REQUIRE(detail::topk_k_for(t, m, k));
    return k;
  };
  CHECK(k_of(0.1, 0, 30) == 3);   // 0.1 * 30 is 3.0000000000000004 in double: not 4
  CHECK(k_of(0.1, 0, 25) == 3);   // 2.5 rounds up
  CHECK(k_of(0.1, 0, 24) == 2);
  CHECK(k_of(0.001, 0, 10) == 1);
  CHECK(k_of(1.0, 0, 7) == 7);
  CHECK(k_of(0.5, 0, 0) == 0);
  CHECK(k_of(0.5, 9, 4) == 4);
  uint64_t k = 0;
  topk_params bad;
  bad.ratio = 0.0;
  CHECK_FALSE(detail::topk_k_for(bad, 10, k));
  bad.ratio = std::numeric_limits<double>::quiet_NaN();
  CHECK_FALSE(detail::topk_k_for(bad, 10, k));
  spec s = testk::topk_spec(1.5, 0, topk_scope::tensor, index_layout::automatic, value_kind::f32);
  CHECK(encoded_bytes(s, shape(100)) == 0);
}

TEST_CASE("payload sizes are exact; index=auto picks the smallest layout, crossover at kept/n = 1/32") {
  using testk::topk_spec;
  const auto A = index_layout::automatic;
  // Tensor scope, n = 2^17 (too long for u16): u32 = 4 * kept bytes vs bitmap = n / 8.
  const shape big(uint64_t(1) << 17);
  CHECK(encoded_bytes(topk_spec(0, 4096, topk_scope::tensor, A, value_kind::f32), big) == 64 + 16384 + 16384);
  detail::topk_desc d;
  REQUIRE(ok(detail::resolve_topk(topk_spec(0, 4096, topk_scope::tensor, A, value_kind::f32), big, 0, d)));
  CHECK(d.index == index_layout::u32);  // tie at exactly 1/32 goes to u32
  REQUIRE(ok(detail::resolve_topk(topk_spec(0, 4097, topk_scope::tensor, A, value_kind::f32), big, 0, d)));
  CHECK(d.index == index_layout::bitmap);
  CHECK(encoded_bytes(topk_spec(0, 4097, topk_scope::tensor, A, value_kind::f32), big) == 64 + 16384 + detail::align16(4097 * 4));
  // Row scope, 8 x 1000: u16 row-local fits; u16 = 2 * kept vs bitmap = n / 8: crossover 1/16.
  const shape rs(8, 1000);
  REQUIRE(ok(detail::resolve_topk(topk_spec(0, 62, topk_scope::row, A, value_kind::f16), rs, 0, d)));
  CHECK(d.index == index_layout::u16);
  CHECK(encoded_bytes(topk_spec(0, 62, topk_scope::row, A, value_kind::f16), rs) == 64 + detail::align16(2 * 496) * 2);
  REQUIRE(ok(detail::resolve_topk(topk_spec(0, 63, topk_scope::row, A, value_kind::f16), rs, 0, d)));
  CHECK(d.index == index_layout::u16);  // 1008 bytes either way once aligned: tie goes to u16
  REQUIRE(ok(detail::resolve_topk(topk_spec(0, 64, topk_scope::row, A, value_kind::f16), rs, 0, d)));
  CHECK(d.index == index_layout::bitmap);
  CHECK(encoded_bytes(topk_spec(0, 64, topk_scope::row, A, value_kind::bf16), rs) == 64 + 1008 + 1024);
  // Explicit layouts that cannot hold the positions are refused.
  CHECK(encoded_bytes(topk_spec(0, 5, topk_scope::row, index_layout::u16, value_kind::f32), shape(2, 65537)) == 0);
  CHECK(encoded_bytes(topk_spec(0, 5, topk_scope::row, index_layout::u16, value_kind::f32), shape(2, 65536)) ==
        64 + 32 + 48);
  CHECK(encoded_bytes(topk_spec(0, 5, topk_scope::tensor, index_layout::automatic, value_kind::f32), shape(0)) == 64);
  // Every actual payload has the size encoded_bytes announced (checked by testk::encode).
  std::vector<float> x(8000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i * 37 % 101) - 50);
  for (auto ix : {index_layout::u32, index_layout::u16, index_layout::bitmap, A})
    for (auto v : {value_kind::f32, value_kind::f16, value_kind::bf16})
      (void)testk::encode(topk_spec(0.05, 0, topk_scope::row, ix, v), x.data(), dtype::f32, rs);
}

TEST_CASE("fp32 / fp16 / bf16 values are the kept values (rounded once); decode_accumulate adds at kept positions only") {
  const shape shp(5, 300);
  const auto x = testdata::activations(shp.size(), 9);
  for (auto v : {value_kind::f32, value_kind::f16, value_kind::bf16}) {
    const spec s = testk::topk_spec(0.1, 0, topk_scope::row, index_layout::automatic, v);
    const auto payload = testk::encode(s, x.data(), dtype::f32, shp);
    const auto pos = testk::positions_of(payload);
    std::vector<float> acc(shp.size());
    for (size_t i = 0; i < acc.size(); ++i) acc[i] = float(i % 7) - 3.0F;
    const auto before = acc;
    REQUIRE(ok(host::decode_accumulate(payload.data(), payload.size(), tensor_view{acc.data(), dtype::f32, shp})));
    std::vector<uint8_t> kept(shp.size(), 0);
    for (uint64_t u = 0; u < shp.rows; ++u)
      for (uint64_t i : pos[u]) kept[u * shp.cols + i] = 1;
    for (size_t i = 0; i < x.size(); ++i) {
      const float r = v == value_kind::f32   ? x[i]
                      : v == value_kind::f16 ? detail::f16_to_f32(detail::f32_to_f16(x[i]))
                                             : detail::bf16_to_f32(detail::f32_to_bf16(x[i]));
      REQUIRE(testk::same_bits(acc[i], kept[i] ? before[i] + r : before[i]));
    }
  }
}

TEST_CASE("quantized values decode exactly like a quantization payload of the kept values") {
  uint64_t rng = 5;
  for (int trial = 0; trial < 40; ++trial) {
    const bool row = trial % 2;
    const shape shp(1 + splitmix(rng) % 4, 1 + splitmix(rng) % 900);
    spec s = testk::topk_spec(double(1 + splitmix(rng) % 300) / 1000.0, 0, row ? topk_scope::row : topk_scope::tensor,
                              index_layout::automatic, value_kind::quant);
    s.topk.vquant.bits = uint8_t(1 + splitmix(rng) % 8);
    s.topk.vquant.group = group_kind(1 + splitmix(rng) % 3);
    s.topk.vquant.group_size = 32 * uint32_t(1 + splitmix(rng) % 4);
    s.topk.vquant.scale = scale_mode(1 + splitmix(rng) % 2);
    s.topk.vquant.round = rounding(1 + splitmix(rng) % 2);
    s.topk.vquant.scale_dtype = splitmix(rng) % 2 ? dtype::f32 : dtype::f16;
    CAPTURE(trial);
    const auto x = testdata::activations(shp.size(), 100 + trial);
    const auto payload = testk::encode(s, x.data(), dtype::f32, shp, /*seed=*/trial);
    const auto pos = testk::positions_of(payload);
    // Gather the kept values and quantize them with the quantization codec itself.
    const uint64_t units = row ? shp.rows : 1, m = row ? shp.cols : shp.size();
    std::vector<float> kept;
    for (uint64_t u = 0; u < units; ++u)
      for (uint64_t i : pos[u]) kept.push_back(x[u * m + i]);
    const uint64_t k = pos[0].size();
    const shape vs = row ? shape(units, k) : shape(k);
    spec q;
    q.codec = codec_id::quant;
    q.quant = s.topk.vquant;
    std::vector<uint8_t> qp(encoded_bytes(q, vs));
    REQUIRE(ok(host::encode(q, const_tensor_view{kept.data(), dtype::f32, vs}, qp.data(), qp.size(), nullptr, 0,
                            uint64_t(trial))));
    std::vector<float> qv(kept.size());
    REQUIRE(ok(host::decode(qp.data(), qp.size(), tensor_view{qv.data(), dtype::f32, vs})));
    // The values section is the quantization payload's sections, byte for byte.
    REQUIRE(payload.size() >= qp.size() - 64);
    CHECK(std::equal(qp.begin() + 64, qp.end(), payload.end() - long(qp.size() - 64)));
    const auto y = testk::decode_f32(payload, shp);
    size_t e = 0;
    for (uint64_t u = 0; u < units; ++u)
      for (uint64_t i : pos[u]) REQUIRE(testk::same_bits(y[u * m + i], qv[e++]));
  }
}

TEST_CASE("spec strings for topk and randk round-trip and encode") {
  for (const char* text : {"topk:ratio=0.1,scope=row,index=auto,values=fp16", "topk:k=3,index=bitmap,values=quant,bits=4,group=row",
                           "randk:ratio=0.1,seed=7", "randk:k=5,scope=row,unbiased=1,values=bf16",
                           "topk:ratio=0.2,scope=row,values=fp32,mask=shared"}) {
    CAPTURE_TEXT(text);
    spec s;
    REQUIRE(ok(parse_spec(text, s)));
    spec back;
    REQUIRE(ok(parse_spec(to_string(s), back)));
    CHECK(to_string(back) == to_string(s));
    CHECK(encoded_bytes(s, shape(4, 64)) > 64);
    CHECK(workspace_bytes(s, shape(4, 64)) > 0);
  }
}

TEST_CASE("encode arguments: workspace of any alignment, too small, capacity, aliasing") {
  const shape shp(4, 300);
  const auto x = testdata::activations(shp.size(), 12);
  spec s = testk::topk_spec(0.1, 0, topk_scope::row, index_layout::automatic, value_kind::quant);
  const size_t cap = encoded_bytes(s, shp), wsb = workspace_bytes(s, shp);
  const auto want = testk::encode(s, x.data(), dtype::f32, shp);
  std::vector<uint8_t> ws(wsb + 8), payload(cap);
  const const_tensor_view in{x.data(), dtype::f32, shp};
  for (size_t off = 1; off < 8; off += 3) {  // misaligned workspaces give the same bytes
    std::fill(payload.begin(), payload.end(), 0xAB);
    REQUIRE(ok(host::encode(s, in, payload.data(), cap, ws.data() + off, wsb)));
    CHECK(payload == want);
  }
  CHECK(host::encode(s, in, payload.data(), cap, ws.data(), wsb - 1) == status::workspace_too_small);
  CHECK(host::encode(s, in, payload.data(), cap - 1, ws.data(), wsb) == status::buffer_too_small);
  CHECK(host::encode(s, in, payload.data(), cap, payload.data(), wsb) == status::aliasing);
  CHECK(host::encode(s, const_tensor_view{nullptr, dtype::f32, shp}, payload.data(), cap, ws.data(), wsb) ==
        status::invalid_argument);
  spec bad = s;
  bad.topk.ratio = 2.0;
  CHECK(host::encode(bad, in, payload.data(), cap, ws.data(), wsb) == status::invalid_spec);
  bad = s;
  bad.topk.index = index_layout::u16;
  CHECK(host::encode(bad, const_tensor_view{x.data(), dtype::f32, shape(1, 70000)}, payload.data(), cap, ws.data(),
                     wsb) == status::invalid_shape);
}

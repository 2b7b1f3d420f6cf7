// Limits: sizes above 2^32 elements (64-bit size math, checked without allocating) and
// extreme input values (NaN, Inf, +-FLT_MAX, subnormals) through every quantization spec,
// with the behaviour documented in docs/ERRORS.md.
#include <doctest/doctest.h>

#include <cmath>

#include "../common/hostile.hpp"
#include "../common/print.hpp"

using namespace pipecodec;
using hostile::payload_of;
using hostile::quant_f32;

namespace {

__extension__ typedef unsigned __int128 u128;

// Independent 128-bit arithmetic for the documented quant layout (docs/FORMAT.md).
u128 quant_total_ref(u128 n, u128 group, unsigned bits, unsigned sbytes, bool minmax) {
  if (n == 0) return 64;
  auto cdiv = [](u128 a, u128 b) { return (a + b - 1) / b; };
  auto a16 = [](u128 a) { return (a + 15) / 16 * 16; };
  const u128 groups = cdiv(n, group);
  const u128 chunks = (groups - 1) * cdiv(group, 32) + cdiv(n - (groups - 1) * group, 32);
  return 64 + a16(groups * sbytes * (minmax ? 2 : 1)) + a16(chunks * bits * 4);
}

}  // namespace

TEST_CASE("sizes above 2^32 elements use 64-bit math and never allocate") {
  const uint64_t two32 = uint64_t(1) << 32;
  const std::vector<shape> shapes = {shape(two32 - 1), shape(two32), shape(two32 + 1), shape(two32 + 33),
                                     shape(3, two32 + 5), shape(two32 + 7, 3), shape(uint64_t(1) << 40),
                                     shape(max_elements), shape(uint64_t(1) << 25, uint64_t(1) << 25)};
  for (const shape& shp : shapes) {
    CAPTURE(shp.rows);
    CAPTURE(shp.cols);
    for (uint32_t bits : {1u, 3u, 8u}) {
      for (const char* g : {"32", "128", "row", "tensor"}) {
        spec s;
        REQUIRE(ok(parse_spec(std::string("quant:bits=") + std::to_string(bits) + ",group=" + g + ",scale_dtype=fp16", s)));
        const uint64_t group = detail::effective_group_len(s.quant, shp);
        CHECK(encoded_bytes(s, shp) == uint64_t(quant_total_ref(shp.size(), group, bits, 2, true)));
      }
    }
    spec pl;
    pl.codec = codec_id::plain;
    pl.plain.wire = dtype::bf16;
    CHECK(encoded_bytes(pl, shp) == 64 + (shp.size() * 2 + 15) / 16 * 16);
  }
  // Layout indices of the last group of a tensor longer than 2^32.
  detail::quant_layout L;
  quant_params q;
  q.group_size = 96;
  REQUIRE(detail::make_quant_layout(q, shape(two32 + 100), L));
  CHECK(L.groups == (two32 + 100 + 95) / 96);
  CHECK(L.group_begin(L.groups - 1) == (L.groups - 1) * 96);
  CHECK(L.group_size(L.groups - 1) == two32 + 100 - (L.groups - 1) * 96);
  CHECK(L.group_chunk(L.groups - 1) == (L.groups - 1) * 3);

  // Too large to describe: encoded_bytes is 0 and encode says size_overflow.
  const float dummy[4] = {0, 0, 0, 0};
  uint8_t small[64];
  spec s;
  for (const shape& huge : {shape(max_elements + 1), shape(uint64_t(1) << 33, uint64_t(1) << 33),
                            shape(~uint64_t(0), 2)}) {
    CHECK(encoded_bytes(s, huge) == 0);
    CHECK(host::encode(s, const_tensor_view{dummy, dtype::f32, huge}, small, sizeof small) == status::size_overflow);
  }
  // Large but valid: the capacity check fires before any element is read.
  CHECK(host::encode(s, const_tensor_view{dummy, dtype::f32, shape(two32 + 1)}, small, sizeof small) ==
        status::buffer_too_small);
  // A header announcing 2^32+1 elements with the matching total size, in a short buffer:
  // truncated, decided from the header alone.
  std::vector<uint8_t> p = payload_of(quant_f32);
  p.resize(4096);
  const uint64_t total = encoded_bytes(s, shape(two32 + 1));
  detail::put_u64(p.data() + detail::off_cols, two32 + 1);
  detail::put_u64(p.data() + detail::off_total, total);
  detail::put_u64(p.data() + detail::off_params + 8, 128);
  float out[4];
  CHECK(host::decode(p.data(), p.size(), tensor_view{out, dtype::f32, shape(two32 + 1)}) == status::truncated);
  // ... and when the declared total also lies about the size, size_mismatch.
  detail::put_u64(p.data() + detail::off_total, p.size());
  CHECK(host::decode(p.data(), p.size(), tensor_view{out, dtype::f32, shape(two32 + 1)}) == status::size_mismatch);
}

TEST_CASE("extreme values: every quant spec decodes hostile inputs to finite values as documented") {
  const auto x = testdata::extreme(700, 77);
  size_t checked = 0;
  for (uint32_t bits = 1; bits <= 8; ++bits) {
    for (const char* rest : {",scale=minmax", ",scale=absmax"}) {
      for (const char* sd : {",scale_dtype=fp32", ",scale_dtype=fp16"}) {
        for (const char* rnd : {",round=nearest", ",round=stochastic"}) {
          for (const char* g : {",group=32", ",group=row"}) {
            const std::string text = "quant:bits=" + std::to_string(bits) + g + rest + sd + rnd;
            CAPTURE_TEXT(text);
            spec s;
            REQUIRE(ok(parse_spec(text, s)));
            for (dtype t : {dtype::f32, dtype::f16, dtype::bf16}) {
              const auto in = testdata::as_bytes(x, t);
              const shape shp(7, 100);
              std::vector<uint8_t> p(encoded_bytes(s, shp));
              REQUIRE(ok(host::encode(s, const_tensor_view{in.data(), t, shp}, p.data(), p.size(), nullptr, 0, 3)));
              std::vector<float> y(shp.size());
              REQUIRE(ok(host::decode(p.data(), p.size(), tensor_view{y.data(), dtype::f32, shp})));
              detail::quant_payload qp;
              REQUIRE(ok(detail::parse_quant_payload(p.data(), p.size(), qp)));
              const auto c = detail::consts_for(bits, s.quant.scale);
              for (uint64_t g2 = 0; g2 < qp.layout.groups; ++g2) {
                float sc, off;
                detail::load_group(qp, g2, sc, off);
                const uint32_t lo = s.quant.scale == scale_mode::absmax && bits > 1 ? 1u : 0u;
                const float v_lo = detail::dequantize(lo, sc, off, c.zero);
                const float v_hi = detail::dequantize((1u << bits) - 1u, sc, off, c.zero);
                for (uint64_t i = qp.layout.group_begin(g2); i < qp.layout.group_begin(g2) + qp.layout.group_size(g2); ++i) {
                  const float xi = testdata::element(in, t, i);
                  REQUIRE(std::isfinite(y[i]));
                  if (std::isnan(xi) || xi == -INFINITY) REQUIRE(y[i] == v_lo);
                  if (xi == INFINITY) REQUIRE(y[i] == v_hi);
                  ++checked;
                }
              }
            }
          }
        }
      }
    }
  }
  CHECK(checked == 8 * 2 * 2 * 2 * 2 * 3 * 700);
}

TEST_CASE("dimensions beyond 2^50 are refused even for empty tensors; empty RandK rows select nothing") {
  spec s;
  REQUIRE(ok(parse_spec("randk:k=3,scope=row", s)));
  CHECK(encoded_bytes(s, shape(uint64_t(1) << 51, 0)) == 0);
  std::vector<uint8_t> p(encoded_bytes(s, shape(2, 0))), ws(workspace_bytes(s, shape(2, 0)) + 16);
  size_t len = 0;
  REQUIRE(ok(host::encode(s, const_tensor_view{nullptr, dtype::f32, shape(2, 0)}, p.data(), p.size(), ws.data(),
                          ws.size(), 1, &len)));
  // 2^40 empty rows: decoded at once (it used to loop over every row); 2^61 rows: refused (the
  // sample-id section's 8 bytes per row would wrap).
  detail::put_u64(p.data() + detail::off_rows, uint64_t(1) << 40);
  CHECK(ok(host::decode(p.data(), len, tensor_view{nullptr, dtype::f32, shape(uint64_t(1) << 40, 0)})));
  detail::put_u64(p.data() + detail::off_rows, uint64_t(1) << 61);
  CHECK(host::decode(p.data(), len, tensor_view{nullptr, dtype::f32, shape(uint64_t(1) << 61, 0)}) ==
        status::invalid_header);
}

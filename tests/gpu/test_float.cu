// fp8 and mx codecs on the GPU against the host backend: payload bytes, decodes and
// accumulating decodes bit for bit, every dtype, odd shapes, non-finite inputs, launch modes
// and hostile payloads.
#include <doctest/doctest.h>

#include <cfloat>
#include <limits>

#include "../common/backend_checks.hpp"
#include "../common/spec_text.hpp"
#include "gpu_backend.hpp"

using namespace pipecodec;
using testg::quick;
using testg::sized;

namespace {

const char* const float_specs[] = {
    "fp8",          "fp8:format=e5m2,group=32,scale_dtype=fp16", "fp8:group=row,round=stochastic",
    "fp8:group=tensor,format=e5m2",                "mx:format=fp8_e4m3",  "mx:format=fp8_e5m2",
    "mx:format=fp6_e3m2",                          "mx:format=fp6_e2m3",  "mx:format=fp4_e2m1",
    "mx:format=int8",                              "mx:format=fp4_e2m1,round=stochastic"};

}  // namespace

TEST_CASE("fp8/mx: GPU payloads and decodes equal the host backend (sweep)") {
  testg::gpu_backend b;
  uint64_t pick = 0;
  for (const char* text : float_specs)
    for (dtype in_t : {dtype::f32, dtype::f16, dtype::bf16})
      for (const shape& shp : {shape(0), shape(1), shape(7), shape(3, 45), shape(2, 1001), shape(4, 96)}) {
        if (quick() && ++pick % 4 != 0) continue;
        CAPTURE(text);
        CAPTURE(int(in_t));
        CAPTURE(shp.rows);
        CAPTURE(shp.cols);
        testb::check_matches_host(b, testspec::parse(text), in_t, shp, 5, {dtype::f32, dtype::f16, dtype::bf16});
      }
}

TEST_CASE("fp8/mx: large tensors (2^20 + 3 on a GPU, 2^15 + 3 emulated): many tiles per group, atomics") {
  testg::gpu_backend b;
  const uint64_t n = sized((1u << 20) + 3, (1u << 15) + 3);
  for (const char* text : {"fp8:group=tensor", "fp8:group=4096,round=stochastic", "mx:format=fp4_e2m1"})
    testb::check_matches_host(b, testspec::parse(text), dtype::f32, shape(n), 2, {dtype::f32});
}

TEST_CASE("fp8/mx: non-finite, huge and subnormal inputs equal the host backend") {
  testg::gpu_backend b;
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> x;
  for (int i = 0; i < 32; ++i) x.push_back(i % 2 ? FLT_MAX * (0.5F + float(i) / 64.0F) : -FLT_MAX * 0.99F);
  for (int i = 0; i < 40; ++i) x.push_back(testdata::from_bits(uint32_t(i * 0x1357u) | (i % 3 ? 0x80000000u : 0u)));
  for (float v : {nan, inf, -inf, 1.0F, -0.0F, 0.0F, 65520.0F, -70000.0F, 1e-40F, nan}) x.push_back(v);
  for (int i = 0; i < 33; ++i) x.push_back(i % 2 ? -0.0F : 0.0F);
  for (int i = 0; i < 40; ++i) x.push_back(float(i) * 1e-3F);
  for (dtype in_t : {dtype::f32, dtype::f16, dtype::bf16}) {
    const auto in = testdata::as_bytes(x, in_t);
    for (const char* text : float_specs) {
      CAPTURE(text);
      CAPTURE(int(in_t));
      testb::check_matches_host(b, testspec::parse(text), in, in_t, shape(x.size()), 9, {dtype::f32, dtype::f16});
    }
  }
}

TEST_CASE("fp8/mx: default stream, CUDA graph capture, unaligned payload and workspace") {
  for (testg::launch_mode mode : {testg::launch_mode::stream, testg::launch_mode::default_stream,
                                  testg::launch_mode::graph}) {
    for (size_t off : {size_t(0), size_t(1), size_t(3)}) {
      if (quick() && off > 1) continue;
      testg::gpu_backend b;
      b.mode = mode;
      b.payload_offset = off;
      b.workspace_offset = off;
      CAPTURE(int(mode));
      CAPTURE(off);
      for (const char* text : {"fp8:scale_dtype=fp16,round=stochastic", "mx:format=fp6_e3m2"})
        testb::check_matches_host(b, testspec::parse(text), dtype::bf16, shape(3, 333), 77, {dtype::f32, dtype::bf16});
    }
  }
}

TEST_CASE("fp8/mx: hostile payloads are rejected with the host's status, output untouched") {
  testg::gpu_backend b;
  for (const char* text : {"fp8:group=32", "fp8:group=row,scale_dtype=fp16", "mx:format=fp8_e4m3", "mx:format=fp4_e2m1"}) {
    CAPTURE(text);
    const spec s = testspec::parse(text);
    const shape shp(2, 45);
    std::vector<uint8_t> good;
    REQUIRE(ok(testb::host_encode(s, testdata::as_bytes(testdata::uniform(90, 1), dtype::f32), dtype::f32, shp, 0,
                                  good)));
    detail::float_payload fp;
    REQUIRE(ok(detail::parse_float_payload(good.data(), good.size(), fp)));
    const size_t at[] = {detail::off_params + 0,          detail::off_params + 1,
                         detail::off_params + 2,          detail::off_params + 8,
                         detail::off_params + 16,         size_t(fp.layout.scales_offset),
                         size_t(fp.layout.scales_offset + fp.layout.scale_bytes - 1),
                         size_t(fp.layout.codes_offset - 1),  // scale padding (if any) or zero
                         size_t(fp.layout.codes_offset + fp.layout.units * fp.layout.unit_bytes() - 1),
                         good.size() - 1};
    for (size_t a : at)
      for (uint8_t v : {uint8_t(0xFF), uint8_t(0x80)}) {
        std::vector<uint8_t> bad = good;
        bad[a] ^= v;
        std::vector<uint8_t> out(90 * 4);
        if (ok(testb::host_decode(bad, bad.size(), dtype::f32, shp, out, false))) continue;
        CAPTURE(a);
        testb::check_rejects_like_host(b, bad, bad.size(), dtype::f32, shp);
      }
    testb::check_rejects_like_host(b, good, good.size() - 1, dtype::f32, shp);
  }
}

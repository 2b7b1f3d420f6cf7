// The lowrank codec on the GPU against the host backend: payload bytes, decoded and
// accumulated tensors for ranks 1..32, sums across chunks and across the Gram-Schmidt
// block's warps, non-finite inputs, warm starts (Q kept as state) and hostile payloads.
#include <doctest/doctest.h>

#include <cstring>
#include <limits>

#include "../common/spec_text.hpp"
#include "launch_checks.hpp"

using namespace pipecodec;

TEST_CASE("lowrank: GPU payloads and decodes equal the host backend") {
  testg::gpu_backend b;
  struct lr_case {
    const char* spec;
    shape shp;
  };
  // Rows past one chunk (1030) and past the Gram-Schmidt block's 8 warps of chunks (8300);
  // columns past one chunk (1100); a rank above both dimensions.
  const lr_case cases[] = {{"lowrank:rank=1", shape(0)},          {"lowrank:rank=2", shape(1)},
                           {"lowrank:rank=3", shape(5, 77)},      {"lowrank:rank=4", shape(1030, 6)},
                           {"lowrank:rank=2", shape(3, 1100)},    {"lowrank:rank=2", shape(8300, 2)},
                           {"lowrank:rank=32", shape(7, 40)},     {"lowrank:rank=5", shape(0, 4)}};
  uint64_t seed = 90;
  for (const lr_case& c : cases)
    for (dtype in_t : {dtype::f32, dtype::bf16}) {
      CAPTURE(c.spec);
      CAPTURE(c.shp.rows);
      CAPTURE(c.shp.cols);
      CAPTURE(int(in_t));
      testb::check_matches_host(b, testspec::parse(c.spec), in_t, c.shp, ++seed, {dtype::f32, dtype::f16});
    }
  std::vector<float> x = testdata::extreme(12 * 25, 4);
  x[7] = std::numeric_limits<float>::infinity();
  testb::check_matches_host(b, testspec::parse("lowrank:rank=3"), testdata::as_bytes(x, dtype::f32), dtype::f32,
                            shape(12, 25), 5, {dtype::f32});
  testg::check_matches_host_every_mode(testspec::parse("lowrank:rank=4"), dtype::f16, shape(9, 70), 3, {dtype::bf16});
}

TEST_CASE("lowrank: warm starts on the GPU follow the host's, step after step") {
  const spec s = testspec::parse("lowrank:rank=3");
  const shape shp(40, 50);
  testg::gpu_backend b;
  std::vector<float> qh(50 * 3, 0.0F), qd;
  for (uint64_t j = 0; j < 50; ++j) qh[j * 3 + 2] = float(j % 3);  // columns 0, 1 cold, 2 warm
  qd = qh;
  for (uint64_t step = 0; step < 3; ++step) {
    CAPTURE(step);
    const std::vector<uint8_t> in = testdata::as_bytes(testdata::activations(shp.size(), 30 + step), dtype::f32);
    std::vector<uint8_t> want(encoded_bytes(s, shp)), ws(workspace_bytes(s, shp)), got;
    REQUIRE(host::lowrank_encode(s, {in.data(), dtype::f32, shp}, {qh.data(), dtype::f32, shape(50, 3)}, want.data(),
                                 want.size(), ws.data(), ws.size(), step) == status::success);
    REQUIRE(b.lowrank_encode(s, in, dtype::f32, shp, step, qd, got) == status::success);
    CHECK(got == want);
    CHECK(std::memcmp(qd.data(), qh.data(), qh.size() * 4) == 0);
  }
}

TEST_CASE("lowrank: hostile payloads get the host's status on the GPU, output untouched") {
  const spec s = testspec::parse("lowrank:rank=2");
  const shape shp(5, 6);  // P at 64 (40 bytes + 8 padding), Q at 112
  std::vector<uint8_t> good;
  REQUIRE(ok(testb::host_encode(s, testdata::as_bytes(testdata::activations(30, 2), dtype::f32), dtype::f32, shp, 1, good)));
  testg::gpu_backend b;
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  auto with = [&](auto f) {
    std::vector<uint8_t> p = good;
    f(p);
    return p;
  };
  const std::vector<std::vector<uint8_t>> bad = {
      with([](std::vector<uint8_t>& p) { p[40] = 0; }),
      with([](std::vector<uint8_t>& p) { p[47] = 1; }),
      with([](std::vector<uint8_t>& p) { p[40] = 3; }),
      with([&](std::vector<uint8_t>& p) { std::memcpy(p.data() + 64 + 12, &nan, 4); }),
      with([&](std::vector<uint8_t>& p) { std::memcpy(p.data() + 112 + 44, &inf, 4); }),
      with([](std::vector<uint8_t>& p) { p[64 + 44] = 1; }),
  };
  for (size_t k = 0; k < bad.size(); ++k) {
    CAPTURE(k);
    testb::check_rejects_like_host(b, bad[k], bad[k].size(), dtype::f32, shp);
  }
  testb::check_rejects_like_host(b, good, good.size(), dtype::f32, shape(6, 5));
}

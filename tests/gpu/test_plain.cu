// The plain codec on the GPU against the host backend, every (input, wire, output) dtype.
#include <doctest/doctest.h>

#include "../common/backend_checks.hpp"
#include "gpu_backend.hpp"

using namespace pipecodec;

TEST_CASE("plain: every dtype combination and odd sizes equal the host backend") {
  testg::gpu_backend b;
  for (size_t off : {size_t(0), size_t(1)}) {
    if (testg::quick() && off == 1) continue;
    b.payload_offset = off;
    for (dtype in_t : {dtype::f32, dtype::f16, dtype::bf16})
      for (dtype wire : {dtype::f32, dtype::f16, dtype::bf16})
        for (const shape& shp : {shape(0), shape(1), shape(7), shape(3, 1001), shape(70001)}) {
          CAPTURE(off);
          CAPTURE(int(in_t));
          CAPTURE(int(wire));
          CAPTURE(shp.size());
          spec s;
          s.codec = codec_id::plain;
          s.plain.wire = wire;
          testb::check_matches_host(b, s, in_t, shp, 11, {dtype::f32, dtype::f16, dtype::bf16});
        }
  }
}

TEST_CASE("plain: raw bits travel unchanged when the wire dtype is the input dtype (NaN payloads too)") {
  testg::gpu_backend b;
  const std::vector<uint32_t> words{0x7FA00001u, 0xFFC00002u, 0x7F800000u, 0x00000001u, 0x80000000u, 0x3F800000u};
  std::vector<uint8_t> in(words.size() * 4);
  std::memcpy(in.data(), words.data(), in.size());
  spec s;
  s.codec = codec_id::plain;
  s.plain.wire = dtype::f32;
  std::vector<uint8_t> want, got;
  REQUIRE(ok(testb::host_encode(s, in, dtype::f32, shape(words.size()), 0, want)));
  REQUIRE(ok(b.encode(s, in, dtype::f32, shape(words.size()), 0, got)));
  CHECK(want == got);
  std::vector<uint8_t> out(in.size(), 0);
  REQUIRE(ok(b.decode(got, got.size(), dtype::f32, shape(words.size()), out, false)));
  CHECK(out == in);
}

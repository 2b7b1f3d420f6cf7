// Rejections: corrupt payloads are refused on the device with the host backend's status and
// leave the output untouched; bad arguments are refused on the host before any launch.
#include <doctest/doctest.h>

#include <cmath>

#include "../common/backend_checks.hpp"
#include "../common/print.hpp"
#include "gpu_backend.hpp"

using namespace pipecodec;

namespace {

std::vector<uint8_t> valid_payload(const spec& s, shape shp) {
  const auto in = testdata::as_bytes(testdata::activations(shp.size(), 9), dtype::f32);
  std::vector<uint8_t> p;
  REQUIRE(ok(testb::host_encode(s, in, dtype::f32, shp, 4, p)));
  return p;
}

void put32(std::vector<uint8_t>& p, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[at + i] = uint8_t(v >> (8 * i));
}

}  // namespace

TEST_CASE("corrupt quantization payloads: device status equals host status, output untouched") {
  testg::gpu_backend b;
  for (dtype sd : {dtype::f32, dtype::f16}) {
    CAPTURE(int(sd));
    spec s;
    s.codec = codec_id::quant;
    s.quant.bits = 4;
    s.quant.group_size = 64;
    s.quant.scale_dtype = sd;
    const shape shp(10, 50);
    const auto good = valid_payload(s, shp);
    const size_t scales = 64, groups = 8;  // 500 elements in groups of 64
    struct mutation {
      const char* what;
      std::vector<uint8_t> bytes;
      size_t len;
    };
    std::vector<mutation> ms;
    auto add = [&](const char* what, auto&& edit, size_t len) {
      std::vector<uint8_t> p = good;
      edit(p);
      ms.push_back({what, p, len});
    };
    auto none = [](std::vector<uint8_t>&) {};
    add("empty", none, 0);
    add("3 bytes", none, 3);
    add("header only", none, 64);
    add("one byte short", none, good.size() - 1);
    add("bad magic", [](std::vector<uint8_t>& p) { p[0] = 'X'; }, good.size());
    add("version 2", [](std::vector<uint8_t>& p) { p[4] = 2; }, good.size());
    add("codec 9", [](std::vector<uint8_t>& p) { p[6] = 9; }, good.size());
    add("topk codec (not built here)", [](std::vector<uint8_t>& p) { p[6] = 3; }, good.size());
    add("reserved field", [](std::vector<uint8_t>& p) { p[12] = 1; }, good.size());
    add("dtype 7", [](std::vector<uint8_t>& p) { p[8] = 7; }, good.size());
    add("total bytes + 16", [&](std::vector<uint8_t>& p) { put32(p, 32, uint32_t(good.size() + 16)); }, good.size());
    add("total bytes - 16", [&](std::vector<uint8_t>& p) { put32(p, 32, uint32_t(good.size() - 16)); }, good.size());
    add("bits 9", [](std::vector<uint8_t>& p) { p[40] = 9; }, good.size());
    add("group length 96", [](std::vector<uint8_t>& p) { p[48] = 96; }, good.size());
    add("rows huge", [](std::vector<uint8_t>& p) { p[16 + 7] = 0x40; }, good.size());
    if (sd == dtype::f32) {
      add("NaN scale in the last group", [&](std::vector<uint8_t>& p) { put32(p, scales + 4 * (groups - 1), 0x7FC00000u); },
          good.size());
      add("scale with low mantissa bits", [&](std::vector<uint8_t>& p) { p[scales + 4 * 3] |= 1; }, good.size());
      add("negative scale", [&](std::vector<uint8_t>& p) { p[scales + 4 * 2 + 3] |= 0x80; }, good.size());
      add("infinite offset", [&](std::vector<uint8_t>& p) { put32(p, scales + 4 * (groups + 5), 0x7F800000u); },
          good.size());
      add("scale x levels overflows", [&](std::vector<uint8_t>& p) { put32(p, scales, 0x7F000000u); }, good.size());
    } else {
      add("f16 infinite scale", [&](std::vector<uint8_t>& p) { p[scales + 2 * 6] = 0x00; p[scales + 2 * 6 + 1] = 0x7C; },
          good.size());
      add("f16 NaN offset", [&](std::vector<uint8_t>& p) { p[scales + 2 * (groups + 1) + 1] = 0x7E; }, good.size());
    }
    for (const mutation& m : ms) {
      CAPTURE_TEXT(m.what);
      testb::check_rejects_like_host(b, m.bytes, m.len, dtype::f32, shp);
    }
    // A valid payload decoded into the wrong shape.
    testb::check_rejects_like_host(b, good, good.size(), dtype::f32, shape(500));
    testb::check_rejects_like_host(b, good, good.size(), dtype::bf16, shape(10, 51));
  }
}

TEST_CASE("corrupt plain payloads are rejected like the host does") {
  testg::gpu_backend b;
  spec s;
  s.codec = codec_id::plain;
  s.plain.wire = dtype::f16;
  const auto good = valid_payload(s, shape(33));
  auto bad = good;
  bad[41] = 1;  // a non-zero parameter byte
  testb::check_rejects_like_host(b, bad, bad.size(), dtype::f32, shape(33));
  bad = good;
  bad[40] = 0;  // wire dtype 0
  testb::check_rejects_like_host(b, bad, bad.size(), dtype::f32, shape(33));
  testb::check_rejects_like_host(b, good, good.size() - 2, dtype::f32, shape(33));
}

TEST_CASE("host-side argument checks come back before any launch") {
  testg::gpu_backend b;
  spec s;
  s.codec = codec_id::quant;
  const shape shp(1000);
  const size_t cap = encoded_bytes(s, shp), ws = workspace_bytes(s, shp);
  REQUIRE(ws >= 256);
  b.in.reserve(4000 + 8);
  b.payload.reserve(cap + 8);
  b.workspace.reserve(ws + 8);
  b.out.reserve(4000 + 8);
  const const_tensor_view x{b.in.ptr, dtype::f32, shp};
  CHECK(b.encode_raw(s, x, b.payload.ptr, cap, b.workspace.ptr, ws) == status::success);
  CHECK(b.encode_raw(s, x, nullptr, cap, b.workspace.ptr, ws) == status::invalid_argument);
  CHECK(b.encode_raw(s, const_tensor_view{nullptr, dtype::f32, shp}, b.payload.ptr, cap, b.workspace.ptr, ws) ==
        status::invalid_argument);
  CHECK(b.encode_raw(s, x, b.payload.ptr, cap - 1, b.workspace.ptr, ws) == status::buffer_too_small);
  CHECK(b.encode_raw(s, x, b.payload.ptr, cap, b.workspace.ptr, ws - 1) == status::workspace_too_small);
  CHECK(b.encode_raw(s, x, b.payload.ptr, cap, nullptr, ws) == status::invalid_argument);
  CHECK(b.encode_raw(s, const_tensor_view{static_cast<uint8_t*>(b.in.ptr) + 2, dtype::f32, shp}, b.payload.ptr, cap,
                     b.workspace.ptr, ws) == status::misaligned);
  CHECK(b.encode_raw(s, const_tensor_view{b.payload.ptr, dtype::f32, shape(10)}, b.payload.ptr, cap,
                     b.workspace.ptr, ws) == status::aliasing);
  spec bad = s;
  bad.quant.bits = 0;
  CHECK(b.encode_raw(bad, x, b.payload.ptr, cap, b.workspace.ptr, ws) == status::invalid_spec);
  CHECK(b.encode_raw(s, const_tensor_view{b.in.ptr, dtype::f32, shape(uint64_t(1) << 51)}, b.payload.ptr, cap,
                     b.workspace.ptr, ws) == status::size_overflow);

  const tensor_view y{b.out.ptr, dtype::f32, shp};
  CHECK(b.decode_raw(b.payload.ptr, cap, y, b.workspace.ptr, ws) == status::success);
  CHECK(b.decode_raw(nullptr, cap, y, b.workspace.ptr, ws) == status::invalid_argument);
  CHECK(b.decode_raw(b.payload.ptr, cap, tensor_view{nullptr, dtype::f32, shp}, b.workspace.ptr, ws) ==
        status::invalid_argument);
  CHECK(b.decode_raw(b.payload.ptr, cap, y, b.workspace.ptr, 16) == status::workspace_too_small);
  CHECK(b.decode_raw(b.payload.ptr, cap, tensor_view{static_cast<uint8_t*>(b.out.ptr) + 1, dtype::f16, shp},
                     b.workspace.ptr, ws) == status::misaligned);
  CHECK(b.decode_raw(b.payload.ptr, cap, tensor_view{b.payload.ptr, dtype::f32, shape(4)}, b.workspace.ptr, ws) ==
        status::aliasing);
}

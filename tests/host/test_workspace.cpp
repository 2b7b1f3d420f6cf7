#include <doctest/doctest.h>

#include "pipecodec/pipecodec.hpp"

using namespace pipecodec;

TEST_CASE("workspace_bytes: one figure for both backends (status area, tiles of large groups, alignment slack)") {
  spec s;
  s.codec = codec_id::quant;
  s.quant.group_size = 128;  // resident path: status area only
  CHECK(workspace_bytes(s, shape(10000)) == detail::workspace_status_bytes + 15);
  s.quant.group_size = 4096;  // 128 chunks per group: 2 tiles of 64 chunks, 3 groups
  const size_t tiles = 3 * 2, groups = 3;
  CHECK(workspace_bytes(s, shape(10000)) ==
        detail::workspace_status_bytes + detail::align16(tiles * 8) + groups * 16 + 15);
  s.quant.group = group_kind::tensor;  // one group of 313 chunks: 5 tiles
  CHECK(workspace_bytes(s, shape(10000)) == detail::workspace_status_bytes + detail::align16(5 * 8) + 16 + 15);
  CHECK(workspace_bytes(s, shape(0)) == detail::workspace_status_bytes + 15);
  spec p;
  p.codec = codec_id::plain;
  CHECK(workspace_bytes(p, shape(5)) == detail::workspace_status_bytes + 15);
  s.quant.bits = 0;
  CHECK(workspace_bytes(s, shape(5)) == 0);
}

TEST_CASE("the host backend ignores the workspace") {
  spec s;
  s.codec = codec_id::quant;
  std::vector<float> x(300, 1.5F);
  std::vector<uint8_t> payload(encoded_bytes(s, shape(300)));
  CHECK(ok(host::encode(s, const_tensor_view{x.data(), dtype::f32, shape(300)}, payload.data(), payload.size())));
  std::vector<float> y(300);
  CHECK(ok(host::decode(payload.data(), payload.size(), tensor_view{y.data(), dtype::f32, shape(300)})));
  CHECK(y == x);
}

TEST_CASE("workspace_bytes of a TopK / RandK spec covers the CUDA decoder's workspace") {
  // The decoder sizes its need from the output alone (it cannot read a device payload), so
  // one allocation of workspace_bytes(spec, shape) must serve encode and decode alike.
  for (const char* text : {"topk:ratio=0.1", "topk:ratio=0.5,scope=row", "topk:ratio=0.01,values=quant",
                           "randk:ratio=0.2", "randk:ratio=0.2,scope=row", "topk:ratio=0.3,mask=shared",
                           "topk:ratio=0.05,index=bitmap", "topk:ratio=0.001"}) {
    spec s;
    REQUIRE(ok(parse_spec(text, s)));
    const bool shared = s.topk.shared_mask;
    for (const shape shp : {shape(1), shape(7), shape(4, 1000), shape(65536), shape(1, 70001), shape(3, 65536),
                            shape(300000)}) {
      CAPTURE(std::string(text));
      CAPTURE(shp.size());
      const size_t have = workspace_bytes(s, shp);
      if (have == 0) continue;  // not valid for this shape
      CHECK(have >= detail::workspace_request(detail::topk_decode_workspace(shp.size(), shared)));
    }
  }
}

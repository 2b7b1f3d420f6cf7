// inspect() reads back the spec that produced a payload: re-encoding the same input with
// that spec and the reported seed must give the same bytes, for every codec.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "../common/data.hpp"
#include "../common/print.hpp"
#include "pipecodec/pipecodec.hpp"

using namespace pipecodec;

namespace {

std::vector<uint8_t> encode_with(const spec& s, const std::vector<float>& x, shape shp, uint64_t seed) {
  std::vector<uint8_t> payload(encoded_bytes(s, shp)), ws(workspace_bytes(s, shp));
  size_t written = 0;
  const status st = host::encode(s, const_tensor_view{x.data(), dtype::f32, shp}, payload.data(), payload.size(),
                                 ws.data(), ws.size(), seed, &written);
  REQUIRE_MESSAGE(ok(st), st);
  payload.resize(written);
  return payload;
}

}  // namespace

TEST_CASE("inspect reports a spec and seed that reproduce the payload, for every codec") {
  const shape shp(6, 100);
  const std::vector<float> x = testdata::activations(shp.size(), 3);
  for (const char* text : {"quant:bits=3,group=64,scale=absmax,round=stochastic",
                           "quant:bits=8,group=row,scale_dtype=fp32", "plain:dtype=bf16",
                           "topk:ratio=0.1,scope=row,index=u16,values=fp16",
                           "topk:k=37,scope=tensor,index=auto,values=quant,bits=4,round=stochastic",
                           "randk:ratio=0.2,seed=5,unbiased=1,values=bf16"}) {
    INFO(text);
    spec s;
    REQUIRE(ok(parse_spec(text, s)));
    const std::vector<uint8_t> payload = encode_with(s, x, shp, 11);
    payload_info info;
    REQUIRE(ok(inspect(payload.data(), payload.size(), info)));
    CHECK(info.hdr.codec == s.codec);
    CHECK(info.hdr.shp == shp);
    CHECK(info.hdr.total_bytes == payload.size());
    CHECK(encode_with(info.codec_spec, x, shp, info.seed) == payload);
  }
}

TEST_CASE("inspect rejects a truncated payload and leaves its output untouched") {
  const shape shp(4, 64);
  const std::vector<float> x = testdata::activations(shp.size(), 4);
  spec s;
  REQUIRE(ok(parse_spec("topk:ratio=0.25,scope=row", s)));
  const std::vector<uint8_t> payload = encode_with(s, x, shp, 0);
  payload_info info;
  info.seed = 99;
  CHECK(inspect(payload.data(), payload.size() - 1, info) == status::truncated);
  CHECK(info.seed == 99);
  CHECK(inspect(payload.data(), 10, info) == status::truncated);
}

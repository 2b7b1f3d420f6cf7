#include <doctest/doctest.h>

#include <string>

#include "../common/print.hpp"
#include "pipecodec/policy/spec_string.hpp"

using namespace pipecodec;

TEST_CASE("quant spec: defaults, every key, canonical round trip") {
  spec s;
  REQUIRE(ok(parse_spec("quant", s)));
  CHECK(s.codec == codec_id::quant);
  CHECK(s.quant.bits == 8);
  CHECK(s.quant.group == group_kind::elements);
  CHECK(s.quant.group_size == 128);
  CHECK(s.quant.scale == scale_mode::minmax);
  CHECK(s.quant.round == rounding::nearest);
  CHECK(s.quant.scale_dtype == dtype::f32);

  REQUIRE(ok(parse_spec("quant:bits=3,group=row,scale=absmax,round=stochastic,scale_dtype=fp16", s)));
  CHECK(s.quant.bits == 3);
  CHECK(s.quant.group == group_kind::row);
  CHECK(s.quant.scale == scale_mode::absmax);
  CHECK(s.quant.round == rounding::stochastic);
  CHECK(s.quant.scale_dtype == dtype::f16);
  CHECK(to_string(s) == "quant:bits=3,group=row,scale=absmax,round=stochastic,scale_dtype=fp16");

  for (const char* text : {"quant:group=tensor", "quant:group=4096,bits=1", "plain:dtype=bf16",
                           "topk:ratio=0.1,scope=row,index=auto,values=fp16",
                           "topk:k=17,index=bitmap,values=quant,bits=4,group=32,mask=shared",
                           "randk:ratio=0.123456789,seed=7,unbiased=1"}) {
    CAPTURE_TEXT(text);
    spec a, b;
    REQUIRE(ok(parse_spec(text, a)));
    const std::string canon = to_string(a);
    REQUIRE(ok(parse_spec(canon, b)));
    CHECK(to_string(b) == canon);
  }
  REQUIRE(ok(parse_spec("randk:ratio=0.123456789", s)));
  CHECK(s.topk.ratio == 0.123456789);
}

TEST_CASE("spec errors name the offending token") {
  struct bad_case {
    const char* text;
    const char* needle;
  };
  const bad_case cases[] = {
      {"quantize:bits=4", "quantize"},   {"quant:bitz=4", "bitz"},
      {"quant:bits=9", "9"},             {"quant:bits=0", "0"},
      {"quant:group=48", "48"},          {"quant:group=0", "0"},
      {"quant:scale=minmax,", "trailing"}, {"quant:", "empty"},
      {"quant:bits", "bits"},            {"quant:=4", "=4"},
      {"quant:scale_dtype=bf16", "bf16"}, {"topk:ratio=1.5", "1.5"},
      {"topk:ratio=0", "0"},             {"topk:seed=3", "seed"},
      {"randk:index=u32", "index"},      {"plain:bits=4", "bits"},
      {"quant:bits=99999999999999999999", "bits"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.text);
    spec s;
    std::string err;
    CHECK(parse_spec(c.text, s, &err) == status::invalid_spec);
    CHECK(err.find(c.needle) != std::string::npos);
  }
}

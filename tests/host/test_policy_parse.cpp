#include <doctest/doctest.h>

#include <pipecodec/policy/policy_parse.hpp>

#include "../common/print.hpp"

using namespace pipecodec;

namespace {

policy parse_ok(const std::string& text) {
  policy p;
  std::string err;
  const status st = parse_policy(text, p, &err);
  INFO(text << " -> " << err);
  REQUIRE(ok(st));
  return p;
}

std::string parse_error(const std::string& text) {
  policy p;
  std::string err;
  CHECK(parse_policy(text, p, &err) == status::invalid_spec);
  return err;
}

}  // namespace

TEST_CASE("the issue's example parses into the data model") {
  const policy p = parse_ok(
      "fwd=topk:ratio=0.1,scope=row+aqsgd(store=host,dtype=fp16); bwd=quant:bits=8; warmup=1epoch; "
      "infer=compress");
  CHECK(p.overrides.empty());
  const boundary_policy& b = p.at(7);  // any boundary: no overrides
  CHECK(b.fwd.codec.codec == codec_id::topk);
  CHECK(b.fwd.codec.topk.ratio == 0.1);
  CHECK(b.fwd.codec.topk.scope == topk_scope::row);
  CHECK(b.fwd.state.scheme == state_scheme::aqsgd);
  CHECK(b.fwd.state.aqsgd.store == store_location::host);
  CHECK(b.fwd.state.aqsgd.storage == dtype::f16);
  CHECK(b.fwd.state.aqsgd.capacity == 0);
  CHECK(b.bwd.codec.codec == codec_id::quant);
  CHECK(b.bwd.codec.quant.bits == 8);
  CHECK(b.bwd.state.scheme == state_scheme::none);
  CHECK(b.sched.warmup == 1);
  CHECK(b.sched.unit == warmup_unit::epochs);
  CHECK(b.sched.infer == inference_mode::compress);
}

TEST_CASE("defaults: plain fp32 both ways, no warm-up, compressed inference") {
  const policy p = parse_ok("");
  CHECK(p.all.fwd.codec.codec == codec_id::plain);
  CHECK(p.all.fwd.codec.plain.wire == dtype::f32);
  CHECK(p.all.bwd.codec.codec == codec_id::plain);
  CHECK(p.all.sched.warmup == 0);
  CHECK(p.all.sched.infer == inference_mode::compress);
}

TEST_CASE("per-boundary overrides copy the unprefixed clauses whatever their order") {
  const policy p = parse_ok("b2.bwd=quant:bits=4 ; fwd=quant:bits=2+ef21; bwd=quant:bits=8; b0.infer=plain");
  REQUIRE(p.overrides.size() == 2);
  CHECK(p.overrides[0].first == 0);  // sorted by boundary
  CHECK(p.overrides[1].first == 2);
  CHECK(p.at(1).bwd.codec.quant.bits == 8);
  CHECK(p.at(2).bwd.codec.quant.bits == 4);
  CHECK(p.at(2).fwd.codec.quant.bits == 2);   // inherited
  CHECK(p.at(2).fwd.state.scheme == state_scheme::ef21);
  CHECK(p.at(0).sched.infer == inference_mode::plain);
  CHECK(p.at(0).bwd.codec.quant.bits == 8);
  CHECK(p.at(1).sched.infer == inference_mode::compress);
}

TEST_CASE("warm-up units") {
  CHECK(parse_ok("warmup=25").all.sched.unit == warmup_unit::steps);
  CHECK(parse_ok("warmup=25steps").all.sched.warmup == 25);
  CHECK(parse_ok("warmup=3epochs").all.sched.unit == warmup_unit::epochs);
  CHECK(parse_ok("warmup=1step").all.sched.unit == warmup_unit::steps);
}

TEST_CASE("to_string round-trips, overrides included") {
  const char* texts[] = {
      "",
      "fwd=topk:ratio=0.1,scope=row+aqsgd(store=host,dtype=fp16); bwd=quant:bits=8; warmup=1epoch",
      "fwd=quant:bits=4,group=row,round=stochastic+ef; bwd=plain:dtype=bf16; infer=plain",
      "fwd=topk:k=17,values=quant,bits=4+ef21; warmup=100; b1.fwd=plain; b3.warmup=2epochs",
      "bwd=topk:ratio=0.05,mask=shared; fwd=quant:bits=2+aqsgd(store=device,dtype=bf16,capacity=60000)",
      "fwd=topk:ratio=0.1,scope=row+ef(scope=sample,dtype=fp16,capacity=60000); bwd=quant:bits=8+ef(dtype=bf16)",
      "fwd=topk:ratio=0.1,scope=row+ef(scope=sample); b2.fwd=quant:bits=4+ef(scope=batch)",
  };
  for (const char* t : texts) {
    const policy p = parse_ok(t);
    const std::string canon = to_string(p);
    const policy q = parse_ok(canon);
    INFO(t << " -> " << canon);
    CHECK(q == p);
    CHECK(to_string(q) == canon);
  }
  // equality is not vacuous
  CHECK(parse_ok("fwd=quant:bits=4") != parse_ok("fwd=quant:bits=5"));
  CHECK(parse_ok("b1.fwd=quant:bits=4") != parse_ok("b2.fwd=quant:bits=4"));
  CHECK(parse_ok("fwd=quant+aqsgd(dtype=fp16)") != parse_ok("fwd=quant+aqsgd"));
  CHECK(parse_ok("fwd=quant+ef(scope=sample)") != parse_ok("fwd=quant+ef"));
  CHECK(parse_ok("fwd=quant+ef(scope=sample,capacity=9)") != parse_ok("fwd=quant+ef(scope=sample)"));
  CHECK(parse_ok("fwd=quant+ef(dtype=bf16)") != parse_ok("fwd=quant+ef"));
}

TEST_CASE("ef options: per-sample residuals, storage dtype, canonical text") {
  const policy p = parse_ok("fwd=topk:ratio=0.1,scope=row+ef(scope=sample,dtype=fp16,capacity=600)");
  const state_spec& st = p.all.fwd.state;
  CHECK(st.scheme == state_scheme::ef);
  CHECK(st.ef.scope == ef_scope::sample);
  CHECK(st.ef.storage == dtype::f16);
  CHECK(st.ef.capacity == 600);
  CHECK(st.ef.store == store_location::host);
  CHECK(to_string(p.all.fwd) ==
        "topk:ratio=0.1,scope=row,index=auto,values=fp32+ef(scope=sample,store=host,dtype=fp16,capacity=600)");
  const policy d = parse_ok("fwd=quant:bits=4+ef(scope=sample,store=device)");
  CHECK(d.all.fwd.state.ef.store == store_location::device);
  CHECK(parse_ok(to_string(d)) == d);
  CHECK(d != parse_ok("fwd=quant:bits=4+ef(scope=sample)"));
  CHECK(to_string(parse_ok("fwd=quant:bits=4+ef(dtype=bf16)").all.fwd) ==
        "quant:bits=4,group=128,scale=minmax,round=nearest,scale_dtype=fp32+ef(scope=batch,dtype=bf16)");
  // The defaults keep the short form, so existing policy strings stay canonical.
  CHECK(to_string(parse_ok("fwd=quant:bits=4+ef(scope=batch,dtype=fp32)").all.fwd) ==
        to_string(parse_ok("fwd=quant:bits=4+ef").all.fwd));
  CHECK(parse_ok("fwd=quant:bits=4+ef").all.fwd.state.ef.scope == ef_scope::batch);
}

TEST_CASE("errors name the bad token and leave the output untouched") {
  policy p = parse_ok("fwd=quant:bits=3");
  const policy before = p;
  std::string err;
  CHECK(parse_policy("fwd=quant:bits=9", p, &err) == status::invalid_spec);
  CHECK(p == before);
  CHECK(err.find("'9'") != std::string::npos);

  CHECK(parse_error("fwd=zip").find("'zip'") != std::string::npos);
  CHECK(parse_error("side=quant").find("'side'") != std::string::npos);
  CHECK(parse_error("fwd=quant+ef3").find("'ef3'") != std::string::npos);
  CHECK(parse_error("fwd=quant+aqsgd(store=disk)").find("'store=disk'") != std::string::npos);
  CHECK(parse_error("fwd=quant+aqsgd(color=red)").find("'color'") != std::string::npos);
  CHECK(parse_error("fwd=quant+aqsgd(store=host").find("missing ')'") != std::string::npos);
  CHECK(parse_error("fwd=quant+ef(x=1)").find("unknown ef option 'x'") != std::string::npos);
  CHECK(parse_error("fwd=quant+ef21(dtype=fp16)").find("'ef21'") != std::string::npos);
  CHECK(parse_error("fwd=quant+ef(scope=row)").find("'scope=row'") != std::string::npos);
  CHECK(parse_ok("fwd=quant+ef(store=host)") == parse_ok("fwd=quant+ef"));  // the default, as capacity=0
  CHECK(parse_error("fwd=quant+ef(capacity=5)").find("need scope=sample") != std::string::npos);
  CHECK(parse_error("fwd=quant+ef(store=device)").find("need scope=sample") != std::string::npos);
  CHECK(parse_error("fwd=quant+ef(scope=sample,store=gpu)").find("bad ef option 'store=gpu'") != std::string::npos);
  CHECK(parse_error("warmup=3weeks").find("'weeks'") != std::string::npos);
  CHECK(parse_error("warmup=epochs").find("'epochs'") != std::string::npos);
  CHECK(parse_error("infer=maybe").find("'maybe'") != std::string::npos);
  CHECK(parse_error("x1.fwd=plain").find("'x1.'") != std::string::npos);
  CHECK(parse_error("bwd").find("'bwd'") != std::string::npos);
}

TEST_CASE("mode_for follows the schedule") {
  schedule s;
  s.warmup = 2;
  s.unit = warmup_unit::epochs;
  step_info at;
  at.epoch = 1;
  at.step = 1000;
  CHECK(mode_for(s, at) == step_mode::plain);
  at.epoch = 2;
  CHECK(mode_for(s, at) == step_mode::compressed);
  s.unit = warmup_unit::steps;
  at.step = 1;
  CHECK(mode_for(s, at) == step_mode::plain);
  at.training = false;
  CHECK(mode_for(s, at) == step_mode::stateless);
  s.infer = inference_mode::plain;
  CHECK(mode_for(s, at) == step_mode::passthrough);
}

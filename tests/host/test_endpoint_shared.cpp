// Shared-mask backward endpoints: the gradient travels at the positions of the forward
// TopK payload of the same boundary and step, values only.
#include <doctest/doctest.h>

#include <vector>

#include "../common/endpoint_link.hpp"

using namespace pipecodec;
using namespace tendpoint;

namespace {

const char* const shared_row = "fwd=topk:ratio=0.1,scope=row; bwd=topk:ratio=0.1,scope=row,mask=shared; warmup=1";

// Whether the backward output is the gradient where the forward output kept a value and
// zero elsewhere.
bool masked_like(const std::vector<float>& dg, const std::vector<float>& g, const std::vector<float>& y) {
  for (size_t i = 0; i < g.size(); ++i)
    if (dg[i] != (y[i] != 0.0f ? g[i] : 0.0f)) return false;
  return true;
}

}  // namespace

TEST_CASE("shared mask endpoints: the gradient travels at the forward payload's positions") {
  const policy p = policy_of(shared_row);
  const shape s(8, 200);
  link fwd(p, 0, direction::fwd, s), bwd(p, 0, direction::bwd, s);
  CHECK(!fwd.tx.needs_mask());
  CHECK(bwd.tx.needs_mask());
  CHECK(bwd.rx.needs_mask());
  const auto a = testdata::activations(s.size(), 31), g = testdata::activations(s.size(), 37);

  // Warm-up: both directions plain; the backward call needs no mask.
  CHECK(fwd.roundtrip(a, training(0)) == a);
  CHECK(bwd.roundtrip(g, training(0)) == g);
  CHECK(bwd.wire_codec() == codec_id::plain);

  const auto y = fwd.roundtrip(a, training(1));
  const auto dg = bwd.roundtrip(g, training(1), fwd.payload());
  CHECK(bwd.wire_codec() == codec_id::topk);
  CHECK(masked_like(dg, g, y));
  size_t kept = 0;
  for (float v : y) kept += v != 0.0f;  // the forward payload kept 20 of 200 per row
  CHECK(kept == 8 * 20);
  CHECK(bwd.len == encoded_bytes(p.at(0).bwd.codec, s));
  CHECK(bwd.len < fwd.len);  // values only: the positions stay with the forward payload

  // Inference with infer=compress pairs the same way.
  step_info inf;
  inf.training = false;
  const auto yi = fwd.roundtrip(g, inf);
  CHECK(masked_like(bwd.roundtrip(a, inf, fwd.payload()), a, yi));
}

TEST_CASE("shared mask endpoints: a missing or mismatched mask is refused, output untouched") {
  const policy p = policy_of(shared_row);
  const shape s(4, 160);
  link fwd(p, 0, direction::fwd, s), bwd(p, 0, direction::bwd, s), other(p, 0, direction::fwd, shape(2, 160));
  const auto a = testdata::activations(s.size(), 41), g = testdata::activations(s.size(), 43);
  fwd.roundtrip(a, training(3));
  other.roundtrip(testdata::activations(2 * 160, 47), training(3));

  CHECK(bwd.send(g, training(3)) == status::invalid_argument);
  CHECK(bwd.send(g, training(3), other.payload()) == status::shape_mismatch);
  CHECK(bwd.tx.counters().calls == 0);

  REQUIRE(ok(bwd.send(g, training(3), fwd.payload())));
  std::vector<float> out(g.size(), 42.0f);
  const tensor_view o{out.data(), dtype::f32, s};
  CHECK(bwd.rx.decode(bwd.wire.data(), bwd.len, o, training(3)) == status::invalid_argument);
  CHECK(bwd.rx.decode(bwd.wire.data(), bwd.len, o, training(3), bwd.payload()) == status::invalid_argument);
  CHECK(bwd.rx.decode(bwd.wire.data(), bwd.len, o, training(3), other.payload()) == status::shape_mismatch);
  CHECK(bwd.rx.decode(fwd.wire.data(), fwd.len, o, training(3), fwd.payload()) == status::invalid_argument);
  CHECK(!ok(bwd.rx.decode(bwd.wire.data(), bwd.len - 1, o, training(3), fwd.payload())));
  // A plain payload (the sender thought it was a warm-up step) is not what this step expects.
  REQUIRE(ok(bwd.send(g, training(0))));
  CHECK(bwd.rx.decode(bwd.wire.data(), bwd.len, o, training(3), fwd.payload()) == status::state_mismatch);
  CHECK(out == std::vector<float>(g.size(), 42.0f));
  CHECK(bwd.rx.counters().calls == 0);
}

TEST_CASE("shared mask endpoints: set-up refuses pairings that cannot work") {
  host::endpoint_options o;
  o.max_shape = shape(4, 64);
  o.samples = 16;
  auto bwd_init = [&](const char* text) {
    host::receiver_endpoint rx;
    return rx.init(policy_of(text), 0, direction::bwd, o);
  };
  const char* shared = "; bwd=topk:ratio=0.1,scope=row,mask=shared";
  auto with = [&](const char* fwd) { return std::string(fwd) + shared; };
  CHECK(ok(bwd_init(with("fwd=topk:ratio=0.1,scope=row").c_str())));
  CHECK(ok(bwd_init(with("fwd=topk:ratio=0.1,scope=row,values=fp16,index=u32+ef21").c_str())));
  CHECK(bwd_init(with("fwd=quant:bits=4").c_str()) == status::invalid_spec);
  CHECK(bwd_init(with("fwd=randk:ratio=0.1").c_str()) == status::invalid_spec);
  CHECK(bwd_init(with("fwd=topk:ratio=0.2,scope=row").c_str()) == status::invalid_spec);
  CHECK(bwd_init(with("fwd=topk:ratio=0.1,scope=tensor").c_str()) == status::invalid_spec);
  CHECK(bwd_init(with("fwd=topk:ratio=0.1,scope=row+aqsgd").c_str()) == status::not_supported);
  CHECK(bwd_init("fwd=topk:ratio=0.1,scope=row; bwd=topk:ratio=0.1,scope=row,mask=shared+ef21") ==
        status::not_supported);
  host::sender_endpoint tx;  // the forward direction has nothing to pair with
  CHECK(tx.init(policy_of("fwd=topk:ratio=0.1,scope=row,mask=shared"), 0, direction::fwd, o) == status::invalid_spec);
}

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "../common/endpoint_link.hpp"

using namespace pipecodec;
using namespace tendpoint;

TEST_CASE("endpoint: the policy of the boundary and direction is applied, counters add up") {
  const policy p = policy_of("fwd=quant:bits=4; bwd=quant:bits=8; b1.fwd=quant:bits=2");
  const shape s(8, 256);
  const auto x = testdata::activations(s.size(), 3);
  link b0(p, 0, direction::fwd, s), b1(p, 1, direction::fwd, s), bw(p, 1, direction::bwd, s);
  const auto y0 = b0.roundtrip(x, training(0));
  const auto y1 = b1.roundtrip(x, training(0));
  const auto yb = bw.roundtrip(x, training(0));
  CHECK(b0.len == encoded_bytes(p.at(0).fwd.codec, s));
  CHECK(b1.len == encoded_bytes(p.at(1).fwd.codec, s));
  CHECK(b1.len < b0.len);
  CHECK(bw.len > b0.len);
  CHECK(max_abs_err(x, yb) < max_abs_err(x, y0));
  CHECK(max_abs_err(x, y0) < max_abs_err(x, y1));
  b0.roundtrip(x, training(1));
  const auto& c = b0.tx.counters();
  CHECK(c.calls == 2);
  CHECK(c.elements == 2 * s.size());
  CHECK(c.bytes_in == 2 * 4 * s.size());
  CHECK(c.bytes_out == 2 * b0.len);
  CHECK(b0.rx.counters().bytes_in == c.bytes_out);
  CHECK(b0.rx.counters().bytes_out == c.bytes_in);
  CHECK(c.seconds >= 0);
  b0.tx.reset_counters();
  CHECK(b0.tx.counters().calls == 0);
}

TEST_CASE("endpoint: warm-up travels plain, inference compressed or plain as scheduled") {
  const policy p = policy_of("fwd=quant:bits=2; warmup=2steps; infer=plain");
  const shape s(4, 128);
  const auto x = testdata::activations(s.size(), 5);
  link l(p, 0, direction::fwd, s);
  CHECK(l.roundtrip(x, training(1)) == x);
  CHECK(l.wire_codec() == codec_id::plain);
  CHECK(l.roundtrip(x, training(2)) != x);
  CHECK(l.wire_codec() == codec_id::quant);
  step_info inf;
  inf.training = false;
  CHECK(l.roundtrip(x, inf) == x);
  CHECK(l.wire_codec() == codec_id::plain);
  l.tx.set_inference(inference_mode::compress);
  l.rx.set_inference(inference_mode::compress);
  CHECK(l.roundtrip(x, inf) != x);
  CHECK(l.wire_codec() == codec_id::quant);
}

TEST_CASE("endpoint: a receiver that disagrees on the mode rejects the payload, output untouched") {
  const policy p = policy_of("fwd=quant:bits=4; warmup=1epoch");
  const shape s(2, 64);
  const auto x = testdata::activations(s.size(), 7);
  link l(p, 0, direction::fwd, s);
  REQUIRE(ok(l.send(x, training(0, 0))));  // warm-up: plain
  std::vector<float> out(x.size(), 42.0f);
  CHECK(l.rx.decode(l.wire.data(), l.len, {out.data(), dtype::f32, s}, training(0, 1)) == status::state_mismatch);
  CHECK(out == std::vector<float>(x.size(), 42.0f));
  REQUIRE(ok(l.send(x, training(5, 1))));  // truncated payload
  CHECK(!ok(l.rx.decode(l.wire.data(), l.len - 1, {out.data(), dtype::f32, s}, training(5, 1))));
  CHECK(out == std::vector<float>(x.size(), 42.0f));
  CHECK(l.rx.counters().calls == 0);
}

TEST_CASE("endpoint: EF keeps the running sum of what arrived close to the sum of the inputs") {
  const shape s(4, 128);
  const auto x = testdata::uniform(s.size(), 11);
  double drift[2] = {0, 0};  // with EF, without
  for (int k = 0; k < 2; ++k) {
    link l(policy_of(k == 0 ? "fwd=quant:bits=2+ef" : "fwd=quant:bits=2"), 0, direction::fwd, s);
    std::vector<double> sum_in(x.size()), sum_out(x.size());
    for (uint64_t t = 0; t < 8; ++t) {
      const auto y = l.roundtrip(x, training(t));
      for (size_t i = 0; i < x.size(); ++i) {
        sum_in[i] += x[i];
        sum_out[i] += y[i];
      }
    }
    for (size_t i = 0; i < x.size(); ++i) drift[k] = std::fmax(drift[k], std::fabs(sum_in[i] - sum_out[i]));
  }
  // With EF the drift is the last residual, below a quarter of a group's range (2 here);
  // without, a constant input repeats the same error 8 times.
  CHECK(drift[0] <= 0.5);
  CHECK(drift[1] > 3 * drift[0]);
}

TEST_CASE("endpoint: EF21 warm-up sets g = x, then the receiver's tensor converges to a fixed input") {
  const shape s(4, 128);
  const auto x = testdata::activations(s.size(), 13);
  link warm(policy_of("fwd=quant:bits=2+ef21; warmup=1"), 0, direction::fwd, s);
  CHECK(warm.roundtrip(x, training(0)) == x);
  CHECK(warm.roundtrip(x, training(1)) == x);  // delta 0: an exactly representable constant group

  link cold(policy_of("fwd=quant:bits=2+ef21"), 0, direction::fwd, s);
  double first = 0, last = 0;
  for (uint64_t t = 0; t < 6; ++t) {
    const double e = max_abs_err(x, cold.roundtrip(x, training(t)));
    if (t == 0) first = e;
    last = e;
  }
  CHECK(last < first / 8);
}

TEST_CASE("endpoint: AQ-SGD keeps one m per sample id on both sides") {
  const shape s(4, 64);
  const policy p = policy_of("fwd=quant:bits=2+aqsgd(store=host,dtype=fp32); warmup=1epoch");
  link l(p, 0, direction::fwd, s, /*samples=*/16);
  const uint64_t a[4] = {3, 9, 1, 12}, b[4] = {5, 3, 14, 9};
  const auto xa = testdata::activations(s.size(), 17), xb = testdata::activations(s.size(), 19);
  CHECK(l.roundtrip(xa, training(0, 0, a)) == xa);  // warm-up epoch: m = a exactly
  CHECK(std::memcmp(l.wire.data(), "PCAQ", 4) == 0);
  CHECK(l.roundtrip(xa, training(1, 1, a)) == xa);  // seen samples, same tensor: delta 0
  // Rows 0 and 2 are unseen (travel warm, exact); rows 1 and 3 are deltas against m(3), m(9).
  const auto y = l.roundtrip(xb, training(2, 1, b));
  for (uint64_t c = 0; c < s.cols; ++c) {
    CHECK(y[0 * s.cols + c] == xb[0 * s.cols + c]);
    CHECK(y[2 * s.cols + c] == xb[2 * s.cols + c]);
  }
  CHECK(y != xb);
  // Wrong ids on the receiver's side are caught.
  REQUIRE(ok(l.send(xb, training(3, 1, b))));
  std::vector<float> out(xb.size());
  CHECK(l.rx.decode(l.wire.data(), l.len, {out.data(), dtype::f32, s}, training(3, 1, a)) == status::id_mismatch);
  // Inference never touches the store: the codec alone.
  step_info inf;
  inf.training = false;
  l.roundtrip(xb, inf);
  CHECK(l.wire_codec() == codec_id::quant);
}

TEST_CASE("endpoint: EF with scope=sample keeps one residual per sample id, batches of any size") {
  const shape s(4, 64);
  const policy p = policy_of("fwd=quant:bits=2+ef(scope=sample,dtype=fp16)");
  link l(p, 0, direction::fwd, s, /*samples=*/8);
  host::aqsgd_config c;  // the same scheme driven directly
  c.codec = p.all.fwd.codec;
  c.cols = s.cols;
  c.state_type = dtype::f16;
  c.capacity = 8;
  host::ef_sample_state ref;
  REQUIRE(ok(ref.init(c, s.rows)));
  std::vector<uint8_t> want(ref.payload_bytes());
  const uint64_t batches[4][4] = {{3, 9, 1, 12}, {12, 5, 3, 0}, {1, 0, 0, 0}, {9, 3, 12, 1}};
  const uint64_t rows[4] = {4, 3, 1, 4};  // smaller batches are fine: no per-row tensor
  for (uint64_t t = 0; t < 4; ++t) {
    CAPTURE(t);
    const shape bs(rows[t], s.cols);
    const auto x = testdata::activations(bs.size(), 23 + t);
    const step_info at = training(t, 0, batches[t]);
    REQUIRE(ok(l.tx.encode({x.data(), dtype::f32, bs}, at, l.wire.data(), l.wire.size(), &l.len)));
    size_t len = 0;
    REQUIRE(ok(ref.encode(batches[t], {x.data(), dtype::f32, bs}, want.data(), want.size(), at.seed, &len)));
    REQUIRE(len == l.len);
    CHECK(std::memcmp(want.data(), l.wire.data(), len) == 0);
    std::vector<float> out(bs.size());
    REQUIRE(ok(l.rx.decode(l.wire.data(), l.len, {out.data(), dtype::f32, bs}, at)));  // no ids needed
  }
  CHECK(ref.count() == 5);
  // Training calls need the sample ids.
  const auto x = testdata::activations(s.size(), 29);
  CHECK(l.send(x, training(9)) == status::invalid_argument);
}

TEST_CASE("endpoint: memory comes from the runtime's allocator") {
  struct counts {
    int live = 0, calls = 0, fail_after = 1 << 30;
  };
  counts n;
  allocator a;
  a.ctx = &n;
  a.allocate = [](size_t bytes, void* ctx) -> void* {
    auto* c = static_cast<counts*>(ctx);
    if (c->calls++ >= c->fail_after) return nullptr;
    ++c->live;
    return std::malloc(bytes);
  };
  a.deallocate = [](void* ptr, size_t, void* ctx) {
    --static_cast<counts*>(ctx)->live;
    std::free(ptr);
  };
  host::endpoint_options o;
  o.max_shape = shape(8, 64);
  o.samples = 100;
  o.alloc = a;
  const policy p = policy_of("fwd=quant:bits=4+aqsgd; bwd=quant:bits=4+ef21");
  {
    host::sender_endpoint f, g;
    REQUIRE(ok(f.init(p, 0, direction::fwd, o)));
    REQUIRE(ok(g.init(p, 0, direction::bwd, o)));
    CHECK(n.live >= 4);  // AQ-SGD table, rows, workspace; EF21 g, workspace; codec workspaces
  }
  CHECK(n.live == 0);
  n.calls = 0;
  n.fail_after = 1;
  host::receiver_endpoint r;
  CHECK(r.init(p, 0, direction::fwd, o) == status::out_of_memory);
}

TEST_CASE("endpoint: set-up and call errors") {
  host::endpoint_options o;
  o.max_shape = shape(4, 64);
  host::sender_endpoint tx;
  CHECK(tx.init(policy_of("fwd=quant+aqsgd"), 0, direction::fwd, o) != status::success);  // no capacity
  CHECK(tx.init(policy_of("fwd=quant+aqsgd(store=device,capacity=8)"), 0, direction::fwd, o) == status::not_supported);
  CHECK(tx.init(policy_of("fwd=quant+ef(scope=sample,store=device,capacity=8)"), 0, direction::fwd, o) ==
        status::not_supported);
  o.max_shape = shape(4, 0);
  CHECK(tx.init(policy_of("fwd=quant"), 0, direction::fwd, o) == status::invalid_shape);
  o.max_shape = shape(4, 64);
  REQUIRE(ok(tx.init(policy_of("fwd=quant"), 0, direction::fwd, o)));
  std::vector<float> x(5 * 64);
  std::vector<uint8_t> wire(tx.encoded_bytes());
  CHECK(tx.encode({x.data(), dtype::f32, shape(5, 64)}, step_info{}, wire.data(), wire.size()) ==
        status::shape_mismatch);
  CHECK(tx.encode({x.data(), dtype::f32, shape(4, 32)}, step_info{}, wire.data(), wire.size()) ==
        status::shape_mismatch);
  CHECK(ok(tx.encode({x.data(), dtype::f32, shape(3, 64)}, step_info{}, wire.data(), wire.size())));
  CHECK(tx.encode({x.data(), dtype::f32, shape(4, 64)}, step_info{}, wire.data(), 100) == status::buffer_too_small);
}

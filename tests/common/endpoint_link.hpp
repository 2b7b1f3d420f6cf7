// Helpers for the endpoint tests: a policy from text, a sender/receiver pair of one
// boundary and direction, training steps.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "data.hpp"
#include "pipecodec/policy/endpoint.hpp"
#include "policy_check.hpp"
#include "print.hpp"

namespace tendpoint {

using namespace pipecodec;

using tpolicy::policy_of;

// A sender/receiver pair for one boundary and direction, moving payloads through a buffer.
struct link {
  host::sender_endpoint tx;
  host::receiver_endpoint rx;
  std::vector<uint8_t> wire;
  size_t len = 0;
  shape shp;

  link(const policy& p, uint32_t boundary, direction d, shape s, uint64_t samples = 0) : shp(s) {
    host::endpoint_options o;
    o.max_shape = s;
    o.samples = samples;
    REQUIRE(ok(tx.init(p, boundary, d, o)));
    REQUIRE(ok(rx.init(p, boundary, d, o)));
    REQUIRE(tx.encoded_bytes() == rx.encoded_bytes());
    wire.resize(tx.encoded_bytes());
  }
  // `mask`: the forward payload a shared-mask backward link pairs with.
  status send(const std::vector<float>& x, const step_info& at, payload_ref mask = {}) {
    return tx.encode({x.data(), dtype::f32, shp}, at, wire.data(), wire.size(), &len, mask);
  }
  std::vector<float> roundtrip(const std::vector<float>& x, const step_info& at, payload_ref mask = {}) {
    REQUIRE(ok(send(x, at, mask)));
    std::vector<float> out(x.size());
    REQUIRE(ok(rx.decode(wire.data(), len, {out.data(), dtype::f32, shp}, at, mask)));
    return out;
  }
  payload_ref payload() const { return {wire.data(), len}; }
  codec_id wire_codec() const {
    header h;
    REQUIRE(ok(read_header(wire.data(), len, h)));
    return h.codec;
  }
};

inline double max_abs_err(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::fmax(m, std::fabs(double(a[i]) - b[i]));
  return m;
}

inline step_info training(uint64_t step, uint64_t epoch = 0, const uint64_t* ids = nullptr) {
  step_info at;
  at.step = step;
  at.epoch = epoch;
  at.sample_ids = ids;
  return at;
}

}  // namespace tendpoint

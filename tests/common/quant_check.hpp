// Helpers for quantization tests: encode/decode through the public API and check the
// documented per-element error bound against the payload's own stored scales.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "data.hpp"
#include "pipecodec/pipecodec.hpp"
#include "pipecodec/core/quant_format.hpp"
#include "print.hpp"

namespace testq {

using namespace pipecodec;

inline spec quant_spec(uint32_t bits, group_kind gk, uint32_t gsize, scale_mode sm, rounding r, dtype sd) {
  spec s;
  s.codec = codec_id::quant;
  s.quant.bits = uint8_t(bits);
  s.quant.group = gk;
  s.quant.group_size = gsize;
  s.quant.scale = sm;
  s.quant.round = r;
  s.quant.scale_dtype = sd;
  return s;
}

inline std::vector<uint8_t> encode(const spec& s, const std::vector<uint8_t>& in, dtype t, shape shp,
                                   uint64_t seed = 0) {
  std::vector<uint8_t> payload(encoded_bytes(s, shp));
  REQUIRE(payload.size() > 0);
  std::vector<uint8_t> ws(workspace_bytes(s, shp));
  size_t written = 0;
  const status st = host::encode(s, const_tensor_view{in.data(), t, shp}, payload.data(), payload.size(), ws.data(),
                                 ws.size(), seed, &written);
  REQUIRE_MESSAGE(ok(st), st);
  REQUIRE(written == payload.size());
  return payload;
}

inline std::vector<float> decode_f32(const std::vector<uint8_t>& payload, shape shp) {
  std::vector<float> out(shp.size());
  const status st = host::decode(payload.data(), payload.size(), tensor_view{out.data(), dtype::f32, shp});
  REQUIRE_MESSAGE(ok(st), st);
  return out;
}

// Checks |x - x_hat| <= bound for every finite x of the input (nearest rounding).
inline void check_nearest_bound(const std::vector<float>& x, const std::vector<float>& xhat,
                                const std::vector<uint8_t>& payload) {
  detail::quant_payload qp;
  REQUIRE(ok(detail::parse_quant_payload(payload.data(), payload.size(), qp)));
  for (uint64_t g = 0; g < qp.layout.groups; ++g) {
    float s, o;
    detail::load_group(qp, g, s, o);
    const uint64_t b = qp.layout.group_begin(g);
    for (uint64_t i = b; i < b + qp.layout.group_size(g); ++i) {
      if (!std::isfinite(x[i])) continue;
      const double err = std::fabs(double(x[i]) - double(xhat[i]));
      const double bound = detail::nearest_error_bound(s, o, x[i]);
      if (!(err <= bound)) {
        FAIL_CHECK("element " << i << " x=" << x[i] << " xhat=" << xhat[i] << " err=" << err
                              << " bound=" << bound << " scale=" << s << " offset=" << o);
        return;
      }
    }
  }
}

}  // namespace testq

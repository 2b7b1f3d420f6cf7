// Both ODR translation units run the same round trip through the umbrella header.
#pragma once

#include <vector>

#include "pipecodec/pipecodec.hpp"

namespace odr {

// Encodes a fixed tensor with `spec_text` and returns the payload followed by its decode.
inline std::vector<uint8_t> round_trip(const char* spec_text) {
  namespace pc = pipecodec;
  pc::spec s;
  if (!pc::ok(pc::parse_spec(spec_text, s))) return {};
  std::vector<float> x(100);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i % 17) - 8) * 0.25F;
  const pc::shape shp(4, 25);
  std::vector<uint8_t> payload(pc::encoded_bytes(s, shp));
  size_t written = 0;
  if (!pc::ok(pc::host::encode(s, pc::const_tensor_view{x.data(), pc::dtype::f32, shp}, payload.data(),
                               payload.size(), nullptr, 0, 5, &written)))
    return {};
  std::vector<float> y(x.size());
  if (!pc::ok(pc::host::decode(payload.data(), written, pc::tensor_view{y.data(), pc::dtype::f32, shp})))
    return {};
  const auto* yb = reinterpret_cast<const uint8_t*>(y.data());
  payload.insert(payload.end(), yb, yb + 4 * y.size());
  return payload;
}

}  // namespace odr

std::vector<uint8_t> odr_a(const char* spec_text);
std::vector<uint8_t> odr_b(const char* spec_text);

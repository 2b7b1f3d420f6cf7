// Test bodies written once for any backend B that mirrors the host backend's calls on host
// vectors (the gpu suite's gpu_backend copies to and from the device around each call):
//   status B::encode(const spec&, const std::vector<uint8_t>& in, dtype, shape, randomness (sample
//                    ids in host memory), std::vector<uint8_t>& payload)
//   status B::decode(const std::vector<uint8_t>& payload, size_t len, tensor_view-like
//                    (dtype, shape), std::vector<uint8_t>& out, bool accumulate)
// Each compares B with the host backend, the oracle: payload bytes, decoded and accumulated
// tensors bit for bit, and the status (and untouched output) of rejected payloads.
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "data.hpp"
#include "pipecodec/pipecodec.hpp"
#include "print.hpp"

namespace testb {

using namespace pipecodec;

inline status host_encode(const spec& s, const std::vector<uint8_t>& in, dtype t, shape shp, randomness rnd,
                          std::vector<uint8_t>& payload) {
  payload.assign(encoded_bytes(s, shp), 0xEE);
  std::vector<uint8_t> ws(workspace_bytes(s, shp));
  size_t written = 0;
  const status st = host::encode(s, const_tensor_view{in.data(), t, shp}, payload.data(), payload.size(), ws.data(),
                                 ws.size(), rnd, &written);
  if (ok(st)) REQUIRE(written == payload.size());
  return st;
}

inline status host_decode(const std::vector<uint8_t>& payload, size_t len, dtype t, shape shp,
                          std::vector<uint8_t>& out, bool accumulate) {
  const tensor_view v{out.data(), t, shp};
  return accumulate ? host::decode_accumulate(payload.data(), len, v) : host::decode(payload.data(), len, v);
}

// First differing byte, or -1.
inline long first_difference(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  if (a.size() != b.size()) return 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return long(i);
  return -1;
}

// A deterministic, non-trivial starting tensor for decode_accumulate.
inline std::vector<uint8_t> accumulator(dtype t, uint64_t n, uint64_t seed) {
  return testdata::as_bytes(testdata::uniform(n, seed), t);
}

// Encodes `in` (bytes of dtype in_t) with both backends and decodes the payload with both
// into `out_types` (and accumulates into them): everything must be identical.
template <class B>
void check_matches_host(B& b, const spec& s, const std::vector<uint8_t>& in, dtype in_t, shape shp,
                        randomness rnd, std::initializer_list<dtype> out_types) {
  const uint64_t n = shp.size(), seed = rnd.seed;
  std::vector<uint8_t> want, got;
  REQUIRE(ok(host_encode(s, in, in_t, shp, rnd, want)));
  const status st = b.encode(s, in, in_t, shp, rnd, got);
  REQUIRE_MESSAGE(ok(st), st);
  const long diff = first_difference(want, got);
  REQUIRE_MESSAGE(diff < 0, "payload differs from host at byte " << diff << " of " << want.size());
  for (dtype out_t : out_types) {
    for (bool acc : {false, true}) {
      CAPTURE(int(out_t));
      CAPTURE(acc);
      std::vector<uint8_t> h = acc ? accumulator(out_t, n, seed) : std::vector<uint8_t>(n * dtype_bytes(out_t), 0x5A);
      std::vector<uint8_t> d = h;
      REQUIRE(ok(host_decode(want, want.size(), out_t, shp, h, acc)));
      const status ds = b.decode(got, got.size(), out_t, shp, d, acc);
      REQUIRE_MESSAGE(ok(ds), ds);
      const long dd = first_difference(h, d);
      REQUIRE_MESSAGE(dd < 0, "decoded tensor differs from host at byte " << dd);
    }
  }
}

// The same on activation-like data.
template <class B>
void check_matches_host(B& b, const spec& s, dtype in_t, shape shp, randomness rnd,
                        std::initializer_list<dtype> out_types) {
  const auto in = testdata::as_bytes(testdata::activations(shp.size(), rnd.seed * 7 + shp.size()), in_t);
  check_matches_host(b, s, in, in_t, shp, rnd, out_types);
}

// Decoding `payload` (len bytes) must fail on B with the host's status and leave the output
// untouched, plain and accumulating.
template <class B>
void check_rejects_like_host(B& b, const std::vector<uint8_t>& payload, size_t len, dtype out_t, shape shp) {
  for (bool acc : {false, true}) {
    CAPTURE(acc);
    const auto init = accumulator(out_t, shp.size(), 3);
    std::vector<uint8_t> h = init, d = init;
    const status hs = host_decode(payload, len, out_t, shp, h, acc);
    REQUIRE_MESSAGE(!ok(hs), "the host accepted a payload meant to be rejected");
    const status ds = b.decode(payload, len, out_t, shp, d, acc);
    CHECK_MESSAGE(ds == hs, "host: " << hs << ", backend: " << ds);
    CHECK(h == init);
    CHECK(d == init);
  }
}

}  // namespace testb

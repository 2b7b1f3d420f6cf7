// Helpers for TopK / RandK tests: a sort-based reference selection, encode/decode through
// the public API, and reading the positions back out of a payload.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "data.hpp"
#include "pipecodec/pipecodec.hpp"
#include "print.hpp"

namespace testk {

using namespace pipecodec;

// Reference order by magnitude, independent of the library's keys: NaN above everything,
// then |x|; equal ranks go to the lower index.
inline bool ranks_above(float a, size_t ia, float b, size_t ib) {
  const bool na = std::isnan(a), nb = std::isnan(b);
  if (na != nb) return na;
  if (!na && std::fabs(a) != std::fabs(b)) return std::fabs(a) > std::fabs(b);
  return ia < ib;
}

// Kept positions (inside each unit, ascending) of a unit of values, k of them.
inline std::vector<uint64_t> reference_topk(const float* x, uint64_t m, uint64_t k) {
  std::vector<uint64_t> idx(m);
  std::iota(idx.begin(), idx.end(), uint64_t(0));
  std::sort(idx.begin(), idx.end(), [&](uint64_t a, uint64_t b) { return ranks_above(x[a], a, x[b], b); });
  idx.resize(k);
  std::sort(idx.begin(), idx.end());
  return idx;
}

// Kept positions (ascending) of the k largest of m raw u32 keys, ties to the lower index.
inline std::vector<uint64_t> sort_select(const uint32_t* key, uint64_t m, uint64_t k) {
  std::vector<uint64_t> idx(m);
  std::iota(idx.begin(), idx.end(), uint64_t(0));
  std::stable_sort(idx.begin(), idx.end(), [&](uint64_t a, uint64_t b) { return key[a] > key[b]; });
  idx.resize(k);
  std::sort(idx.begin(), idx.end());
  return idx;
}

// Per unit, the positions a payload keeps (read through its index section or, for RandK,
// re-derived: decoded from a payload of a tensor with no zeros is not enough, so RandK
// tests use positions_of_randk below).
inline std::vector<std::vector<uint64_t>> positions_of(const std::vector<uint8_t>& payload) {
  detail::topk_payload tp;
  REQUIRE(ok(detail::parse_topk_payload(payload.data(), payload.size(), tp)));
  REQUIRE(ok(host::detail::validate_positions(tp)));
  std::vector<std::vector<uint64_t>> pos(tp.layout.units);
  host::detail::for_each_position(tp, [&](uint64_t u, uint64_t j, uint64_t i) {
    REQUIRE(j == pos[u].size());
    pos[u].push_back(i);
  });
  return pos;
}

inline std::vector<uint8_t> workspace_for(const spec& s, shape shp) {
  return std::vector<uint8_t>(workspace_bytes(s, shp));
}

// Encodes twice, into a zeroed buffer and into one of stale bytes: no byte of a payload may
// depend on what the caller's buffer held (the encoder clears only what it does not write).
inline std::vector<uint8_t> encode(const spec& s, const void* in, dtype t, shape shp, randomness rnd = {}) {
  std::vector<uint8_t> payload;
  for (const uint8_t fill : {uint8_t(0), uint8_t(0xA5)}) {
    std::vector<uint8_t> p(encoded_bytes(s, shp), fill);
    REQUIRE(p.size() > 0);
    auto ws = workspace_for(s, shp);
    size_t written = 0;
    const status st =
        host::encode(s, const_tensor_view{in, t, shp}, p.data(), p.size(), ws.data(), ws.size(), rnd, &written);
    REQUIRE_MESSAGE(ok(st), st);
    REQUIRE(written == p.size());
    if (fill != 0) REQUIRE(p == payload);
    payload = std::move(p);
  }
  return payload;
}

inline std::vector<float> decode_f32(const std::vector<uint8_t>& payload, shape shp) {
  std::vector<float> out(shp.size(), -7.0F);
  const status st = host::decode(payload.data(), payload.size(), tensor_view{out.data(), dtype::f32, shp});
  REQUIRE_MESSAGE(ok(st), st);
  return out;
}

inline bool same_bits(float a, float b) {
  return std::memcmp(&a, &b, 4) == 0;
}

inline spec topk_spec(double ratio, uint64_t k, topk_scope sc, index_layout ix, value_kind v) {
  spec s;
  s.codec = codec_id::topk;
  s.topk.ratio = ratio;
  s.topk.k = k;
  s.topk.scope = sc;
  s.topk.index = ix;
  s.topk.values = v;
  return s;
}

}  // namespace testk

// Inputs and payload edits for the GPU TopK tests: adversarial distributions built with
// integer ops, a host encode that brings its own workspace, and named corruptions.
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "../common/data.hpp"
#include "../common/print.hpp"
#include "pipecodec/pipecodec.hpp"

namespace testk_gpu {

using namespace pipecodec;

constexpr int kinds = 7;

// 0 activations, 1 all equal magnitude, 2 three magnitudes, 3 denormals only, 4 NaN and
// +-Inf among activations, 5 many ties (40 magnitudes), 6 mostly (+-)zeros.
inline std::vector<float> adversarial(int kind, uint64_t n, uint64_t seed) {
  std::vector<float> v = testdata::activations(n, seed);
  uint64_t r = seed + 99;
  for (auto& x : v) {
    const uint64_t z = testdata::splitmix(r);
    const uint32_t sign = uint32_t(z >> 63) << 31;
    if (kind == 1) x = testdata::from_bits(sign | 0x3FC00000u);
    if (kind == 2) x = testdata::from_bits(sign | (0x3F800000u + uint32_t(z % 3) * 0x00800000u));
    if (kind == 3) x = testdata::from_bits(sign | uint32_t(z >> 20) % 256u);
    if (kind == 4 && z % 8 == 0) x = testdata::from_bits(z % 16 ? 0x7FC00000u : sign | 0x7F800000u);
    if (kind == 5) x = testdata::from_bits(sign | (0x3E000000u + uint32_t(z % 40) * 0x00100000u));
    if (kind == 6 && z % 10 != 0) x = testdata::from_bits(sign);
  }
  return v;
}

// host::encode / encode_shared with a workspace of workspace_bytes(s, shp).
inline status host_encode(const spec& s, const std::vector<uint8_t>& in, dtype t, shape shp, uint64_t seed,
                          std::vector<uint8_t>& payload, const std::vector<uint8_t>* mask = nullptr) {
  payload.assign(encoded_bytes(s, shp), 0xEE);
  std::vector<uint8_t> ws(workspace_bytes(s, shp));
  const const_tensor_view v{in.data(), t, shp};
  return mask ? host::encode_shared(s, v, mask->data(), mask->size(), payload.data(), payload.size(), ws.data(),
                                    ws.size(), seed)
              : host::encode(s, v, payload.data(), payload.size(), ws.data(), ws.size(), seed);
}

// Applies the named corruption to a valid payload (tests/gpu/test_topk*.cu name them).
inline void corrupt(std::vector<uint8_t>& p, const std::string& what) {
  detail::topk_payload tp;
  REQUIRE(ok(detail::parse_topk_payload(p.data(), p.size(), tp)));
  const detail::topk_layout& L = tp.layout;
  uint8_t* idx = p.data() + L.index_offset;
  if (what == "scope byte") {
    p[40] = 7;
  } else if (what == "index out of range") {
    REQUIRE(tp.desc.index == index_layout::u32);
    detail::put_u32(idx, uint32_t(L.unit_len));
  } else if (what == "duplicate index") {
    REQUIRE(tp.desc.index == index_layout::u16);
    detail::put_u16(idx + 2, detail::get_u16(idx));
  } else if (what == "extra bitmap bit") {
    REQUIRE(tp.desc.index == index_layout::bitmap);
    uint64_t i = 0;
    while ((idx[i / 8] >> (i % 8)) & 1u) ++i;  // the first clear bit of unit 0
    REQUIRE(i < L.unit_len);
    idx[i / 8] = uint8_t(idx[i / 8] | (1u << (i % 8)));
  } else if (what == "last index out of range") {  // the last entry: another block's, on the grid
    REQUIRE(tp.desc.index == index_layout::u32);
    detail::put_u32(idx + 4 * (L.kept - 1), uint32_t(L.unit_len));
  } else if (what == "last index repeated") {
    REQUIRE((tp.desc.index == index_layout::u32 && L.kept > 1));
    detail::put_u32(idx + 4 * (L.kept - 1), detail::get_u32(idx + 4 * (L.kept - 2)));
  } else if (what == "last bitmap bit cleared") {  // k - 1 bits set, the loss in the last chunk
    REQUIRE(tp.desc.index == index_layout::bitmap);
    uint64_t i = L.n;
    while (!((idx[(i - 1) / 8] >> ((i - 1) % 8)) & 1u)) --i;
    idx[(i - 1) / 8] = uint8_t(idx[(i - 1) / 8] & ~(1u << ((i - 1) % 8)));
  } else if (what == "last bitmap bit added") {  // k + 1 bits set: the last clear bit of the tensor
    REQUIRE(tp.desc.index == index_layout::bitmap);
    uint64_t i = L.n;
    while ((idx[(i - 1) / 8] >> ((i - 1) % 8)) & 1u) --i;
    idx[(i - 1) / 8] = uint8_t(idx[(i - 1) / 8] | (1u << ((i - 1) % 8)));
  } else if (what == "bitmap bit moved to the next unit") {  // the total stays units * k
    REQUIRE((tp.desc.index == index_layout::bitmap && L.units > 1));
    uint64_t i = L.unit_len;  // the last set bit of unit 0
    while (!((idx[(i - 1) / 8] >> ((i - 1) % 8)) & 1u)) --i;
    idx[(i - 1) / 8] = uint8_t(idx[(i - 1) / 8] & ~(1u << ((i - 1) % 8)));
    i = L.unit_len;  // the first clear bit of unit 1
    while ((idx[i / 8] >> (i % 8)) & 1u) ++i;
    idx[i / 8] = uint8_t(idx[i / 8] | (1u << (i % 8)));
  } else if (what == "bitmap bit past n") {
    REQUIRE((tp.desc.index == index_layout::bitmap && L.n % 8 != 0));
    idx[L.n / 8] = uint8_t(idx[L.n / 8] | (1u << (L.n % 8)));
  } else if (what == "NaN scale") {
    REQUIRE(tp.desc.values == value_kind::quant);
    detail::put_u32(p.data() + L.values_offset, 0x7FC00000u);  // scale of group 0
  } else if (what == "padding byte") {
    REQUIRE(p.back() == 0);
    p.back() = 1;
  } else {
    REQUIRE((what == "none" || what == "shared payload alone"));
  }
}

}  // namespace testk_gpu

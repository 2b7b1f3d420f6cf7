// The host's one-pass TopK selections (host/topk_band.hpp) and the block writer of an encode:
// whatever a band, a sample or a floor guesses, the kept set equals a sort's. Built with the
// default flags in the host suite and again per vector level (tests/meson.build), so the
// AVX-512, AVX2 and portable block comparisons and compressions all run.
#include <doctest/doctest.h>

#include <algorithm>

#include "../common/topk_check.hpp"
#include "pipecodec/host/topk_band.hpp"

using namespace pipecodec;
using namespace pipecodec::host::detail;
using testdata::splitmix;
using testk::sort_select;

namespace {

std::vector<uint64_t> kept(const uint32_t* key, uint64_t m, const topk_threshold& t) {
  std::vector<uint64_t> got;
  compact_kept([&](uint64_t i) { return key[i]; }, m, t, [&](uint64_t j, uint64_t i) {
    REQUIRE(j == got.size());
    got.push_back(i);
  });
  return got;
}

// Units whose k-th key jumps around: a bulk of magnitudes with rare large ones (the k-th
// key is a large one in some rows and in the bulk in others), runs of ties, all equal,
// zeros, NaN's key, the extremes of the key range, and keys spread over all 32 bits.
uint32_t draw_key(int kind, uint64_t& r) {
  const uint64_t z = splitmix(r);
  switch (kind) {
    case 0: return magnitude_key(testdata::activations(1, z)[0]);
    case 1: return z % 97 == 0 ? 0x43000000u + uint32_t(z >> 40) % 0x800000u : 0x3E000000u + uint32_t(z >> 40) % 0x1000000u;
    case 2: return 0x3F800000u + uint32_t(z % 3);
    case 3: return 0x12345678u;
    case 4: return z % 2 ? 0u : uint32_t(z >> 33) & 0x3FFFFFFFu;
    case 5: return z % 5 == 0 ? topk_nan_key : z % 5 == 1 ? 0x7F800000u : uint32_t(z >> 41);
    case 6: return z % 3 == 0 ? ~0u : z % 3 == 1 ? 0u : 1u;
    default: return uint32_t(z);
  }
}
constexpr int key_kinds = 8;

}  // namespace

TEST_CASE("one selector over many units (a tensor's rows) keeps what a sort keeps") {
  // Rows share the selector's memory of the last k-th key: bands around it, moved, widened,
  // halved, streaming floors from it, and the radix select when all of them miss; rows of up
  // to 1024 keys select among their nonzero keys (all zero, fewer than k nonzero, ties).
  uint64_t rng = 31;
  for (int tensor = 0; tensor < 60; ++tensor) {
    const int kind = tensor % key_kinds;
    const uint64_t m = 1 + splitmix(rng) % (tensor % 3 == 0 ? 70 : 1500);
    const uint64_t k = tensor % 5 == 0 ? 1 + splitmix(rng) % 16 : splitmix(rng) % (m + 1);
    const uint64_t cap = tensor % 7 == 3 ? splitmix(rng) % 40 : m / 4;
    unit_selector sel;
    for (int row = 0; row < 40; ++row) {
      const int row_kind = row % 9 == 8 ? (kind + 3) % key_kinds : kind;  // a stray row now and then
      std::vector<uint32_t> keys(m);
      for (auto& c : keys) c = draw_key(row_kind, rng);
      std::vector<uint32_t> cand(cap + 1, 0xDEADBEEFu);
      CAPTURE(tensor);
      CAPTURE(row);
      CAPTURE(m);
      CAPTURE(k);
      CAPTURE(cap);
      const auto t = sel.select([&](uint64_t i) { return keys[i]; }, m, k, cand.data(), cap);
      REQUIRE(cand[cap] == 0xDEADBEEFu);  // never writes past its capacity
      REQUIRE(kept(keys.data(), m, t) == sort_select(keys.data(), m, k));
    }
  }
}

TEST_CASE("long units: a sample's band, and the radix select when the sample misleads") {
  uint64_t rng = 8;
  for (int trial = 0; trial < 12; ++trial) {
    const uint64_t m = band_sample_min + splitmix(rng) % 90000;
    std::vector<uint32_t> keys(m);
    for (auto& c : keys) c = draw_key(trial % key_kinds, rng);
    if (trial % 3 == 1) std::sort(keys.begin(), keys.end());  // the sampled runs see one range each
    if (trial % 3 == 2)  // large keys only between the sampled runs
      for (uint64_t i = 0; i < m; ++i) keys[i] = (i % (m / 64)) > m / 4096 + 8 ? 0x7F000000u + uint32_t(i % 1000) : keys[i] >> 8;
    for (uint64_t k : {uint64_t(1), m / 1000, m / 100, m / 10, m / 2, m - 1}) {
      CAPTURE(trial);
      CAPTURE(m);
      CAPTURE(k);
      unit_selector sel;
      std::vector<uint32_t> cand(m / 4 + 1, 0xDEADBEEFu);
      const auto t = sel.select([&](uint64_t i) { return keys[i]; }, m, k, cand.data(), m / 4);
      REQUIRE(cand[m / 4] == 0xDEADBEEFu);
      REQUIRE(kept(keys.data(), m, t) == sort_select(keys.data(), m, k));
    }
  }
}

TEST_CASE("each band verdict, the streaming floor's guesses and the small exact selection") {
  std::vector<uint32_t> keys(300);
  for (uint32_t i = 0; i < 300; ++i) keys[i] = 1000 + (i * 37) % 300;  // 1000..1299, each once
  const auto key = [&](uint64_t i) { return keys[i]; };
  std::vector<uint32_t> cand(75);
  topk_threshold t;
  uint64_t above = 0, inside = 0;
  // k = 10: the k-th key is 1290.
  CHECK(try_band(key, 300, 10, band{1200, 1280}, cand.data(), 75, t, above, inside) == band_verdict::above);
  CHECK(above == 19);
  CHECK(try_band(key, 300, 10, band{1295, 1299}, cand.data(), 75, t, above, inside) == band_verdict::below);
  CHECK(try_band(key, 300, 10, band{0, 1299}, cand.data(), 75, t, above, inside) == band_verdict::overflow);
  CHECK(inside == 300);
  REQUIRE(try_band(key, 300, 10, band{1285, 1294}, cand.data(), 75, t, above, inside) == band_verdict::inside);
  CHECK(t.mask == ~0u);
  CHECK(t.prefix == 1290);
  CHECK(t.take_equal == 1);
  // A floor above the k-th key gathers fewer than k: false, for the caller to start from 0.
  CHECK_FALSE(select_streaming(key, 300, 10, cand.data(), 75, 1295, t));
  REQUIRE(select_streaming(key, 300, 10, cand.data(), 75, 1200, t));
  CHECK(t.prefix == 1290);
  REQUIRE(select_streaming(key, 300, 10, cand.data(), 75, 0, t));
  CHECK(t.prefix == 1290);
  CHECK_FALSE(select_streaming(key, 300, 17, cand.data(), 75, 0, t));  // k beyond its reach

  // Ties that keep the streaming buffer full: false rather than a wrong threshold.
  std::vector<uint32_t> ties(500, 7u);
  const auto tie_key = [&](uint64_t i) { return ties[i]; };
  CHECK_FALSE(select_streaming(tie_key, 500, 3, cand.data(), 75, 0, t));

  // select_small against a sort, with ties at the threshold.
  uint64_t rng = 3;
  for (int trial = 0; trial < 300; ++trial) {
    const uint32_t n = 1 + uint32_t(splitmix(rng) % (trial % 3 ? small_select_max : 200));  // streaming: up to 95
    std::vector<uint32_t> c(n);
    for (auto& v : c) v = uint32_t(splitmix(rng) % (trial % 2 ? 8 : 1u << 31));
    const uint64_t r = 1 + splitmix(rng) % n;
    std::vector<uint32_t> sorted = c;
    std::sort(sorted.begin(), sorted.end(), std::greater<uint32_t>());
    const topk_threshold s = select_small(c.data(), n, r);
    CAPTURE(trial);
    REQUIRE(s.prefix == sorted[r - 1]);
    REQUIRE(s.take_equal == r - uint64_t(std::count_if(c.begin(), c.end(), [&](uint32_t v) { return v > s.prefix; })));
  }
}

TEST_CASE("the block writer: every index layout and value kind at unit offsets of every alignment") {
  // Rows of 37, 40, 1000, 1001 and 1024: the bitmap's blocks start at bits that are and are
  // not byte aligned, and the last block of a unit is partial. 6 rows of 40 end the bitmap
  // (30 bytes) two bytes before its 16-byte padding does, where a 4-byte store of the last
  // block would reach into the first value.
  uint64_t rng = 12;
  for (const shape shp : {shape(5, 37), shape(6, 40), shape(5, 1000), shape(5, 1001), shape(5, 1024)}) {
    const uint64_t cols = shp.cols;
    for (auto ix : {index_layout::bitmap, index_layout::u32, index_layout::u16}) {
      for (auto v : {value_kind::f32, value_kind::f16, value_kind::bf16}) {
        for (dtype t : {dtype::f32, dtype::bf16}) {
          const spec s = testk::topk_spec(0.05 + double(splitmix(rng) % 30) / 100, 0, topk_scope::row, ix, v);
          const auto in = testdata::as_bytes(testdata::activations(shp.size(), rng), t);
          std::vector<float> x(shp.size());
          for (size_t i = 0; i < x.size(); ++i) x[i] = testdata::element(in, t, i);
          CAPTURE(cols);
          CAPTURE(int(ix));
          CAPTURE(int(v));
          CAPTURE(int(t));
          const auto payload = testk::encode(s, in.data(), t, shp);
          const auto pos = testk::positions_of(payload);
          const auto y = testk::decode_f32(payload, shp);
          for (uint64_t u = 0; u < shp.rows; ++u) {
            const auto want = testk::reference_topk(x.data() + u * cols, cols, pos[u].size());
            REQUIRE(pos[u] == want);
            for (uint64_t i : want) {
              const float xi = x[u * cols + i];
              const float expect = v == value_kind::f32 ? xi
                                   : v == value_kind::f16 ? pipecodec::detail::f16_to_f32(pipecodec::detail::f32_to_f16(xi))
                                                          : pipecodec::detail::bf16_to_f32(pipecodec::detail::f32_to_bf16(xi));
              REQUIRE(testk::same_bits(y[u * cols + i], expect));
            }
          }
        }
      }
    }
  }
}

TEST_CASE("rows' exact selection among their nonzero keys: a sample's band, then the side that holds the k-th") {
  uint64_t rng = 12;
  for (int trial = 0; trial < 3000; ++trial) {
    const int kind = trial % key_kinds;
    const uint32_t n = 1 + uint32_t(splitmix(rng) % (trial % 4 == 0 ? 64 : 1024));
    std::vector<uint32_t> c(n), tmp(n);
    for (auto& v : c) v = trial % 11 == 5 ? uint32_t(splitmix(rng) % 3) : draw_key(kind, rng);  // few distinct keys
    const uint64_t r = 1 + splitmix(rng) % n;
    std::vector<uint32_t> sorted = c;
    std::sort(sorted.begin(), sorted.end(), std::greater<uint32_t>());
    const uint64_t greater = uint64_t(std::count_if(c.begin(), c.end(), [&](uint32_t v) { return v > sorted[r - 1]; }));
    CAPTURE(trial);
    CAPTURE(n);
    CAPTURE(r);
    // Every few trials the passes may read only 0-3 n keys before select_among takes over.
    const topk_threshold t = trial % 5 == 4 ? select_rank(c.data(), tmp.data(), n, r, uint32_t(trial / 5 % 4))
                                            : select_rank(c.data(), tmp.data(), n, r);
    REQUIRE(t.mask == ~0u);
    REQUIRE(t.prefix == sorted[r - 1]);
    REQUIRE(t.take_equal == r - greater);
  }
  for (int trial = 0; trial < 2000; ++trial) {  // the sample's order statistics, ties included
    uint32_t s[16];
    for (auto& v : s) v = trial % 2 ? uint32_t(splitmix(rng) % 4) : uint32_t(splitmix(rng));
    std::vector<uint32_t> want(s, s + 16);
    std::sort(want.begin(), want.end(), std::greater<uint32_t>());
    const uint32_t upper = uint32_t(splitmix(rng) % 16), lower = uint32_t(splitmix(rng) % 16);
    uint32_t at_upper = 0, at_lower = 0;
    sample_at_ranks(s, upper, lower, at_upper, at_lower);
    REQUIRE(at_upper == want[upper]);
    REQUIRE(at_lower == want[lower]);
  }
}

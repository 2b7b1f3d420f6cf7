// The radix select on raw keys: every path (histogram-only rescans, candidate buffering,
// early exit, k = 0 / k = m) agrees with a sort of (key desc, index asc).
#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include "../common/topk_check.hpp"
#include "pipecodec/host/topk_select.hpp"

using namespace pipecodec;
using testdata::splitmix;

namespace {

std::vector<uint64_t> sort_select(const std::vector<uint32_t>& key, uint64_t k) {
  return testk::sort_select(key.data(), key.size(), k);
}

constexpr int kinds = 9;

std::vector<uint32_t> make_keys(int kind, uint64_t m, uint64_t seed) {
  std::vector<uint32_t> k(m);
  for (auto& v : k) {
    const uint64_t z = splitmix(seed);
    switch (kind) {
      case 0: v = uint32_t(z); break;                              // spread over all digits
      case 1: v = 0x3F800000u + uint32_t(z % 8); break;             // differ in the last digit only
      case 2: v = uint32_t(z % 3) << 21; break;                     // differ in the first digit only
      case 3: v = 0x12345678u; break;                               // all equal
      case 4: v = uint32_t(z % 5) << 10 | 0x40000000u; break;       // middle digit
      case 5: v = uint32_t(z >> 40) & 0x7FFFFFFFu; break;
      case 6: v = z % 2 ? 0u : uint32_t(z >> 33) & 0x3FFFFFFFu; break;  // half zeros (a ReLU's output)
      case 7: v = uint32_t(z >> 43) % (1u << 21); break;             // first digit 0 only
      default: v = uint32_t(z % 16) << 24 | uint32_t(z >> 40) % 4; break;  // ties in a narrowed bucket

    }
  }
  return k;
}

}  // namespace

TEST_CASE("radix select agrees with a sort on every path") {
  uint64_t rng = 77;
  for (int trial = 0; trial < 600; ++trial) {
    const int kind = int(splitmix(rng) % kinds);
    const uint64_t m = splitmix(rng) % 3000;
    const uint64_t k = m == 0 ? 0 : splitmix(rng) % (m + 1);
    const auto keys = make_keys(kind, m, trial);
    const uint64_t caps[3] = {0, 1 + splitmix(rng) % 64, m / 4};
    for (uint64_t cap : caps) {
      CAPTURE(trial);
      CAPTURE(kind);
      CAPTURE(m);
      CAPTURE(k);
      CAPTURE(cap);
      std::vector<uint32_t> cand(cap + 1, 0xDEADBEEFu);
      auto key = [&](uint64_t i) { return keys[i]; };
      const auto t = host::detail::radix_select(key, m, k, cand.data(), cap);
      CHECK(cand[cap] == 0xDEADBEEFu);  // never writes past its capacity
      std::vector<uint64_t> got;
      host::detail::compact_kept(key, m, t, [&](uint64_t j, uint64_t i) {
        REQUIRE(j == got.size());
        got.push_back(i);
      });
      REQUIRE(got == sort_select(keys, k));
    }
  }
}

TEST_CASE("large units: the sampled guess of the first digit never changes the result") {
  // m >= 131072 enables the host's sampled shortcut; data whose sample misleads it
  // (sorted keys, a spike outside the sampled runs) and small buffers force every fallback.
  uint64_t rng = 5;
  for (int trial = 0; trial < 24; ++trial) {
    const uint64_t m = 131072 + testdata::splitmix(rng) % 70000;
    auto keys = make_keys(trial % kinds, m, trial);
    if (trial % 4 == 1) std::sort(keys.begin(), keys.end());
    if (trial % 4 == 2)
      for (uint64_t i = 0; i < m; ++i) keys[i] = (i / 64) % 64 == 63 ? 0x7F000000u + uint32_t(i) : keys[i] >> 4;
    const uint64_t ks[4] = {1, m / 1000 + 1, m / 100, m / 10};
    for (uint64_t k : ks) {
      for (uint64_t cap : {m / 4, m / 200, uint64_t(0)}) {
        CAPTURE(trial);
        CAPTURE(m);
        CAPTURE(k);
        CAPTURE(cap);
        std::vector<uint32_t> cand(cap + 1, 0xDEADBEEFu);
        auto key = [&](uint64_t i) { return keys[i]; };
        const auto t = host::detail::radix_select(key, m, k, cand.data(), cap);
        CHECK(cand[cap] == 0xDEADBEEFu);
        std::vector<uint64_t> got;
        host::detail::compact_kept(key, m, t, [&](uint64_t, uint64_t i) { got.push_back(i); });
        REQUIRE(got == sort_select(keys, k));
      }
    }
  }
}

TEST_CASE("early exit: a bucket kept whole stops the passes with a shorter mask") {
  // Two distinct top digits; k equals the count of the larger one.
  std::vector<uint32_t> keys(100, 1u << 21);
  for (int i = 0; i < 100; i += 4) keys[i] = 5u << 21 | uint32_t(i);
  auto key = [&](uint64_t i) { return keys[i]; };
  const auto t = host::detail::radix_select(key, keys.size(), 25, nullptr, 0);
  CHECK(t.mask == 0x7FFu << 21);
  CHECK(t.prefix == 5u << 21);
  CHECK(t.take_equal == 25);
}

TEST_CASE("one scratch for many units: zero again after each, same result as its own") {
  // An encode keeps one radix_scratch for all its units; each pass clears only the buckets it
  // counted (bucket 0 and [lo, hi]), and few remaining keys finish by select_among.
  host::detail::radix_scratch s;
  uint64_t rng = 901;
  for (int unit = 0; unit < 400; ++unit) {
    const int kind = unit % kinds;
    const uint64_t m = 1 + splitmix(rng) % (unit % 2 ? 1100 : 40);
    const uint64_t k = splitmix(rng) % (m + 1);
    const auto keys = make_keys(kind, m, 1000 + unit);
    std::vector<uint32_t> cand(m / 4 + 1, 0xDEADBEEFu);
    auto key = [&](uint64_t i) { return keys[i]; };
    CAPTURE(unit);
    CAPTURE(kind);
    CAPTURE(m);
    CAPTURE(k);
    const auto t = host::detail::radix_select(key, m, k, cand.data(), m / 4, s);
    CHECK(cand[m / 4] == 0xDEADBEEFu);
    std::vector<uint64_t> got;
    host::detail::compact_kept(key, m, t, [&](uint64_t, uint64_t i) { got.push_back(i); });
    REQUIRE(got == sort_select(keys, k));
    const bool zero = std::all_of(std::begin(s.hist), std::end(s.hist), [](uint64_t c) { return c == 0; }) &&
                      std::all_of(&s.sub[0][0], &s.sub[0][0] + 4 * pipecodec::detail::topk_radix_buckets, [](uint16_t c) { return c == 0; });
    REQUIRE(zero);
  }
}

// The vector Philox of stochastic rounding (host/chunk_simd.hpp, uniforms_avx2) against the
// scalar random_block word by word: random keys, streams and counters, counters whose blocks
// cross a multiple of 2^32 (where the shared-high-word rounds must not be taken) and the
// top of the counter range. Built per vector level (tests/meson.build): AVX2, AVX-512.
#include <doctest/doctest.h>

#include <cstring>

#include "../common/data.hpp"
#include "pipecodec/host/chunk_simd.hpp"

#if !defined(__AVX2__)
#error "built only for the vector levels, where uniforms_avx2 exists"
#endif

using namespace pipecodec::detail;
using pipecodec::host::detail::uniforms_avx2;
using testdata::splitmix;

namespace {

template <uint32_t Sets>
uint64_t mismatches(uint64_t key, uint32_t stream, uint64_t b0) {
  float u[32 * Sets];
  uniforms_avx2<Sets>(key, stream, b0, u);
  uint64_t bad = 0;
  for (uint32_t i = 0; i < 32 * Sets; ++i) {
    const float want = to_unit_float(random_block(key, stream, b0 + i / 4).v[i % 4]);
    bad += std::memcmp(&want, &u[i], 4) != 0;
  }
  return bad;
}

uint64_t both(uint64_t key, uint32_t stream, uint64_t b0) {
  return mismatches<1>(key, stream, b0) + mismatches<4>(key, stream, b0);
}

}  // namespace

TEST_CASE("uniforms_avx2 equals random_block word by word") {
  uint64_t s = 11, bad = 0;
  for (int t = 0; t < 3000; ++t) {
    const uint64_t key = splitmix(s), b0 = splitmix(s) >> (splitmix(s) % 64);
    bad += both(key, uint32_t(splitmix(s)), b0);
  }
  CHECK(bad == 0);
}

TEST_CASE("uniforms_avx2 where the blocks' high counter word changes") {
  uint64_t s = 12, bad = 0;
  for (uint64_t hi = 1; hi <= 4; ++hi)
    for (uint64_t back = 0; back <= 40; ++back) bad += both(splitmix(s), uint32_t(splitmix(s)), (hi << 32) - back);
  for (uint64_t back = 32; back <= 40; ++back) bad += both(splitmix(s), 1, ~uint64_t(0) - back);  // the last blocks
  bad += both(0, 0, 0) + both(~uint64_t(0), ~uint32_t(0), 0);
  CHECK(bad == 0);
}

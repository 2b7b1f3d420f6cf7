// Philox4x32-10 (Salmon et al., SC'11): a counter-based RNG, so the random number used for
// element i depends only on (seed, stream, i) and any backend, thread layout or chunking
// reproduces it exactly.
#pragma once

#include "config.hpp"

namespace pipecodec::detail {

struct philox_out {
  uint32_t v[4];
};

PIPECODEC_HD philox_out philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0,
                                      uint32_t k1) {
  for (int r = 0; r < 10; ++r) {
    const uint64_t p0 = uint64_t(0xD2511F53u) * c0;
    const uint64_t p1 = uint64_t(0xCD9E8D57u) * c2;
    const uint32_t n0 = uint32_t(p1 >> 32) ^ c1 ^ k0;
    const uint32_t n2 = uint32_t(p0 >> 32) ^ c3 ^ k1;
    c1 = uint32_t(p1);
    c3 = uint32_t(p0);
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return philox_out{{c0, c1, c2, c3}};
}

// Streams keep the uses of one seed independent. The _sample streams serve rng=sample draws,
// whose Philox key is sample_key(seed, id) and whose counter is the column, not the flat index.
enum rng_stream : uint32_t {
  stream_rounding = 1,
  stream_randk = 2,
  stream_rounding_sample = 4,
  stream_randk_sample = 5,
};

// Four 32-bit words for elements 4*block .. 4*block+3 of a stream.
PIPECODEC_HD philox_out random_block(uint64_t seed, uint32_t stream, uint64_t block) {
  return philox4x32_10(uint32_t(block), uint32_t(block >> 32), stream, 0u, uint32_t(seed),
                       uint32_t(seed >> 32));
}

// Exact uniform in [0, 1) with 24 bits of resolution.
PIPECODEC_HD float to_unit_float(uint32_t r) { return float(r >> 8) * 5.9604644775390625e-8F; }

}  // namespace pipecodec::detail

// Packing 32 codes (one byte each) into `bits` u32 bit planes and back, eight lanes at a
// time with 64-bit multiply tricks: portable, branch-free and fast at baseline x86-64 flags.
// The device produces the same planes with one warp ballot per bit.
#pragma once

#include "config.hpp"

namespace pipecodec::detail {

// bit j of codes[l] -> bit l of planes[j], for j < bits and l < 32.
template <uint32_t Bits>
PIPECODEC_HD void pack_planes(const uint8_t (&codes)[32], uint32_t* planes) {
  uint64_t blk[4];
  memcpy(blk, codes, 32);
  for (uint32_t j = 0; j < Bits; ++j) {
    uint32_t w = 0;
    for (uint32_t k = 0; k < 4; ++k) {
      const uint64_t t = (blk[k] >> j) & 0x0101010101010101ull;
      w |= uint32_t((t * 0x0102040810204080ull) >> 56) << (8 * k);
    }
    planes[j] = w;
  }
}

// Inverse of pack_planes.
template <uint32_t Bits>
PIPECODEC_HD void unpack_planes(const uint32_t* planes, uint8_t (&codes)[32]) {
  uint64_t blk[4] = {0, 0, 0, 0};
  for (uint32_t j = 0; j < Bits; ++j) {
    const uint32_t w = planes[j];
    for (uint32_t k = 0; k < 4; ++k) {
      const uint64_t spread = (uint64_t((w >> (8 * k)) & 0xFFu) * 0x0101010101010101ull) &
                              0x8040201008040201ull;
      const uint64_t lanes = ((spread + 0x7F7F7F7F7F7F7F7Full) & 0x8080808080808080ull) >> 7;
      blk[k] |= lanes << j;
    }
  }
  memcpy(codes, blk, 32);
}

}  // namespace pipecodec::detail

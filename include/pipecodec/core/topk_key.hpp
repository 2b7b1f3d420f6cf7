// Selection keys for TopK and RandK, shared by both backends. Selecting the k largest
// keys, ties to the lower index, is the whole of both selections:
//   TopK : the magnitude |x| as the bits of a non-negative float (order-preserving as an
//          unsigned integer). Every NaN maps to 0x7F800001, one above +Inf: NaNs rank
//          above every number, and equal to each other (the lower index wins).
//   RandK: the complement of a Philox word for the element's flat index, so the k
//          smallest hash words win; positions depend only on (seed, flat index), or with
//          rng=sample on (seed, the row's sample id, column).
// Keys are split into radix digits of 11, 11 and 10 bits, most significant first.
#pragma once

#include "dtype.hpp"
#include "draw.hpp"

namespace pipecodec::detail {

constexpr uint32_t topk_nan_key = 0x7F800001u;
constexpr uint32_t topk_radix_bits = 11;
constexpr uint32_t topk_radix_buckets = 1u << topk_radix_bits;  // 2048
constexpr uint32_t topk_radix_passes = 3;

// Digit p covers bits [shift, shift + width) of the key.
PIPECODEC_HD constexpr uint32_t topk_digit_shift(uint32_t p) { return p == 0 ? 21u : p == 1 ? 10u : 0u; }
PIPECODEC_HD constexpr uint32_t topk_digit_mask(uint32_t p) { return p == 2 ? 0x3FFu : 0x7FFu; }

PIPECODEC_HD uint32_t magnitude_key(float x) {
  const uint32_t a = bit_cast<uint32_t>(x) & 0x7FFFFFFFu;
  return a > topk_nan_key ? uint32_t(topk_nan_key) : a;  // a prvalue: no odr-use on the device
}

PIPECODEC_HD uint32_t randk_key_from_word(uint32_t w) { return ~w; }

// RandK key of element i of a unit (words of one Philox block cover 4 consecutive elements).
PIPECODEC_HD uint32_t randk_key(const draw& d, uint64_t i) { return randk_key_from_word(draw_word(d, i)); }

// The selection result for one unit (row or tensor): keep every element whose masked key
// is above `prefix`, and the first `take_equal` (by index) whose masked key equals it.
// After all passes mask is ~0 and prefix the k-th largest key; an early exit leaves a
// shorter mask when the bucket holding the k-th key is kept whole.
struct topk_threshold {
  uint32_t mask = 0;
  uint32_t prefix = 0;
  uint64_t take_equal = 0;
};

}  // namespace pipecodec::detail

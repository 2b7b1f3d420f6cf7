// Host radix select: the k largest keys of one unit, ties to the lower index, without
// sorting. Up to three histogram passes over the key digits (11, 11, 10 bits, most
// significant first) narrow down the k-th largest key; keys that share the current prefix
// are buffered in the caller's workspace once they fit, so later passes read only them;
// a pass stops early when the bucket holding the k-th key is kept whole. One ordered
// compaction pass then emits the kept positions in ascending order.
#pragma once

#include "../core/topk_key.hpp"

namespace pipecodec::host::detail {

using namespace pipecodec::detail;

// Keys of a unit read on the fly; KeyFn(i) -> uint32_t for i in [0, m).
template <class KeyFn>
inline topk_threshold radix_select(const KeyFn& key, uint64_t m, uint64_t k, uint32_t* cand,
                                   uint64_t cand_cap) {
  topk_threshold t;
  if (k == 0 || k >= m) {  // keep nothing, or everything (mask 0 makes every key equal)
    t.take_equal = k;
    return t;
  }
  uint64_t hist[topk_radix_buckets];
  uint64_t remaining = k;       // still to keep among keys matching (mask, prefix)
  uint64_t matching = m;        // how many keys match (mask, prefix)
  uint64_t ncand = 0;
  bool buffered = false;        // cand[0, ncand) holds exactly the matching keys
  for (uint32_t p = 0; p < topk_radix_passes; ++p) {
    const uint32_t shift = topk_digit_shift(p), dmask = topk_digit_mask(p);
    for (uint32_t b = 0; b <= dmask; ++b) hist[b] = 0;
    if (buffered) {
      uint64_t w = 0;  // drop keys outside the prefix chosen by the previous pass
      for (uint64_t i = 0; i < ncand; ++i) {
        const uint32_t c = cand[i];
        if ((c & t.mask) == t.prefix) {
          cand[w++] = c;
          ++hist[(c >> shift) & dmask];
        }
      }
      ncand = w;
    } else if (p == 0) {
      for (uint64_t i = 0; i < m; ++i) ++hist[key(i) >> shift];
    } else if (matching <= cand_cap) {
      for (uint64_t i = 0; i < m; ++i) {
        const uint32_t c = key(i);
        if ((c & t.mask) == t.prefix) {
          cand[ncand++] = c;
          ++hist[(c >> shift) & dmask];
        }
      }
      buffered = true;
    } else {
      for (uint64_t i = 0; i < m; ++i) {
        const uint32_t c = key(i);
        if ((c & t.mask) == t.prefix) ++hist[(c >> shift) & dmask];
      }
    }
    // Highest bucket b whose keys, with all keys in buckets above it, reach `remaining`.
    uint32_t b = dmask;
    uint64_t above = 0;
    while (above + hist[b] < remaining) above += hist[b--];
    remaining -= above;
    t.mask |= dmask << shift;
    t.prefix |= b << shift;
    matching = hist[b];
    if (matching == remaining) break;  // the whole bucket is kept
  }
  t.take_equal = remaining;
  return t;
}

// Calls emit(j, i) for the kept positions i in ascending order, j = 0, 1, ... k-1.
template <class KeyFn, class Emit>
inline void compact_kept(const KeyFn& key, uint64_t m, const topk_threshold& t, Emit&& emit) {
  uint64_t j = 0, equal_left = t.take_equal;
  for (uint64_t i = 0; i < m; ++i) {
    const uint32_t c = key(i) & t.mask;
    if (c < t.prefix) continue;
    if (c == t.prefix) {
      if (equal_left == 0) continue;
      --equal_left;
    }
    emit(j++, i);
  }
}

// Candidate capacity a unit of m elements gets from the workspace (see core/sizes.hpp).
inline uint64_t select_cand_cap(uint64_t m) { return m / 4; }

}  // namespace pipecodec::host::detail

// Host radix select: the k largest keys of one unit, ties to the lower index, without
// sorting. Up to three histogram passes over the key digits (11, 11, 10 bits, most
// significant first) narrow down the k-th largest key; keys that share the current prefix
// are buffered in the caller's workspace once they fit, so later passes read only them;
// a pass stops early when the bucket holding the k-th key is kept whole. One ordered
// compaction pass then emits the kept positions in ascending order.
//
// Host-only shortcut, which never changes the result: a sample (1 key in 64)
// guesses a first digit safely below the k-th key's, and the first histogram pass also
// buffers every key at or above that guess. When the guess holds and the keys fit, the
// second pass reads only that buffer instead of the whole unit.
#pragma once

#include "../core/topk_key.hpp"

namespace pipecodec::host::detail {

using namespace pipecodec::detail;

// Scans run in blocks of 32 keys: a block is first turned into a 32-bit match mask (a loop
// compilers vectorise), then only its set bits are visited, in order.
constexpr uint32_t select_block = 32;
constexpr uint64_t sample_stride = 64;
constexpr uint32_t no_digit = topk_radix_buckets;  // "collect nothing"

// Calls f(i) for every i in [0, m) with pred(key(i)), ascending.
template <class KeyFn, class Pred, class F>
inline void for_each_match(const KeyFn& key, uint64_t m, const Pred& pred, F&& f) {
  for (uint64_t i = 0; i < m; i += select_block) {
    uint32_t bits = 0;
    if (m - i >= select_block) {
      for (uint32_t l = 0; l < select_block; ++l) bits |= uint32_t(pred(key(i + l))) << l;
    } else {
      for (uint32_t l = 0; l < uint32_t(m - i); ++l) bits |= uint32_t(pred(key(i + l))) << l;
    }
    while (bits != 0) {
      const uint32_t l = uint32_t(__builtin_ctz(bits));
      bits &= bits - 1;
      f(i + l);
    }
  }
}

// A first digit that at least about 1.25 k + 1024 keys reach, judged from a sample;
// no_digit when the unit is small or the guess would not fit the buffer.
template <class KeyFn>
inline uint32_t guess_low_digit(const KeyFn& key, uint64_t m, uint64_t k, uint64_t cand_cap) {
  if (m < 64 * sample_stride * select_block || cand_cap == 0) return no_digit;
  uint32_t sample[topk_radix_buckets] = {};
  // 64 evenly spaced runs of m / 4096 keys: runs stream through the prefetcher, where a
  // strided gather would wait for a cache line per key.
  const uint64_t run = m / (64 * sample_stride), gap = m / 64;
  for (uint64_t r = 0; r < 64; ++r)
    for (uint64_t i = r * gap; i < r * gap + run; ++i) ++sample[key(i) >> topk_digit_shift(0)];
  const uint64_t want = (k + k / 4 + 1024) / sample_stride;
  uint64_t seen = 0;
  for (uint32_t b = topk_radix_buckets; b-- > 0;) {
    seen += sample[b];
    if (seen >= want) return seen * sample_stride <= cand_cap / 4 * 3 ? b : no_digit;
  }
  return no_digit;
}

// Histogram of the first digit over all m keys; keys whose first digit is >= low are
// appended to cand while they fit (ncand > cand_cap on return means they did not).
// Four interleaved sub-histograms break the store-to-load chains of clustered data; u16
// counters over chunks of 4 * 65535 keys keep all four within half of a 32 KiB L1.
template <class KeyFn>
inline void first_pass(const KeyFn& key, uint64_t m, uint64_t* hist, uint32_t low, uint32_t* cand,
                       uint64_t cand_cap, uint64_t& ncand) {
  constexpr uint32_t shift = topk_digit_shift(0);
  constexpr uint64_t chunk = 4 * 65535 - (4 * 65535) % select_block;
  uint16_t sub[4][topk_radix_buckets];
  for (uint64_t begin = 0; begin < m;) {
    const uint64_t end = m - begin > chunk ? begin + chunk : m;
    memset(sub, 0, sizeof(sub));
    uint64_t i = begin;
    for (; i + select_block <= end; i += select_block) {
      uint32_t d[select_block];  // digits first: a loop compilers vectorise
      for (uint32_t l = 0; l < select_block; ++l) d[l] = key(i + l) >> shift;
      uint32_t bits = 0;
      for (uint32_t l = 0; l < select_block; ++l) bits |= uint32_t(d[l] >= low) << l;
      for (uint32_t l = 0; l < select_block; l += 4) {
        ++sub[0][d[l]];
        ++sub[1][d[l + 1]];
        ++sub[2][d[l + 2]];
        ++sub[3][d[l + 3]];
      }
      for (; bits != 0 && ncand <= cand_cap; bits &= bits - 1) {
        if (ncand < cand_cap) cand[ncand] = key(i + uint32_t(__builtin_ctz(bits)));
        ++ncand;
      }
    }
    for (; i < end; ++i) {
      const uint32_t c = key(i);
      ++sub[0][c >> shift];
      if ((c >> shift) >= low && ncand <= cand_cap) {
        if (ncand < cand_cap) cand[ncand] = c;
        ++ncand;
      }
    }
    for (uint32_t b = 0; b < topk_radix_buckets; ++b)
      hist[b] += uint64_t(sub[0][b]) + uint64_t(sub[1][b]) + uint64_t(sub[2][b]) + uint64_t(sub[3][b]);
    begin = end;
  }
}

// Keys of a unit read on the fly; KeyFn(i) -> uint32_t for i in [0, m).
template <class KeyFn>
inline topk_threshold radix_select(const KeyFn& key, uint64_t m, uint64_t k, uint32_t* cand,
                                   uint64_t cand_cap) {
  topk_threshold t;
  if (k == 0 || k >= m) {  // keep nothing, or everything (mask 0 makes every key equal)
    t.take_equal = k;
    return t;
  }
  uint64_t hist[topk_radix_buckets] = {};
  uint64_t remaining = k;  // still to keep among keys matching (mask, prefix)
  uint64_t matching = m;   // how many keys match (mask, prefix)
  uint64_t ncand = 0;
  bool buffered = false;   // cand[0, ncand) holds every matching key (and maybe others)
  for (uint32_t p = 0; p < topk_radix_passes; ++p) {
    const uint32_t shift = topk_digit_shift(p), dmask = topk_digit_mask(p);
    const auto matches = [&](uint32_t c) { return (c & t.mask) == t.prefix; };
    const uint32_t low = p == 0 ? guess_low_digit(key, m, k, cand_cap) : no_digit;
    if (p == 0) {
      first_pass(key, m, hist, low, cand, cand_cap, ncand);
    } else {
      for (uint32_t b = 0; b <= dmask; ++b) hist[b] = 0;
      if (buffered) {
        uint64_t w = 0;  // keep only the keys inside the prefix chosen so far
        for (uint64_t i = 0; i < ncand; ++i) {
          const uint32_t c = cand[i];
          cand[w] = c;
          w += matches(c);
          hist[(c >> shift) & dmask] += matches(c);
        }
        ncand = w;
      } else if (matching <= cand_cap) {
        for_each_match(key, m, matches, [&](uint64_t i) {
          const uint32_t c = key(i);
          cand[ncand++] = c;
          ++hist[(c >> shift) & dmask];
        });
        buffered = true;
      } else {
        for_each_match(key, m, matches, [&](uint64_t i) { ++hist[(key(i) >> shift) & dmask]; });
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
    if (p == 0) buffered = low != no_digit && b >= low && ncand <= cand_cap;
    if (matching == remaining) break;  // the whole bucket is kept
  }
  t.take_equal = remaining;
  return t;
}

// Calls emit(j, i) for the kept positions i in ascending order, j = 0, 1, ... k-1.
template <class KeyFn, class Emit>
inline void compact_kept(const KeyFn& key, uint64_t m, const topk_threshold& t, Emit&& emit) {
  uint64_t j = 0, equal_left = t.take_equal;
  const auto at_least = [&](uint32_t c) { return (c & t.mask) >= t.prefix; };
  for_each_match(key, m, at_least, [&](uint64_t i) {
    if ((key(i) & t.mask) == t.prefix) {
      if (equal_left == 0) return;
      --equal_left;
    }
    emit(j++, i);
  });
}

// Candidate capacity a unit of m elements gets from the workspace (see core/sizes.hpp).
inline uint64_t select_cand_cap(uint64_t m) { return m / 4; }

}  // namespace pipecodec::host::detail

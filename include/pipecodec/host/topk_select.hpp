// Host radix select (what topk_band.hpp falls back to when its guesses miss): the k largest
// keys of one unit, ties to the lower index, without sorting. Up to three histogram passes
// over the key digits (11, 11, 10 bits, most significant first) narrow down the k-th
// largest key; keys that share the current prefix
// are buffered in the caller's workspace once they fit, so later passes read only them;
// a pass stops early when the bucket holding the k-th key is kept whole. One ordered
// compaction pass then emits the kept positions in ascending order.
//
// Host-only shortcuts, which never change the result: a sample (1 key in 64)
// guesses a first digit safely below the k-th key's, and the first histogram pass also
// buffers every key at or above that guess. When the guess holds and the keys fit, the
// second pass reads only that buffer instead of the whole unit. Short units (rows) pay for
// their keys, not for the 2048 buckets: the histograms stay zero between units and the first
// pass touches only the range of digits it met, and once at most 256 keys are left a later
// pass is replaced by an exact selection among them (select_among).
#pragma once

#include <algorithm>
#include <functional>

#include "../core/topk_key.hpp"
#include "key_bits.hpp"

namespace pipecodec::host::detail {

using namespace pipecodec::detail;

// Scans run in blocks of key_block (32) keys: a block is first turned into a 32-bit match
// mask (key_bits.hpp, or a loop compilers vectorise), then only its set bits are visited.
constexpr uint64_t sample_stride = 64;
constexpr uint32_t no_digit = topk_radix_buckets;  // "collect nothing"

// Calls f(i) for every i in [0, m) with pred(key(i)), ascending.
template <class KeyFn, class Pred, class F>
inline void for_each_match(const KeyFn& key, uint64_t m, const Pred& pred, F&& f) {
  for (uint64_t i = 0; i < m; i += key_block) {
    uint32_t bits = 0;
    if (m - i >= key_block) {
      for (uint32_t l = 0; l < key_block; ++l) bits |= uint32_t(pred(key(i + l))) << l;
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

// Calls f(i) for the keys of 64 evenly spaced runs of m / (64 * stride) keys (1 in stride):
// runs stream through the prefetcher, where a strided gather would wait for a cache line
// per key.
template <class F>
inline void for_each_sampled(uint64_t m, uint64_t stride, F&& f) {
  const uint64_t run = m / (64 * stride), gap = m / 64;
  for (uint64_t r = 0; r < 64; ++r)
    for (uint64_t i = r * gap; i < r * gap + run; ++i) f(i);
}

// A first digit that at least about 1.25 k + 1024 keys reach, judged from a sample;
// no_digit when the unit is small or the guess would not fit the buffer.
template <class KeyFn>
inline uint32_t guess_low_digit(const KeyFn& key, uint64_t m, uint64_t k, uint64_t cand_cap) {
  if (m < 64 * sample_stride * key_block || cand_cap == 0) return no_digit;
  uint32_t sample[topk_radix_buckets] = {};
  for_each_sampled(m, sample_stride, [&](uint64_t i) { ++sample[key(i) >> topk_digit_shift(0)]; });
  const uint64_t want = (k + k / 4 + 1024) / sample_stride;
  uint64_t seen = 0;
  for (uint32_t b = topk_radix_buckets; b-- > 0;) {
    seen += sample[b];
    if (seen >= want) return seen * sample_stride <= cand_cap / 4 * 3 ? b : no_digit;
  }
  return no_digit;
}

// Histogram memory of a select, zero between units: the first pass clears only the buckets
// its digits reached, and a later pass with few keys left selects among them without buckets
// (select_among), so a short unit (a row of 1024) pays for its keys, not for 2048 buckets.
// About 32 KiB: callers keep one for all the units of an encode.
struct radix_scratch {
  uint16_t sub[4][topk_radix_buckets] = {};
  uint64_t hist[topk_radix_buckets] = {};
};

// The buckets a pass counted into: bucket 0 and [lo, hi] of the others. Bucket 0 holds the
// zeros (half of a ReLU's output) and the smallest magnitudes; keeping it apart leaves the
// empty buckets between it and the rest out of every scan and clear.
struct digit_range {
  uint32_t lo = topk_radix_buckets, hi = 0;  // lo > hi: no bucket but 0
  void add(uint32_t d) {
    lo = d != 0 && d < lo ? d : lo;
    hi = d > hi ? d : hi;
  }
  void merge(const digit_range& o) {
    lo = o.lo < lo ? o.lo : lo;
    hi = o.hi > hi ? o.hi : hi;
  }
  template <class F>
  void for_each(F&& f) const {
    f(0u);
    for (uint32_t d = lo; d <= hi; ++d) f(d);
  }
};

// Histogram of the first digit over all m keys into s.hist; keys whose first digit is >= low
// are appended to cand while they fit (ncand > cand_cap on return means they did not).
// Four interleaved sub-histograms break the store-to-load chains of clustered data; u16
// counters over chunks of 4 * 65535 keys keep all four within half of a 32 KiB L1. With
// Track, the digits' range is followed and only it is summed and cleared; without, every
// bucket is (a unit of tens of thousands of keys and more pays less for that than for the
// tracking).
template <bool Track, class KeyFn>
inline digit_range first_pass(const KeyFn& key, uint64_t m, radix_scratch& s, uint32_t low, uint32_t* cand,
                              uint64_t cand_cap, uint64_t& ncand) {
  constexpr uint32_t shift = topk_digit_shift(0);
  constexpr uint64_t chunk = 4 * 65535 - (4 * 65535) % key_block;
  digit_range all;
  for (uint64_t begin = 0; begin < m;) {
    const uint64_t end = m - begin > chunk ? begin + chunk : m;
    digit_range r;  // of this chunk
    if (!Track) r = digit_range{1, topk_radix_buckets - 1};
    uint64_t i = begin;
    for (; i + key_block <= end; i += key_block) {
      uint32_t d[key_block];  // digits first: loops compilers vectorise
      for (uint32_t l = 0; l < key_block; ++l) d[l] = key(i + l) >> shift;
      uint32_t bits = 0;
      for (uint32_t l = 0; l < key_block; ++l) bits |= uint32_t(d[l] >= low) << l;
      if (Track) {
        uint32_t lo = r.lo, hi = r.hi;  // in registers: the loop vectorises
        for (uint32_t l = 0; l < key_block; ++l) {
          const uint32_t nonzero = d[l] == 0 ? topk_radix_buckets : d[l];
          lo = nonzero < lo ? nonzero : lo;
          hi = d[l] > hi ? d[l] : hi;
        }
        r.lo = lo;
        r.hi = hi;
      }
      for (uint32_t l = 0; l < key_block; l += 4) {
        ++s.sub[0][d[l]];
        ++s.sub[1][d[l + 1]];
        ++s.sub[2][d[l + 2]];
        ++s.sub[3][d[l + 3]];
      }
      for (; bits != 0 && ncand <= cand_cap; bits &= bits - 1) {
        if (ncand < cand_cap) cand[ncand] = key(i + uint32_t(__builtin_ctz(bits)));
        ++ncand;
      }
    }
    for (; i < end; ++i) {
      const uint32_t c = key(i), d = c >> shift;
      ++s.sub[0][d];
      r.add(d);
      if (d >= low && ncand <= cand_cap) {
        if (ncand < cand_cap) cand[ncand] = c;
        ++ncand;
      }
    }
    r.for_each([&](uint32_t b) {
      s.hist[b] += uint64_t(s.sub[0][b]) + uint64_t(s.sub[1][b]) + uint64_t(s.sub[2][b]) + uint64_t(s.sub[3][b]);
      s.sub[0][b] = s.sub[1][b] = s.sub[2][b] = s.sub[3][b] = 0;
    });
    all.merge(r);
    begin = end;
  }
  return all;
}

// Units shorter than this follow their first digits' range (first_pass).
constexpr uint64_t track_digits_below = 65536;
// A later pass with at most this many matching keys finishes by select_among.
constexpr uint64_t direct_select_max = 256;

// The threshold that keeps the `remaining` largest of the n keys c[0, n) (all matching t's
// mask and prefix): the remaining-th largest key exactly (a full mask), and how many keys
// equal to it to keep. Reorders c.
inline topk_threshold select_among(uint32_t* c, uint64_t n, uint64_t remaining, topk_threshold t) {
  std::nth_element(c, c + (remaining - 1), c + n, std::greater<uint32_t>());
  const uint32_t kth = c[remaining - 1];
  uint64_t greater = 0;
  for (uint64_t i = 0; i < n; ++i) greater += c[i] > kth;
  t.mask = ~0u;
  t.prefix = kth;
  t.take_equal = remaining - greater;
  return t;
}

// Keys of a unit read on the fly; KeyFn(i) -> uint32_t for i in [0, m). `s` is zero on entry
// and on return.
template <class KeyFn>
inline topk_threshold radix_select(const KeyFn& key, uint64_t m, uint64_t k, uint32_t* cand, uint64_t cand_cap,
                                   radix_scratch& s) {
  topk_threshold t;
  if (k == 0 || k >= m) {  // keep nothing, or everything (mask 0 makes every key equal)
    t.take_equal = k;
    return t;
  }
  uint64_t* hist = s.hist;
  uint64_t remaining = k;  // still to keep among keys matching (mask, prefix)
  uint64_t matching = m;   // how many keys match (mask, prefix)
  uint64_t ncand = 0;
  bool buffered = false;   // cand[0, ncand) holds every matching key (and maybe others)
  for (uint32_t p = 0; p < topk_radix_passes; ++p) {
    const uint32_t shift = topk_digit_shift(p), dmask = topk_digit_mask(p);
    const auto matches = [&](uint32_t c) { return (c & t.mask) == t.prefix; };
    const uint32_t low = p == 0 ? guess_low_digit(key, m, k, cand_cap) : no_digit;
    digit_range r;
    if (p == 0) {
      r = m < track_digits_below ? first_pass<true>(key, m, s, low, cand, cand_cap, ncand)
                                 : first_pass<false>(key, m, s, low, cand, cand_cap, ncand);
    } else if (matching <= direct_select_max && matching <= cand_cap) {
      // Few keys left: gather them and finish exactly, without 2048 buckets to clear and scan.
      uint64_t w = 0;
      if (buffered) {
        for (uint64_t i = 0; i < ncand; ++i) {
          cand[w] = cand[i];
          w += matches(cand[i]);
        }
      } else {
        for_each_match(key, m, matches, [&](uint64_t i) { cand[w++] = key(i); });
      }
      return select_among(cand, w, remaining, t);
    } else {
      r = digit_range{1, dmask};  // a pass over more keys than that: every bucket
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
    // Highest bucket b whose keys, with all keys in buckets above it, reach `remaining`
    // (the matching keys, at least `remaining`, lie in the buckets of r).
    uint32_t b = r.hi;
    uint64_t above = 0;
    while (b >= r.lo && above + hist[b] < remaining) above += hist[b--];  // r.lo >= 1: no wrap
    if (b < r.lo) b = 0;  // the rest lie in bucket 0
    remaining -= above;
    t.mask |= dmask << shift;
    t.prefix |= b << shift;
    matching = hist[b];
    r.for_each([&](uint32_t d) { hist[d] = 0; });
    if (p == 0) buffered = low != no_digit && b >= low && ncand <= cand_cap;
    if (matching == remaining) break;  // the whole bucket is kept
  }
  t.take_equal = remaining;
  return t;
}

// The same with histograms of its own (tests, one-off selections).
template <class KeyFn>
inline topk_threshold radix_select(const KeyFn& key, uint64_t m, uint64_t k, uint32_t* cand, uint64_t cand_cap) {
  radix_scratch s;
  return radix_select(key, m, k, cand, cand_cap, s);
}

// Calls block(j, i, bits) for each block of key_block positions from i that keeps any:
// position i + l is kept when bit l of bits is set; j counts the positions kept before i.
template <class KeyFn, class Block>
inline void compact_blocks(const KeyFn& key, uint64_t m, const topk_threshold& t, Block&& block) {
  uint64_t j = 0, equal_left = t.take_equal;
  for (uint64_t i = 0; i < m; i += key_block) {
    uint32_t c[key_block], ge = 0, eq = 0;
    if (m - i >= key_block) {
      for (uint32_t l = 0; l < key_block; ++l) c[l] = key(i + l);
      ge = masked_key_bits<false>(c, t.mask, t.prefix);
      eq = ge == 0 ? 0 : masked_key_bits<true>(c, t.mask, t.prefix);
    } else {
      for (uint32_t l = 0; l < uint32_t(m - i); ++l) {
        const uint32_t a = key(i + l) & t.mask;
        ge |= uint32_t(a >= t.prefix) << l;
        eq |= uint32_t(a == t.prefix) << l;
      }
    }
    for (; eq != 0; eq &= eq - 1) {  // keys equal to the threshold: the first take_equal only
      if (equal_left != 0) --equal_left;
      else ge &= ~(eq & (0u - eq));
    }
    if (ge == 0) continue;
    block(j, i, ge);
    j += uint64_t(__builtin_popcount(ge));
  }
}

// Calls emit(j, i) for the kept positions i in ascending order, j = 0, 1, ... k-1.
template <class KeyFn, class Emit>
inline void compact_kept(const KeyFn& key, uint64_t m, const topk_threshold& t, Emit&& emit) {
  compact_blocks(key, m, t, [&](uint64_t j, uint64_t i, uint32_t bits) {
    for (; bits != 0; bits &= bits - 1) emit(j++, i + uint32_t(__builtin_ctz(bits)));
  });
}

// Candidate capacity a unit of m elements gets from the workspace (see core/sizes.hpp).
inline uint64_t select_cand_cap(uint64_t m) { return m / 4; }

}  // namespace pipecodec::host::detail

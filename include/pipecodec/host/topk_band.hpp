// Host TopK selection in about one pass over a unit, when the k-th largest key can be
// bracketed first, instead of the radix select's histogram passes (topk_select.hpp):
// - long units: a sample of the unit gives a band [lo, hi] of keys that should hold the
//   k-th; one pass counts the keys above the band and gathers those inside it, and an exact
//   selection among the gathered keys gives the threshold;
// - short units (rows) with k <= 16: one pass gathers the keys at or above a floor that rises
//   as it goes (select_streaming);
// - other short units: bands around the previous unit's k-th key, moved and resized by what
//   each pass counted (unit_selector::search); a row is in the cache after the first.
// A guess only decides the speed, never the result: when it misses, the radix select runs.
#pragma once

#include <cmath>

#include "compress_block.hpp"
#include "topk_select.hpp"

namespace pipecodec::host::detail {

// Units at least this long bracket from a sample of themselves.
constexpr uint64_t band_sample_min = 1u << 16;
constexpr uint32_t band_width_start = 1u << 20;  // in key units: +-1/8 of a value, about
constexpr uint32_t band_width_max = 1u << 30;

struct band {
  uint32_t lo = 0, hi = 0;  // inclusive
};

// Counts the keys above b.hi and those inside b, and appends the ones inside to cand while
// they fit in cap.
template <class KeyFn>
inline void band_pass(const KeyFn& key, uint64_t m, band b, uint32_t* cand, uint64_t cap, uint64_t& above,
                      uint64_t& inside) {
  const uint32_t span = b.hi - b.lo;
  uint64_t a = 0, n = 0;
  for (uint64_t i = 0; i < m; i += key_block) {
    uint32_t c[key_block], bits = 0;
    if (m - i >= key_block) {
      for (uint32_t l = 0; l < key_block; ++l) c[l] = key(i + l);
      if (b.hi != ~0u) a += uint32_t(__builtin_popcount(masked_key_bits<false>(c, ~0u, b.hi + 1)));
      bits = key_bits_within(c, b.lo, span);
    } else {
      for (uint32_t l = 0; l < uint32_t(m - i); ++l) {
        c[l] = key(i + l);
        a += c[l] > b.hi;
        bits |= uint32_t(c[l] - b.lo <= span) << l;
      }
    }
    const uint32_t count = uint32_t(__builtin_popcount(bits));
    if (count != 0 && n + count <= cap) compress_keys(c, bits, cand + n);  // else only counted
    n += count;
  }
  above = a;
  inside = n;
}

// Few keys: each one's count of keys at least as large (count_keys, 16 at a time with
// AVX-512); the largest key that `remaining` keys reach is the threshold.
constexpr uint64_t small_select_max = 64;
inline topk_threshold select_small(const uint32_t* c, uint32_t n, uint64_t remaining) {
  uint32_t kth = 0;
  for (uint32_t i = 0; i < n; ++i)
    if (c[i] > kth && count_keys<false>(c, n, c[i]) >= remaining) kth = c[i];
  topk_threshold t;
  t.mask = ~0u;
  t.prefix = kth;
  t.take_equal = remaining - count_keys<true>(c, n, kth);
  return t;
}

// Few keys to keep (4 k <= small_select_max): one pass gathers the keys at or above a floor
// that rises as it goes. The floor starts from the caller's guess and then is the k-th largest
// of keys already met, never above the unit's k-th key, so every key the selection needs is
// gathered; whenever the buffer holds 4 k keys it drops those below the new floor. False when
// ties keep the buffer full or the guess was above the k-th key (fewer than k gathered).
constexpr uint64_t stream_select_max_k = small_select_max / 4;

template <class KeyFn>
inline bool select_streaming(const KeyFn& key, uint64_t m, uint64_t k, uint32_t* cand, uint64_t cap,
                             uint32_t floor, topk_threshold& t) {
  const uint64_t full = 4 * k;
  if (k > stream_select_max_k || cap < full + key_block) return false;
  uint64_t n = 0;
  for (uint64_t i = 0; i < m; i += key_block) {
    uint32_t c[key_block], bits = 0;
    if (m - i >= key_block) {
      for (uint32_t l = 0; l < key_block; ++l) c[l] = key(i + l);
      bits = masked_key_bits<false>(c, ~0u, floor);
    } else {
      for (uint32_t l = 0; l < uint32_t(m - i); ++l) {
        c[l] = key(i + l);
        bits |= uint32_t(c[l] >= floor) << l;
      }
    }
    compress_keys(c, bits, cand + n);
    n += uint32_t(__builtin_popcount(bits));
    if (n < full) continue;
    floor = select_small(cand, uint32_t(n), k).prefix;
    uint64_t w = 0;
    for (uint64_t j = 0; j < n; ++j) {
      cand[w] = cand[j];
      w += cand[j] >= floor;
    }
    if (w + key_block > cap || w >= full) return false;  // ties at the floor
    n = w;
  }
  if (n < k) return false;  // a first floor above the k-th key
  t = select_small(cand, uint32_t(n), k);
  return true;
}

// Where the k-th key lies against a band, from one band_pass.
enum class band_verdict { above, inside, below, overflow };

// Passes over the keys with b; on `inside`, t is the threshold of the k largest.
template <class KeyFn>
inline band_verdict try_band(const KeyFn& key, uint64_t m, uint64_t k, band b, uint32_t* cand, uint64_t cap,
                             topk_threshold& t, uint64_t& above, uint64_t& inside) {
  band_pass(key, m, b, cand, cap, above, inside);
  if (above >= k) return band_verdict::above;
  if (above + inside < k) return band_verdict::below;
  if (b.lo == b.hi) {  // every key inside equals the k-th
    t = topk_threshold{~0u, b.lo, k - above};
    return band_verdict::inside;
  }
  if (inside > cap) return band_verdict::overflow;
  t = inside <= small_select_max ? select_small(cand, uint32_t(inside), k - above)
                                 : select_among(cand, inside, k - above, topk_threshold{});
  return band_verdict::inside;
}

// A band around the k-th key of the m keys, from 64 evenly spaced runs (for_each_sampled,
// 1 key in 256, gathered in cand): the sample's keys at ranks r -+ 6 sigma + 16 of the
// binomial count above the k-th key. A larger sample narrows the band but costs more to
// order than the selection inside the band saves (measured at 0.1-10 % of 2^24 keys).
constexpr uint64_t band_sample_stride = 256;
template <class KeyFn>
inline bool sample_band(const KeyFn& key, uint64_t m, uint64_t k, uint32_t* cand, uint64_t cap, band& b) {
  const uint64_t s = 64 * (m / (64 * band_sample_stride));
  if (s == 0 || s > cap) return false;
  uint64_t n = 0;
  for_each_sampled(m, band_sample_stride, [&](uint64_t i) { cand[n++] = key(i); });
  const double p = double(k) / double(m), mean = p * double(s);
  const uint64_t margin = uint64_t(6.0 * std::sqrt(mean * (1.0 - p))) + 16;
  const uint64_t r = uint64_t(mean);
  const uint64_t lo_rank = r + margin < s ? r + margin : s - 1;  // 0-based, descending
  std::nth_element(cand, cand + lo_rank, cand + s, std::greater<uint32_t>());
  b.lo = cand[lo_rank];
  if (r <= margin) {
    b.hi = ~0u;
  } else {
    std::nth_element(cand, cand + (r - margin), cand + lo_rank, std::greater<uint32_t>());
    b.hi = cand[r - margin];
  }
  return true;
}

// Selection state of an encode, carried from unit to unit: the radix histograms and the
// last unit's k-th key with the band width that bracketed it. Short units search from a band
// around the last k-th key: a band the k-th key lies beyond is moved past it, twice as wide;
// one that holds more keys than the buffer is halved. The width carried on halves while bands
// hold more keys than select_small takes, and doubles when the first band misses. Streaming
// selections start from one binade below the last k-th key, and from zero if that was above.
struct unit_selector {
  radix_scratch radix;
  uint32_t last = 0, width = band_width_start;
  bool have_last = false;

  template <class KeyFn>
  topk_threshold select(const KeyFn& key, uint64_t m, uint64_t k, uint32_t* cand, uint64_t cap) {
    topk_threshold t;
    if (k == 0 || k >= m || cap == 0) return radix_select(key, m, k, cand, cap, radix);
    if (m >= band_sample_min) {
      band b;
      uint64_t above = 0, inside = 0;
      if (sample_band(key, m, k, cand, cap, b) && try_band(key, m, k, b, cand, cap, t, above, inside) == band_verdict::inside)
        return remember(t);
    } else if (k <= stream_select_max_k) {
      if ((have_last && select_streaming(key, m, k, cand, cap, last > (1u << 23) ? last - (1u << 23) : 0u, t)) ||
          select_streaming(key, m, k, cand, cap, 0, t))
        return remember(t);
    } else if (have_last && search(key, m, k, cand, cap, t)) {
      return remember(t);
    }
    return remember(radix_select(key, m, k, cand, cap, radix));
  }

 private:
  static constexpr uint32_t search_steps = 8;

  template <class KeyFn>
  bool search(const KeyFn& key, uint64_t m, uint64_t k, uint32_t* cand, uint64_t cap, topk_threshold& t) {
    const uint64_t hi0 = uint64_t(last) + width;
    band b{last > width ? last - width : 0u, hi0 > ~0u ? ~0u : uint32_t(hi0)};
    for (uint32_t step = 0; step < search_steps; ++step) {
      uint64_t above = 0, inside = 0;
      const band_verdict v = try_band(key, m, k, b, cand, cap, t, above, inside);
      if (step == 0) adapt(v, inside);
      const uint64_t span = uint64_t(b.hi) - b.lo + 1;
      switch (v) {
        case band_verdict::inside: return true;
        case band_verdict::above:
          if (b.hi == ~0u) return false;
          b = band{b.hi + 1, uint32_t(std::min<uint64_t>(uint64_t(b.hi) + 2 * span, ~0u))};
          break;
        case band_verdict::below:
          if (b.lo == 0) return false;
          b = band{b.lo > 2 * span ? uint32_t(b.lo - 2 * span) : 0u, b.lo - 1};
          break;
        case band_verdict::overflow:  // the half the k-th key more likely lies in
          if (2 * (k - above) <= inside) b.lo = uint32_t(b.lo + span / 2);
          else b.hi = uint32_t(b.lo + span / 2 - 1);
          break;
      }
    }
    return false;
  }
  void adapt(band_verdict v, uint64_t inside) {
    if (v == band_verdict::above || v == band_verdict::below)
      width = width < band_width_max / 2 ? width * 2 : band_width_max;
    else if ((v == band_verdict::overflow || inside > small_select_max) && width > 1)
      width /= 2;
  }
  topk_threshold remember(const topk_threshold& t) {
    last = t.prefix;
    have_last = true;
    return t;
  }
};

}  // namespace pipecodec::host::detail

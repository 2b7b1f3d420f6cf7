// Host TopK selection in about one pass over a unit, when the k-th largest key can be
// bracketed first, instead of the radix select's histogram passes (topk_select.hpp):
// - long units: a sample of the unit gives a band [lo, hi] of keys that should hold the
//   k-th; one pass counts the keys above the band and gathers those inside it, and an exact
//   selection among the gathered keys gives the threshold;
// - short units (rows) with k <= 16: one pass gathers the keys at or above a floor that rises
//   as it goes (select_streaming);
// - rows of up to 1024 keys with k > 16: their nonzero keys copied once into a local buffer,
//   then bands from samples of that buffer, narrowed until few keys remain (select_rank);
// - other short units: bands around the previous unit's k-th key, moved and resized by what
//   each pass counted (unit_selector::search); a row is in the cache after the first.
// A guess only decides the speed, never the result: when it misses, the radix select runs.
#pragma once

#include <cmath>
#include <cstring>
#include <type_traits>

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

// Keys already in memory (select_rank's buffers): a pass reads their blocks in place rather
// than through a block copy on the stack, whose reloads cost a TopK row of 1024 at 10 % about
// 5 % of its encode (in cache, Zen 4).
struct key_array {
  const uint32_t* c;
  uint32_t operator()(uint64_t i) const { return c[i]; }
};

// Counts the keys above b.hi and those inside b, and appends the ones inside to cand while
// they fit in cap.
template <class KeyFn>
inline void band_pass(const KeyFn& key, uint64_t m, band b, uint32_t* cand, uint64_t cap, uint64_t& above,
                      uint64_t& inside) {
  const uint32_t span = b.hi - b.lo;
  uint64_t a = 0, n = 0;
  for (uint64_t i = 0; i < m; i += key_block) {
    uint32_t copy[key_block], bits = 0;
    const uint32_t* c = copy;
    if (m - i >= key_block) {
      if constexpr (std::is_same_v<KeyFn, key_array>) c = key.c + i;
      else
        for (uint32_t l = 0; l < key_block; ++l) copy[l] = key(i + l);
      if (b.hi != ~0u) a += uint32_t(__builtin_popcount(masked_key_bits<false>(c, ~0u, b.hi + 1)));
      bits = key_bits_within(c, b.lo, span);
    } else {
      for (uint32_t l = 0; l < uint32_t(m - i); ++l) {
        copy[l] = key(i + l);
        a += copy[l] > b.hi;
        bits |= uint32_t(copy[l] - b.lo <= span) << l;
      }
    }
    const uint32_t count = uint32_t(__builtin_popcount(bits));
    if (n + key_block <= cap) compress_keys<true>(c, bits, cand + n);  // no branch on count
    else if (n + count <= cap) compress_keys(c, bits, cand + n);  // else only counted
    n += count;
  }
  above = a;
  inside = n;
}

// Few keys: the k-th largest is the smallest key with fewer than `remaining` keys above it.
// With AVX-512 every key's count of larger keys grows in its lane (keys and counts in up to
// eight 16-lane registers: bands pass at most small_select_max keys, a streaming buffer up
// to 4 * 16 + 31), and a masked minimum picks the key.
constexpr uint64_t small_select_max = 64;
inline topk_threshold select_small(const uint32_t* c, uint32_t n, uint64_t remaining) {
  uint32_t kth = ~0u;
#if defined(PIPECODEC_HOST_AVX512)
  constexpr uint32_t most_regs = 8;
  if (n <= 16 * most_regs) {
    __m512i v[most_regs], above[most_regs];
    __mmask16 valid[most_regs];
    const uint32_t regs = (n + 15) / 16;
    for (uint32_t q = 0; q < regs; ++q) {
      valid[q] = n - 16 * q >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - 16 * q)) - 1);
      v[q] = _mm512_maskz_loadu_epi32(valid[q], c + 16 * q);
      above[q] = _mm512_setzero_si512();
    }
    const __m512i one = _mm512_set1_epi32(1);
    for (uint32_t j = 0; j < n; ++j) {  // key j counts for every key below it
      const __m512i at = _mm512_set1_epi32(int(c[j]));
      for (uint32_t q = 0; q < regs; ++q)
        above[q] = _mm512_mask_add_epi32(above[q], _mm512_mask_cmp_epu32_mask(valid[q], v[q], at, _MM_CMPINT_LT),
                                         above[q], one);
    }
    const __m512i want = _mm512_set1_epi32(int(remaining));
    for (uint32_t q = 0; q < regs; ++q) {
      const __mmask16 reach = _mm512_mask_cmp_epu32_mask(valid[q], above[q], want, _MM_CMPINT_LT);
      const uint32_t least = _mm512_mask_reduce_min_epu32(reach, v[q]);  // ~0u where no lane reaches
      kth = least < kth ? least : kth;
    }
  } else
#endif
  {
    for (uint32_t i = 0; i < n; ++i)
      if (c[i] < kth && count_keys<true>(c, n, c[i]) < remaining) kth = c[i];
  }
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

// Whether unit_selector tries a streaming selection first for a unit of m keys, 0 < k < m.
inline bool streams_unit(uint64_t m, uint64_t k) { return m < band_sample_min && k <= stream_select_max_k; }

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
    compress_keys<true>(c, bits, cand + n);  // room: checked below and on entry
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

// The keys of 16 whose descending ranks (ties in index order) are `upper` and `lower`: each
// key's rank is the count of keys above it and of equal keys before it. With AVX-512 the
// ranks grow in the keys' lanes and a compare finds the lane of each rank.
inline void sample_at_ranks(const uint32_t (&s)[16], uint32_t upper, uint32_t lower, uint32_t& at_upper,
                            uint32_t& at_lower) {
#if defined(PIPECODEC_HOST_AVX512)
  const __m512i v = _mm512_loadu_si512(s), one = _mm512_set1_epi32(1);
  __m512i rank = _mm512_setzero_si512();
  for (uint32_t j = 0; j < 16; ++j) {  // key j ranks before every smaller key, and equal ones after it
    const __m512i at = _mm512_set1_epi32(int(s[j]));
    const __mmask16 below = _mm512_cmp_epu32_mask(v, at, _MM_CMPINT_LT);
    const __mmask16 tie_after = _mm512_mask_cmp_epu32_mask(__mmask16(0xFFFEu << j), v, at, _MM_CMPINT_EQ);
    rank = _mm512_mask_add_epi32(rank, _kor_mask16(below, tie_after), rank, one);
  }
  at_upper = uint32_t(_mm512_cvtsi512_si32(
      _mm512_maskz_compress_epi32(_mm512_cmpeq_epi32_mask(rank, _mm512_set1_epi32(int(upper))), v)));
  at_lower = uint32_t(_mm512_cvtsi512_si32(
      _mm512_maskz_compress_epi32(_mm512_cmpeq_epi32_mask(rank, _mm512_set1_epi32(int(lower))), v)));
#else
  for (uint32_t i = 0; i < 16; ++i) {
    uint32_t rank = 0;
    for (uint32_t j = 0; j < 16; ++j) rank += uint32_t(s[j] > s[i]) | (uint32_t(s[j] == s[i]) & uint32_t(j < i));
    if (rank == upper) at_upper = s[i];
    if (rank == lower) at_lower = s[i];
  }
#endif
}

// The threshold that keeps the r largest of c[0, n), 0 < r <= n (c and tmp, n keys each, are
// overwritten): a sample of 16 keys gives a band that should hold the r-th largest, one pass
// counts the keys above it and gathers those inside (or, on a miss, the side that holds it),
// and the selection goes on among the gathered keys; 32 or fewer are ranked by select_small.
// A band keeps about a quarter of the keys, so the passes read about 4/3 n keys in all; keys
// whose order defeats the samples (each band a few keys wide) would make that quadratic, so
// once the passes would read more than max_reads * n keys the rest goes to select_among.
inline topk_threshold select_rank(uint32_t* c, uint32_t* tmp, uint32_t n, uint64_t r, uint32_t max_reads = 8) {
  constexpr uint32_t sample = 16, margin = 2;
  uint64_t budget = max_reads * uint64_t(n);
  while (n > 2 * sample) {
    if (budget < 2 * uint64_t(n)) return select_among(c, n, r, topk_threshold{});
    budget -= 2 * uint64_t(n);
    uint32_t s[sample];
    for (uint32_t i = 0; i < sample; ++i) s[i] = c[i * n / sample];
    const uint32_t at = uint32_t((r - 1) * sample / n);  // the r-th largest's rank in the sample
    band b;
    sample_at_ranks(s, at >= margin ? at - margin : 0, at + margin < sample ? at + margin : sample - 1, b.hi, b.lo);
    if (at < margin) b.hi = ~0u;
    const key_array in_c{c};
    uint64_t above = 0, inside = 0, side = 0, unused = 0;
    band_pass(in_c, n, b, tmp, n, above, inside);
    if (above >= r) {  // b.hi < ~0u: some key is above it
      band_pass(in_c, n, band{b.hi + 1, ~0u}, tmp, n, unused, side);
    } else if (above + inside < r) {  // b.lo > 0: some key is below it
      r -= above + inside;
      band_pass(in_c, n, band{0, b.lo - 1}, tmp, n, unused, side);
    } else {
      r -= above;
      if (b.lo == b.hi) return topk_threshold{~0u, b.lo, r};
      if (inside == n) return select_among(c, n, r, topk_threshold{});  // no progress: few distinct keys
      side = inside;
    }
    n = uint32_t(side);
    std::swap(c, tmp);
  }
  return select_small(c, n, r);
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
  // Many keys inside (a long unit's sampled band holds about 1.5 % of it at k = 10 %) narrow
  // by select_rank's few passes, much cheaper there than nth_element, where the buffer has
  // room for its second half.
  if (inside <= small_select_max)
    t = select_small(cand, uint32_t(inside), k - above);
  else if (inside <= cap / 2 && inside <= ~0u)
    t = select_rank(cand, cand + inside, uint32_t(inside), k - above);
  else
    t = select_among(cand, inside, k - above, topk_threshold{});
  return band_verdict::inside;
}

// A band around the k-th key of the m keys, from 64 evenly spaced runs (for_each_sampled,
// 1 key in 256, gathered in cand, with room for a copy and select_rank's second buffer): the
// sample's keys at ranks r -+ 6 sigma + 16 of the binomial count above the k-th key. A larger
// sample narrows the band but costs more to order than the selection inside the band saves
// (measured at 0.1-10 % of 2^24 keys).
constexpr uint64_t band_sample_stride = 256;
template <class KeyFn>
inline bool sample_band(const KeyFn& key, uint64_t m, uint64_t k, uint32_t* cand, uint64_t cap, band& b) {
  const uint64_t s = 64 * (m / (64 * band_sample_stride));
  if (s == 0 || 3 * s > cap || s > ~0u) return false;
  uint64_t n = 0;
  for_each_sampled(m, band_sample_stride, [&](uint64_t i) { cand[n++] = key(i); });
  uint32_t *copy = cand + s, *tmp = cand + 2 * s;
  memcpy(copy, cand, s * sizeof(uint32_t));
  const double p = double(k) / double(m), mean = p * double(s);
  const uint64_t margin = uint64_t(6.0 * std::sqrt(mean * (1.0 - p))) + 16;
  const uint64_t r = uint64_t(mean);
  const uint64_t lo_rank = r + margin < s ? r + margin : s - 1;  // 0-based, descending
  b.lo = select_rank(cand, tmp, uint32_t(s), lo_rank + 1).prefix;
  b.hi = r <= margin ? ~0u : select_rank(copy, tmp, uint32_t(s), r - margin + 1).prefix;
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
    if (k == 0 || k >= m) return radix_select(key, m, k, cand, cap, radix);  // keep nothing or all
    if (m >= band_sample_min) {
      band b;
      uint64_t above = 0, inside = 0;
      if (sample_band(key, m, k, cand, cap, b) && try_band(key, m, k, b, cand, cap, t, above, inside) == band_verdict::inside)
        return remember(t);
    } else if (streams_unit(m, k) &&
               ((have_last && select_streaming(key, m, k, cand, cap, last > (1u << 23) ? last - (1u << 23) : 0u, t)) ||
                select_streaming(key, m, k, cand, cap, 0, t))) {
      return remember(t);
    } else if (m <= short_unit_max) {
      return remember(select_short(key, m, k));
    } else if (have_last && search(key, m, k, cand, cap, t)) {
      return remember(t);
    }
    return remember(radix_select(key, m, k, cand, cap, radix));
  }

 private:
  // Rows whose keys fit twice in 8 KiB of stack: the nonzero keys (about half of a ReLU's
  // output) are copied once, and the selection reads only them, from L1. At most k nonzero
  // keys make the k-th key zero; otherwise select_rank narrows among the copy (the second
  // buffer is its gathering room, so nothing overflows and no radix select is needed).
  static constexpr uint64_t short_unit_max = 1024;

  template <class KeyFn>
  topk_threshold select_short(const KeyFn& key, uint64_t m, uint64_t k) {
    uint32_t nz[short_unit_max], inside[short_unit_max];
    uint64_t unused = 0, n = 0;
    band_pass(key, m, band{1u, ~0u}, nz, m, unused, n);  // every nonzero key, in order
    if (n <= k) return topk_threshold{~0u, 0u, k - n};
    return select_rank(nz, inside, uint32_t(n), k);
  }

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

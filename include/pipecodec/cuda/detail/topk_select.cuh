// Block-level TopK / RandK selection on the device: one thread block selects one unit (a
// row, or a small tensor; detail/topk_grid_select.cuh spreads a large tensor over the grid). The same radix select as the host (core/topk_key.hpp digits):
// histogram passes in shared memory, keys of the current prefix buffered in the workspace
// once they fit, early exit when the k-th key's bucket is kept whole, no host round trip;
// then an ordered compaction (block scans) that emits positions ascending, ties to the lower
// index, so the payload is byte-identical to the host's.
#pragma once

#include <cub/block/block_scan.cuh>

#include "../../core/topk_key.hpp"

namespace pipecodec::cuda::detail {

using namespace pipecodec::detail;

constexpr uint32_t topk_threads = 512;
constexpr uint32_t topk_items = 4;  // keys per thread per compaction tile
static_assert(topk_radix_buckets % topk_threads == 0, "buckets must split evenly over threads");

using topk_scan = cub::BlockScan<unsigned long long, topk_threads>;

struct topk_block_storage {
  unsigned long long hist[topk_radix_buckets];
  typename topk_scan::TempStorage scan;
  topk_threshold t;
  unsigned long long remaining, matching, ncand, found_bucket, found_above;
  int buffered, done;
};

// The bucket holding the k-th key: the highest b whose keys, with all keys in buckets
// above it, reach `remaining`; into s.found_bucket / s.found_above (valid after the next
// barrier). All threads call it. Thread t owns buckets [2048 - 4(t+1), 2048 - 4t): an
// exclusive scan in thread order counts the keys above its buckets; the owner of the
// crossing bucket records it.
__device__ inline void block_find_bucket(const unsigned long long* hist, unsigned long long remaining,
                                         topk_block_storage& s) {
  constexpr uint32_t per = topk_radix_buckets / topk_threads;
  const uint32_t top = topk_radix_buckets - per * threadIdx.x;
  unsigned long long local = 0, above = 0;
  for (uint32_t j = 1; j <= per; ++j) local += hist[top - j];
  topk_scan(s.scan).ExclusiveSum(local, above);
  for (uint32_t j = 1; j <= per; ++j) {
    const unsigned long long h = hist[top - j];
    if (above < remaining && above + h >= remaining) {
      s.found_bucket = top - j;
      s.found_above = above;
    }
    above += h;
  }
}

// Selects the threshold of one unit of m keys into s.t (valid after the call, all threads).
template <class KeyFn>
__device__ void block_radix_select(const KeyFn& key, uint64_t m, uint64_t k, uint32_t* cand, uint64_t cap,
                                   topk_block_storage& s) {
  const uint32_t tid = threadIdx.x;
  if (tid == 0) {
    s.t = topk_threshold{};
    s.remaining = k;
    s.matching = m;
    s.ncand = 0;
    s.buffered = 0;
    s.done = k == 0 || k >= m;  // keep nothing, or everything (mask 0)
    if (s.done) s.t.take_equal = k;
  }
  __syncthreads();
  for (uint32_t p = 0; p < topk_radix_passes && !s.done; ++p) {
    const uint32_t shift = topk_digit_shift(p), dmask = topk_digit_mask(p);
    for (uint32_t b = tid; b < topk_radix_buckets; b += topk_threads) s.hist[b] = 0;
    const uint32_t mask = s.t.mask, prefix = s.t.prefix;
    const bool buffered = s.buffered != 0;
    const uint64_t ncand = s.ncand;
    const bool collect = !buffered && p > 0 && s.matching <= cap;
    __syncthreads();
    if (buffered) {  // earlier keys of the prefix; their order does not matter to a histogram
      for (uint64_t i = tid; i < ncand; i += topk_threads) {
        const uint32_t c = cand[i];
        if ((c & mask) == prefix) atomicAdd(&s.hist[(c >> shift) & dmask], 1ull);
      }
    } else {
      for (uint64_t i = tid; i < m; i += topk_threads) {
        const uint32_t c = key(i);
        if ((c & mask) != prefix) continue;
        atomicAdd(&s.hist[(c >> shift) & dmask], 1ull);
        if (collect) cand[atomicAdd(&s.ncand, 1ull)] = c;
      }
    }
    __syncthreads();
    block_find_bucket(s.hist, s.remaining, s);
    __syncthreads();
    if (tid == 0) {
      const uint32_t b = uint32_t(s.found_bucket);
      s.remaining -= s.found_above;
      s.t.mask |= dmask << shift;
      s.t.prefix |= b << shift;
      s.matching = s.hist[b];
      if (collect) s.buffered = 1;
      s.done = s.matching == s.remaining || p + 1 == topk_radix_passes;
      s.t.take_equal = s.remaining;
    }
    __syncthreads();
  }
}

// Calls emit(j, i) for every kept position i in [begin, end) of a unit (j its rank), each
// exactly once, from some thread; gt0 / eq0 count the keys above / equal to the threshold
// before `begin`. Positions and ranks match the host's ascending compaction.
template <class KeyFn, class Emit>
__device__ void block_compact_range(const KeyFn& key, uint64_t begin, uint64_t end, uint64_t gt0, uint64_t eq0,
                                    const topk_threshold& t, topk_block_storage& s, Emit&& emit) {
  uint64_t gt_before = gt0, eq_before = eq0;
  for (uint64_t base = begin; base < end; base += uint64_t(topk_threads) * topk_items) {
    const uint64_t first = base + uint64_t(threadIdx.x) * topk_items;
    bool gt[topk_items], eq[topk_items];
    unsigned long long local = 0;
    for (uint32_t j = 0; j < topk_items; ++j) {
      const uint64_t i = first + j;
      const uint32_t c = i < end ? key(i) & t.mask : 0u;
      gt[j] = i < end && c > t.prefix;
      eq[j] = i < end && c == t.prefix;
      local += (gt[j] ? 1ull : 0ull) + (eq[j] ? 1ull << 32 : 0ull);
    }
    unsigned long long excl = 0, total = 0;
    topk_scan(s.scan).ExclusiveSum(local, excl, total);
    uint64_t g = gt_before + (excl & 0xFFFFFFFFull), e = eq_before + (excl >> 32);
    for (uint32_t j = 0; j < topk_items; ++j) {
      const uint64_t kept_eq = e < t.take_equal ? e : t.take_equal;
      if (gt[j]) emit(g + kept_eq, first + j);
      if (eq[j] && e < t.take_equal) emit(g + e, first + j);
      g += gt[j];
      e += eq[j];
    }
    gt_before += total & 0xFFFFFFFFull;
    eq_before += total >> 32;
    __syncthreads();  // the scan storage is reused by the next tile
  }
}

// The whole unit [0, m).
template <class KeyFn, class Emit>
__device__ void block_compact(const KeyFn& key, uint64_t m, const topk_threshold& t, topk_block_storage& s,
                              Emit&& emit) {
  block_compact_range(key, 0, m, 0, 0, t, s, static_cast<Emit&&>(emit));
}

}  // namespace pipecodec::cuda::detail

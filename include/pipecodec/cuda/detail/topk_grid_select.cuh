// Multi-block TopK / RandK selection of one large unit (scope=tensor): the same radix select
// and compaction as the block version (detail/topk_select.cuh), spread over the whole grid.
//   init                      the pass control in the workspace, the chunk counts zeroed (no
//                             memset, no host value)
//   3 x (histogram, choose)   every block builds a shared histogram of the keys matching the
//                             current prefix and adds it to the global one with atomics; one
//                             block then picks the bucket of the k-th key, refines the prefix
//                             and clears the global histogram. Each kernel reads the previous
//                             pass's result from the workspace, so there is no host round
//                             trip; a pass after an early exit (the bucket is kept whole)
//                             returns at once. Once the keys of the prefix fit the buffer, one
//                             pass appends them with their chunk (warp-aggregated) and counts,
//                             per chunk, the keys above the prefix (kept whatever the later
//                             passes find); later passes read only the buffer.
//   count, scan, emit         the unit is cut into at most topk_grid_chunks chunks. Count: the
//                             buffered keys are split into above / equal to the threshold per
//                             chunk (no read of the input); without a buffer one block per chunk
//                             reads its keys. One block scans the counts, then one block per
//                             chunk compacts in index order from its chunk's offsets: ties go
//                             to the lower index and the payload is byte-identical to the
//                             host's. Reads of the input: 3 when the first pass leaves at most
//                             m / 6 keys in the k-th key's bucket (docs/TOPK.md).
#pragma once

#include <cub/block/block_reduce.cuh>

#include "../../core/topk_layout.hpp"
#include "launch.cuh"
#include "topk_select.cuh"
#include "warp.cuh"

namespace pipecodec::cuda::detail {

// The pass control and global histogram, at the start of the workspace's selection state;
// per-chunk counts (then offsets) follow at topk_grid_counts_offset.
struct topk_grid_state {
  unsigned long long hist[topk_radix_buckets];
  topk_threshold t;
  unsigned long long remaining, matching, ncand;
  unsigned long long key, first;  // RandK draws of a decode's re-selection (from the payload)
  unsigned stream;
  int buffered, collect, done;
  int skip;  // a decode whose payload needs no re-selection: its grid kernels return at once
};
constexpr uint64_t topk_grid_counts_offset = 8 * topk_radix_buckets + 256;
static_assert(sizeof(topk_grid_state) <= topk_grid_counts_offset, "grid state must fit its region");
static_assert(topk_grid_counts_offset + 16 * topk_grid_chunks == topk_grid_state_bytes, "state region size");
static_assert(topk_grid_chunks % topk_threads == 0, "chunk counts must split evenly over threads");
static_assert(topk_grid_chunks <= 65536, "a buffered key's chunk is stored in 16 bits");

// At most this many units of at least topk_grid_min_len elements (scope=tensor, or a few very
// long rows) are selected one after the other, each by the whole grid, and their positions
// are checked and enumerated by the whole grid (topk_positions.cuh): one block per unit would
// leave most of a GPU idle. More units, or shorter ones, fill the GPU with one block each.
constexpr uint64_t topk_grid_min_len = uint64_t(1) << 16;
constexpr uint64_t topk_grid_max_units = 16;
PIPECODEC_HD bool grid_select_units(const topk_layout& L) {
  return L.units >= 1 && L.units <= topk_grid_max_units && L.unit_len >= topk_grid_min_len;
}

// Chunks of a unit of m keys for the compaction: a multiple of the block's tile, at most
// `limit` (the unit's share of topk_grid_chunks).
struct topk_chunking {
  uint64_t len = 0, count = 0;
  PIPECODEC_HD uint64_t end(uint64_t c, uint64_t m) const { return (c + 1) * len < m ? (c + 1) * len : m; }
};
PIPECODEC_HD topk_chunking topk_chunks_for(uint64_t m, uint64_t limit = topk_grid_chunks) {
  constexpr uint64_t tile = uint64_t(topk_threads) * topk_items;
  const uint64_t want = ceil_div(m, tile) < limit ? ceil_div(m, tile) : limit;
  topk_chunking c;
  if (want == 0) return c;
  c.len = ceil_div(ceil_div(m, want), tile) * tile;
  c.count = ceil_div(m, c.len);
  return c;
}

// The candidate buffer, in the unit's m / 4 words of the workspace: keys of the prefix and the
// chunk each came from (4 + 2 bytes a key, so m / 6 keys). The chunk is all the count needs to
// place a key; the emit pass reads the input again in index order.
struct topk_grid_buffer {
  uint32_t* keys = nullptr;
  uint16_t* chunks = nullptr;
  uint64_t cap = 0;
};
PIPECODEC_HD topk_grid_buffer grid_buffer(uint32_t* words, uint64_t m) {
  topk_grid_buffer b;
  b.cap = (m / 4) * 4 / 6;
  b.keys = words;
  b.chunks = reinterpret_cast<uint16_t*>(words + b.cap);
  return b;
}

// All threads of one block: the pass control for a unit of m keys, k kept, and zero chunk
// counts (the collecting pass adds to them).
__device__ inline void grid_state_init(topk_grid_state* g, ulonglong2* counts, uint64_t m, uint64_t k, draw d = {}) {
  for (uint32_t b = threadIdx.x; b < topk_radix_buckets; b += blockDim.x) g->hist[b] = 0;
  for (uint64_t c = threadIdx.x; c < topk_grid_chunks; c += blockDim.x) counts[c] = make_ulonglong2(0, 0);
  if (threadIdx.x == 0) {
    g->t = topk_threshold{};
    g->remaining = k;
    g->matching = m;
    g->ncand = 0;
    g->key = d.key;
    g->first = d.first;
    g->stream = d.stream;
    g->buffered = 0;
    g->collect = 0;
    g->done = k == 0 || k >= m;  // keep nothing, or everything (mask 0)
    g->skip = 0;
    if (g->done) g->t.take_equal = k;
  }
}

template <uint32_t Threads>
__global__ void __launch_bounds__(Threads)
    topk_grid_init_kernel(topk_grid_state* g, ulonglong2* counts, uint64_t m, uint64_t k) {
  grid_state_init(g, counts, m, k);
}

// One histogram pass over the keys matching the prefix (or over the buffered candidates).
// Shared counters are u32: the host sizes the grid so that no block sees 2^32 keys.
template <class Keys>
__global__ void __launch_bounds__(topk_threads)
    topk_grid_hist_kernel(Keys key, uint64_t m, topk_grid_buffer buf, topk_grid_state* g, ulonglong2* counts,
                          uint32_t p) {
  PIPECODEC_SHARED(uint32_t[topk_radix_buckets], hist);
  if (g->done) return;  // the same for every thread: written by the previous kernel
  const uint32_t shift = topk_digit_shift(p), dmask = topk_digit_mask(p);
  const uint32_t mask = g->t.mask, prefix = g->t.prefix;
  const bool buffered = g->buffered != 0, collect = g->collect != 0;
  for (uint32_t b = threadIdx.x; b < topk_radix_buckets; b += topk_threads) hist[b] = 0;
  __syncthreads();
  if (buffered) {  // their order does not matter to a histogram
    // Read only here: while collecting, other blocks add to ncand as this one would read it.
    const uint64_t ncand = g->ncand;
    for (uint64_t i = global_thread(); i < ncand; i += thread_count()) {
      const uint32_t c = buf.keys[i];
      if ((c & mask) == prefix) atomicAdd(&hist[(c >> shift) & dmask], 1u);
    }
  } else {
    const uint32_t lane = lane_id();
    const uint64_t chunk_len = topk_chunks_for(m).len;  // a multiple of 2048: a warp's keys share a chunk
    // Warp-uniform trip count, so the appends can use a ballot.
    for (uint64_t i0 = global_thread() - lane; i0 < m; i0 += thread_count()) {
      const uint64_t i = i0 + lane;
      const uint32_t c = i < m ? key(i) : 0u;
      const bool hit = i < m && (c & mask) == prefix;
      if (hit) atomicAdd(&hist[(c >> shift) & dmask], 1u);
      if (collect) {
        const uint32_t ballot = __ballot_sync(full_warp, hit);
        const uint32_t above = __ballot_sync(full_warp, i < m && (c & mask) > prefix);
        const uint16_t chunk = uint16_t(i0 / chunk_len);
        if (lane == 0 && above != 0) atomicAdd(&counts[chunk].x, (unsigned long long)__popc(above));
        if (ballot != 0) {
          const uint32_t leader = uint32_t(__ffs(ballot)) - 1;
          unsigned long long base = 0;
          if (lane == leader) base = atomicAdd(&g->ncand, (unsigned long long)__popc(ballot));
          base = __shfl_sync(full_warp, base, leader);
          if (hit) {
            const uint64_t at = base + uint32_t(__popc(ballot & ((1u << lane) - 1u)));
            buf.keys[at] = c;
            buf.chunks[at] = chunk;
          }
        }
      }
    }
  }
  __syncthreads();
  for (uint32_t b = threadIdx.x; b < topk_radix_buckets; b += topk_threads)
    if (hist[b] != 0) atomicAdd(&g->hist[b], (unsigned long long)hist[b]);
}

// One block: the bucket of the k-th key, the refined prefix, the next pass's mode.
template <uint32_t Threads>
__global__ void __launch_bounds__(Threads) topk_grid_choose_kernel(topk_grid_state* g, uint64_t cap, uint32_t p) {
  static_assert(Threads == topk_threads, "block_find_bucket splits buckets over topk_threads");
  PIPECODEC_SHARED(topk_block_storage, s);
  if (g->done) return;
  for (uint32_t b = threadIdx.x; b < topk_radix_buckets; b += Threads) {
    s.hist[b] = g->hist[b];
    g->hist[b] = 0;  // ready for the next pass
  }
  __syncthreads();
  block_find_bucket(s.hist, g->remaining, s);
  __syncthreads();
  if (threadIdx.x == 0) {
    const uint32_t shift = topk_digit_shift(p), dmask = topk_digit_mask(p);
    const uint32_t b = uint32_t(s.found_bucket);
    g->remaining -= s.found_above;
    g->t.mask |= dmask << shift;
    g->t.prefix |= b << shift;
    g->matching = s.hist[b];
    if (g->collect) g->buffered = 1;  // this pass filled the buffer and counted the keys above it
    g->collect = !g->buffered && g->matching <= cap;
    g->done = g->matching == g->remaining || p + 1 == topk_radix_passes;
    g->t.take_equal = g->remaining;
  }
}

// Per chunk: how many keys are above the threshold (x) and equal to it (y). With a buffer,
// the collecting pass counted the keys above its prefix; the buffered keys (all of that
// prefix) are split here, by atomics, without reading the input. Without one, one block per
// chunk reads its keys.
template <class Keys>
__global__ void __launch_bounds__(topk_threads)
    topk_grid_count_kernel(Keys key, uint64_t m, topk_chunking ch, topk_grid_buffer buf, const topk_grid_state* g,
                           ulonglong2* counts) {
  using reduce_t = cub::BlockReduce<unsigned long long, topk_threads>;
  PIPECODEC_SHARED(typename reduce_t::TempStorage[2], tmp);
  if (g->skip) return;
  const topk_threshold t = g->t;
  if (g->buffered) {
    for (uint64_t i = global_thread(); i < g->ncand; i += thread_count()) {
      const uint32_t x = buf.keys[i] & t.mask;
      if (x > t.prefix) atomicAdd(&counts[buf.chunks[i]].x, 1ull);
      if (x == t.prefix) atomicAdd(&counts[buf.chunks[i]].y, 1ull);
    }
    return;
  }
  for (uint64_t c = blockIdx.x; c < ch.count; c += gridDim.x) {
    unsigned long long gt = 0, eq = 0;
    for (uint64_t i = c * ch.len + threadIdx.x; i < ch.end(c, m); i += topk_threads) {
      const uint32_t x = key(i) & t.mask;
      gt += x > t.prefix;
      eq += x == t.prefix;
    }
    gt = reduce_t(tmp[0]).Sum(gt);
    eq = reduce_t(tmp[1]).Sum(eq);
    if (threadIdx.x == 0) counts[c] = make_ulonglong2(gt, eq);
    __syncthreads();  // tmp is reused by the next chunk
  }
}

// All threads of one block: counts[0, chunks) become exclusive prefix sums (the offsets of
// each chunk); returns the totals.
__device__ inline ulonglong2 block_offsets(ulonglong2* counts, uint64_t chunks, typename topk_scan::TempStorage& tmp) {
  constexpr uint32_t per = uint32_t(topk_grid_chunks / topk_threads);
  unsigned long long gt[per], eq[per], gt_before[per], eq_before[per], gt_total = 0, eq_total = 0;
  for (uint32_t j = 0; j < per; ++j) {
    const uint64_t c = uint64_t(threadIdx.x) * per + j;
    gt[j] = c < chunks ? counts[c].x : 0;
    eq[j] = c < chunks ? counts[c].y : 0;
  }
  topk_scan(tmp).ExclusiveSum(gt, gt_before, gt_total);
  __syncthreads();  // tmp is reused
  topk_scan(tmp).ExclusiveSum(eq, eq_before, eq_total);
  for (uint32_t j = 0; j < per; ++j) {
    const uint64_t c = uint64_t(threadIdx.x) * per + j;
    if (c < chunks) counts[c] = make_ulonglong2(gt_before[j], eq_before[j]);
  }
  return make_ulonglong2(gt_total, eq_total);
}

template <uint32_t Threads>
__global__ void __launch_bounds__(Threads)
    topk_grid_scan_kernel(const topk_grid_state* g, ulonglong2* counts, uint64_t chunks) {
  static_assert(Threads == topk_threads, "uses block_offsets");
  PIPECODEC_SHARED(typename topk_scan::TempStorage, tmp);
  if (g->skip) return;
  (void)block_offsets(counts, chunks, tmp);
}

// Every block of the grid: emit(j, i) for the kept positions of its chunks, ranks from the
// chunks' offsets.
template <class Keys, class Emitter>
__device__ void grid_compact_chunks(const Keys& key, uint64_t m, const topk_threshold& t, const ulonglong2* offsets,
                                    topk_block_storage& s, Emitter&& emit) {
  const topk_chunking ch = topk_chunks_for(m);
  for (uint64_t c = blockIdx.x; c < ch.count; c += gridDim.x)
    block_compact_range(key, c * ch.len, ch.end(c, m), offsets[c].x, offsets[c].y, t, s, emit);
}

template <class Keys, class Emitter>
__global__ void __launch_bounds__(topk_threads)
    topk_grid_emit_kernel(Keys key, uint64_t m, const topk_grid_state* g, const ulonglong2* offsets, Emitter emit) {
  PIPECODEC_SHARED(topk_block_storage, s);
  const topk_threshold t = g->t;
  grid_compact_chunks(key, m, t, offsets, s, emit);
}

// Host side: after an init kernel, enqueues the histogram passes, the count and the scan of one
// unit of m keys on `stream`; the chunk offsets are then ready for an emit kernel. `state` is
// the workspace's selection state (topk_grid_state_bytes, 16-byte aligned), `cand` the
// unit's m / 4 words of candidate buffer.
template <class Keys>
inline void launch_grid_passes(const Keys& key, uint64_t m, uint32_t* cand, uint8_t* state, const device_grid& dg,
                               cudaStream_t stream) {
  topk_grid_state* g = reinterpret_cast<topk_grid_state*>(state);
  ulonglong2* counts = reinterpret_cast<ulonglong2*>(state + topk_grid_counts_offset);
  const topk_grid_buffer buf = grid_buffer(cand, m);
  // Enough blocks that none counts 2^32 keys in its shared histogram.
  uint64_t grid = grid_for<topk_grid_hist_kernel<Keys>>(m, uint64_t(topk_threads) * 16, dg, topk_threads);
  const uint64_t least = ceil_div(m, uint64_t(1) << 31);
  if (grid < least) grid = least;
  for (uint32_t p = 0; p < topk_radix_passes; ++p) {
    launch<topk_grid_hist_kernel<Keys>>(uint32_t(grid), topk_threads, 0, stream, key, m, buf, g, counts, p);
    launch<topk_grid_choose_kernel<topk_threads>>(1, topk_threads, 0, stream, g, buf.cap, p);
  }
  const topk_chunking ch = topk_chunks_for(m);
  launch<topk_grid_count_kernel<Keys>>(uint32_t(ch.count), topk_threads, 0, stream, key, m, ch, buf, g, counts);
  launch<topk_grid_scan_kernel<topk_threads>>(1, topk_threads, 0, stream, g, counts, ch.count);
}

// The whole selection and compaction of one unit of m keys, k kept: emit(j, i) is a device
// functor passed by value. m >= topk_grid_min_len.
template <class Keys, class Emitter>
inline status launch_grid_select(const Keys& key, uint64_t m, uint64_t k, uint32_t* cand, uint8_t* state,
                                 const Emitter& emit, const device_grid& dg, cudaStream_t stream) {
  topk_grid_state* g = reinterpret_cast<topk_grid_state*>(state);
  ulonglong2* counts = reinterpret_cast<ulonglong2*>(state + topk_grid_counts_offset);
  launch<topk_grid_init_kernel<topk_threads>>(1, topk_threads, 0, stream, g, counts, m, k);
  launch_grid_passes(key, m, cand, state, dg, stream);
  launch<topk_grid_emit_kernel<Keys, Emitter>>(uint32_t(topk_chunks_for(m).count), topk_threads, 0, stream, key, m,
                                               g, counts, emit);
  return last_launch_status();
}

}  // namespace pipecodec::cuda::detail

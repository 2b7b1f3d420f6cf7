// The kept positions of a TopK payload's index section on the device: checked as
// host::detail::validate_positions checks them, and enumerated with their ranks, either by one
// block per unit or, for units that grid_select_units admits (scope=tensor of at least
// topk_grid_min_len elements, or up to 16 rows that long), by the whole grid. Grid-wide
// bitmap ranks follow the multi-block select's compaction (topk_grid_select.cuh): each unit
// gets an equal share of the chunks, the validation kernel counts each chunk's set bits,
// topk_grid_rank_kernel turns each unit's counts into offsets (and rejects a unit without
// exactly k set bits), then one block per chunk compacts from its offset. u32 / u16 entries
// need no ranking: entry j of a unit is rank j.
#pragma once

#include "../../core/topk_format.hpp"
#include "topk_grid_select.cuh"

namespace pipecodec::cuda::detail {

__device__ __forceinline__ void record(status* code, status st) {
  atomicExch(reinterpret_cast<int*>(code), int(st));
}
// The status word while other blocks of the same kernel may record() into it.
__device__ __forceinline__ status recorded(status* code) {
  return status(atomicOr(reinterpret_cast<int*>(code), 0));
}

// Bits of a bitmap as keys: 1 where set. block_compact with set_bits() then emits exactly
// the set bits, ranked in ascending order.
struct bitmap_keys {
  const uint8_t* bm;
  uint64_t base;
  __device__ uint32_t operator()(uint64_t i) const { return (bm[(base + i) / 8] >> ((base + i) % 8)) & 1u; }
};
PIPECODEC_HD topk_threshold set_bits() {
  topk_threshold t;
  t.mask = ~0u;
  return t;
}

// Entry e of a u32 / u16 index section.
__device__ __forceinline__ uint64_t index_entry(const topk_payload& tp, uint64_t e) {
  const uint8_t* idx = tp.bytes + tp.layout.index_offset;
  return tp.desc.index == index_layout::u32 ? get_u32(idx + 4 * e) : get_u16(idx + 2 * e);
}

// Entry j of unit u lies in the unit and above entry j - 1.
__device__ __forceinline__ bool index_entry_ok(const topk_payload& tp, uint64_t u, uint64_t j) {
  const uint64_t e = u * tp.layout.k + j, i = index_entry(tp, e);
  return i < tp.layout.unit_len && (j == 0 || i > index_entry(tp, e - 1));
}

// Nothing may be set at or after bit n (threads of one block).
__device__ inline void check_bitmap_tail(const topk_payload& tp, status* code) {
  const topk_layout& L = tp.layout;
  const uint8_t* idx = tp.bytes + L.index_offset;
  for (uint64_t i = L.n + threadIdx.x; i < 8 * index_section_bytes(index_layout::bitmap, L.kept, L.n);
       i += blockDim.x)
    if ((idx[i / 8] >> (i % 8)) & 1u) record(code, status::corrupt_payload);
}

// Set bits of bitmap bits [begin, end), summed over the block into `count` (zeroed by the
// caller, valid after the next barrier).
__device__ inline void block_count_bits(const uint8_t* bm, uint64_t begin, uint64_t end, unsigned long long& count) {
  unsigned long long mine = 0;
  for (uint64_t b = begin / 8 + threadIdx.x; b < ceil_div(end, 8); b += blockDim.x) {
    const uint32_t lo = 8 * b < begin ? uint32_t(begin - 8 * b) : 0u;  // bits [lo, hi) of this byte are in range
    const uint32_t hi = end - 8 * b < 8 ? uint32_t(end - 8 * b) : 8u;
    mine += __popc((uint32_t(bm[b]) >> lo) & ((1u << (hi - lo)) - 1u));
  }
  if (mine) atomicAdd(&count, mine);
}

// Block-wide check of unit u's positions (host::detail::validate_positions).
__device__ inline void check_unit_positions(const topk_payload& tp, uint64_t u, unsigned long long& count,
                                            status* code) {
  const topk_layout& L = tp.layout;
  if (tp.desc.index == index_layout::bitmap) {
    if (threadIdx.x == 0) count = 0;
    __syncthreads();
    const uint64_t begin = u * L.unit_len;
    const bitmap_keys key{tp.bytes + L.index_offset, begin};
    for (uint64_t i = threadIdx.x; i < L.unit_len; i += blockDim.x)  // units need not start on a byte
      if (key(i)) atomicAdd(&count, 1ull);
    if (u == 0) check_bitmap_tail(tp, code);
    __syncthreads();
    if (threadIdx.x == 0 && count != L.k) record(code, status::corrupt_payload);
    __syncthreads();
    return;
  }
  for (uint64_t j = threadIdx.x; j < L.k; j += blockDim.x)
    if (!index_entry_ok(tp, u, j)) record(code, status::corrupt_payload);
}

// The chunks of a payload on the grid path: each of its units gets an equal share of
// topk_grid_chunks; chunk c of the payload is chunk c % per_unit of unit c / per_unit.
struct grid_chunks {
  topk_chunking ch;
  uint64_t per_unit = 0, count = 0;
};
PIPECODEC_HD grid_chunks grid_chunks_of(const topk_layout& L) {
  grid_chunks g;
  g.ch = topk_chunks_for(L.unit_len, topk_grid_chunks / L.units);
  g.per_unit = g.ch.count;
  g.count = L.units * g.per_unit;
  return g;
}

// The same for units that grid_select_units admits, by every block of the grid. Bitmap: each
// chunk's set bits go to counts[c].x; topk_grid_rank_kernel checks each unit's sum.
__device__ inline void check_grid_positions(const topk_payload& tp, ulonglong2* counts, unsigned long long& count,
                                            status* code) {
  const topk_layout& L = tp.layout;
  if (tp.desc.index != index_layout::bitmap) {
    for (uint64_t e = global_thread(); e < L.kept; e += thread_count())
      if (!index_entry_ok(tp, e / L.k, e % L.k)) record(code, status::corrupt_payload);
    return;
  }
  if (blockIdx.x == 0) check_bitmap_tail(tp, code);
  const grid_chunks G = grid_chunks_of(L);
  for (uint64_t c = blockIdx.x; c < G.count; c += gridDim.x) {
    const uint64_t u = c / G.per_unit, cu = c % G.per_unit;
    if (threadIdx.x == 0) count = 0;
    __syncthreads();
    block_count_bits(tp.bytes + L.index_offset, u * L.unit_len + cu * G.ch.len,
                     u * L.unit_len + G.ch.end(cu, L.unit_len), count);
    __syncthreads();
    if (threadIdx.x == 0) counts[c] = make_ulonglong2(count, 0);
  }
}

// Block u (of topk_grid_max_units), after validation of a bitmap on the grid path: unit u's
// chunk counts become offsets, and a unit without exactly k set bits is rejected. `pos` is
// the payload holding the positions (the mask of a shared-mask payload); anything else
// returns at once.
template <uint32_t Threads>
__global__ void __launch_bounds__(Threads)
    topk_grid_rank_kernel(const uint8_t* pos, uint64_t len, ulonglong2* counts, status* code) {
  static_assert(Threads == topk_threads, "uses block_offsets");
  PIPECODEC_SHARED(topk_payload, tp);
  PIPECODEC_SHARED(int, ranks);
  PIPECODEC_SHARED(typename topk_scan::TempStorage, tmp);
  if (threadIdx.x == 0) {
    ranks = ok(recorded(code)) && ok(parse_topk_payload(pos, len, tp)) && grid_select_units(tp.layout) &&
            tp.desc.index == index_layout::bitmap && blockIdx.x < tp.layout.units;
  }
  __syncthreads();
  if (!ranks) return;
  const grid_chunks G = grid_chunks_of(tp.layout);
  const ulonglong2 total = block_offsets(counts + blockIdx.x * G.per_unit, G.per_unit, tmp);
  if (threadIdx.x == 0 && total.x != tp.layout.k) record(code, status::corrupt_payload);
}

// Calls f(j, i) for every kept position i (rank j) of unit u of a validated TopK payload with
// an index section; all threads of the block call it together.
template <class F>
__device__ void block_for_each_position(const topk_payload& tp, uint64_t u, topk_block_storage& s, F&& f) {
  const topk_layout& L = tp.layout;
  if (tp.desc.index == index_layout::bitmap) {
    block_compact(bitmap_keys{tp.bytes + L.index_offset, u * L.unit_len}, L.unit_len, set_bits(), s, f);
    return;
  }
  for (uint64_t j = threadIdx.x; j < L.k; j += blockDim.x) f(j, index_entry(tp, u * L.k + j));
}

// f(u, j, i) for every kept position of units that grid_select_units admits, by every block
// of the grid together (bitmap ranks from the offsets of topk_grid_rank_kernel).
template <class F>
__device__ void grid_for_each_position(const topk_payload& tp, const ulonglong2* offsets, topk_block_storage& s,
                                       F&& f) {
  const topk_layout& L = tp.layout;
  if (tp.desc.index != index_layout::bitmap) {
    for (uint64_t e = global_thread(); e < L.kept; e += thread_count()) f(e / L.k, e % L.k, index_entry(tp, e));
    return;
  }
  const grid_chunks G = grid_chunks_of(L);
  for (uint64_t c = blockIdx.x; c < G.count; c += gridDim.x) {
    const uint64_t u = c / G.per_unit, cu = c % G.per_unit;
    block_compact_range(bitmap_keys{tp.bytes + L.index_offset, u * L.unit_len}, cu * G.ch.len,
                        G.ch.end(cu, L.unit_len), offsets[c].x, offsets[c].y, set_bits(), s,
                        [&](uint64_t j, uint64_t i) { f(u, j, i); });
  }
}

// f(u, j, i) for every unit's kept positions of a validated payload, by the grid or one block
// per unit.
template <class F>
__device__ void for_each_position(const topk_payload& tp, const ulonglong2* offsets, topk_block_storage& s, F&& f) {
  if (grid_select_units(tp.layout)) {
    grid_for_each_position(tp, offsets, s, f);
    return;
  }
  for (uint64_t u = blockIdx.x; u < tp.layout.units; u += gridDim.x) {
    block_for_each_position(tp, u, s, [&](uint64_t j, uint64_t i) { f(u, j, i); });
    __syncthreads();
  }
}

// Blocks that validate or enumerate the positions of a payload of n elements and at most
// `units` units (the decoder knows only the output's rows): one per unit, or about one per
// chunk on the grid path (the kernels stride over the rest). Units beyond n are empty (rows
// of no columns): 2^46 of them, which a hostile header may declare, need no block each.
inline uint32_t positions_grid(uint64_t units, uint64_t n) {
  const uint64_t chunks = n >= topk_grid_min_len ? topk_chunks_for(n).count : 0;
  const uint64_t busy = units < n ? units : n;
  const uint64_t g = busy > chunks ? busy : chunks;
  return g == 0 ? 1u : g < 65535 ? uint32_t(g) : 65535u;
}

}  // namespace pipecodec::cuda::detail

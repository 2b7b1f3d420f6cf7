// Encoding kernels of k-bit quantization: thin grid-stride loops over the warp building
// blocks of warp_quant.cuh. Groups of up to quant_resident_chunks chunks: one warp per group,
// values held in registers, one read of the input. Larger groups (core/workspace.hpp): tiles
// of quant_tile_chunks chunks -> partial statistics, one block per group reduces them and
// stores the parameters, then one warp per tile quantizes (a second read of the input).
// The resident path gives each warp quant_batch_groups consecutive groups at a time.
// Outlier keeping replaces the first two passes of the tiled path by one kernel.
// with_header = false: the sections are embedded in another payload (TopK's quantized
// values), whose encoder writes the header and zeroes the padding itself.
// Kernels read element i as src(i) and hand every decoded value to a sink (warp_quant.cuh):
// plain encoding reads a tensor and discards them; the stateful schemes (cuda/ef.cuh,
// ef21.cuh, aqsgd.cuh) form x + e or x - g in src and update their state in the sink, so
// the payload and the new state come out of one pass.
#pragma once

#include <cub/block/block_reduce.cuh>

#include "../warp_quant.cuh"
#include "launch.cuh"

namespace pipecodec::cuda::detail {

// Groups per warp in the resident path: their parameters are computed by one lane each.
constexpr uint32_t quant_batch_groups = 4;

// Element i of a tensor stored as In.
template <dtype In>
struct tensor_source {
  const void* x;
  __device__ __forceinline__ float operator()(uint64_t i) const { return load<In>(x, i); }
};

template <uint32_t Bits, rounding R, class Src, class Sink>
__global__ void __launch_bounds__(block_threads)
    quant_encode_resident_kernel(Src src, Sink sink, quant_params q, quant_layout L, header h, randomness rnd,
                                 uint8_t* payload, bool with_header) {
  if (with_header && blockIdx.x == 0 && threadIdx.x == 0) write_quant_header(payload, h, L);
  const uint32_t lane = lane_id();
  const uint64_t batches = ceil_div(L.groups, quant_batch_groups);
  for (uint64_t bt = global_warp(); bt < batches; bt += warp_count()) {
    const uint64_t g0 = bt * quant_batch_groups;
    const uint32_t count = uint32_t(L.groups - g0 < quant_batch_groups ? L.groups - g0 : quant_batch_groups);
    // All loads first, so a warp has up to quant_batch_groups * 8 loads in flight.
    float v[quant_batch_groups][quant_resident_chunks];
#pragma unroll
    for (uint32_t b = 0; b < quant_batch_groups; ++b) {
      const uint64_t begin = L.group_begin(g0 + b), len = b < count ? L.group_size(g0 + b) : 0;
#pragma unroll
      for (uint32_t k = 0; k < quant_resident_chunks; ++k) {
        const uint64_t e = uint64_t(k) * 32 + lane;
        v[b][k] = e < len ? src(begin + e) : 0.0F;
      }
    }
    warp_encode_groups<Bits, R>(v, count, q, L, g0, rnd, payload, sink);
  }
}

// Tile t of the tiled path: its group and first chunk (group-relative).
struct tile_pos {
  uint64_t g, k0;
};
__device__ __forceinline__ tile_pos tile_of(uint64_t t, const quant_workspace& W) {
  const uint64_t g = W.tiles_per_group == 1 ? t : t / W.tiles_per_group;
  return tile_pos{g, (t - g * W.tiles_per_group) * quant_tile_chunks};
}

template <class Src>
__global__ void __launch_bounds__(block_threads)
    quant_tile_stats_kernel(Src src, quant_layout L, quant_workspace W, header h, uint8_t* payload,
                            uint8_t* ws, bool with_header) {
  if (with_header && blockIdx.x == 0 && threadIdx.x == 0) write_quant_header(payload, h, L);
  group_stats* partials = reinterpret_cast<group_stats*>(ws + W.partials_offset);
  const uint32_t lane = lane_id();
  for (uint64_t t = global_warp(); t < W.tiles; t += warp_count()) {
    const tile_pos tp = tile_of(t, W);
    const uint64_t begin = L.group_begin(tp.g), len = L.group_size(tp.g);
    const uint64_t end = (tp.k0 + quant_tile_chunks) * 32 < len ? (tp.k0 + quant_tile_chunks) * 32 : len;
    group_stats s;
#pragma unroll 8
    for (uint64_t e = tp.k0 * 32 + lane; e < end; e += 32) stats_add(s, src(begin + e));
    s = warp_allreduce_stats(s);
    if (lane == 0) partials[t] = s;
  }
}

// Outlier keeping (core/outliers.hpp), one warp per group: each lane ranks its own elements
// (a short sorted list), `count` rounds of a warp-wide argmax merge the lists, then the
// others' statistics give the group's parameters (stored, and kept for the tile encoder)
// and the kept elements are written sorted by position.
template <class Src>
__global__ void __launch_bounds__(block_threads)
    quant_outlier_kernel(Src src, quant_params q, quant_layout L, quant_workspace W, header h, uint8_t* payload,
                         uint8_t* ws) {
  if (blockIdx.x == 0 && threadIdx.x == 0) write_quant_header(payload, h, L);
  group_params* params = reinterpret_cast<group_params*>(ws + W.params_offset);
  const uint32_t lane = lane_id();
  for (uint64_t g = global_warp(); g < L.groups; g += warp_count()) {
    const uint64_t begin = L.group_begin(g), len = L.group_size(g);
    const uint32_t count = outlier_count(L, g);
    top_list mine;
    for (uint64_t e = lane; e < len; e += 32) mine.offer(outlier_key(src(begin + e)), e, count);
    uint32_t head = 0, kept = 0;  // lane j keeps the j-th pick
    uint32_t last_key = 0, last = 0;  // the last pick
    for (uint32_t r = 0; r < count; ++r) {
      uint32_t k = 0, i = 0xFFFFFFFFu;  // an exhausted lane ranks after every element
      if (head < mine.count) {
        k = mine.key[head];
        i = uint32_t(mine.index[head]);
      }
#pragma unroll
      for (uint32_t d = 16; d > 0; d /= 2) {
        const uint32_t ko = __shfl_xor_sync(full_warp, k, d), io = __shfl_xor_sync(full_warp, i, d);
        if (ranks_before(ko, io, k, i)) {
          k = ko;
          i = io;
        }
      }
      if (head < mine.count && uint32_t(mine.index[head]) == i) ++head;
      if (lane == r) kept = i;
      last_key = k;
      last = i;
    }
    group_stats s;
    if (count < len)
      for (uint64_t e = lane; e < len; e += 32) {
        const float v = src(begin + e);
        if (ranks_before(last_key, last, outlier_key(v), e)) stats_add(s, v);
      }
    const group_params p = make_params(warp_allreduce_stats(s), q);  // the same on every lane
    uint32_t slot = 0;  // kept's place in position order
    for (uint32_t t = 0; t < count; ++t) slot += __shfl_sync(full_warp, kept, t) < kept ? 1u : 0u;
    if (lane < count)
      put_outlier(payload, L, g, slot, kept, kept_value(src(begin + kept), p, consts_for(q.bits, q.scale)));
    else if (lane < L.outliers)
      put_outlier(payload, L, g, lane, 0, 0.0F);
    if (lane == 0) {
      store_group(payload, L, g, p);
      params[g] = p;
    }
  }
}

struct stats_merge_op {
  __device__ __forceinline__ group_stats operator()(const group_stats& a, const group_stats& b) const {
    return stats_merge(a, b);
  }
};

template <uint32_t Threads>
__global__ void __launch_bounds__(Threads)
    quant_finalize_kernel(quant_params q, quant_layout L, quant_workspace W, uint8_t* payload, uint8_t* ws) {
  using reduce_t = cub::BlockReduce<group_stats, Threads>;
  PIPECODEC_SHARED(typename reduce_t::TempStorage, tmp);
  const group_stats* partials = reinterpret_cast<const group_stats*>(ws + W.partials_offset);
  group_params* params = reinterpret_cast<group_params*>(ws + W.params_offset);
  for (uint64_t g = blockIdx.x; g < L.groups; g += gridDim.x) {
    group_stats s;
    for (uint64_t t = threadIdx.x; t < W.tiles_per_group; t += Threads)
      s = stats_merge(s, partials[g * W.tiles_per_group + t]);
    s = reduce_t(tmp).Reduce(s, stats_merge_op{});
    if (threadIdx.x == 0) {
      const group_params p = make_params(s, q);
      store_group(payload, L, g, p);
      params[g] = p;
    }
    __syncthreads();  // tmp is reused by the next group
  }
}

template <uint32_t Bits, rounding R, class Src, class Sink>
__global__ void __launch_bounds__(block_threads)
    quant_tile_encode_kernel(Src src, Sink sink, quant_params q, quant_layout L, quant_workspace W, randomness rnd,
                             uint8_t* payload, const uint8_t* ws) {
  const group_params* params = reinterpret_cast<const group_params*>(ws + W.params_offset);
  const quant_consts c = consts_for(Bits, q.scale);
  const bool aligned = aligned16(payload);
  const uint32_t lane = lane_id();
  for (uint64_t t = global_warp(); t < W.tiles; t += warp_count()) {
    const tile_pos tp = tile_of(t, W);
    const group_params p = params[tp.g];
    const uint64_t begin = L.group_begin(tp.g), len = L.group_size(tp.g);
    const uint64_t chunks = ceil_div(len, 32);
    const uint64_t k1 = tp.k0 + quant_tile_chunks < chunks ? tp.k0 + quant_tile_chunks : chunks;
    uint8_t* dst = payload + L.codes_offset + L.group_chunk(tp.g) * Bits * 4;
    draw d{};
    if constexpr (R == rounding::stochastic) d = rounding_draw(rnd, q.rng, L.cols, begin);
    for (uint64_t k = tp.k0; k < k1; k += 4) {
      float v[4];
#pragma unroll
      for (uint32_t i = 0; i < 4; ++i) {
        const uint64_t e = (k + i) * 32 + lane;
        v[i] = k + i < k1 && e < len ? src(begin + e) : 0.0F;
      }
      warp_rng rng{};
      if constexpr (R == rounding::stochastic) rng = warp_rng_init(d, k * 32);
#pragma unroll
      for (uint32_t i = 0; i < 4; ++i) {
        if (k + i >= k1) break;  // warp-uniform
        float u = 0.0F;
        if constexpr (R == rounding::stochastic) u = warp_rng_uniform(rng, 32 * i);
        const uint64_t e = (k + i) * 32 + lane;
        const uint32_t code = warp_encode_chunk<Bits, R>(v[i], e < len, p, c, u, dst + (k + i) * Bits * 4, aligned);
        if (e < len) sink(begin + e, v[i], dequantize(code, p.scale, p.offset, c.zero));
      }
    }
  }
}

}  // namespace pipecodec::cuda::detail

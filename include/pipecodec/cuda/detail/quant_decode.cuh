// Decoding agent of k-bit quantization: one warp per unit (a whole group, or a tile of
// quant_tile_chunks chunks of a large group), one lane per element of each chunk.
#pragma once

#include "../warp_quant.cuh"
#include "launch.cuh"

namespace pipecodec::cuda::detail {

// Hands every element of an already validated payload to sink(i, value).
template <uint32_t Bits, class Sink>
__device__ void decode_quant_warps(const quant_payload& qp, const Sink& sink) {
  const quant_layout& L = qp.layout;
  const uint64_t per_group = ceil_div(L.chunks_per_group, quant_tile_chunks);
  const uint64_t units = L.groups * per_group;
  const float zero = consts_for(Bits, qp.q.scale).zero;
  const bool aligned = aligned16(qp.bytes);
  const uint32_t lane = lane_id();
  for (uint64_t u = global_warp(); u < units; u += warp_count()) {
    const uint64_t g = per_group == 1 ? u : u / per_group;
    const uint64_t k0 = (u - g * per_group) * quant_tile_chunks;
    const uint64_t begin = L.group_begin(g), len = L.group_size(g);
    const uint64_t chunks = ceil_div(len, 32);
    const uint64_t k1 = k0 + quant_tile_chunks < chunks ? k0 + quant_tile_chunks : chunks;
    float scale, offset;
    load_group(qp, g, scale, offset);
    const uint8_t* src = qp.bytes + L.codes_offset + L.group_chunk(g) * Bits * 4;
    // Outlier keeping: lane j holds entry j; each chunk asks every entry whether it is one
    // of the chunk's elements (warp-uniform count, at most 16).
    const uint32_t outliers = L.outliers != 0 ? outlier_count(L, g) : 0;
    uint32_t pos = 0xFFFFFFFFu;
    float kept = 0.0F;
    if (lane < outliers) {
      pos = uint32_t(outlier_position(qp.bytes, L, g, lane));
      kept = outlier_value(qp.bytes, L, g, lane);
    }
#pragma unroll 4
    for (uint64_t k = k0; k < k1; ++k) {
      float v = warp_decode_chunk<Bits>(src + k * Bits * 4, aligned, scale, offset, zero);
      const uint64_t e = k * 32 + lane;
      for (uint32_t j = 0; j < outliers; ++j) {
        const uint32_t pj = __shfl_sync(full_warp, pos, j);
        const float vj = __shfl_sync(full_warp, kept, j);
        if (pj == e) v = vj;
      }
      if (e < len) sink(begin + e, v);
    }
  }
}

// out[i] = value (or, Accumulate, out[i] += value) in dtype Out.
template <dtype Out, bool Accumulate>
struct store_decoded {
  void* out;
  __device__ __forceinline__ void operator()(uint64_t i, float v) const {
    if constexpr (Accumulate)
      store<Out>(out, i, add_rn(load<Out>(out, i), v));
    else
      store<Out>(out, i, v);
  }
};

}  // namespace pipecodec::cuda::detail

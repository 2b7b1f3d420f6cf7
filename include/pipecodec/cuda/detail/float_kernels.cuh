// Kernels of the fp8 and mx codecs. Encoding: a warp per tile of a group reduces its amax
// word (core/float_format.hpp) with atomicMax, which is order-independent; one thread per
// group then derives and stores its scale; one thread per unit of 4 codes converts and packs
// them. Decoding: one thread per element, after validation (detail/decode.cuh).
#pragma once

#include "../../core/float_format.hpp"
#include "launch.cuh"
#include "warp.cuh"

namespace pipecodec::cuda::detail {

constexpr uint64_t float_tile = 256;  // elements of a group one warp reduces per work item

PIPECODEC_HD uint64_t float_tiles_per_group(const float_layout& L) { return ceil_div(L.group_len, float_tile); }

template <dtype In>
__global__ void __launch_bounds__(block_threads)
    float_stats_kernel(const void* x, codec_id c, float_layout L, uint32_t* amax) {
  const uint64_t per_group = float_tiles_per_group(L);
  const uint64_t items = L.groups * per_group;
  const uint32_t lane = lane_id();
  for (uint64_t t = global_warp(); t < items; t += warp_count()) {
    const uint64_t g = t / per_group;
    const uint64_t b = (t - g * per_group) * float_tile, size = L.group_size(g);
    const uint64_t end = b + float_tile < size ? b + float_tile : size;
    const uint64_t base = L.group_begin(g);
    uint32_t w = 0;
    for (uint64_t e = b + lane; e < end; e += 32) {
      const uint32_t a = amax_word(load<In>(x, base + e), c);
      w = a > w ? a : w;
    }
    for (uint32_t off = 16; off > 0; off >>= 1) {
      const uint32_t o = __shfl_xor_sync(0xFFFFFFFFu, w, int(off));
      w = o > w ? o : w;
    }
    if (lane == 0 && w != 0) atomicMax(amax + g, w);
  }
}

// Each group's scale into the payload and the workspace; block 0 writes the header and the
// section paddings.
template <uint32_t Threads>
__global__ void __launch_bounds__(Threads)
    float_scales_kernel(codec_id c, float_params f, float_layout L, header h, const uint32_t* amax,
                        float_scale* scales, uint8_t* payload) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    write_header(payload, h);
    for (uint64_t i = L.scales_offset + L.groups * L.scale_bytes; i < L.codes_offset; ++i) payload[i] = 0;
    for (uint64_t i = L.codes_offset + L.units * L.unit_bytes(); i < L.total; ++i) payload[i] = 0;
  }
  for (uint64_t g = global_thread(); g < L.groups; g += thread_count()) {
    const float_scale s = group_scale(amax[g], c, f);
    scales[g] = s;
    store_float_scale(payload, L, g, s);
  }
}

template <dtype In>
__global__ void __launch_bounds__(block_threads)
    float_encode_kernel(const void* x, codec_id c, float_params f, float_layout L, randomness rnd, uint64_t cols,
                        const float_scale* scales, uint8_t* payload) {
  uint8_t* codes = payload + L.codes_offset;
  for (uint64_t u = global_thread(); u < L.units; u += thread_count()) {
    uint32_t code[4] = {0, 0, 0, 0};
    philox_out r{};
    if (f.round == rounding::stochastic) {
      if (f.rng == rng_key::position || cols % 4 == 0) {  // the unit's 4 words are one Philox block
        const draw d = rounding_draw(rnd, f.rng, cols, 4 * u);
        r = random_block(d.key, d.stream, d.first >> 2);
      } else {  // rng=sample over rows of any length: the unit may span two rows
        for (uint32_t j = 0; j < 4 && 4 * u + j < L.n; ++j)
          r.v[j] = draw_word(rounding_draw(rnd, f.rng, cols, 4 * u + j), 0);
      }
    }
    for (uint32_t j = 0; j < 4; ++j) {
      const uint64_t i = 4 * u + j;
      if (i < L.n) code[j] = encode_value(load<In>(x, i), scales[L.group_of(i)], c, f, r.v[j]);
    }
    put_unit(codes, u, code, L.width);
  }
}

// Decodes (or adds) an already validated payload into out.
template <dtype Out, bool Accumulate>
__device__ void decode_float_threads(const float_payload& fp, void* out) {
  const float_layout& L = fp.layout;
  const uint8_t* codes = fp.bytes + L.codes_offset;
  for (uint64_t i = global_thread(); i < L.n; i += thread_count()) {
    const float v = decode_value(get_code(codes, i, L.width), load_float_scale(fp, L.group_of(i)), fp.f.format);
    store<Out>(out, i, Accumulate ? accumulate_value(load<Out>(out, i), v) : v);
  }
}

}  // namespace pipecodec::cuda::detail

// Tile-level building blocks of k-bit quantization, for the library's kernels and for a
// user's own kernel (e.g. a GEMM or norm epilogue that compresses values while it holds
// them in registers). Every function is called by all 32 lanes of a warp together; the
// bytes written are exactly the host backend's (host/quant.hpp).
//
//   if (lane == 0 && group == 0) cuda::write_quant_header(payload, hdr, L);   // once
//   cuda::warp_encode_group<4, rounding::nearest>(v, q, L, g, seed, payload); // per group
// (`seed` converts to a randomness; rng=sample takes one with the rows' sample ids in device memory)
//   (or warp_encode_groups for several groups per warp, sharing the parameter arithmetic)
//   float x = cuda::warp_decode_chunk<4>(planes, aligned, scale, offset, zero);
#pragma once

#include "../core/quant_format.hpp"
#include "detail/warp.cuh"

namespace pipecodec::cuda {

// Writes the header and zeroes the payload's padding bytes, the only bytes no group writes.
// One thread calls it once per payload; the header is built on the host (quant_header()).
__device__ inline void write_quant_header(uint8_t* payload, const header& h, const detail::quant_layout& L) {
  write_header(payload, h);
  const uint64_t params_end = L.params_offset + L.groups * L.scale_bytes * (L.has_offset ? 2u : 1u);
  for (uint64_t i = params_end; i < L.codes_offset; ++i) payload[i] = 0;
  for (uint64_t i = L.codes_end(); i < L.outliers_offset; ++i) payload[i] = 0;
  for (uint64_t i = L.outliers_end(); i < L.total; ++i) payload[i] = 0;  // outlier entries: their kernel
}

// Quantizes one 32-element chunk held one element per lane and stores its Bits planes at
// `planes`. Lanes past the end of the group pass valid = false (their code is 0 on the wire).
// u: this lane's uniform (detail::warp_rng_uniform) for stochastic rounding, unused otherwise.
// Returns this lane's code (what the decoder will see for a valid lane).
template <uint32_t Bits, rounding R>
__device__ __forceinline__ uint32_t warp_encode_chunk(float x, bool valid, const detail::group_params& p,
                                                  const detail::quant_consts& c, float u,
                                                  uint8_t* planes, bool aligned) {
  uint32_t code;
  if constexpr (R == rounding::nearest) {
    (void)u;
    code = detail::quantize_nearest(x, p, c);
  } else {
    code = detail::quantize_stochastic(x, p, c, u);
  }
  const uint32_t plane = detail::warp_pack_planes<Bits>(valid ? code : 0u);
  detail::warp_store_planes<Bits>(planes, plane, aligned);
  return code;
}

// The receiver of decoded values for warp_encode_groups: called by each lane for each valid
// element i it encoded, with the value v it encoded and d = D(payload)[i], bit-identical to
// what a decoder of the payload produces. Stateful schemes update their state here (EF:
// e = v - d; EF21: g += d) in the same pass. no_sink discards them (plain encoding).
struct no_sink {
  __device__ __forceinline__ void operator()(uint64_t, float, float) const {}
};

// Encodes the `count` (<= Groups <= 32) consecutive groups g0 .. g0 + count - 1 of a payload
// with layout L from values the warp holds: lane l's v[b][k] is element
// group_begin(g0 + b) + 32 k + l, for k < ceil(group_size(g0 + b) / 32) <= MaxChunks (values
// past a group's end are ignored). Computes each group's statistics, stores its scale (and
// offset) and every chunk's bit planes. The payload may have any alignment. Lane b computes
// the parameters of group b, so their cost is shared by up to 32 groups. `sink` (no_sink's
// signature) receives every valid element's decoded value.
template <uint32_t Bits, rounding R, uint32_t Groups, uint32_t MaxChunks, class Sink = no_sink>
__device__ void warp_encode_groups(const float (&v)[Groups][MaxChunks], uint32_t count, const quant_params& q,
                                   const detail::quant_layout& L, uint64_t g0, const randomness& rnd,
                                   uint8_t* payload, Sink sink = {}) {
  static_assert(Groups >= 1 && Groups <= 32, "one group per lane at most");
  const uint32_t lane = detail::lane_id();
  detail::group_stats mine;  // lane b: statistics of group g0 + b
#pragma unroll
  for (uint32_t b = 0; b < Groups; ++b) {
    if (b >= count) break;  // warp-uniform
    const uint64_t len = L.group_size(g0 + b);
    detail::group_stats st;
#pragma unroll
    for (uint32_t k = 0; k < MaxChunks; ++k)
      if (uint64_t(k) * 32 + lane < len) detail::stats_add(st, v[b][k]);
    st = detail::warp_allreduce_stats(st);
    if (lane == b) mine = st;
  }
  const detail::group_params own = detail::make_params(mine, q);
  if (lane < count) detail::store_group(payload, L, g0 + lane, own);
  const detail::quant_consts c = detail::consts_for(Bits, q.scale);
  const bool aligned = detail::aligned16(payload);
#pragma unroll
  for (uint32_t b = 0; b < Groups; ++b) {
    if (b >= count) break;  // warp-uniform
    const uint64_t g = g0 + b, begin = L.group_begin(g), len = L.group_size(g);
    const uint64_t chunks = detail::ceil_div(len, 32);
    detail::group_params p;
    p.scale = __shfl_sync(detail::full_warp, own.scale, b);
    p.offset = __shfl_sync(detail::full_warp, own.offset, b);
    p.pre = __shfl_sync(detail::full_warp, own.pre, b);
    p.inv = __shfl_sync(detail::full_warp, own.inv, b);
    uint8_t* dst = payload + L.codes_offset + L.group_chunk(g) * Bits * 4;
    detail::draw d{};
    if constexpr (R == rounding::stochastic) d = detail::rounding_draw(rnd, q.rng, L.cols, begin);
#pragma unroll
    for (uint32_t k0 = 0; k0 < MaxChunks; k0 += 4) {
      if (k0 >= chunks) break;  // warp-uniform
      detail::warp_rng rng{};
      if constexpr (R == rounding::stochastic) rng = detail::warp_rng_init(d, 32 * uint64_t(k0));
#pragma unroll
      for (uint32_t i = 0; i < 4 && k0 + i < MaxChunks; ++i) {
        const uint32_t k = k0 + i;
        if (k >= chunks) break;
        float u = 0.0F;
        if constexpr (R == rounding::stochastic) u = detail::warp_rng_uniform(rng, 32 * i);
        const uint64_t e = uint64_t(k) * 32 + lane;
        const uint32_t code = warp_encode_chunk<Bits, R>(v[b][k], e < len, p, c, u, dst + uint64_t(k) * Bits * 4,
                                                         aligned);
        // The stored parameters are exactly p.scale / p.offset, so this is the decoder's value.
        if (e < len) sink(begin + e, v[b][k], detail::dequantize(code, p.scale, p.offset, c.zero));
      }
    }
  }
}

// The same for one group g: lane l's v[k] is element group_begin(g) + 32 k + l.
template <uint32_t Bits, rounding R, uint32_t MaxChunks, class Sink = no_sink>
__device__ void warp_encode_group(const float (&v)[MaxChunks], const quant_params& q,
                                  const detail::quant_layout& L, uint64_t g, const randomness& rnd,
                                  uint8_t* payload, Sink sink = {}) {
  float w[1][MaxChunks];
#pragma unroll
  for (uint32_t k = 0; k < MaxChunks; ++k) w[0][k] = v[k];
  warp_encode_groups<Bits, R>(w, 1, q, L, g, rnd, payload, sink);
}

// Decodes one chunk: returns this lane's value, zero-point `zero` from consts_for(Bits, mode)
// and (scale, offset) from detail::load_group. `planes` points at the chunk's Bits words;
// aligned: the payload start is 16-byte aligned.
template <uint32_t Bits>
__device__ __forceinline__ float warp_decode_chunk(const uint8_t* planes, bool aligned, float scale,
                                                   float offset, float zero) {
  uint32_t w[Bits];
  detail::load_planes<Bits>(planes, aligned, w);
  return detail::dequantize(detail::lane_code<Bits>(w), scale, offset, zero);
}

}  // namespace pipecodec::cuda

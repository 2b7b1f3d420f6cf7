// Warp-level primitives of the CUDA backend: statistics all-reduce, bit planes by ballot,
// plane loads/stores at any payload alignment, and the Philox words of a run of elements
// spread over the warp. Every function must be called by all 32 lanes of a warp.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "../../core/draw.hpp"
#include "../../core/quant_math.hpp"
#include "../../core/format.hpp"

namespace pipecodec::cuda::detail {

using namespace pipecodec::detail;

constexpr uint32_t full_warp = 0xFFFFFFFFu;

__device__ __forceinline__ uint32_t lane_id() { return threadIdx.x & 31u; }

__device__ __forceinline__ bool aligned16(const void* p) {
  return (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
}

// Butterfly all-reduce: every lane ends with the statistics of the whole warp. Lanes may
// disagree on the sign of a zero bound; make_params canonicalises it, so their parameters agree.
__device__ __forceinline__ group_stats warp_allreduce_stats(group_stats s) {
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) {
    group_stats o;
    o.lo = __shfl_xor_sync(full_warp, s.lo, d);
    o.hi = __shfl_xor_sync(full_warp, s.hi, d);
    s = stats_merge(s, o);
  }
  return s;
}

// Bit j of every lane's code -> plane j, returned to lane j (lanes >= Bits get 0).
template <uint32_t Bits>
__device__ __forceinline__ uint32_t warp_pack_planes(uint32_t code) {
  const uint32_t lane = lane_id();
  uint32_t mine = 0;
#pragma unroll
  for (uint32_t j = 0; j < Bits; ++j) {
    const uint32_t w = __ballot_sync(full_warp, (code >> j) & 1u);
    mine = lane == j ? w : mine;
  }
  return mine;
}

// Lanes j < Bits store plane j of a chunk at dst. A chunk's planes sit at a multiple of 4
// bytes from the (16-aligned) section start, so word stores are safe when the payload is
// 16-aligned; otherwise bytes are written.
template <uint32_t Bits>
__device__ __forceinline__ void warp_store_planes(uint8_t* dst, uint32_t plane, bool aligned) {
  const uint32_t lane = lane_id();
  if (lane < Bits) {
    if (aligned) reinterpret_cast<uint32_t*>(dst)[lane] = plane;
    else put_u32(dst + 4 * lane, plane);
  }
}

// All Bits planes of a chunk, in every lane (broadcast loads), as wide as alignment allows:
// the chunk offset is a multiple of 4 * Bits, so 16-byte loads are aligned when Bits % 4 == 0.
template <uint32_t Bits>
__device__ __forceinline__ void load_planes(const uint8_t* src, bool aligned, uint32_t (&w)[Bits]) {
  if (aligned) {
    if constexpr (Bits % 4 == 0) {
#pragma unroll
      for (uint32_t q = 0; q < Bits / 4; ++q) {
        const uint4 v = reinterpret_cast<const uint4*>(src)[q];
        w[4 * q] = v.x;
        w[4 * q + 1] = v.y;
        w[4 * q + 2] = v.z;
        w[4 * q + 3] = v.w;
      }
    } else if constexpr (Bits % 2 == 0) {
#pragma unroll
      for (uint32_t q = 0; q < Bits / 2; ++q) {
        const uint2 v = reinterpret_cast<const uint2*>(src)[q];
        w[2 * q] = v.x;
        w[2 * q + 1] = v.y;
      }
    } else {
#pragma unroll
      for (uint32_t j = 0; j < Bits; ++j) w[j] = reinterpret_cast<const uint32_t*>(src)[j];
    }
  } else {
#pragma unroll
    for (uint32_t j = 0; j < Bits; ++j) w[j] = get_u32(src + 4 * j);
  }
}

// This lane's code from the chunk's planes: bit j of the code is bit `lane` of plane j.
template <uint32_t Bits>
__device__ __forceinline__ uint32_t lane_code(const uint32_t (&w)[Bits]) {
  const uint32_t lane = lane_id();
  uint32_t code = 0;
#pragma unroll
  for (uint32_t j = 0; j < Bits; ++j) code |= ((w[j] >> lane) & 1u) << j;
  return code;
}

// Words w0 .. w0 + 127 of a run's draws (w0 = d.first + i0: elements i0 .. of the run),
// spread over the warp: lane l holds Philox block (w0 >> 2) + l and, when w0 is not a
// multiple of 4 (the words then touch a 33rd block), block (w0 >> 2) + 32 + l. One Philox
// per lane serves four chunks.
struct warp_rng {
  uint64_t w0;
  uint32_t a[4];
  uint32_t b[4];
};

__device__ __forceinline__ warp_rng warp_rng_init(const draw& d, uint64_t i0) {
  warp_rng r;
  r.w0 = d.first + i0;
  const uint64_t block = (r.w0 >> 2) + lane_id();
  const philox_out p = random_block(d.key, d.stream, block);
#pragma unroll
  for (int k = 0; k < 4; ++k) r.a[k] = p.v[k];
  if ((r.w0 & 3u) != 0) {
    const philox_out q = random_block(d.key, d.stream, block + 32);
#pragma unroll
    for (int k = 0; k < 4; ++k) r.b[k] = q.v[k];
  } else {
#pragma unroll
    for (int k = 0; k < 4; ++k) r.b[k] = 0;
  }
  return r;
}

__device__ __forceinline__ uint32_t select4(const uint32_t (&w)[4], uint32_t k) {
  return k == 0 ? w[0] : k == 1 ? w[1] : k == 2 ? w[2] : w[3];
}

// The uniform of word w0 + i + lane (i = 0, 32, 64 or 96): exactly the value the host
// backend's uniforms32 gives that element.
__device__ __forceinline__ float warp_rng_uniform(const warp_rng& r, uint32_t i) {
  const uint32_t rel = uint32_t(r.w0 & 3u) + i + lane_id();  // offset from 4 * (w0 >> 2)
  const uint32_t src = (rel >> 2) & 31u, k = rel & 3u;
  uint32_t w[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) w[j] = __shfl_sync(full_warp, r.a[j], src);
  uint32_t v = select4(w, k);
  if ((r.w0 & 3u) != 0) {  // warp-uniform
    uint32_t x[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) x[j] = __shfl_sync(full_warp, r.b[j], src);
    if ((rel >> 2) >= 32) v = select4(x, k);
  }
  return to_unit_float(v);
}

}  // namespace pipecodec::cuda::detail

// Kernels of the lowrank codec, in the order of core/lowrank_format.hpp: Q0 (one block, which
// also writes the header and paddings), M Q0 (a warp per row), Gram-Schmidt (one block, its
// warps taking the chunks of each canonical sum in turn), Q = M^T P (a block per 32 columns,
// coalesced along the row). Every sum follows canonical_sum's order, so the payload is the
// host backend's byte for byte. Decoding: one thread per element, after validation.
#pragma once

#include "../../core/lowrank_format.hpp"
#include "launch.cuh"
#include "warp.cuh"

namespace pipecodec::cuda::detail {

constexpr uint32_t lowrank_block = 256;
constexpr uint32_t lowrank_col_rows = lowrank_block / 32;  // blockDim.y of the Q kernel

// A chunk's lane sums combined as canonical_sum's tree; every lane gets the result.
__device__ __forceinline__ double lowrank_lane_tree(double v) {
  for (uint32_t off = 16; off > 0; off >>= 1) v += __shfl_down_sync(full_warp, v, off);
  return __shfl_sync(full_warp, v, 0);
}

// canonical_sum on one block: warp w sums chunk k0 + w, thread 0 adds the chunks in order.
template <uint32_t Threads, class Term>
__device__ double lowrank_block_sum(uint64_t len, Term term, double* chunk_sums, double& result) {
  constexpr uint32_t warps = Threads / 32;
  const uint32_t warp = threadIdx.x / 32, lane = lane_id();
  const uint64_t chunks = ceil_div(len, lowrank_chunk);
  double total = 0.0;
  __syncthreads();  // every thread has read the previous result
  for (uint64_t k0 = 0; k0 < chunks; k0 += warps) {
    const uint64_t k = k0 + warp;
    if (k < chunks) {
      const uint64_t base = k * lowrank_chunk;
      double v = 0.0;
      for (uint64_t i = base + lane; i < len && i < base + lowrank_chunk; i += 32) v += term(i);
      v = lowrank_lane_tree(v);
      if (lane == 0) chunk_sums[warp] = v;
    }
    __syncthreads();
    if (threadIdx.x == 0)
      for (uint32_t w = 0; w < warps && k0 + w < chunks; ++w) total += chunk_sums[w];
    __syncthreads();
  }
  if (threadIdx.x == 0) result = total;
  __syncthreads();
  return result;
}

// Q0 into the workspace: the warm Q's column where it has a non-zero entry, else the seed's.
template <uint32_t Threads>
__global__ void __launch_bounds__(Threads)
    lowrank_q0_kernel(lowrank_layout L, header h, const float* warm, uint64_t seed, float* q0, uint8_t* payload) {
  PIPECODEC_SHARED(int, any);
  if (threadIdx.x == 0) {
    write_header(payload, h);
    for (uint64_t i = L.p_end(); i < L.q_offset; ++i) payload[i] = 0;
    for (uint64_t i = L.q_end(); i < L.total; ++i) payload[i] = 0;
  }
  const uint32_t R = L.rank;
  for (uint32_t r = 0; r < R; ++r) {
    if (threadIdx.x == 0) any = 0;
    __syncthreads();
    for (uint64_t j = threadIdx.x; warm != nullptr && j < L.cols; j += Threads)
      if (finite_or_zero(warm[j * R + r]) != 0.0f) atomicOr(&any, 1);
    __syncthreads();
    const bool use_warm = any != 0;
    for (uint64_t j = threadIdx.x; j < L.cols; j += Threads)
      q0[j * R + r] = use_warm ? finite_or_zero(warm[j * R + r]) : lowrank_random(seed, R, j, r);
    __syncthreads();
  }
}

// pd = M Q0 in double, a warp per row.
template <dtype In>
__global__ void __launch_bounds__(block_threads)
    lowrank_rows_kernel(const void* x, lowrank_layout L, const float* q0, double* pd) {
  const uint32_t lane = lane_id(), R = L.rank;
  for (uint64_t i = global_warp(); i < L.rows; i += warp_count())
    for (uint32_t r = 0; r < R; ++r) {
      double total = 0.0;
      for (uint64_t base = 0; base < L.cols; base += lowrank_chunk) {
        double v = 0.0;
        for (uint64_t j = base + lane; j < L.cols && j < base + lowrank_chunk; j += 32)
          v += exact_mul(finite_or_zero(load<In>(x, i * L.cols + j)), q0[j * R + r]);
        total += lowrank_lane_tree(v);
      }
      if (lane == 0) pd[i * R + r] = total;
    }
}

// Gram-Schmidt on P's columns, in the payload (one block).
template <uint32_t Threads>
__global__ void __launch_bounds__(Threads) lowrank_orthonormalize_kernel(lowrank_layout L, const double* pd, uint8_t* payload) {
  PIPECODEC_SHARED(double[Threads / 32], chunk_sums);
  PIPECODEC_SHARED(double, result);
  PIPECODEC_SHARED(double[Threads], maxes);
  uint8_t* P = payload + L.p_offset;
  const uint32_t R = L.rank, t = threadIdx.x;
  auto at = [&](uint64_t i, uint32_t c) { return load_factor(P, i * R + c); };
  for (uint32_t c = 0; c < R; ++c) {
    double m = 0.0;
    for (uint64_t i = t; i < L.rows; i += Threads) {
      const double a = pd[i * R + c] < 0 ? -pd[i * R + c] : pd[i * R + c];
      m = a > m ? a : m;
    }
    maxes[t] = m;
    __syncthreads();
    for (uint32_t off = Threads / 2; off > 0; off >>= 1) {
      if (t < off && maxes[t + off] > maxes[t]) maxes[t] = maxes[t + off];
      __syncthreads();
    }
    const double mx = c < L.rows ? maxes[0] : 0.0;  // at most `rows` independent columns
    for (uint64_t i = t; i < L.rows; i += Threads)
      store_factor(P, i * R + c, mx == 0.0 ? 0.0f : scaled_column_value(pd[i * R + c], mx));
    __syncthreads();
    if (mx == 0.0) continue;
    const double before =
        lowrank_block_sum<Threads>(L.rows, [&](uint64_t i) { return exact_mul(at(i, c), at(i, c)); }, chunk_sums, result);
    for (uint32_t k = 0; k < lowrank_projection_passes * c; ++k) {
      const uint32_t p = k % c;
      const float d = float(lowrank_block_sum<Threads>(
          L.rows, [&](uint64_t i) { return exact_mul(at(i, c), at(i, p)); }, chunk_sums, result));
      for (uint64_t i = t; i < L.rows; i += Threads) store_factor(P, i * R + c, project_out(at(i, c), d, at(i, p)));
      __syncthreads();
    }
    const double ss =
        lowrank_block_sum<Threads>(L.rows, [&](uint64_t i) { return exact_mul(at(i, c), at(i, c)); }, chunk_sums, result);
    const double norm = dsqrt_rn(ss);
    const bool dependent = lowrank_dependent(ss, before);
    for (uint64_t i = t; i < L.rows; i += Threads)
      store_factor(P, i * R + c, dependent ? 0.0f : normalized_value(at(i, c), norm));
    __syncthreads();
  }
}

// Q = M^T P: a block per 32 columns (threadIdx.x), its 8 rows of threads holding 4 of a
// chunk's 32 lanes each; the lanes combine through shared memory in canonical_sum's tree.
template <dtype In>
__global__ void __launch_bounds__(lowrank_block) lowrank_cols_kernel(const void* x, lowrank_layout L, uint8_t* payload) {
  PIPECODEC_SHARED(double[32][33], part);
  const uint8_t* P = payload + L.p_offset;
  uint8_t* Q = payload + L.q_offset;
  const uint32_t tx = threadIdx.x, ty = threadIdx.y, R = L.rank;
  for (uint64_t tile = blockIdx.x; tile < ceil_div(L.cols, 32); tile += gridDim.x) {
    const uint64_t j = tile * 32 + tx;
    for (uint32_t r = 0; r < R; ++r) {
      double total = 0.0;
      for (uint64_t base = 0; base < L.rows; base += lowrank_chunk) {
        for (uint32_t q = 0; q < 32 / lowrank_col_rows; ++q) {
          const uint32_t l = ty + lowrank_col_rows * q;
          double v = 0.0;
          for (uint64_t i = base + l; j < L.cols && i < L.rows && i < base + lowrank_chunk; i += 32)
            v += exact_mul(finite_or_zero(load<In>(x, i * L.cols + j)), load_factor(P, i * R + r));
          part[l][tx] = v;
        }
        __syncthreads();
        for (uint32_t off = 16; off > 0; off >>= 1) {
          for (uint32_t q = 0; q < 32 / lowrank_col_rows; ++q) {
            const uint32_t l = ty + lowrank_col_rows * q;
            if (l < off) part[l][tx] += part[l + off][tx];
          }
          __syncthreads();
        }
        total += part[0][tx];
        __syncthreads();
      }
      if (ty == 0 && j < L.cols) store_factor(Q, j * R + r, to_float_sat(total));
    }
  }
}

// Decodes (or adds) an already validated payload into out.
template <dtype Out, bool Accumulate>
__device__ void decode_lowrank_threads(const lowrank_payload& lp, void* out) {
  const lowrank_layout& L = lp.layout;
  for (uint64_t e = global_thread(); e < L.n; e += thread_count()) {
    const uint64_t i = e / L.cols, j = e - i * L.cols;
    const float v = lowrank_element(lp.bytes + L.p_offset + 4 * i * L.rank, lp.bytes + L.q_offset + 4 * j * L.rank, L.rank);
    store<Out>(out, e, Accumulate ? add_rn(load<Out>(out, e), v) : v);  // v is finite
  }
}

}  // namespace pipecodec::cuda::detail

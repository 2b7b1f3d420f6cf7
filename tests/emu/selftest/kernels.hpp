// Deliberately broken kernels and their correct twins, for the emulator's self-test: each
// pair differs only in the defect the emulator must report.
#pragma once

#include <cuda_runtime.h>

#include <cub/block/block_reduce.cuh>
#include <cstdint>

#include "pipecodec/cuda/detail/portable.cuh"

namespace selftest {

constexpr uint32_t threads = 256;

// Each thread publishes a value in shared memory and reads its neighbour's.
template <bool Barrier>
__global__ void neighbour_kernel(uint32_t* out) {
  PIPECODEC_SHARED(uint32_t[threads], s);
  s[threadIdx.x] = threadIdx.x * 7 + 1;
  if constexpr (Barrier) __syncthreads();
  out[threadIdx.x] = s[(threadIdx.x + 1) % threads];
}

// Every thread (or only thread 0) writes one shared word; all read it after a barrier.
template <bool AllWrite>
__global__ void one_word_kernel(uint32_t* out) {
  PIPECODEC_SHARED(uint32_t, word);
  if (AllWrite || threadIdx.x == 0) word = threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = word;
}

// Lane 7 leaves; the others shuffle with a mask that still names it (or one that does not).
template <bool NameExited>
__global__ void exited_lane_kernel(uint32_t* out) {
  const uint32_t lane = threadIdx.x % 32;
  if (lane == 7) return;
  const uint32_t mask = NameExited ? 0xFFFFFFFFu : ~(1u << 7);
  const uint32_t src = lane == 6 ? 8 : lane + 1 == 32 ? 0 : lane + 1;
  out[threadIdx.x] = __shfl_sync(mask, threadIdx.x * 3, int(src));
}

// Each thread loads 16 bytes as one uint4 from `in + offset` words and stores their sum: an
// offset that is not a multiple of 4 words is an address a GPU faults on (misaligned).
__global__ void vector_load_kernel(const uint32_t* in, uint32_t offset, uint32_t* out) {
  const uint4 v = reinterpret_cast<const uint4*>(in + offset)[threadIdx.x];
  out[threadIdx.x] = v.x + v.y + v.z + v.w;
}

// Writes word `at` of a device buffer (its length: one past its end).
__global__ void global_write_kernel(uint32_t* out, uint32_t at) {
  if (threadIdx.x == 0) out[at] = 1;
}

// Writes shared word `at` of a `threads`-word array (threads: one past its end).
__global__ void shared_write_kernel(uint32_t* out, uint32_t at) {
  PIPECODEC_SHARED(uint32_t[threads], s);
  s[threadIdx.x] = threadIdx.x;
  __syncthreads();
  if (threadIdx.x == 0) s[at] = 5;
  __syncthreads();
  out[threadIdx.x] = s[threadIdx.x];
}

// Copies a device buffer (the reader of the stream-order case).
__global__ void copy_kernel(const uint32_t* in, uint32_t* out, uint32_t n) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) out[i] = in[i];
}

// Half the block waits at one barrier, half at another (or all at the same one).
template <bool TwoSites>
__global__ void barrier_sites_kernel(uint32_t* out) {
  if (TwoSites && threadIdx.x < threads / 2) {
    __syncthreads();
  } else {
    __syncthreads();
  }
  out[threadIdx.x] = threadIdx.x;
}

// Lanes of one warp reach two different shuffles (or the same one).
template <bool TwoSites>
__global__ void shuffle_sites_kernel(uint32_t* out) {
  const uint32_t lane = threadIdx.x % 32;
  uint32_t v;
  if (TwoSites && lane < 16)
    v = __shfl_sync(0xFFFFFFFFu, lane, 0);
  else
    v = __shfl_sync(0xFFFFFFFFu, lane, 0);
  out[threadIdx.x] = v;
}

// The low half-warp shuffles among itself but reads lane 20 (outside its mask), or lane 10.
template <bool Outside>
__global__ void shuffle_source_kernel(uint32_t* out) {
  const uint32_t lane = threadIdx.x % 32;
  uint32_t v = 0;
  if (lane < 16) v = __shfl_sync(0x0000FFFFu, lane * 5, Outside ? 20 : 10);
  out[threadIdx.x] = v;
}

// Reads shared memory no thread wrote (or wrote first).
template <bool Uninitialised>
__global__ void uninitialised_kernel(uint32_t* out) {
  PIPECODEC_SHARED(uint32_t[threads], s);
  if (!Uninitialised) s[threadIdx.x] = 3;
  __syncthreads();
  out[threadIdx.x] = s[threadIdx.x];
}

// A rotation by shuffle: every lane must read its neighbour's value from before the call.
__global__ void rotate_kernel(uint32_t* out) {
  const uint32_t lane = threadIdx.x % 32;
  uint32_t v = threadIdx.x;
  for (int r = 0; r < 3; ++r) v = __shfl_sync(0xFFFFFFFFu, v, int((lane + 1) % 32));
  out[threadIdx.x] = v;
}

// cub::BlockReduce for `threads` threads, launched with however many the test chooses.
__global__ void block_sum_kernel(uint32_t* out) {
  using reduce_t = cub::BlockReduce<uint32_t, threads>;
  PIPECODEC_SHARED(typename reduce_t::TempStorage, tmp);
  const uint32_t sum = reduce_t(tmp).Sum(threadIdx.x);
  if (threadIdx.x == 0) out[0] = sum;
}

// Writes and reads back `bytes` of dynamic shared memory.
__global__ void dynamic_shared_kernel(uint32_t* out, uint32_t words) {
  PIPECODEC_SHARED_DYNAMIC(uint32_t, d);
  for (uint32_t i = threadIdx.x; i < words; i += blockDim.x) d[i] = i;
  __syncthreads();
  if (threadIdx.x == 0) {
    uint32_t sum = 0;
    for (uint32_t i = 0; i < words; ++i) sum += d[i];
    out[0] = sum;
  }
}

}  // namespace selftest

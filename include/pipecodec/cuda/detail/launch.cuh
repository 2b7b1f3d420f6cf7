// Host-side launch helpers of the CUDA backend: grid sizing, error mapping, workspace
// alignment, and the device-side status area at the start of the workspace.
#pragma once

#include "../../core/buffers.hpp"
#include "../../core/float_format.hpp"
#include "../../core/lowrank_format.hpp"
#include "../../core/plain_format.hpp"
#include "../../core/quant_format.hpp"
#include "../../core/workspace.hpp"
#include "portable.cuh"

#include <atomic>

namespace pipecodec::cuda::detail {

using namespace pipecodec::detail;

constexpr uint32_t block_threads = 256;
constexpr uint32_t block_warps = block_threads / 32;

// Start of the workspace's status area. Decoding validates the payload on the device and
// records the outcome here; cuda::read_status copies `code` back.
struct status_area {
  status code;      // success, or why the last decode on this workspace was rejected
  uint32_t codec;   // codec of the validated payload
  uint64_t reserved;
};
constexpr uint64_t parsed_offset = 16;  // the parsed payload (quant_ or plain_payload) follows
static_assert(sizeof(status_area) == parsed_offset, "status area layout");
static_assert(parsed_offset + sizeof(quant_payload) <= workspace_status_bytes &&
                  parsed_offset + sizeof(plain_payload) <= workspace_status_bytes &&
                  parsed_offset + sizeof(float_payload) <= workspace_status_bytes &&
                  parsed_offset + sizeof(lowrank_payload) <= workspace_status_bytes,
              "parsed payload must fit the status area");

PIPECODEC_HD uint8_t* align_workspace(void* ws) {
  const uintptr_t p = reinterpret_cast<uintptr_t>(ws);
  return reinterpret_cast<uint8_t*>((p + (workspace_align - 1)) & ~uintptr_t(workspace_align - 1));
}

// The current device, as grid sizing needs it: its ordinal and multiprocessor count.
struct device_grid {
  int dev = 0;
  uint32_t sms = 0;
};

inline status current_device(device_grid& d) {
  int sms = 0;
  if (cudaGetDevice(&d.dev) != cudaSuccess) return status::cuda_error;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, d.dev) != cudaSuccess || sms <= 0)
    return status::cuda_error;
  d.sms = uint32_t(sms);
  return status::success;
}

// Blocks of Kernel that one multiprocessor of device d holds at once, with blocks of
// `threads` threads and `smem` bytes of dynamic shared memory: the occupancy calculator's
// answer from the kernel's registers and shared memory. A launch asks it of the runtime once
// per kernel, device and block shape and keeps the answer (an entry packs the key and the
// answer in one word, so a reader never sees half of one), so encodes do not pay for the
// query. At least 1: a block that cannot fit fails at its launch, as it would anyway.
template <auto Kernel>
inline uint32_t resident_blocks(const device_grid& d, uint32_t threads, size_t smem) {
  constexpr int slots = 4;
  static std::atomic<uint64_t> cache[slots] = {};
  const bool cacheable = d.dev >= 0 && d.dev < 256 && threads < 2048 && smem < (size_t(1) << 24);
  // valid bit | device (8 bits) | threads (11) | shared bytes (24) | the answer (8)
  const uint64_t key = (uint64_t(1) << 63) | (uint64_t(d.dev) << 43) | (uint64_t(threads) << 32) |
                       (uint64_t(smem) << 8);
  if (cacheable) {
    for (auto& e : cache) {
      const uint64_t v = e.load(std::memory_order_relaxed);
      if ((v & ~uint64_t(0xFF)) == key) return uint32_t(v & 0xFF);
    }
  }
  int blocks = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, Kernel, int(threads), smem) != cudaSuccess ||
      blocks < 1)
    blocks = 1;
  if (blocks > 255) blocks = 255;
  if (cacheable) {
    for (auto& e : cache) {
      uint64_t empty = 0;
      if (e.compare_exchange_strong(empty, key | uint64_t(blocks), std::memory_order_relaxed)) break;
    }
  }
  return uint32_t(blocks);
}

// Blocks for `units` work items of `per_block` each: at least 1 (block 0 writes headers), at
// most as many as the device holds resident at once at Kernel's occupancy. The kernels' loops
// stride over their grid, so a larger grid would only queue blocks behind the resident ones.
template <auto Kernel>
inline uint32_t grid_for(uint64_t units, uint64_t per_block, const device_grid& d, dim3 block = dim3(block_threads),
                         size_t smem = 0) {
  const uint64_t cap = uint64_t(d.sms) * resident_blocks<Kernel>(d, block.x * block.y * block.z, smem);
  const uint64_t b = ceil_div(units, per_block);
  return b < 1 ? 1u : b > cap ? uint32_t(cap) : uint32_t(b);
}

// launch<Kernel> with the grid of grid_for<Kernel>.
template <auto Kernel, class... Args>
inline void launch_over(uint64_t units, uint64_t per_block, const device_grid& d, dim3 block, size_t smem,
                        cudaStream_t stream, const Args&... args) {
  launch<Kernel>(grid_for<Kernel>(units, per_block, d, block, smem), block, smem, stream, args...);
}

inline status last_launch_status() {
  return cudaGetLastError() == cudaSuccess ? status::success : status::cuda_error;
}

// Grid-stride indices of a warp (one work item per warp).
__device__ __forceinline__ uint64_t global_warp() {
  return (uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
}
__device__ __forceinline__ uint64_t warp_count() { return uint64_t(gridDim.x) * blockDim.x / 32; }
__device__ __forceinline__ uint64_t global_thread() {
  return uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ uint64_t thread_count() { return uint64_t(gridDim.x) * blockDim.x; }

// Run after a decoder's validation kernel: a payload whose header reads but names another
// codec than the receiver was configured with is rejected with state_mismatch, as
// host::detail::check_codec does (0 = any codec accepted: the launch is skipped).
template <uint32_t Threads>
__global__ void __launch_bounds__(Threads)
    expect_codec_kernel(const uint8_t* payload, uint64_t len, uint8_t codec, status* code) {
  header h;
  if (threadIdx.x == 0 && ok(read_header(payload, len, h)) && uint8_t(h.codec) != codec)
    *code = status::state_mismatch;
}

inline status launch_expect_codec(const void* payload, uint64_t len, uint8_t codec, void* status_word,
                                  cudaStream_t stream) {
  if (codec == 0) return status::success;
  launch<expect_codec_kernel<32>>(1, 32, 0, stream, static_cast<const uint8_t*>(payload), len, codec,
                                   static_cast<status*>(status_word));
  return last_launch_status();
}

}  // namespace pipecodec::cuda::detail

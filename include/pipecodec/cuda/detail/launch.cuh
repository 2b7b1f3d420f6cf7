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

namespace pipecodec::cuda::detail {

using namespace pipecodec::detail;

constexpr uint32_t block_threads = 256;
constexpr uint32_t block_warps = block_threads / 32;
constexpr uint32_t blocks_per_sm = 8;  // grid-stride loops cover the rest

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

// Grid limit for the current device: a few blocks per SM, the loops stride over the rest.
inline status grid_cap(uint32_t& cap) {
  int dev = 0, sms = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return status::cuda_error;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || sms <= 0)
    return status::cuda_error;
  cap = uint32_t(sms) * blocks_per_sm;
  return status::success;
}

// Blocks for `units` work items of `per_block` each: at least 1 (block 0 writes headers).
inline uint32_t grid_for(uint64_t units, uint64_t per_block, uint32_t cap) {
  const uint64_t b = ceil_div(units, per_block);
  return b < 1 ? 1u : b > cap ? cap : uint32_t(b);
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

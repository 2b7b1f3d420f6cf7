// CUDA memory for the RAII owners (state_owners.cuh, policy/cuda_endpoint.cuh) through the
// pluggable allocator of core/allocator.hpp: device memory (cudaMalloc) and pinned host
// memory (cudaMallocHost). Both are synchronous CUDA calls, made only by init() and by the
// owners' destructors (cudaFree / cudaFreeHost wait for the device), never by encode/decode.
// A runtime with a pool (or cudaMallocAsync on its own stream) plugs in its own functions.
#pragma once

#include <cuda_runtime.h>

#include "../core/allocator.hpp"

namespace pipecodec::cuda {

namespace detail {
// cudaMalloc returns at least 256-byte aligned memory, cudaMallocHost page-aligned memory,
// both above the allocator contract's 16 bytes. Zero-byte requests get one byte so a
// successful init always holds a non-null pointer.
inline void* device_allocate(size_t bytes, void*) {
  void* p = nullptr;
  return cudaMalloc(&p, bytes == 0 ? 1 : bytes) == cudaSuccess ? p : nullptr;
}
inline void device_deallocate(void* p, size_t, void*) { (void)cudaFree(p); }
inline void* pinned_allocate(size_t bytes, void*) {
  void* p = nullptr;
  return cudaMallocHost(&p, bytes == 0 ? 1 : bytes) == cudaSuccess ? p : nullptr;
}
inline void pinned_deallocate(void* p, size_t, void*) { (void)cudaFreeHost(p); }
}  // namespace detail

// Device memory of the current device (cudaMalloc / cudaFree).
inline allocator device_allocator() {
  allocator a;
  a.allocate = detail::device_allocate;
  a.deallocate = detail::device_deallocate;
  return a;
}

// Page-locked host memory (cudaMallocHost / cudaFreeHost): the AQ-SGD pinned store, plan
// buffers and status slots, which the device reads or writes asynchronously.
inline allocator pinned_allocator() {
  allocator a;
  a.allocate = detail::pinned_allocate;
  a.deallocate = detail::pinned_deallocate;
  return a;
}

}  // namespace pipecodec::cuda

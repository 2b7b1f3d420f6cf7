// The two constructs of the kernel source that differ between its two builds: nvcc, and the
// test-only CPU execution under tests/emu (its cuda_runtime.h defines PIPECODEC_EMU and
// supplies the runtime). Every launch and every shared-memory declaration goes through these,
// so both builds run the same call sites.
//   launch<kernel<...>>(grid, block, shared_bytes, stream, args...)   kernel<<<...>>>(args...)
//   PIPECODEC_SHARED(T, name);   binds `T& name` to block shared storage for a T (no
//                                constructor runs, as for any __shared__ object)
//   PIPECODEC_SHARED_DYNAMIC(T, name);   `T* name` at the launch's dynamic shared memory
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace pipecodec::cuda::detail {

// Spells array and dependent types inside the macros: shared_type<uint32_t[64]>&.
template <class T>
using shared_type = T;

#if defined(__CUDACC__)

template <auto Kernel, class... Args>
inline void launch(dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t stream, const Args&... args) {
  Kernel<<<grid, block, shared_bytes, stream>>>(args...);
}

#define PIPECODEC_SHARED(T, name)                                                                          \
  __shared__ alignas(::pipecodec::cuda::detail::shared_type<T>) unsigned char name##_storage_[sizeof(T)]; \
  ::pipecodec::cuda::detail::shared_type<T>& name =                                                        \
      *reinterpret_cast<::pipecodec::cuda::detail::shared_type<T>*>(name##_storage_)

#define PIPECODEC_SHARED_DYNAMIC(T, name)                      \
  extern __shared__ __align__(16) unsigned char name##_dynamic_[]; \
  T* name = reinterpret_cast<T*>(name##_dynamic_)

#elif defined(PIPECODEC_EMU)

template <auto Kernel, class... Args>
inline void launch(dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t stream, const Args&... args) {
  ::pipecodec_emu::launch<Kernel>(grid, block, shared_bytes, stream, args...);
}

#define PIPECODEC_SHARED(T, name) \
  ::pipecodec::cuda::detail::shared_type<T>& name = PIPECODEC_EMU_SHARED(::pipecodec::cuda::detail::shared_type<T>, name)

#define PIPECODEC_SHARED_DYNAMIC(T, name) T* name = static_cast<T*>(::pipecodec_emu::dynamic_shared())

#else
#error "the CUDA backend is compiled by nvcc (or, for tests, by the CPU execution in tests/emu)"
#endif

}  // namespace pipecodec::cuda::detail

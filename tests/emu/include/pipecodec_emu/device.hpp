// Device-side language of the emulated build: the CUDA keywords as plain C++, the built-in
// coordinates of the running emulated thread, barriers, warp intrinsics in lockstep, atomics
// and bit intrinsics. Kernels run as cooperative fibers (tests/emu/src/scheduler.cpp): every
// collective blocks its caller until each thread it names has reached it, and is checked.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "types.hpp"

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
// Shared memory is declared through PIPECODEC_SHARED (pipecodec/cuda/detail/portable.cuh),
// which maps each declaration to its block's storage; a bare __shared__ does not compile.
#define __shared__ pipecodec_emu_declare_shared_memory_with_PIPECODEC_SHARED
#define __constant__ pipecodec_emu_constant_memory_is_not_emulated
constexpr int warpSize = 32;

namespace pipecodec_emu::detail {

// Coordinates of the calling emulated thread. Constant for the thread's lifetime, and read
// through the (uninstrumented) runtime rather than a thread-local variable, which the host
// threads that run blocks would share with ThreadSanitizer's view of their TLS.
struct coords {
  uint3 thread, block, block_dim, grid_dim;
};
__attribute__((const)) const coords& current_coords();

enum class collective : uint8_t { shfl, shfl_up, shfl_down, shfl_xor, ballot, any, all, syncwarp };

// Blocks the calling thread until every lane of `mask` has reached the same intrinsic (same
// kind and source line); returns this lane's result. `value` holds up to 64 bits of the
// operand, `param` the source lane, delta or lane mask.
uint64_t warp_collective(collective kind, uint32_t mask, uint64_t value, int param, int width, const char* file,
                         int line);
void syncthreads(const char* file, int line);
void* dynamic_shared();

template <class T>
uint64_t to_bits(T v) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>, "warp intrinsics move 32- or 64-bit values");
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  return b;
}
template <class T>
T from_bits(uint64_t b) {
  T v;
  std::memcpy(&v, &b, sizeof(T));
  return v;
}

}  // namespace pipecodec_emu::detail

#define threadIdx (::pipecodec_emu::detail::current_coords().thread)
#define blockIdx (::pipecodec_emu::detail::current_coords().block)
#define blockDim (::pipecodec_emu::detail::current_coords().block_dim)
#define gridDim (::pipecodec_emu::detail::current_coords().grid_dim)

inline void __syncthreads(const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  ::pipecodec_emu::detail::syncthreads(file, line);
}
inline void __syncwarp(unsigned mask = 0xFFFFFFFFu, const char* file = __builtin_FILE(),
                       int line = __builtin_LINE()) {
  (void)::pipecodec_emu::detail::warp_collective(::pipecodec_emu::detail::collective::syncwarp, mask, 0, 0, 32,
                                                 file, line);
}

template <class T>
T __shfl_sync(unsigned mask, T var, int src_lane, int width = warpSize, const char* file = __builtin_FILE(),
              int line = __builtin_LINE()) {
  using namespace ::pipecodec_emu::detail;
  return from_bits<T>(warp_collective(collective::shfl, mask, to_bits(var), src_lane, width, file, line));
}
template <class T>
T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = warpSize, const char* file = __builtin_FILE(),
                 int line = __builtin_LINE()) {
  using namespace ::pipecodec_emu::detail;
  return from_bits<T>(warp_collective(collective::shfl_up, mask, to_bits(var), int(delta), width, file, line));
}
template <class T>
T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize, const char* file = __builtin_FILE(),
                   int line = __builtin_LINE()) {
  using namespace ::pipecodec_emu::detail;
  return from_bits<T>(warp_collective(collective::shfl_down, mask, to_bits(var), int(delta), width, file, line));
}
template <class T>
T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = warpSize, const char* file = __builtin_FILE(),
                  int line = __builtin_LINE()) {
  using namespace ::pipecodec_emu::detail;
  return from_bits<T>(warp_collective(collective::shfl_xor, mask, to_bits(var), lane_mask, width, file, line));
}
inline unsigned __ballot_sync(unsigned mask, int pred, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  using namespace ::pipecodec_emu::detail;
  return unsigned(warp_collective(collective::ballot, mask, pred != 0, 0, 32, file, line));
}
inline int __any_sync(unsigned mask, int pred, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  using namespace ::pipecodec_emu::detail;
  return int(warp_collective(collective::any, mask, pred != 0, 0, 32, file, line));
}
inline int __all_sync(unsigned mask, int pred, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  using namespace ::pipecodec_emu::detail;
  return int(warp_collective(collective::all, mask, pred != 0, 0, 32, file, line));
}

// Atomics: relaxed, as CUDA's (no ordering beyond the location itself).
template <class T>
T atomicAdd(T* p, T v) {
  if constexpr (std::is_floating_point_v<T>) {
    T old = __atomic_load_n(p, __ATOMIC_RELAXED);
    T sum = old + v;
    while (!__atomic_compare_exchange(p, &old, &sum, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) sum = old + v;
    return old;
  } else {
    return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
  }
}
template <class T>
T atomicSub(T* p, T v) {
  return __atomic_fetch_sub(p, v, __ATOMIC_RELAXED);
}
template <class T>
T atomicExch(T* p, T v) {
  T old;
  __atomic_exchange(p, &v, &old, __ATOMIC_RELAXED);
  return old;
}
template <class T>
T atomicOr(T* p, T v) {
  return __atomic_fetch_or(p, v, __ATOMIC_RELAXED);
}
template <class T>
T atomicAnd(T* p, T v) {
  return __atomic_fetch_and(p, v, __ATOMIC_RELAXED);
}
template <class T>
T atomicXor(T* p, T v) {
  return __atomic_fetch_xor(p, v, __ATOMIC_RELAXED);
}
template <class T>
T atomicMax(T* p, T v) {
  T old = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (old < v && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  return old;
}
template <class T>
T atomicMin(T* p, T v) {
  T old = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (v < old && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  return old;
}
template <class T>
T atomicCAS(T* p, T expected, T desired) {
  __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return expected;
}
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(unsigned(x)); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
inline unsigned __brev(unsigned x) {
  x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
  x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
  x = ((x >> 4) & 0x0F0F0F0Fu) | ((x & 0x0F0F0F0Fu) << 4);
  x = ((x >> 8) & 0x00FF00FFu) | ((x & 0x00FF00FFu) << 8);
  return (x >> 16) | (x << 16);
}
inline unsigned __float_as_uint(float x) { return ::pipecodec_emu::detail::from_bits<unsigned>(::pipecodec_emu::detail::to_bits(x)); }
inline float __uint_as_float(unsigned x) { return ::pipecodec_emu::detail::from_bits<float>(x); }
inline int __float_as_int(float x) { return int(__float_as_uint(x)); }
inline float __int_as_float(int x) { return __uint_as_float(unsigned(x)); }

// Correctly rounded arithmetic: host IEEE operations (what the emulation cannot check is the
// device's own floating point; docs/CUDA.md).
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __ddiv_rn(double a, double b) { return a / b; }
inline double __dsqrt_rn(double a) { return __builtin_sqrt(a); }

// What the emulated cub::BlockReduce and cub::BlockScan share: the block's shape (checked
// against the launch: CUB assumes the template's thread count), warp masks, and shuffles of
// any trivially copyable T in 32-bit words, as CUB moves them.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>

namespace pipecodec_emu::detail {
[[noreturn]] void fault(const char* what, const char* file, int line, const char* detail);
}

namespace cub::detail {

struct sum {
  template <class T>
  __device__ T operator()(const T& a, const T& b) const {
    return a + b;
  }
};

template <int Threads>
struct block_shape {
  static constexpr int warps = (Threads + 31) / 32;
  static int linear_tid(const char* who) {
    if (int(blockDim.x * blockDim.y * blockDim.z) != Threads) {
      char why[96];
      std::snprintf(why, sizeof why, "instantiated for %d threads, launched with %u", Threads,
                    blockDim.x * blockDim.y * blockDim.z);
      ::pipecodec_emu::detail::fault(who, __FILE__, __LINE__, why);
    }
    return int(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
  }
  static int lanes(int warp) { return warp + 1 < warps || Threads % 32 == 0 ? 32 : Threads % 32; }
  static unsigned warp_mask(int warp) { return lanes(warp) == 32 ? 0xFFFFFFFFu : (1u << lanes(warp)) - 1u; }
};

template <class T, class Shuffle>
__device__ T shuffle_words(T v, Shuffle word_shuffle) {
  constexpr size_t words = (sizeof(T) + 3) / 4;
  unsigned w[words] = {};
  std::memcpy(w, &v, sizeof(T));
  for (size_t i = 0; i < words; ++i) w[i] = word_shuffle(w[i]);
  std::memcpy(&v, w, sizeof(T));
  return v;
}
template <class T>
__device__ T shfl_up(unsigned mask, T v, int d) {
  return shuffle_words(v, [&](unsigned x) { return __shfl_up_sync(mask, x, unsigned(d)); });
}
template <class T>
__device__ T shfl_down(unsigned mask, T v, int d) {
  return shuffle_words(v, [&](unsigned x) { return __shfl_down_sync(mask, x, unsigned(d)); });
}

}  // namespace cub::detail

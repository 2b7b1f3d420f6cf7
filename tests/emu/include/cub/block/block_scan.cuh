// cub::BlockScan (the prefix sums pipecodec uses) for the emulated build, with CUB's
// contract: every thread calls it, and the TempStorage may be reused only after a
// __syncthreads. Warp scans by emulated shuffles, warp totals through TempStorage.
#pragma once

#include "../detail/block_common.cuh"

namespace cub {

enum BlockScanAlgorithm { BLOCK_SCAN_RAKING, BLOCK_SCAN_RAKING_MEMOIZE, BLOCK_SCAN_WARP_SCANS };

template <class T, int BLOCK_DIM_X, BlockScanAlgorithm ALGORITHM = BLOCK_SCAN_RAKING, int BLOCK_DIM_Y = 1,
          int BLOCK_DIM_Z = 1, int LEGACY_PTX_ARCH = 0>
class BlockScan {
  using shape = detail::block_shape<BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z>;
  struct storage {
    T warp_total[shape::warps];
  };

 public:
  struct TempStorage {
    alignas(storage) unsigned char bytes[sizeof(storage)];  // uninitialised, as CUB's
  };

  __device__ explicit BlockScan(TempStorage& temp)
      : s_(*reinterpret_cast<storage*>(temp.bytes)), tid_(shape::linear_tid("cub::BlockScan")) {}

  __device__ void ExclusiveSum(T input, T& output) {
    T total;
    ExclusiveSum(input, output, total);
  }

  // output: the sum of the inputs of the threads before this one; total: of all threads.
  __device__ void ExclusiveSum(T input, T& output, T& block_aggregate) {
    const int lane = tid_ % 32, warp = tid_ / 32;
    const unsigned mask = shape::warp_mask(warp);
    T inclusive = input;
    for (int d = 1; d < 32; d <<= 1) {
      const T below = detail::shfl_up(mask, inclusive, d);
      if (lane >= d) inclusive = inclusive + below;
    }
    T exclusive = detail::shfl_up(mask, inclusive, 1);
    if (lane == 0) exclusive = T();
    if (lane == shape::lanes(warp) - 1) s_.warp_total[warp] = inclusive;
    __syncthreads();
    T before = T(), total = T();
    for (int w = 0; w < shape::warps; ++w) {
      if (w < warp) before = before + s_.warp_total[w];
      total = total + s_.warp_total[w];
    }
    output = before + exclusive;
    block_aggregate = total;
  }

  // Each thread's N consecutive items, in thread order.
  template <int N>
  __device__ void ExclusiveSum(T (&input)[N], T (&output)[N]) {
    T total;
    ExclusiveSum(input, output, total);
  }
  template <int N>
  __device__ void ExclusiveSum(T (&input)[N], T (&output)[N], T& block_aggregate) {
    T mine = T();
    for (int j = 0; j < N; ++j) mine = mine + input[j];
    T run;
    ExclusiveSum(mine, run, block_aggregate);
    for (int j = 0; j < N; ++j) {
      output[j] = run;
      run = run + input[j];
    }
  }

 private:
  storage& s_;
  int tid_;
};

}  // namespace cub

// cub::BlockReduce for the emulated build, with CUB's interface and contract: every thread of
// the block calls it, the aggregate is valid in thread 0 only, and the TempStorage may be
// reused only after a __syncthreads. Built from the emulated warp shuffles and a barrier, so
// a caller that breaks the contract fails here as it would on a GPU. Reduction order differs
// from CUB's: only exact operators (integer sums, min/max) give CUB's result bit for bit.
#pragma once

#include "../detail/block_common.cuh"

namespace cub {

enum BlockReduceAlgorithm { BLOCK_REDUCE_RAKING_COMMUTATIVE_ONLY, BLOCK_REDUCE_RAKING, BLOCK_REDUCE_WARP_REDUCTIONS };

template <class T, int BLOCK_DIM_X, BlockReduceAlgorithm ALGORITHM = BLOCK_REDUCE_WARP_REDUCTIONS, int BLOCK_DIM_Y = 1,
          int BLOCK_DIM_Z = 1, int LEGACY_PTX_ARCH = 0>
class BlockReduce {
  using shape = detail::block_shape<BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z>;
  struct storage {
    T warp_aggregate[shape::warps];
  };

 public:
  struct TempStorage {
    alignas(storage) unsigned char bytes[sizeof(storage)];  // uninitialised, as CUB's
  };

  __device__ explicit BlockReduce(TempStorage& temp)
      : s_(*reinterpret_cast<storage*>(temp.bytes)), tid_(shape::linear_tid("cub::BlockReduce")) {}

  template <class Op>
  __device__ T Reduce(T input, Op op) {
    const int lane = tid_ % 32, warp = tid_ / 32;
    const unsigned mask = shape::warp_mask(warp);
    for (int d = 16; d > 0; d >>= 1) {
      const T other = detail::shfl_down(mask, input, d);
      if (lane + d < shape::lanes(warp)) input = op(input, other);
    }
    if (lane == 0) s_.warp_aggregate[warp] = input;
    __syncthreads();
    if (tid_ == 0)
      for (int w = 1; w < shape::warps; ++w) input = op(input, s_.warp_aggregate[w]);
    return input;
  }

  __device__ T Sum(T input) { return Reduce(input, detail::sum{}); }

 private:
  storage& s_;
  int tid_;
};

}  // namespace cub

// Device side of quant's Hadamard rotation (core/hadamard.hpp): one block of threads per
// rotation block, its values in shared memory, one butterfly stage after another with a
// barrier between stages, so every value sees the host's additions in the host's order.
#pragma once

#include "../../core/dispatch.hpp"
#include "../../core/hadamard.hpp"
#include "../../core/quant_format.hpp"
#include "launch.cuh"
#include "quant_decode.cuh"

namespace pipecodec::cuda::detail {

// In-place H of the B = 2^log2 values in shared memory, by the whole thread block. Ends
// with a barrier, so the caller may read any value.
__device__ __forceinline__ void block_hadamard(float* v, uint32_t log2) {
  const uint32_t half = 1u << (log2 - 1);
  __syncthreads();
  for (uint32_t h = 1; h <= half; h *= 2) {
    for (uint32_t t = threadIdx.x; t < half; t += blockDim.x) butterfly(v, butterfly_low(t, h), h);
    __syncthreads();
  }
}

// y = rotation of src (its values as the encoder reads them), fp32. Dynamic shared memory:
// 4 << R.log2 bytes.
template <class Src>
__global__ void __launch_bounds__(block_threads) rotate_kernel(Src src, rotation_layout R, uint64_t seed, float* y) {
  PIPECODEC_SHARED_DYNAMIC(float, v);
  const float factor = rotation_factor(R.log2, false), limit = rotated_limit(R.log2);
  for (uint64_t b = blockIdx.x; b < R.blocks(); b += gridDim.x) {
    const uint64_t begin = R.block_begin(b), c0 = R.first_column(b);
    for (uint32_t k = threadIdx.x; k < R.block; k += blockDim.x) v[k] = flip_sign(src(begin + k), sign_bit(seed, c0 + k));
    block_hadamard(v, R.log2);
    for (uint32_t k = threadIdx.x; k < R.block; k += blockDim.x)
      y[begin + k] = saturate_rotated(mul_rn(v[k], factor), limit);
    __syncthreads();  // v is refilled next
  }
  for (uint64_t t = global_thread(); t < R.rows * R.tail; t += thread_count()) {
    const uint64_t i = R.tail_begin(t / R.tail) + t % R.tail;
    y[i] = saturate_rotated(src(i), limit);
  }
}

// Element i of a validated quant payload as decoded before the inverse rotation. The width
// is a run-time loop bound: one instantiation serves every width (compile time).
__device__ __forceinline__ float quant_value_at(const quant_payload& qp, uint64_t i) {
  const quant_layout& L = qp.layout;
  const uint64_t g = i / L.group_len, o = i - g * L.group_len;
  const uint8_t* planes = qp.bytes + L.codes_offset + (L.group_chunk(g) + o / 32) * L.bits * 4;
  const uint32_t lane = uint32_t(o % 32);
  uint32_t code = 0;
  for (uint32_t j = 0; j < L.bits; ++j) code |= ((get_u32(planes + 4 * j) >> lane) & 1u) << j;
  float scale, offset;
  load_group(qp, g, scale, offset);
  return dequantize(code, scale, offset, consts_for(L.bits, qp.q.scale).zero);
}

// Hands every element of a validated rotated payload, rotated back, to emit(i, value).
// `v`: shared memory for 2^qp.q.rotate_log2 floats.
template <class Emit>
__device__ void decode_rotated_blocks(const quant_payload& qp, float* v, const Emit& emit) {
  const rotation_layout R = make_rotation_layout(qp.q.rotate_log2, qp.hdr.shp);
  const float factor = rotation_factor(R.log2, true);
  for (uint64_t b = blockIdx.x; b < R.blocks(); b += gridDim.x) {
    const uint64_t begin = R.block_begin(b), c0 = R.first_column(b);
    for (uint32_t k = threadIdx.x; k < R.block; k += blockDim.x) v[k] = quant_value_at(qp, begin + k);
    block_hadamard(v, R.log2);
    for (uint32_t k = threadIdx.x; k < R.block; k += blockDim.x)
      emit(begin + k, flip_sign(mul_rn(v[k], factor), sign_bit(qp.seed, c0 + k)));
    __syncthreads();
  }
  for (uint64_t t = global_thread(); t < R.rows * R.tail; t += thread_count()) {
    const uint64_t i = R.tail_begin(t / R.tail) + t % R.tail;
    emit(i, quant_value_at(qp, i));
  }
}

// Shared memory of a decoder that may meet a rotated payload: one block of the largest size.
// 16 KiB per block of 256 threads costs no occupancy from sm_75 on.
using rotation_buffer = float[1u << max_rotate_log2];

// Hands every element of a validated quant payload to emit(i, value), rotated back where the
// payload is rotated. Called by all threads of the block (the rotated path has barriers).
template <class Emit>
__device__ void decode_quant_elements(const quant_payload& qp, float* buffer, const Emit& emit) {
  if (qp.q.rotate != rotation::none) return decode_rotated_blocks(qp, buffer, emit);
  (void)dispatch_bits(qp.q.bits, [&](auto bc) {
    decode_quant_warps<decltype(bc)::value>(qp, emit);
    return status::success;
  });
}

// The state update of a fused step after a rotated or outlier-keeping encode:
// sink(i, src(i), decoded value). Dynamic shared memory: rotated payloads only.
template <class Src, class Sink>
__global__ void __launch_bounds__(block_threads) decoded_sink_kernel(quant_payload qp, Src src, Sink sink) {
  PIPECODEC_SHARED_DYNAMIC(float, v);
  decode_quant_elements(qp, v, [&](uint64_t i, float d) { sink(i, src(i), d); });
}

}  // namespace pipecodec::cuda::detail

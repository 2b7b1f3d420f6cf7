// CUDA backend of the lowrank codec, host side: argument checks in the host backend's order,
// then four kernels (detail/lowrank_kernels.cuh) on the caller's stream.
#pragma once

#include "../core/dispatch.hpp"
#include "../core/buffers.hpp"
#include "detail/lowrank_kernels.cuh"

namespace pipecodec::cuda::detail {

// `warm`: cols x rank device floats of the previous Q, or null for a cold start.
inline status encode_lowrank(const lowrank_params& l, const_tensor_view in, const float* warm, void* payload,
                             size_t capacity, void* workspace, size_t workspace_size, uint64_t seed,
                             cudaStream_t stream, size_t* written) {
  if (!valid_lowrank_params(l)) return status::invalid_spec;
  lowrank_layout L;
  if (!make_lowrank_layout(l, in.shp, L)) return status::size_overflow;
  if (payload == nullptr || (in.data == nullptr && L.n > 0)) return status::invalid_argument;
  if (capacity < L.total) return status::buffer_too_small;
  const uint64_t in_bytes = L.n * dtype_bytes(in.type);
  if (pipecodec::detail::overlaps(in.data, in_bytes, payload, L.total)) return status::aliasing;
  const lowrank_workspace W = make_lowrank_workspace(L);
  if (workspace_size < workspace_request(W.used)) return status::workspace_too_small;
  if (workspace == nullptr) return status::invalid_argument;
  if (pipecodec::detail::overlaps(workspace, workspace_size, payload, L.total) ||
      pipecodec::detail::overlaps(workspace, workspace_size, in.data, in_bytes))
    return status::aliasing;
  if (!element_aligned(in.data, in.type)) return status::misaligned;
  device_grid dg;
  if (const status st = current_device(dg); !ok(st)) return st;
  header h;
  h.codec = codec_id::lowrank;
  h.type = in.type;
  h.shp = in.shp;
  h.total_bytes = L.total;
  write_lowrank_params(h.params, l, seed);
  uint8_t* ws = align_workspace(workspace);
  float* q0 = reinterpret_cast<float*>(ws + W.q0_offset);
  double* pd = reinterpret_cast<double*>(ws + W.pd_offset);
  uint8_t* p = static_cast<uint8_t*>(payload);
  launch<lowrank_q0_kernel<lowrank_block>>(1, lowrank_block, 0, stream, L, h, warm, seed, q0, p);
  const status st = dispatch_dtype(in.type, [&](auto tc) {
    constexpr dtype T = decltype(tc)::value;
    launch_over<lowrank_rows_kernel<T>>(L.rows, block_warps, dg, block_threads, 0, stream, in.data, L, q0, pd);
    launch<lowrank_orthonormalize_kernel<lowrank_block>>(1, lowrank_block, 0, stream, L, pd, p);
    launch_over<lowrank_cols_kernel<T>>(ceil_div(L.cols, 32), 1, dg, dim3(32, lowrank_col_rows), 0, stream, in.data,
                                        L, p);
    return last_launch_status();
  });
  if (ok(st) && written) *written = size_t(L.total);
  return st;
}

}  // namespace pipecodec::cuda::detail

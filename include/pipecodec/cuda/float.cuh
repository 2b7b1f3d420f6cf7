// CUDA backend of the fp8 and mx codecs, host side: argument checks in the host backend's
// order, then three kernels (detail/float_kernels.cuh) on the caller's stream.
#pragma once

#include "../core/dispatch.hpp"
#include "../core/buffers.hpp"
#include "detail/float_kernels.cuh"

namespace pipecodec::cuda::detail {

inline status encode_float(codec_id c, const float_params& f, const_tensor_view in, void* payload, size_t capacity,
                           void* workspace, size_t workspace_size, const randomness& rnd, cudaStream_t stream,
                           size_t* written) {
  if (!valid_float_params(c, f)) return status::invalid_spec;
  float_layout L;
  if (!make_float_layout(c, f, in.shp, L)) return status::size_overflow;
  if (payload == nullptr || (in.data == nullptr && L.n > 0)) return status::invalid_argument;
  if (capacity < L.total) return status::buffer_too_small;
  const float_workspace W = make_float_workspace(L.groups);
  if (workspace_size < workspace_request(W.used)) return status::workspace_too_small;
  if (workspace == nullptr) return status::invalid_argument;
  if (!element_aligned(in.data, in.type)) return status::misaligned;
  if (pipecodec::detail::overlaps(in.data, L.n * dtype_bytes(in.type), payload, L.total)) return status::aliasing;
  if (const status st = check_float_sample_keyed(c, f, rnd, in.shp, L); !ok(st)) return st;
  device_grid dg;
  if (const status st = current_device(dg); !ok(st)) return st;
  header h;
  h.codec = c;
  h.type = in.type;
  h.shp = in.shp;
  h.total_bytes = L.total;
  write_float_params(h.params, c, f, L.group_len, rnd.seed);
  uint8_t* ws = align_workspace(workspace);
  uint32_t* amax = reinterpret_cast<uint32_t*>(ws + W.amax_offset);
  float_scale* scales = reinterpret_cast<float_scale*>(ws + W.scales_offset);
  uint8_t* p = static_cast<uint8_t*>(payload);
  if (L.groups > 0 && cudaMemsetAsync(amax, 0, L.groups * 4, stream) != cudaSuccess) return status::cuda_error;
  const status st = dispatch_dtype(in.type, [&](auto tc) {
    constexpr dtype T = decltype(tc)::value;
    launch_over<float_stats_kernel<T>>(L.groups * float_tiles_per_group(L), block_warps, dg, block_threads, 0, stream,
                                       in.data, c, L, amax);
    launch_over<float_scales_kernel<block_threads>>(L.groups, block_threads, dg, block_threads, 0, stream, c, f, L, h,
                                                    amax, scales, p);
    launch_over<float_encode_kernel<T>>(L.units, block_threads, dg, block_threads, 0, stream, in.data, c, f, L, rnd,
                                        in.shp.cols, scales, p);
    return last_launch_status();
  });
  if (ok(st) && written) *written = size_t(L.total);
  return st;
}

}  // namespace pipecodec::cuda::detail

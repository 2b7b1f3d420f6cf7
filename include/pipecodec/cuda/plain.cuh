// CUDA backend of the plain codec, host side.
#pragma once

#include "../core/dispatch.hpp"
#include "../core/buffers.hpp"
#include "detail/plain_kernels.cuh"

namespace pipecodec::cuda::detail {

// Checks mirror host::detail::encode_plain, then the CUDA-only ones.
inline status encode_plain(const plain_params& pp, const_tensor_view in, void* payload, size_t capacity,
                           void* workspace, size_t workspace_size, cudaStream_t stream, size_t* written) {
  (void)workspace;  // the plain encoder needs none; the size is still checked for uniformity
  plain_layout L;
  if (!valid_dtype(uint8_t(pp.wire))) return status::invalid_spec;
  if (!make_plain_layout(pp, in.shp, L)) return status::size_overflow;
  if (payload == nullptr || (in.data == nullptr && L.n > 0)) return status::invalid_argument;
  if (capacity < L.total) return status::buffer_too_small;
  if (workspace_size < workspace_request(workspace_status_bytes)) return status::workspace_too_small;
  if (!element_aligned(in.data, in.type)) return status::misaligned;
  if (pipecodec::detail::overlaps(in.data, L.n * dtype_bytes(in.type), payload, L.total)) return status::aliasing;
  device_grid dg;
  if (const status st = current_device(dg); !ok(st)) return st;
  header h;
  h.codec = codec_id::plain;
  h.type = in.type;
  h.shp = in.shp;
  h.total_bytes = L.total;
  write_plain_params(h.params, pp);
  const status st = dispatch_dtype(in.type, [&](auto ic) {
    return dispatch_dtype(pp.wire, [&](auto wc) {
      launch_over<plain_encode_kernel<decltype(ic)::value, decltype(wc)::value>>(
          L.n, block_threads, dg, block_threads, 0, stream, in.data, h, L, static_cast<uint8_t*>(payload));
      return last_launch_status();
    });
  });
  if (ok(st) && written) *written = size_t(L.total);
  return st;
}

}  // namespace pipecodec::cuda::detail

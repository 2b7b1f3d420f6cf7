// CUDA backend of TopK / RandK encoding: byte-identical to host::encode for the same input,
// spec and seed. Asynchronous on `stream`: no allocation, no synchronization, no host read of
// device memory. Pointers are device pointers; `payload` must be 16-byte aligned (cudaMalloc
// gives 256); the workspace (workspace_bytes(spec, shape), any alignment) holds the
// selection candidates.
//
// decode_topk<Accumulate> validates the payload on the device (status word at the start of
// the aligned workspace, as cuda::read_status expects) and writes `out` only if it passed.
// Its workspace: at least workspace_request(workspace_status_bytes + align16(n)) bytes, which
// workspace_bytes(spec, shape) of any topk/randk spec provides.
//
// Not yet on the device (status::not_supported, for decode recorded in the status word):
// quantized values, shared-mask payloads. One block selects one unit, so tensor scope runs
// on a single SM (correct, not fast).
//
// Public entry points: cuda::encode (codec topk/randk), cuda::decode_topk and
// cuda::decode_topk_accumulate in cuda/codec.cuh.
#pragma once

#include <cuda_runtime.h>

#include "../core/dispatch.hpp"
#include "../core/sizes.hpp"
#include "../host/overlap.hpp"
#include "detail/topk_decode.cuh"
#include "detail/topk_kernels.cuh"

namespace pipecodec::cuda::detail {

inline status encode_topk(const spec& s, const_tensor_view in, void* payload, size_t capacity, void* workspace,
                          size_t workspace_size, uint64_t seed, cudaStream_t stream, size_t* written = nullptr) {
  topk_desc d;
  status st = resolve_topk(s, in.shp, seed, d);
  if (!ok(st)) return st;
  if (d.shared_mask) return status::invalid_argument;
  if (d.values == value_kind::quant) return status::not_supported;
  topk_layout L;
  if (!make_topk_layout(d, in.shp, L)) return status::invalid_spec;
  const topk_workspace W = make_topk_workspace(d, L);
  if (payload == nullptr || workspace == nullptr || (in.data == nullptr && L.n > 0)) return status::invalid_argument;
  if (capacity < L.total) return status::buffer_too_small;
  if (workspace_size < workspace_request(W.used)) return status::workspace_too_small;
  if (reinterpret_cast<uintptr_t>(payload) % 16 != 0 || reinterpret_cast<uintptr_t>(in.data) % dtype_bytes(in.type) != 0)
    return status::misaligned;
  const uint64_t in_bytes = L.n * dtype_bytes(in.type);
  if (host::detail::overlaps(in.data, in_bytes, payload, L.total) ||
      host::detail::overlaps(workspace, workspace_size, payload, L.total) ||
      host::detail::overlaps(workspace, workspace_size, in.data, in_bytes))
    return status::aliasing;

  header h;
  h.codec = d.codec;
  h.type = in.type;
  h.shp = in.shp;
  h.total_bytes = L.total;
  write_topk_params(h.params, d);
  header_bytes64 hb;
  write_header(hb.b, h);
  uint8_t* p = static_cast<uint8_t*>(payload);
  if (cudaMemsetAsync(p + header_bytes, 0, L.total - header_bytes, stream) != cudaSuccess) return status::cuda_error;
  write_header_kernel<header_bytes><<<1, header_bytes, 0, stream>>>(p, hb);
  if (cudaGetLastError() != cudaSuccess) return status::cuda_error;

  const uintptr_t a = reinterpret_cast<uintptr_t>(workspace);
  uint8_t* ws = static_cast<uint8_t*>(workspace) + (workspace_align - a % workspace_align) % workspace_align;
  topk_encode_args args{d, L, in.data, p, reinterpret_cast<uint32_t*>(ws + W.cand_offset), 1.0F};
  if (d.unbiased && L.k) args.scale = float(ddiv_rn(double(L.unit_len), double(L.k)));
  if (L.units > 0 && L.kept > 0) {
    const uint32_t grid = L.units < 65535 ? uint32_t(L.units) : 65535u;
    st = dispatch_dtype(in.type, [&](auto tc) {
      constexpr dtype T = decltype(tc)::value;
      if (d.codec == codec_id::randk)
        topk_encode_kernel<T, true><<<grid, topk_threads, 0, stream>>>(args);
      else
        topk_encode_kernel<T, false><<<grid, topk_threads, 0, stream>>>(args);
      return cudaGetLastError() == cudaSuccess ? status::success : status::cuda_error;
    });
    if (!ok(st)) return st;
  }
  if (written) *written = size_t(L.total);
  return status::success;
}

// expect: as for decode_any (0: any topk/randk payload).
template <bool Accumulate>
inline status decode_topk(const void* payload, size_t len, tensor_view out, void* workspace, size_t workspace_size,
                          cudaStream_t stream, uint8_t expect = 0) {
  uint64_t n = 0;
  if (payload == nullptr || workspace == nullptr || !valid_dtype(uint8_t(out.type))) return status::invalid_argument;
  if (!out.shp.count(n) || n > max_elements) return status::shape_mismatch;
  if (out.data == nullptr && n > 0) return status::invalid_argument;
  if (workspace_size < workspace_request(workspace_status_bytes + align16(n))) return status::workspace_too_small;
  if (reinterpret_cast<uintptr_t>(out.data) % dtype_bytes(out.type) != 0) return status::misaligned;
  const uint64_t out_bytes = n * dtype_bytes(out.type);
  if (host::detail::overlaps(out.data, out_bytes, payload, len) ||
      host::detail::overlaps(out.data, out_bytes, workspace, workspace_size))
    return status::aliasing;
  const uintptr_t a = reinterpret_cast<uintptr_t>(workspace);
  uint8_t* ws = static_cast<uint8_t*>(workspace) + (workspace_align - a % workspace_align) % workspace_align;
  status* code = reinterpret_cast<status*>(ws);
  if (cudaMemsetAsync(ws, 0, 16, stream) != cudaSuccess) return status::cuda_error;
  const uint32_t grid = out.shp.rows == 0 ? 1u : out.shp.rows < 65535 ? uint32_t(out.shp.rows) : 65535u;
  const uint8_t* p = static_cast<const uint8_t*>(payload);
  topk_validate_kernel<topk_threads><<<grid, topk_threads, 0, stream>>>(p, len, out.shp, code);
  if (cudaGetLastError() != cudaSuccess) return status::cuda_error;
  if (const status st = launch_expect_codec(p, len, expect, code, stream); !ok(st)) return st;
  uint32_t* cand = reinterpret_cast<uint32_t*>(ws + workspace_status_bytes);
  return dispatch_dtype(out.type, [&](auto oc) {
    topk_scatter_kernel<decltype(oc)::value, Accumulate><<<grid, topk_threads, 0, stream>>>(p, len, out.data, code, cand);
    return cudaGetLastError() == cudaSuccess ? status::success : status::cuda_error;
  });
}

}  // namespace pipecodec::cuda::detail

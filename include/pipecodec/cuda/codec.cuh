// CUDA backend entry points, mirroring host/codec.hpp. Pointers are device pointers (the
// payload and tensors may also be managed memory). Every call is asynchronous on `stream`:
// it enqueues kernels and returns; it never allocates, never synchronizes, never reads
// device memory on the host, and can be captured in a CUDA graph.
//
// Workspace: workspace_bytes(spec, shape) bytes of device memory, any alignment, reused
// call after call (one call at a time per workspace: stream-order them).
//
// Status: the returned status covers what the host can check (arguments, spec, sizes,
// capacity, workspace, alignment, launch errors -> status::cuda_error). A decoder also
// validates the payload on the device, with the same checks and statuses as host::decode,
// and records the outcome in the workspace; read it with read_status(). A rejected payload
// leaves the output untouched.
#pragma once

#include "../core/sizes.hpp"
#include "detail/decode.cuh"
#include "float.cuh"
#include "lowrank.cuh"
#include "plain.cuh"
#include "quant.cuh"
#include "topk.cuh"

namespace pipecodec::cuda {

// Encodes the device tensor `in` with spec `s` into the device buffer `payload`
// (capacity >= encoded_bytes(s, in.shp)); `written` (host memory) receives the payload size,
// known on the host before the kernels run. Byte-identical to host::encode. Specs with
// rng=sample need `rnd.sample_ids` in device memory (one per row).
inline status encode(const spec& s, const_tensor_view in, void* payload, size_t capacity, void* workspace,
                     size_t workspace_size, randomness rnd, cudaStream_t stream, size_t* written = nullptr) {
  switch (s.codec) {
    case codec_id::quant:
      return detail::encode_quant(s.quant, in, payload, capacity, workspace, workspace_size, rnd, stream,
                                  written);
    case codec_id::plain:
      return detail::encode_plain(s.plain, in, payload, capacity, workspace, workspace_size, stream, written);
    case codec_id::topk:
    case codec_id::randk:
      return detail::encode_topk(s, in, payload, capacity, workspace, workspace_size, rnd, stream, written);
    case codec_id::fp8:
    case codec_id::mx:
      return detail::encode_float(s.codec, s.flt, in, payload, capacity, workspace, workspace_size, rnd, stream,
                                  written);
    case codec_id::lowrank:
      return detail::encode_lowrank(s.lowrank, in, nullptr, payload, capacity, workspace, workspace_size, rnd.seed,
                                    stream, written);
    default: return status::not_supported;
  }
}

// lowrank with a warm start, as host::lowrank_encode: `q` (device fp32, cols x rank) is Q0
// and becomes this payload's Q (a copy enqueued after the kernels). Byte-identical to the host.
inline status lowrank_encode(const spec& s, const_tensor_view in, tensor_view q, void* payload, size_t capacity,
                             void* workspace, size_t workspace_size, uint64_t seed, cudaStream_t stream,
                             size_t* written = nullptr) {
  if (s.codec != codec_id::lowrank || !valid_lowrank_params(s.lowrank)) return status::invalid_spec;
  if (!valid_dtype(uint8_t(in.type))) return status::invalid_argument;
  const shape want(in.shp.cols, s.lowrank.rank);
  if (q.type != dtype::f32 || q.shp != want) return status::state_mismatch;
  if (q.data == nullptr) return status::invalid_argument;
  if (!detail::element_aligned(q.data, dtype::f32)) return status::misaligned;
  const uint64_t q_bytes = want.size() * 4;
  if (pipecodec::detail::overlaps(q.data, q_bytes, payload, capacity) ||
      pipecodec::detail::overlaps(q.data, q_bytes, in.data, in.shp.size() * dtype_bytes(in.type)) ||
      pipecodec::detail::overlaps(q.data, q_bytes, workspace, workspace_size))
    return status::aliasing;
  size_t len = 0;
  status st = detail::encode_lowrank(s.lowrank, in, static_cast<const float*>(q.data), payload, capacity, workspace,
                                     workspace_size, seed, stream, &len);
  if (!ok(st)) return st;
  detail::lowrank_layout L;
  (void)detail::make_lowrank_layout(s.lowrank, in.shp, L);
  if (q_bytes > 0 && cudaMemcpyAsync(q.data, static_cast<const uint8_t*>(payload) + L.q_offset, size_t(q_bytes),
                                     cudaMemcpyDeviceToDevice, stream) != cudaSuccess)
    return status::cuda_error;
  if (written) *written = len;
  return status::success;
}

namespace detail {
// The device validation of a quant, plain, fp8, mx or lowrank payload of shape `shp` into the status area at
// `area` (the aligned start of a workspace of at least workspace_status_bytes): verdict, and
// the parsed payload when accepted. Kernels that then read the payload run after it.
inline status launch_validation(const void* payload, size_t len, const shape& shp, uint8_t* area,
                                const device_grid& dg, uint8_t expect, cudaStream_t stream) {
  if (cudaMemsetAsync(area, 0, sizeof(status_area), stream) != cudaSuccess) return status::cuda_error;
  // Groups (validation) are at most n.
  launch_over<validate_kernel<block_threads>>(shp.size(), block_threads, dg, block_threads, 0, stream,
                                              static_cast<const uint8_t*>(payload), len, shp, area);
  if (const status st = last_launch_status(); !ok(st)) return st;
  return launch_expect_codec(payload, len, expect, area, stream);
}

// expect: the codec_id the payload must carry (state_mismatch otherwise), 0 for quant or plain.
template <bool Accumulate>
inline status decode_any(const void* payload, size_t len, tensor_view out, void* workspace,
                         size_t workspace_size, cudaStream_t stream, uint8_t expect = 0) {
  uint64_t n = 0;
  if (payload == nullptr || !valid_dtype(uint8_t(out.type))) return status::invalid_argument;
  if (!out.shp.count(n) || n > max_elements) return status::shape_mismatch;
  if (out.data == nullptr && n > 0) return status::invalid_argument;
  if (workspace_size < workspace_request(workspace_status_bytes)) return status::workspace_too_small;
  if (workspace == nullptr) return status::invalid_argument;
  if (!element_aligned(out.data, out.type)) return status::misaligned;
  // The host does not know the payload's declared size: the whole buffer must not overlap.
  if (pipecodec::detail::overlaps(out.data, n * dtype_bytes(out.type), payload, len)) return status::aliasing;
  device_grid dg;
  if (const status st = current_device(dg); !ok(st)) return st;
  uint8_t* area = align_workspace(workspace);
  if (const status st = launch_validation(payload, len, out.shp, area, dg, expect, stream); !ok(st)) return st;
  // Chunks (decoding) are at most n / 32 + groups.
  return dispatch_dtype(out.type, [&](auto oc) {
    launch_over<decode_kernel<decltype(oc)::value, Accumulate>>(n, 32 * block_warps, dg, block_threads, 0, stream,
                                                                out.data, area);
    return last_launch_status();
  });
}
}  // namespace detail

// Decodes a quant, plain, fp8, mx or lowrank payload into `out` (any dtype; the shape must match). TopK and
// RandK payloads have their own calls below: the host cannot read the payload's codec
// without a synchronization, and the caller knows which codec it configured.
inline status decode(const void* payload, size_t len, tensor_view out, void* workspace, size_t workspace_size,
                     cudaStream_t stream) {
  return detail::decode_any<false>(payload, len, out, workspace, workspace_size, stream);
}

// out += decode(payload): the update EF21 and AQ-SGD apply to their state.
inline status decode_accumulate(const void* payload, size_t len, tensor_view out, void* workspace,
                                size_t workspace_size, cudaStream_t stream) {
  return detail::decode_any<true>(payload, len, out, workspace, workspace_size, stream);
}

// Decodes a TopK / RandK payload (dense: zeros elsewhere), validated on the device.
// `codec`: what the caller configured, if it wants it checked (state_mismatch otherwise; the
// default accepts either). Naming codec_id::randk also lets a RandK payload of one large
// tensor or up to 16 long rows re-select its positions on the whole grid rather than on one
// block per unit (the host cannot read the codec byte to decide this itself).
inline status decode_topk(const void* payload, size_t len, tensor_view out, void* workspace,
                          size_t workspace_size, cudaStream_t stream, codec_id codec = codec_id{}) {
  return detail::decode_topk<false>(payload, len, out, workspace, workspace_size, stream, uint8_t(codec));
}

// out += decode_topk(payload), at the kept positions only.
inline status decode_topk_accumulate(const void* payload, size_t len, tensor_view out, void* workspace,
                                     size_t workspace_size, cudaStream_t stream, codec_id codec = codec_id{}) {
  return detail::decode_topk<true>(payload, len, out, workspace, workspace_size, stream, uint8_t(codec));
}

// Shared-mask TopK (spec "topk:...,mask=shared"): encodes the values of `in` at the positions
// of `mask`, a device TopK payload of the same shape, scope and k (host::encode_shared). The
// mask is validated on the device: read_status(workspace) after the stream has run says
// whether it was accepted; a payload encoded against a rejected mask must not be used.
inline status encode_shared(const spec& s, const_tensor_view in, const void* mask, size_t mask_len, void* payload,
                            size_t capacity, void* workspace, size_t workspace_size, uint64_t seed,
                            cudaStream_t stream, size_t* written = nullptr) {
  return detail::encode_shared(s, in, mask, mask_len, payload, capacity, workspace, workspace_size, seed, stream,
                               written);
}

// Decodes a shared-mask payload with the positions of its (device) mask payload, dense.
inline status decode_shared(const void* values, size_t len, const void* mask, size_t mask_len, tensor_view out,
                            void* workspace, size_t workspace_size, cudaStream_t stream) {
  return detail::decode_shared<false>(values, len, mask, mask_len, out, workspace, workspace_size, stream);
}

// out += decode_shared(...), at the kept positions only.
inline status decode_shared_accumulate(const void* values, size_t len, const void* mask, size_t mask_len,
                                       tensor_view out, void* workspace, size_t workspace_size,
                                       cudaStream_t stream) {
  return detail::decode_shared<true>(values, len, mask, mask_len, out, workspace, workspace_size, stream);
}

// Enqueues a copy of the device-side status of the last decode on `workspace` into
// *host_out (pinned host memory for a truly asynchronous copy; pageable works but blocks).
// The value is valid once `stream` has been synchronized.
inline status read_status(const void* workspace, status* host_out, cudaStream_t stream) {
  if (workspace == nullptr || host_out == nullptr) return status::invalid_argument;
  const uint8_t* area = detail::align_workspace(const_cast<void*>(workspace));
  return cudaMemcpyAsync(host_out, area, sizeof(status), cudaMemcpyDeviceToHost, stream) == cudaSuccess
             ? status::success
             : status::cuda_error;
}

}  // namespace pipecodec::cuda

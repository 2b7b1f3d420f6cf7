// EF21 / delta state on the device, byte-identical to host/ef21.hpp, so a host sender may
// feed a CUDA receiver and the other way round with g equal bit for bit on both sides:
//   sender:   payload = C(x - g);  g += D(payload)
//   receiver: g += D(payload);     the receiver's tensor is g
// Sender with quantization: one pass per group reads x and g, writes the payload and the new
// g. Other codecs: x - g into an fp32 scratch, cuda::encode, then the accumulate-decode.
// Receiver: the payload is validated on the device (its codec included: state_mismatch for
// another one, as on the host), then the accumulate-decode adds it to g; a rejected payload
// leaves g and `out` untouched. The outcome is read with cuda::read_status(workspace).
#pragma once

#include "ef.cuh"

namespace pipecodec::cuda {

inline size_t ef21_workspace_bytes(const spec& s, const shape& shp) { return ef_workspace_bytes(s, shp); }

// Sender step; g (device, x's shape, any dtype) starts at zero.
inline status ef21_encode(const spec& s, const_tensor_view x, tensor_view g, void* payload, size_t capacity,
                          void* workspace, size_t workspace_size, randomness rnd, cudaStream_t stream,
                          size_t* written = nullptr) {
  using namespace detail;
  state_ws ws;
  const status st = check_state_step(s, x, g, payload, capacity, workspace, workspace_size, ws);
  if (!ok(st)) return st;
  const dyn_tensor gt = dyn(g.data, g.type);
  return state_encode<true>(s, x, diff_source{dyn(x.data, x.type), gt}, accumulate_sink{gt}, g, payload, capacity,
                            ws, rnd, stream, written);
}

// Receiver step for a payload of codec `expected`. If `out` has data it receives g converted
// to out's dtype (same shape). Workspace: workspace_bytes(spec, g's shape).
inline status ef21_decode(codec_id expected, const void* payload, size_t len, tensor_view g, tensor_view out,
                          void* workspace, size_t workspace_size, cudaStream_t stream) {
  using namespace detail;
  if (out.data != nullptr && out.shp != g.shp) return status::shape_mismatch;
  if (out.data != nullptr && !valid_dtype(uint8_t(out.type))) return status::not_supported;
  if (!element_aligned(g.data, g.type) || (out.data != nullptr && !element_aligned(out.data, out.type)))
    return status::misaligned;
  const uint64_t n = g.shp.size();
  if (pipecodec::detail::any_written_overlap({{payload, len, false},
                                         {g.data, n * dtype_bytes(g.type), true},
                                         {out.data, n * dtype_bytes(out.type), true},
                                         {workspace, workspace_size, true}}))
    return status::aliasing;  // as host::ef21_decode
  status st = decode_codec<true>(expected, payload, len, g, workspace, workspace_size, stream, uint8_t(expected));
  if (!ok(st) || out.data == nullptr) return st;
  status_guard guard;
  guard.s[0] = status_word(workspace);
  return for_each(g.shp.size(), convert_op{dyn(g.data, g.type), dyn(out.data, out.type)}, stream, guard);
}

}  // namespace pipecodec::cuda

// Classic error feedback on the device, byte-identical to host::ef_encode (host/ef.hpp):
//   v = x + e;  payload = C(v);  e = v - D(payload)
// With a quantization codec the whole step is one pass per group: each warp reads x and e,
// forms v in registers, writes the payload and the new e (detail/quant_encode.cuh with the
// sum source and residual sink). Other codecs take three passes: v into an fp32 scratch,
// the ordinary cuda::encode, a validated decode into the scratch, then e = v - d.
// Asynchronous on `stream`; no allocation, no synchronization. Workspace: ef_workspace_bytes
// (device memory, any alignment). On an error returned by the call the residual is untouched.
#pragma once

#include "../core/buffers.hpp"
#include "detail/state_kernels.cuh"

namespace pipecodec::cuda {

inline size_t ef_workspace_bytes(const spec& s, const shape& shp) {
  return detail::state_ws_bytes(shp.size(), workspace_bytes(s, shp));
}

namespace detail {

// Checks shared by the EF and EF21 senders (x and the state tensor `st`, both device memory).
inline status check_state_step(const spec& s, const_tensor_view x, tensor_view st, const void* payload,
                               size_t capacity, void* workspace, size_t workspace_size, state_ws& ws) {
  uint64_t n = 0;
  if (!x.shp.count(n) || n > max_elements) return status::invalid_shape;
  if (st.shp != x.shp) return status::state_mismatch;
  if ((x.data == nullptr || st.data == nullptr) && n > 0) return status::invalid_argument;
  if (!valid_dtype(uint8_t(x.type)) || !valid_dtype(uint8_t(st.type))) return status::not_supported;
  const status r = split_state_ws(workspace, workspace_size, n, workspace_bytes(s, x.shp), ws);
  if (!ok(r)) return r;
  if (!element_aligned(x.data, x.type) || !element_aligned(st.data, st.type)) return status::misaligned;
  // As host::detail::check_tensor_step: x is read after the workspace scratch is written.
  if (pipecodec::detail::any_written_overlap({{x.data, n * dtype_bytes(x.type), false},
                                         {st.data, n * dtype_bytes(st.type), true},
                                         {payload, capacity, true},
                                         {workspace, workspace_size, true}}))
    return status::aliasing;
  return status::success;
}

// One sender step of a scheme given by its source (value encoded) and sink (state update):
// fused for quantization, otherwise materialize -> encode -> decode -> apply.
template <bool AccumulateDecode, class Src, class Sink>
inline status state_encode(const spec& s, const_tensor_view x, Src src, Sink sink, tensor_view acc, void* payload,
                           size_t capacity, const state_ws& ws, const randomness& rnd, cudaStream_t stream,
                           size_t* written, tensor_view lowrank_q = {}) {
  const shape shp = x.shp;
  const uint64_t n = shp.size();
  if (s.codec == codec_id::quant) {
    quant_plan P;
    status st = plan_quant(s.quant, shp, x.data, payload, capacity, ws.codec, ws.codec_bytes, P);
    if (ok(st)) st = check_sample_keyed(s.quant.rng, rnd, shp, P.L.group_len);
    if (ok(st)) st = launch_quant(src, sink, s.quant, P, dtype::f32, shp, payload, ws.codec, rnd, stream);
    if (ok(st) && written) *written = size_t(P.L.total);
    return st;
  }
  status st = for_each(n, materialize<Src>{src, ws.f32}, stream);
  size_t len = 0;
  if (ok(st))
    st = encode_f32(s, ws.f32, shp, payload, capacity, ws.codec, ws.codec_bytes, rnd, stream, &len, lowrank_q);
  if (!ok(st)) return st;
  if constexpr (AccumulateDecode) {
    // The state itself is the decoder's output: state += D(payload).
    st = decode_codec<true>(s.codec, payload, len, acc, ws.codec, ws.codec_bytes, stream);
  } else {
    st = decode_codec<false>(s.codec, payload, len, tensor_view{ws.f32, dtype::f32, shp}, ws.codec,
                             ws.codec_bytes, stream);
    status_guard g;
    g.s[0] = status_word(ws.codec);
    if (ok(st)) st = for_each(n, apply_decoded<Src, Sink>{src, sink, ws.f32}, stream, g);
  }
  if (ok(st) && written) *written = len;
  return st;
}

}  // namespace detail

// Encodes the device tensor x with error feedback; `residual` (device, x's shape, any dtype,
// zero at the start) is read and updated; with lowrank, `lowrank_q` (device, fp32,
// lowrank_state_shape, zero at the start) is the warm-start Q, as host::ef_encode takes it.
// The payload describes an fp32 tensor of x's shape.
inline status ef_encode(const spec& s, const_tensor_view x, tensor_view residual, tensor_view lowrank_q, void* payload,
                        size_t capacity, void* workspace, size_t workspace_size, randomness rnd, cudaStream_t stream,
                        size_t* written = nullptr) {
  using namespace detail;
  state_ws ws;
  const status st = check_state_step(s, x, residual, payload, capacity, workspace, workspace_size, ws);
  if (!ok(st)) return st;
  const dyn_tensor e = dyn(residual.data, residual.type);
  return state_encode<false>(s, x, sum_source{dyn(x.data, x.type), e}, residual_sink{e}, residual, payload, capacity,
                             ws, rnd, stream, written, lowrank_q);
}

inline status ef_encode(const spec& s, const_tensor_view x, tensor_view residual, void* payload, size_t capacity,
                        void* workspace, size_t workspace_size, randomness rnd, cudaStream_t stream,
                        size_t* written = nullptr) {
  return ef_encode(s, x, residual, tensor_view{}, payload, capacity, workspace, workspace_size, rnd, stream, written);
}

}  // namespace pipecodec::cuda

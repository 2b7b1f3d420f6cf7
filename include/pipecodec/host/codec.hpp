// Host backend entry points: encode a tensor into a payload, decode a payload into a
// tensor (or add it to one). Pure functions of their arguments; no allocation.
#pragma once

#include "../core/sizes.hpp"
#include "float.hpp"
#include "lowrank.hpp"
#include "plain.hpp"
#include "quant.hpp"
#include "topk.hpp"

namespace pipecodec::host {

// The workspace host::encode of `s` uses: TopK, RandK, lowrank and quantization with rotation
// take workspace_bytes() (a figure sized for the CUDA backend, which needs one for every
// codec); the other codecs take none (0).
inline size_t encode_workspace_bytes(const spec& s, const shape& shp) {
  const bool uses = s.codec == codec_id::topk || s.codec == codec_id::randk || s.codec == codec_id::lowrank ||
                    (s.codec == codec_id::quant && s.quant.rotate != rotation::none);
  return uses ? workspace_bytes(s, shp) : 0;
}

// Encodes `in` with spec `s` into `payload` (capacity >= encoded_bytes(s, in.shp)).
// `rnd.seed` drives stochastic rounding, RandK and lowrank's Q0 (a cold start: lowrank_encode
// warm-starts); specs with rng=sample also need `rnd.sample_ids`, one per row (a seed alone
// converts to `randomness`); `written` receives the payload size.
inline status encode(const spec& s, const_tensor_view in, void* payload, size_t capacity,
                     void* workspace = nullptr, size_t workspace_size = 0, randomness rnd = {},
                     size_t* written = nullptr) {
  // Host plain, fp8, mx and quantization without rotation need no workspace (workspace_bytes()
  // is sized for the CUDA backend); rotation, TopK, RandK and lowrank check theirs.
  if (!valid_dtype(uint8_t(in.type))) return status::invalid_argument;
  switch (s.codec) {
    case codec_id::quant:
      return detail::encode_quant(s.quant, in, payload, capacity, workspace, workspace_size, rnd, written);
    case codec_id::plain: return detail::encode_plain(s.plain, in, payload, capacity, written);
    case codec_id::topk:
    case codec_id::randk:
      return detail::encode_topk(s, in, payload, capacity, workspace, workspace_size, rnd, written);
    case codec_id::fp8:
    case codec_id::mx: return detail::encode_float(s.codec, s.flt, in, payload, capacity, rnd, written);
    case codec_id::lowrank:
      return detail::encode_lowrank(s.lowrank, in, nullptr, payload, capacity, workspace, workspace_size, rnd.seed,
                                    written);
  }
  return status::not_supported;
}

// lowrank with a warm start, as PowerSGD runs it: Q0 is `q` (fp32, cols x rank, with cols the
// tensor's last dimension; a column that is all zero is drawn from `seed`, so a zeroed `q`
// starts cold), and on success `q` becomes this payload's Q. On any error `q` is untouched.
inline status lowrank_encode(const spec& s, const_tensor_view in, tensor_view q, void* payload, size_t capacity,
                             void* workspace, size_t workspace_size, uint64_t seed = 0, size_t* written = nullptr) {
  if (s.codec != codec_id::lowrank || !valid_lowrank_params(s.lowrank)) return status::invalid_spec;
  if (!valid_dtype(uint8_t(in.type))) return status::invalid_argument;
  const shape want(in.shp.cols, s.lowrank.rank);
  if (q.type != dtype::f32 || q.shp != want) return status::state_mismatch;
  if (q.data == nullptr) return status::invalid_argument;
  if (reinterpret_cast<uintptr_t>(q.data) % alignof(float) != 0) return status::misaligned;
  const uint64_t q_bytes = want.size() * 4;
  if (detail::overlaps(q.data, q_bytes, payload, capacity) ||
      detail::overlaps(q.data, q_bytes, in.data, in.shp.size() * dtype_bytes(in.type)) ||
      detail::overlaps(q.data, q_bytes, workspace, workspace_size))
    return status::aliasing;
  size_t len = 0;
  const status st = detail::encode_lowrank(s.lowrank, in, static_cast<const float*>(q.data), payload, capacity,
                                           workspace, workspace_size, seed, &len);
  if (!ok(st)) return st;
  detail::lowrank_layout L;
  (void)detail::make_lowrank_layout(s.lowrank, in.shp, L);
  memcpy(q.data, static_cast<const uint8_t*>(payload) + L.q_offset, size_t(q_bytes));
  if (written) *written = len;
  return status::success;
}

namespace detail {
// encode, warm-started when `q` holds lowrank's state (empty view: the stateless encode).
inline status encode_warm(const spec& s, const_tensor_view in, tensor_view q, void* payload, size_t capacity,
                          void* workspace, size_t workspace_size, const randomness& rnd, size_t* written) {
  if (q.data != nullptr && s.codec == codec_id::lowrank)
    return lowrank_encode(s, in, q, payload, capacity, workspace, workspace_size, rnd.seed, written);
  return encode(s, in, payload, capacity, workspace, workspace_size, rnd, written);
}

template <bool Accumulate>
inline status decode_any(const void* payload, size_t len, tensor_view out, void* ws, size_t ws_size) {
  if (!valid_dtype(uint8_t(out.type))) return status::invalid_argument;
  header h;
  const status st = read_header(static_cast<const uint8_t*>(payload), len, h);
  if (!ok(st)) return st;
  switch (h.codec) {
    case codec_id::quant: return decode_quant<Accumulate>(payload, len, out);
    case codec_id::plain: return decode_plain<Accumulate>(payload, len, out);
    case codec_id::topk:
    case codec_id::randk: return decode_topk<Accumulate>(payload, len, out, ws, ws_size);
    case codec_id::fp8:
    case codec_id::mx: return decode_float<Accumulate>(payload, len, out);
    case codec_id::lowrank: return decode_lowrank<Accumulate>(payload, len, out);
  }
  return status::not_supported;
}
}  // namespace detail

// Decodes a payload of any codec into `out` (any dtype; the shape must match). The whole
// payload is validated first: on any error `out` is left untouched. The workspace is
// optional: a RandK decode buffers selection candidates in it (faster), others ignore it.
// A shared-mask payload needs its mask: decode_shared.
inline status decode(const void* payload, size_t len, tensor_view out, void* workspace = nullptr,
                     size_t workspace_size = 0) {
  return detail::decode_any<false>(payload, len, out, workspace, workspace_size);
}

// out += decode(payload): the update EF21 and AQ-SGD apply to their state.
inline status decode_accumulate(const void* payload, size_t len, tensor_view out,
                                void* workspace = nullptr, size_t workspace_size = 0) {
  return detail::decode_any<true>(payload, len, out, workspace, workspace_size);
}

// Shared-mask TopK (spec "topk:...,mask=shared"): encodes the values of `in` at the positions
// of `mask`, an earlier TopK payload of the same shape, scope and k (e.g. the forward
// activations' payload when encoding their gradient). The payload carries values only.
// Both payloads are validated: a mask that is not a TopK payload with positions, or whose
// scope or k differ, gives invalid_argument; a different shape gives shape_mismatch.
inline status encode_shared(const spec& s, const_tensor_view in, const void* mask, size_t mask_len,
                            void* payload, size_t capacity, void* workspace, size_t workspace_size,
                            uint64_t seed = 0, size_t* written = nullptr) {
  return detail::encode_shared(s, in, mask, mask_len, payload, capacity, workspace, workspace_size,
                               seed, written);
}

// Decodes a shared-mask payload with the positions of its mask payload (dense: zeros
// elsewhere). Both payloads are validated before `out` is written.
inline status decode_shared(const void* values, size_t len, const void* mask, size_t mask_len,
                            tensor_view out) {
  return detail::decode_shared<false>(values, len, mask, mask_len, out);
}

// out += decode_shared(...), at the kept positions only.
inline status decode_shared_accumulate(const void* values, size_t len, const void* mask,
                                       size_t mask_len, tensor_view out) {
  return detail::decode_shared<true>(values, len, mask, mask_len, out);
}

}  // namespace pipecodec::host

// Host backend entry points: encode a tensor into a payload, decode a payload into a
// tensor (or add it to one). Pure functions of their arguments; no allocation.
#pragma once

#include "../core/sizes.hpp"
#include "plain.hpp"
#include "quant.hpp"

namespace pipecodec::host {

// Encodes `in` with spec `s` into `payload` (capacity >= encoded_bytes(s, in.shp)).
// `seed` drives stochastic rounding and RandK; `written` receives the payload size.
inline status encode(const spec& s, const_tensor_view in, void* payload, size_t capacity,
                     void* workspace = nullptr, size_t workspace_size = 0, uint64_t seed = 0,
                     size_t* written = nullptr) {
  // workspace_bytes() is sized for the CUDA backend; host quantization and plain need none.
  (void)workspace;
  (void)workspace_size;
  switch (s.codec) {
    case codec_id::quant: return detail::encode_quant(s.quant, in, payload, capacity, seed, written);
    case codec_id::plain: return detail::encode_plain(s.plain, in, payload, capacity, written);
    default: return status::not_supported;
  }
}

namespace detail {
template <bool Accumulate>
inline status decode_any(const void* payload, size_t len, tensor_view out) {
  header h;
  const status st = read_header(static_cast<const uint8_t*>(payload), len, h);
  if (!ok(st)) return st;
  switch (h.codec) {
    case codec_id::quant: return decode_quant<Accumulate>(payload, len, out);
    case codec_id::plain: return decode_plain<Accumulate>(payload, len, out);
    default: return status::not_supported;
  }
}
}  // namespace detail

// Decodes a payload of any codec into `out` (any dtype; the shape must match). The whole
// payload is validated first: on any error `out` is left untouched.
inline status decode(const void* payload, size_t len, tensor_view out, void* workspace = nullptr,
                     size_t workspace_size = 0) {
  (void)workspace;
  (void)workspace_size;
  return detail::decode_any<false>(payload, len, out);
}

// out += decode(payload): the update EF21 and AQ-SGD apply to their state.
inline status decode_accumulate(const void* payload, size_t len, tensor_view out,
                                void* workspace = nullptr, size_t workspace_size = 0) {
  (void)workspace;
  (void)workspace_size;
  return detail::decode_any<true>(payload, len, out);
}

}  // namespace pipecodec::host

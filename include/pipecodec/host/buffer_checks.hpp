// The checks every host encoder and decoder makes on the caller's buffers, in one order, so
// each bad argument gives the same status whichever codec it reaches.
#pragma once

#include "../core/format.hpp"
#include "../core/shape.hpp"
#include "../core/status.hpp"
#include "../core/workspace.hpp"
#include "../core/buffers.hpp"

namespace pipecodec::host::detail {

using namespace pipecodec::detail;

// Encoder side: `in` holds n elements, the payload needs `total` of `capacity` bytes.
inline status check_encode_buffers(const_tensor_view in, uint64_t n, const void* payload, size_t capacity,
                                   uint64_t total) {
  if (payload == nullptr || (in.data == nullptr && n > 0)) return status::invalid_argument;
  if (capacity < total) return status::buffer_too_small;
  if (!element_aligned(in.data, in.type)) return status::misaligned;
  if (overlaps(in.data, n * dtype_bytes(in.type), payload, total)) return status::aliasing;
  return status::success;
}

// An encoder's workspace of `used` bytes (after alignment): big enough, present, and apart
// from the input and the payload of `total` bytes.
inline status check_encode_workspace(const_tensor_view in, const void* payload, uint64_t total, void* workspace,
                                     size_t workspace_size, uint64_t used) {
  if (workspace_size < workspace_request(used)) return status::workspace_too_small;
  if (workspace == nullptr) return status::invalid_argument;
  if (overlaps(workspace, workspace_size, payload, total) ||
      overlaps(workspace, workspace_size, in.data, in.shp.size() * dtype_bytes(in.type)))
    return status::aliasing;
  return status::success;
}

// Decoder side, after the payload parsed: `out` must have its shape and not overlap it.
inline status check_decode_output(const header& h, uint64_t n, tensor_view out, const void* payload) {
  if (h.shp != out.shp) return status::shape_mismatch;
  if (out.data == nullptr && n > 0) return status::invalid_argument;
  if (!element_aligned(out.data, out.type)) return status::misaligned;
  if (overlaps(out.data, n * dtype_bytes(out.type), payload, h.total_bytes)) return status::aliasing;
  return status::success;
}

// Writes the common header of a payload of `total` bytes encoding `in`; `params` fills the
// codec's parameter bytes.
template <class Params>
inline void write_payload_header(uint8_t* p, codec_id codec, const_tensor_view in, uint64_t total, Params&& params) {
  header h;
  h.codec = codec;
  h.type = in.type;
  h.shp = in.shp;
  h.total_bytes = total;
  params(h.params);
  write_header(p, h);
}

// A workspace pointer aligned up as the CUDA backend aligns it (core/workspace.hpp).
inline uint8_t* align16_ptr(void* p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  return static_cast<uint8_t*>(p) + ((pipecodec::detail::workspace_align - a % pipecodec::detail::workspace_align) %
                                     pipecodec::detail::workspace_align);
}

}  // namespace pipecodec::host::detail

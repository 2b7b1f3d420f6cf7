// Pieces shared by the host stateful schemes (ef.hpp, ef21.hpp, aqsgd.hpp). The update rule
// every scheme follows so both sides of a boundary stay bit-identical: a new state element is
// computed in fp32 with one correctly rounded operation (add_rn / sub_rn) and then rounded
// once to the storage dtype (detail::store), exactly what host::decode_accumulate does.
#pragma once

#include "../core/dispatch.hpp"
#include "codec.hpp"
#include "convert_span.hpp"
#include "../core/buffers.hpp"

namespace pipecodec::host::detail {

using namespace pipecodec::detail;

inline bool valid_view(const void* data, uint64_t n) { return data != nullptr || n == 0; }

// Splits a workspace into an fp32 scratch tensor of n elements and the codec's workspace.
struct state_workspace {
  float* f32 = nullptr;
  void* codec = nullptr;
  size_t codec_bytes = 0;
};

inline size_t f32_scratch_bytes(uint64_t n) { return size_t(align16(4 * n)); }

inline status split_workspace(void* ws, size_t ws_size, uint64_t n, size_t codec_need,
                              state_workspace& out) {
  const size_t need = f32_scratch_bytes(n) + codec_need;
  if (ws_size < need) return status::workspace_too_small;
  if (ws == nullptr && need > 0) return status::invalid_argument;
  if (reinterpret_cast<uintptr_t>(ws) % 16 != 0) return status::misaligned;
  out.f32 = static_cast<float*>(ws);
  out.codec = static_cast<uint8_t*>(ws) + f32_scratch_bytes(n);
  out.codec_bytes = ws_size - f32_scratch_bytes(n);
  return status::success;
}

// The argument checks every sender step over one state tensor (EF residual, EF21 g) makes
// before touching anything: x's shape, the state's shape, null views, the workspace split
// and aliasing (any buffer the step writes overlapping another). Sets `n` (elements) and `ws`.
inline status check_tensor_step(const spec& s, const_tensor_view x, tensor_view state, const void* payload,
                                size_t capacity, void* workspace, size_t workspace_size, uint64_t& n,
                                state_workspace& ws) {
  if (!x.shp.count(n) || n > max_elements) return status::invalid_shape;
  if (state.shp != x.shp) return status::state_mismatch;
  if (!valid_view(x.data, n) || !valid_view(state.data, n)) return status::invalid_argument;
  const status st = split_workspace(workspace, workspace_size, n, workspace_bytes(s, x.shp), ws);
  if (!ok(st)) return st;
  if (!element_aligned(x.data, x.type) || !element_aligned(state.data, state.type)) return status::misaligned;
  if (any_written_overlap({{x.data, n * dtype_bytes(x.type), false},
                           {state.data, n * dtype_bytes(state.type), true},
                           {payload, capacity, true},
                           {workspace, workspace_size, true}}))
    return status::aliasing;
  return status::success;
}

// A payload from a receiver's peer must be of the codec the receiver was configured with.
inline status check_codec(const void* payload, size_t len, codec_id expected) {
  header h;
  const status st = read_header(static_cast<const uint8_t*>(payload), len, h);
  if (!ok(st)) return st;
  return h.codec == expected ? status::success : status::state_mismatch;
}

// Adds elements first .. first + count - 1 of a tensor of dtype t to the lines pf requests.
inline void add_elements(line_prefetcher& pf, const void* data, dtype t, uint64_t first, uint64_t count) {
  pf.add(static_cast<const uint8_t*>(data) + first * dtype_bytes(t), count * dtype_bytes(t));
}

// Whether a sender step runs its codec a tile at a time (host/quant.hpp, encode_quant_tiled)
// instead of in passes over the whole tensor.
inline bool tiled(const spec& s) { return s.codec == codec_id::quant && s.quant.rotate == rotation::none; }

// Converting copy of n elements (widening is exact; narrowing rounds once, to nearest even).
inline status convert(const void* src, dtype ts, void* dst, dtype td, uint64_t n) {
  return dispatch_dtype(ts, [&](auto sc) {
    return dispatch_dtype(td, [&](auto dc) {
      constexpr dtype S = decltype(sc)::value, D = decltype(dc)::value;
      convert_span<S, D>(src, 0, dst, 0, n);
      return status::success;
    });
  });
}

}  // namespace pipecodec::host::detail

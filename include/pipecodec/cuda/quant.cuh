// CUDA backend of k-bit quantization, host side: argument checks, then the single
// dispatch (dtype x bits, then rounding) to the kernels of detail/quant_encode.cuh.
#pragma once

#include "../core/dispatch.hpp"
#include "../host/overlap.hpp"
#include "detail/quant_encode.cuh"

namespace pipecodec::cuda {

// The header of a quantization payload for `in`, as the host backend writes it (to pass to
// write_quant_header from a kernel). Only stochastic rounding records its seed.
inline header quant_header(const quant_params& q, const_tensor_view in, const detail::quant_layout& L,
                           uint64_t seed) {
  header h;
  h.codec = codec_id::quant;
  h.type = in.type;
  h.shp = in.shp;
  h.total_bytes = L.total;
  pipecodec::detail::write_quant_params(h.params, q, L.group_len, q.round == rounding::stochastic ? seed : 0);
  return h;
}

namespace detail {

template <dtype T, uint32_t B, rounding R>
inline void launch_quant_encode(const quant_params& q, const void* x, const quant_layout& L,
                                const quant_workspace& W, const header& h, uint64_t seed, uint8_t* p,
                                uint8_t* ws, uint32_t cap, cudaStream_t stream, bool with_header = true) {
  if (!W.tiled) {
    const uint32_t grid = grid_for(ceil_div(L.groups, quant_batch_groups), block_warps, cap);
    quant_encode_resident_kernel<T, B, R><<<grid, block_threads, 0, stream>>>(x, q, L, h, seed, p, with_header);
    return;
  }
  const uint32_t tile_grid = grid_for(W.tiles, block_warps, cap);
  quant_tile_stats_kernel<T><<<tile_grid, block_threads, 0, stream>>>(x, L, W, h, p, ws, with_header);
  quant_finalize_kernel<block_threads><<<grid_for(L.groups, 1, cap), block_threads, 0, stream>>>(q, L, W, p, ws);
  quant_tile_encode_kernel<T, B, R><<<tile_grid, block_threads, 0, stream>>>(x, q, L, W, seed, p, ws);
}

// Checks mirror host::detail::encode_quant, then the CUDA-only ones (workspace, alignment).
inline status encode_quant(const quant_params& q, const_tensor_view in, void* payload, size_t capacity,
                           void* workspace, size_t workspace_size, uint64_t seed, cudaStream_t stream,
                           size_t* written) {
  if (!valid_quant_params(q)) return status::invalid_spec;
  quant_layout L;
  if (!make_quant_layout(q, in.shp, L)) return status::size_overflow;
  if (payload == nullptr || (in.data == nullptr && L.n > 0)) return status::invalid_argument;
  if (capacity < L.total) return status::buffer_too_small;
  const quant_workspace W = make_quant_workspace(L);
  if (workspace_size < workspace_request(W.used)) return status::workspace_too_small;
  if (workspace == nullptr) return status::invalid_argument;
  if (!element_aligned(in.data, in.type)) return status::misaligned;
  if (host::detail::overlaps(in.data, L.n * dtype_bytes(in.type), payload, L.total)) return status::aliasing;
  uint32_t cap = 0;
  if (const status st = grid_cap(cap); !ok(st)) return st;

  const header h = quant_header(q, in, L, seed);
  uint8_t* p = static_cast<uint8_t*>(payload);
  uint8_t* ws = align_workspace(workspace);
  const status st = dispatch_dtype_bits(in.type, q.bits, [&](auto tc, auto bc) {
    constexpr dtype T = decltype(tc)::value;
    constexpr uint32_t B = decltype(bc)::value;
    if (q.round == rounding::nearest)
      launch_quant_encode<T, B, rounding::nearest>(q, in.data, L, W, h, seed, p, ws, cap, stream);
    else
      launch_quant_encode<T, B, rounding::stochastic>(q, in.data, L, W, h, seed, p, ws, cap, stream);
    return last_launch_status();
  });
  if (ok(st) && written) *written = size_t(L.total);
  return st;
}

}  // namespace detail
}  // namespace pipecodec::cuda

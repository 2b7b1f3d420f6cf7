// CUDA backend of k-bit quantization, host side: argument checks, then the single
// dispatch (dtype x bits, then rounding) to the kernels of detail/quant_encode.cuh.
#pragma once

#include <type_traits>

#include "../core/dispatch.hpp"
#include "../core/buffers.hpp"
#include "detail/quant_encode.cuh"
#include "detail/rotation_kernels.cuh"

namespace pipecodec::cuda {

// The header of a quantization payload for `in`, as the host backend writes it (to pass to
// write_quant_header from a kernel). The seed is recorded when rounding or rotation use it.
inline header quant_header(const quant_params& q, const_tensor_view in, const detail::quant_layout& L,
                           uint64_t seed) {
  header h;
  h.codec = codec_id::quant;
  h.type = in.type;
  h.shp = in.shp;
  h.total_bytes = L.total;
  pipecodec::detail::write_quant_params(h.params, q, L.group_len, seed);
  return h;
}

namespace detail {

// MayBeResident = false where the layout is known to be tiled (outlier keeping), so the
// resident kernel is not instantiated for sources that never reach it.
template <uint32_t B, rounding R, bool MayBeResident = true, class Src, class Sink>
inline void launch_quant_encode(Src src, Sink sink, const quant_params& q, const quant_layout& L,
                                const quant_workspace& W, const header& h, const randomness& rnd, uint8_t* p,
                                uint8_t* ws, const device_grid& dg, cudaStream_t stream, bool with_header = true) {
  if constexpr (MayBeResident) {
    if (!W.tiled) {
      launch_over<quant_encode_resident_kernel<B, R, Src, Sink>>(ceil_div(L.groups, quant_batch_groups), block_warps,
                                                                dg, block_threads, 0, stream, src, sink, q, L, h,
                                                                rnd, p, with_header);
      return;
    }
  }
  if (L.outliers != 0) {  // never embedded (TopK's values refuse outliers): with_header holds
    launch_over<quant_outlier_kernel<Src>>(L.groups, block_warps, dg, block_threads, 0, stream, src, q, L, W, h, p,
                                           ws);
  } else {
    launch_over<quant_tile_stats_kernel<Src>>(W.tiles, block_warps, dg, block_threads, 0, stream, src, L, W, h, p, ws,
                                              with_header);
    launch_over<quant_finalize_kernel<block_threads>>(L.groups, 1, dg, block_threads, 0, stream, q, L, W, p, ws);
  }
  launch_over<quant_tile_encode_kernel<B, R, Src, Sink>>(W.tiles, block_warps, dg, block_threads, 0, stream, src, sink,
                                                          q, L, W, rnd, p, ws);
}

// What an encode of `shp` needs, checked on the host: layout, payload capacity, workspace.
struct quant_plan {
  quant_layout L;
  quant_workspace W;
  device_grid dg;
};

// `input`: the input pointer (nullptr allowed only for an empty tensor).
inline status plan_quant(const quant_params& q, const shape& shp, const void* input, const void* payload,
                         size_t capacity, const void* workspace, size_t workspace_size, quant_plan& P) {
  if (!valid_quant_params(q)) return status::invalid_spec;
  if (!make_quant_layout(q, shp, P.L)) return status::size_overflow;
  if (payload == nullptr || (input == nullptr && P.L.n > 0)) return status::invalid_argument;
  if (capacity < P.L.total) return status::buffer_too_small;
  P.W = make_quant_workspace(P.L);
  if (workspace_size < workspace_request(P.W.used)) return status::workspace_too_small;
  if (workspace == nullptr) return status::invalid_argument;
  return current_device(P.dg);
}

// Encodes the elements src(0 .. n) of a tensor of shape `shp`, described in the payload as
// `type`, passing each decoded value to `sink`: the single bits x rounding dispatch.
template <class Src, class Sink>
inline status launch_quant(Src src, Sink sink, const quant_params& q, const quant_plan& P, dtype type,
                           const shape& shp, void* payload, void* workspace, const randomness& rnd,
                           cudaStream_t stream) {
  const uint64_t seed = rnd.seed;
  const header h = quant_header(q, const_tensor_view(nullptr, type, shp), P.L, seed);
  uint8_t* p = static_cast<uint8_t*>(payload);
  uint8_t* ws = align_workspace(workspace);
  return dispatch_bits(q.bits, [&](auto bc) {
    constexpr uint32_t B = decltype(bc)::value;
    const auto encode = [&](auto from, auto to, auto may_be_resident) {
      constexpr bool Resident = decltype(may_be_resident)::value;
      if (q.round == rounding::nearest)
        launch_quant_encode<B, rounding::nearest, Resident>(from, to, q, P.L, P.W, h, rnd, p, ws, P.dg, stream);
      else
        launch_quant_encode<B, rounding::stochastic, Resident>(from, to, q, P.L, P.W, h, rnd, p, ws, P.dg, stream);
    };
    // Stateful schemes (a sink) after a rotated or outlier-keeping encode: the decoded
    // values, rotated back or with the outliers in place, go to the sink in a pass of its own.
    const auto decoded_to_sink = [&](uint64_t units, uint64_t per_block, size_t smem) {
      if constexpr (!std::is_same_v<Sink, no_sink>) {
        quant_payload qp;
        qp.hdr = h;
        qp.q = q;
        qp.layout = P.L;
        qp.bytes = p;
        qp.seed = seed;
        launch_over<decoded_sink_kernel<Src, Sink>>(units, per_block, P.dg, block_threads, smem, stream, qp, src, sink);
      }
    };
    if (q.rotate == rotation::none || P.L.n == 0) {
      if (q.outliers == 0 || P.L.n == 0) {
        encode(src, sink, std::true_type{});
        return last_launch_status();
      }
      encode(src, no_sink{}, std::false_type{});  // outlier keeping is always tiled
      decoded_to_sink(P.W.tiles, block_warps, 0);
      return last_launch_status();
    }
    // Rotate into the workspace and quantize that.
    const rotation_layout R = make_rotation_layout(q.rotate_log2, shp);
    const uint64_t rotation_units = R.blocks() + ceil_div(R.rows * R.tail, block_threads);
    const size_t smem = size_t(4) << R.log2;
    float* y = reinterpret_cast<float*>(ws + P.W.rotated_offset);
    launch_over<rotate_kernel<Src>>(rotation_units, 1, P.dg, block_threads, smem, stream, src, R, seed, y);
    encode(tensor_source<dtype::f32>{y}, no_sink{}, std::true_type{});
    decoded_to_sink(rotation_units, 1, smem);
    return last_launch_status();
  });
}

// Checks mirror host::detail::encode_quant, then the CUDA-only ones (workspace, alignment).
inline status encode_quant(const quant_params& q, const_tensor_view in, void* payload, size_t capacity,
                           void* workspace, size_t workspace_size, const randomness& rnd, cudaStream_t stream,
                           size_t* written) {
  quant_plan P;
  status st = plan_quant(q, in.shp, in.data, payload, capacity, workspace, workspace_size, P);
  if (!ok(st)) return st;
  if (!element_aligned(in.data, in.type)) return status::misaligned;
  if (pipecodec::detail::overlaps(in.data, P.L.n * dtype_bytes(in.type), payload, P.L.total)) return status::aliasing;
  if (!ok(st = check_sample_keyed(q.rng, rnd, in.shp, P.L.group_len))) return st;
  st = dispatch_dtype(in.type, [&](auto tc) {
    return launch_quant(tensor_source<decltype(tc)::value>{in.data}, no_sink{}, q, P, in.type, in.shp, payload,
                        workspace, rnd, stream);
  });
  if (ok(st) && written) *written = size_t(P.L.total);
  return st;
}

}  // namespace detail
}  // namespace pipecodec::cuda

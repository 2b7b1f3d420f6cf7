// CUDA backend of TopK / RandK: byte-identical to host::encode / encode_shared for the same
// input, spec and seed; decoding matches host::decode / decode_shared bit for bit.
// Asynchronous on `stream`: no allocation, no synchronization, no host read of device
// memory. Pointers are device pointers; the payload and the workspace (workspace_bytes(spec,
// shape)) may have any alignment. The workspace holds the selection candidates and state,
// the gathered values when they are quantized, and, for bitmap positions in a payload that
// is not 4-byte aligned, the bitmap until it is copied into the payload.
//
// Selection: one block per unit, except for a tensor of at least topk_grid_min_len elements
// or up to topk_grid_max_units rows that long, selected unit after unit by the whole grid
// (detail/topk_grid_select.cuh); their positions are checked and enumerated by the whole grid
// when decoding or when taken from a shared mask (detail/topk_positions.cuh), and a RandK
// decode re-selects them on the whole grid. Quantized values are gathered into the
// workspace, then quantized by the quantization kernels (detail/quant_encode.cuh) exactly as
// host::encode quantizes them.
//
// Device-side validation (status word at the start of the aligned workspace, read with
// cuda::read_status): decode_topk / decode_shared validate the payload (and mask) and write
// `out` only if they passed. encode_shared validates its mask the same way: when the mask is
// rejected the status word says why and the payload must not be used.
// Decode workspace: at least workspace_request(topk_decode_workspace(n, mask)) bytes, which
// workspace_bytes(spec, shape) provides.
//
// Public entry points: cuda::encode (codec topk/randk), cuda::encode_shared,
// cuda::decode_topk(_accumulate), cuda::decode_shared(_accumulate) in cuda/codec.cuh.
#pragma once

#include <cuda_runtime.h>

#include "../core/dispatch.hpp"
#include "../core/sizes.hpp"
#include "../core/buffers.hpp"
#include "detail/topk_decode.cuh"
#include "detail/topk_grid_select.cuh"
#include "quant.cuh"

namespace pipecodec::cuda::detail {

// Selection, compaction and emission of every unit (positions and values, or gathered values).
template <dtype T, bool RandK>
inline status launch_select(const topk_encode_args& a, uint8_t* state, const device_grid& dg, cudaStream_t stream) {
  const topk_layout& L = a.L;
  if (grid_select_units(L)) {  // unit after unit, each on the whole grid (one selection state)
    const uint64_t m = L.unit_len;
    for (uint64_t u = 0; u < L.units; ++u) {
      uint32_t* cand = a.cand + u * (m / 4);
      status st;
      if constexpr (RandK)
        st = launch_grid_select(device_randk_keys{a.d, a.ids, u, m}, m, L.k, cand, state, kept_emitter<T>{a, u}, dg,
                                stream);
      else
        st = launch_grid_select(device_magnitude_keys<T>{a.in, u * m}, m, L.k, cand, state, kept_emitter<T>{a, u},
                                dg, stream);
      if (!ok(st)) return st;
    }
    return status::success;
  }
  launch_over<topk_encode_kernel<T, RandK>>(L.units, 1, dg, topk_threads, 0, stream, a);
  return last_launch_status();
}

// Quantizes the gathered values into the values section, as host::encode does.
inline status launch_value_quant(const topk_encode_args& a, uint8_t* ws, const topk_workspace& W,
                                 const device_grid& dg, cudaStream_t stream) {
  const quant_params& q = a.d.vquant;
  const quant_workspace QW = make_quant_workspace(a.L.vq);
  // The quantization kernels address their tiles from a workspace's status area onwards.
  uint8_t* qws = ws + W.qtiles_offset - workspace_status_bytes;
  uint8_t* base = a.payload + quant_base(a.L);
  const header none{};  // the TopK header is already written
  const tensor_source<dtype::f32> src{a.gathered};
  return dispatch_bits(q.bits, [&](auto bc) {
    constexpr uint32_t B = decltype(bc)::value;
    if (q.round == rounding::nearest)
      launch_quant_encode<B, rounding::nearest>(src, no_sink{}, q, a.L.vq, QW, none, a.d.seed, base, qws, dg,
                                                stream, false);
    else
      launch_quant_encode<B, rounding::stochastic>(src, no_sink{}, q, a.L.vq, QW, none, a.d.seed, base, qws, dg,
                                                   stream, false);
    return last_launch_status();
  });
}

// Shared by encode_topk and encode_shared: checks, header, selection (or the mask's
// positions, after validating the mask on the device), values. `ids` (device memory): the
// rows' sample ids of an rng=sample RandK encode, copied into the payload's id section.
inline status encode_sparse(const topk_desc& d, const_tensor_view in, const uint64_t* ids, const void* mask,
                            size_t mask_len, void* payload, size_t capacity, void* workspace, size_t workspace_size,
                            cudaStream_t stream, size_t* written) {
  topk_layout L;
  if (!make_topk_layout(d, in.shp, L)) return status::invalid_spec;
  const topk_workspace W = make_topk_workspace(d, L);
  const uint64_t total = topk_payload_bytes(d, L, in.shp.rows);
  if (payload == nullptr || workspace == nullptr || (in.data == nullptr && L.n > 0)) return status::invalid_argument;
  if (capacity < total) return status::buffer_too_small;
  if (d.sample_keyed)
    if (const status st = check_sample_ids(ids, in.shp.rows); !ok(st)) return st;
  // workspace_bytes() whatever the payload address, as on the host: a size that works for one
  // payload must not fail for another.
  if (workspace_size < workspace_request(W.total)) return status::workspace_too_small;
  const bool aligned = reinterpret_cast<uintptr_t>(payload) % 4 == 0;
  const bool staged = !aligned && d.index == index_layout::bitmap;
  if (!element_aligned(in.data, in.type)) return status::misaligned;
  const uint64_t in_bytes = L.n * dtype_bytes(in.type);
  if (pipecodec::detail::overlaps(in.data, in_bytes, payload, total) ||
      pipecodec::detail::overlaps(workspace, workspace_size, payload, total) ||
      pipecodec::detail::overlaps(workspace, workspace_size, in.data, in_bytes) ||
      pipecodec::detail::overlaps(mask, mask_len, payload, capacity))
    return status::aliasing;
  device_grid dg;
  if (const status st = current_device(dg); !ok(st)) return st;

  header h;
  h.codec = d.codec;
  h.type = in.type;
  h.shp = in.shp;
  h.total_bytes = total;
  h.flags = d.sample_keyed ? flag_sample_ids : 0;
  write_topk_params(h.params, d);
  header_bytes64 hb;
  write_header(hb.b, h);
  uint8_t* p = static_cast<uint8_t*>(payload);
  if (cudaMemsetAsync(p + header_bytes, 0, total - header_bytes, stream) != cudaSuccess) return status::cuda_error;
  if (d.sample_keyed && in.shp.rows > 0 &&
      cudaMemcpyAsync(p + L.total, ids, 8 * in.shp.rows, cudaMemcpyDefault, stream) != cudaSuccess)
    return status::cuda_error;
  launch<write_header_kernel<header_bytes>>(1, header_bytes, 0, stream, p, hb);
  if (cudaGetLastError() != cudaSuccess) return status::cuda_error;

  uint8_t* ws = align_workspace(workspace);
  uint32_t* bitmap = reinterpret_cast<uint32_t*>(staged ? ws + W.staging_offset : p + L.index_offset);
  const uint64_t bitmap_bytes = index_section_bytes(d.index, L.kept, L.n);
  if (staged && cudaMemsetAsync(bitmap, 0, bitmap_bytes, stream) != cudaSuccess) return status::cuda_error;
  topk_encode_args args{d, L, in.data, p, aligned, bitmap, reinterpret_cast<uint32_t*>(ws + W.cand_offset),
                        reinterpret_cast<float*>(ws + W.values_offset), 1.0F, p + L.total};
  if (d.unbiased && L.k) args.scale = float(ddiv_rn(double(L.unit_len), double(L.k)));
  uint8_t* state = ws + W.state_offset + align16(16 * L.units);
  status* code = reinterpret_cast<status*>(ws);
  status st = status::success;
  ulonglong2* offsets = reinterpret_cast<ulonglong2*>(state + topk_grid_counts_offset);
  const uint32_t positions_blocks = positions_grid(L.units, L.n);
  if (mask != nullptr) {
    const uint8_t* mp = static_cast<const uint8_t*>(mask);
    if (cudaMemsetAsync(ws, 0, 16, stream) != cudaSuccess) return status::cuda_error;
    launch<topk_validate_kernel<topk_threads>>(positions_blocks, topk_threads, 0, stream, p, L.total, mp, mask_len,
                                               in.shp, topk_check::mask_only, code, offsets);
    if (grid_select_units(L))
      launch<topk_grid_rank_kernel<topk_threads>>(uint32_t(L.units), topk_threads, 0, stream, mp, mask_len, offsets,
                                                  code);
    if (!ok(st = last_launch_status())) return st;
  }
  if (L.units > 0 && L.kept > 0) {
    st = dispatch_dtype(in.type, [&](auto tc) {
      constexpr dtype T = decltype(tc)::value;
      if (mask != nullptr) {
        launch<topk_encode_masked_kernel<T>>(positions_blocks, topk_threads, 0, stream, args,
                                             static_cast<const uint8_t*>(mask), mask_len, code, offsets);
        return last_launch_status();
      }
      return d.codec == codec_id::randk ? launch_select<T, true>(args, state, dg, stream)
                                        : launch_select<T, false>(args, state, dg, stream);
    });
    if (!ok(st)) return st;
    if (staged && cudaMemcpyAsync(p + L.index_offset, bitmap, bitmap_bytes, cudaMemcpyDeviceToDevice, stream) !=
                      cudaSuccess)
      return status::cuda_error;
    if (d.values == value_kind::quant && !ok(st = launch_value_quant(args, ws, W, dg, stream))) return st;
  }
  if (written) *written = size_t(total);
  return status::success;
}

inline status encode_topk(const spec& s, const_tensor_view in, void* payload, size_t capacity, void* workspace,
                          size_t workspace_size, const randomness& rnd, cudaStream_t stream,
                          size_t* written = nullptr) {
  topk_desc d;
  const status st = resolve_topk(s, in.shp, rnd.seed, d);
  if (!ok(st)) return st;
  if (d.shared_mask) return status::invalid_argument;  // needs its mask: encode_shared
  return encode_sparse(d, in, rnd.sample_ids, nullptr, 0, payload, capacity, workspace, workspace_size, stream,
                       written);
}

// `mask`: a device TopK payload of the same shape, scope and k (validated on the device).
inline status encode_shared(const spec& s, const_tensor_view in, const void* mask, size_t mask_len, void* payload,
                            size_t capacity, void* workspace, size_t workspace_size, uint64_t seed,
                            cudaStream_t stream, size_t* written = nullptr) {
  topk_desc d;
  const status st = resolve_topk(s, in.shp, seed, d);
  if (!ok(st)) return st;
  if (!d.shared_mask) return status::invalid_spec;
  if (mask == nullptr) return status::invalid_argument;
  return encode_sparse(d, in, nullptr, mask, mask_len, payload, capacity, workspace, workspace_size, stream, written);
}

// RandK re-selection of `units` units of m elements each, unit after unit on the whole grid;
// the kernels run only if the accepted payload has that layout (topk_grid_randk_init_kernel).
template <dtype Out, bool Accumulate>
inline void launch_grid_reselect(const uint8_t* payload, uint64_t len, void* out, const status* code, uint8_t* state,
                                 uint32_t* cand, uint64_t units, uint64_t m, const device_grid& dg,
                                 cudaStream_t stream) {
  topk_grid_state* g = reinterpret_cast<topk_grid_state*>(state);
  ulonglong2* counts = reinterpret_cast<ulonglong2*>(state + topk_grid_counts_offset);
  for (uint64_t u = 0; u < units; ++u) {
    launch<topk_grid_randk_init_kernel<topk_threads>>(1, topk_threads, 0, stream, payload, len, code, g, counts, units,
                                                      m, u);
    launch_grid_passes(state_randk_keys{g}, m, cand, state, dg, stream);
    launch<topk_grid_randk_scatter_kernel<Out, Accumulate>>(uint32_t(topk_chunks_for(m).count), topk_threads, 0,
                                                            stream, payload, len, out, g, counts, u);
  }
}

// Decodes `payload` (positions from `mask` when it is not null) into `out`.
// expect: as for decode_any (0: any topk/randk payload). configured: the codec the caller
// configured, unchecked (codec_id::randk lets a large RandK payload re-select on the grid).
template <bool Accumulate>
inline status decode_sparse(const void* payload, size_t len, const void* mask, size_t mask_len, tensor_view out,
                            void* workspace, size_t workspace_size, cudaStream_t stream, uint8_t expect = 0,
                            codec_id configured = codec_id{}) {
  uint64_t n = 0;
  if (payload == nullptr || workspace == nullptr || !valid_dtype(uint8_t(out.type))) return status::invalid_argument;
  if (!out.shp.count(n) || n > max_elements) return status::shape_mismatch;
  if (out.data == nullptr && n > 0) return status::invalid_argument;
  if (workspace_size < workspace_request(topk_decode_workspace(n, mask != nullptr))) return status::workspace_too_small;
  if (!element_aligned(out.data, out.type)) return status::misaligned;
  const uint64_t out_bytes = n * dtype_bytes(out.type);
  if (pipecodec::detail::overlaps(out.data, out_bytes, payload, len) ||
      pipecodec::detail::overlaps(out.data, out_bytes, workspace, workspace_size) ||
      pipecodec::detail::overlaps(out.data, out_bytes, mask, mask_len))
    return status::aliasing;
  device_grid dg;
  if (const status st = current_device(dg); !ok(st)) return st;
  uint8_t* ws = align_workspace(workspace);
  status* code = reinterpret_cast<status*>(ws);
  ulonglong2* offsets = reinterpret_cast<ulonglong2*>(ws + workspace_status_bytes + topk_grid_counts_offset);
  uint8_t* state = ws + workspace_status_bytes;  // RandK re-selection
  uint32_t* cand = reinterpret_cast<uint32_t*>(state + topk_grid_state_bytes);
  if (cudaMemsetAsync(ws, 0, 16, stream) != cudaSuccess) return status::cuda_error;
  const uint32_t grid = positions_grid(out.shp.rows, n);
  const uint8_t* p = static_cast<const uint8_t*>(payload);
  const uint8_t* mp = static_cast<const uint8_t*>(mask);
  launch<topk_validate_kernel<topk_threads>>(grid, topk_threads, 0, stream, p, len, mp, mask_len, out.shp,
                                             mask ? topk_check::shared : topk_check::alone, code, offsets);
  if (cudaGetLastError() != cudaSuccess) return status::cuda_error;
  if (const status st = launch_expect_codec(p, len, expect, code, stream); !ok(st)) return st;
  // Whether the positions are a bitmap on the grid path is known only on the device.
  if (n >= topk_grid_min_len)
    launch<topk_grid_rank_kernel<topk_threads>>(uint32_t(topk_grid_max_units), topk_threads, 0, stream,
                                                mask ? mp : p, mask ? mask_len : len, offsets, code);
  return dispatch_dtype(out.type, [&](auto oc) {
    constexpr dtype Out = decltype(oc)::value;
    if (!Accumulate)
      launch_over<topk_zero_kernel<Out>>(n, block_threads, dg, block_threads, 0, stream, out.data, n, code);
    // A RandK payload of a few long units (scope=tensor: one unit of n; scope=row: the rows)
    // re-selects on the whole grid; which layout it has is known only on the device. Only
    // when the caller says the payload is RandK: a TopK payload would pay ~10 empty launches
    // per layout (without the hint, RandK re-selects on one block per unit, same result).
    const bool reselect = mask == nullptr && (expect == uint8_t(codec_id::randk) || configured == codec_id::randk);
    launch<topk_scatter_kernel<Out, Accumulate>>(grid, topk_threads, 0, stream, p, len, mp, mask_len, out.data, code,
                                                 offsets, cand, reselect);
    if (reselect) {
      const uint64_t rows = out.shp.rows;
      if (n >= topk_grid_min_len)
        launch_grid_reselect<Out, Accumulate>(p, len, out.data, code, state, cand, 1, n, dg, stream);
      if (rows > 1 && rows <= topk_grid_max_units && out.shp.cols >= topk_grid_min_len)
        launch_grid_reselect<Out, Accumulate>(p, len, out.data, code, state, cand, rows, out.shp.cols, dg, stream);
    }
    return last_launch_status();
  });
}

template <bool Accumulate>
inline status decode_topk(const void* payload, size_t len, tensor_view out, void* workspace, size_t workspace_size,
                          cudaStream_t stream, uint8_t expect = 0, codec_id configured = codec_id{}) {
  return decode_sparse<Accumulate>(payload, len, nullptr, 0, out, workspace, workspace_size, stream, expect,
                                   configured);
}

template <bool Accumulate>
inline status decode_shared(const void* values, size_t len, const void* mask, size_t mask_len, tensor_view out,
                            void* workspace, size_t workspace_size, cudaStream_t stream) {
  if (mask == nullptr) return status::invalid_argument;
  return decode_sparse<Accumulate>(values, len, mask, mask_len, out, workspace, workspace_size, stream);
}

}  // namespace pipecodec::cuda::detail

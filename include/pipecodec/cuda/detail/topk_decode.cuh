// Decoding TopK / RandK payloads on the device without a host round trip. The host cannot
// read the payload, so every kernel parses the header itself with the host's functions and
// takes the path the payload needs. A validation kernel checks the positions (one block per
// unit, or the whole grid for one large unit: topk_positions.cuh) and the stored
// quantization parameters; any failure is recorded in the status word at the start of the
// (aligned) workspace, the layout cuda::read_status reads. The zeroing and scatter kernels
// run only when that word is still success, so a rejected payload leaves the output
// untouched. The same validation guards a shared-mask encode, which checks its mask before
// using it.
#pragma once

#include "../../core/topk_format.hpp"
#include "topk_kernels.cuh"
#include "topk_positions.cuh"

namespace pipecodec::cuda::detail {

// What the validation kernel checks, mirroring host::detail::decode_topk / decode_shared /
// encode_shared: a payload decoded alone, a shared-mask payload and its mask, or a mask for
// the payload an encoder has just begun (only its header is written: no values to check).
enum class topk_check : uint32_t { alone, shared, mask_only };

// The mask's own checks (host::detail::parse_mask) and its pairing with the values payload
// (host::detail::check_pairing), in the host's order.
__device__ inline status check_mask(const uint8_t* mask, uint64_t mask_len, const topk_payload& tp, topk_payload& mp) {
  status st = parse_topk_payload(mask, mask_len, mp);
  if (ok(st) && !has_index_section(mp.desc)) st = status::invalid_argument;
  if (ok(st) && !topk_padding_zero(mp)) st = status::corrupt_payload;
  if (ok(st) && mp.hdr.shp != tp.hdr.shp) st = status::shape_mismatch;
  if (ok(st) && (mp.desc.scope != tp.desc.scope || mp.desc.k != tp.desc.k)) st = status::invalid_argument;
  return st;
}

template <uint32_t Threads>
__global__ void __launch_bounds__(Threads)
    topk_validate_kernel(const uint8_t* payload, uint64_t len, const uint8_t* mask, uint64_t mask_len, shape want,
                         topk_check what, status* code, ulonglong2* counts) {
  PIPECODEC_SHARED(topk_payload, tp);
  PIPECODEC_SHARED(topk_payload, mp);
  PIPECODEC_SHARED(int, parsed_ok);
  PIPECODEC_SHARED(unsigned long long, count);
  if (threadIdx.x == 0) {
    status st = parse_topk_payload(payload, len, tp);
    const bool shared = what != topk_check::alone;
    if (ok(st) && tp.desc.shared_mask != shared) st = status::invalid_argument;
    if (ok(st) && shared) st = check_mask(mask, mask_len, tp, mp);
    if (ok(st) && tp.hdr.shp != want) st = status::shape_mismatch;
    if (ok(st) && what != topk_check::mask_only && !topk_padding_zero(tp)) st = status::corrupt_payload;
    if (!ok(st) && blockIdx.x == 0) record(code, st);
    parsed_ok = ok(st);
  }
  __syncthreads();
  if (!parsed_ok) return;
  const topk_payload& pos = what == topk_check::alone ? tp : mp;
  if (has_index_section(pos.desc)) {
    if (grid_select_units(pos.layout))
      check_grid_positions(pos, counts, count, code);
    else
      for (uint64_t u = blockIdx.x; u < pos.layout.units; u += gridDim.x) check_unit_positions(pos, u, count, code);
  }
  if (what == topk_check::mask_only || tp.desc.values != value_kind::quant) return;
  const quant_payload qp = values_as_quant(tp);  // host::detail::validate_values
  for (uint64_t g = uint64_t(blockIdx.x) * Threads + threadIdx.x; g < qp.layout.groups;
       g += uint64_t(gridDim.x) * Threads)
    if (!valid_stored_group(qp, g)) record(code, status::corrupt_payload);
}

// Kept value e of a validated payload: raw, or dequantized from its chunk's bit planes
// exactly as the host's reader does. `qp` is values_as_quant(tp), built once per thread: built
// per value, it made the RandK re-selection's scatter spill.
__device__ inline float kept_value(const topk_payload& tp, const quant_payload& qp, uint64_t e) {
  const uint8_t* vals = tp.bytes + tp.layout.values_offset;
  switch (tp.desc.values) {
    case value_kind::f32: return bit_cast<float>(get_u32(vals + 4 * e));
    case value_kind::f16: return f16_to_f32(get_u16(vals + 2 * e));
    case value_kind::bf16: return bf16_to_f32(get_u16(vals + 2 * e));
    default: break;
  }
  const quant_layout& Q = qp.layout;
  const uint32_t bits = qp.q.bits;
  const uint64_t g = e / Q.group_len, off = e - g * Q.group_len;
  const uint8_t* planes = qp.bytes + Q.codes_offset + (Q.group_chunk(g) + off / 32) * bits * 4;
  uint32_t c = 0;
  for (uint32_t j = 0; j < bits; ++j) c |= ((get_u32(planes + 4 * j) >> (off % 32)) & 1u) << j;
  float scale, offset;
  load_group(qp, g, scale, offset);
  return dequantize(c, scale, offset, consts_for(bits, qp.q.scale).zero);
}

// A dense decode's output is zeroed by the whole grid once the payload was accepted.
template <dtype Out>
__global__ void __launch_bounds__(block_threads) topk_zero_kernel(void* out, uint64_t n, const status* code) {
  if (!ok(*code)) return;
  for (uint64_t i = global_thread(); i < n; i += thread_count()) store<Out>(out, i, 0.0F);
}

// out[pos] = (or +=) kept value e of a validated payload.
template <dtype Out, bool Accumulate>
__device__ __forceinline__ void put_kept(const topk_payload& tp, const quant_payload& qp, void* out, uint64_t pos,
                                         uint64_t e) {
  const float v = kept_value(tp, qp, e);
  store<Out>(out, pos, Accumulate ? add_rn(load<Out>(out, pos), v) : v);
}

// Writes the kept values of an accepted payload at positions from the payload, from its
// shared mask (for_each_position), or (RandK) re-derived from the seed by one block per unit;
// with `grid_reselect`, RandK units that grid_select_units admits are re-selected by the
// whole grid instead (topk_grid_randk_init_kernel).
template <dtype Out, bool Accumulate>
__global__ void __launch_bounds__(topk_threads)
    topk_scatter_kernel(const uint8_t* payload, uint64_t len, const uint8_t* mask, uint64_t mask_len, void* out,
                        const status* code, const ulonglong2* offsets, uint32_t* cand, bool grid_reselect) {
  PIPECODEC_SHARED(topk_payload, tp);
  PIPECODEC_SHARED(topk_payload, mp);
  PIPECODEC_SHARED(topk_block_storage, s);
  if (!ok(*code)) return;
  if (threadIdx.x == 0) {  // both validated already
    (void)parse_topk_payload(payload, len, tp);
    if (mask != nullptr) (void)parse_topk_payload(mask, mask_len, mp);
  }
  __syncthreads();
  const topk_layout& L = tp.layout;
  const quant_payload qp = values_as_quant(tp);
  auto put = [&](uint64_t u, uint64_t j, uint64_t i) {
    put_kept<Out, Accumulate>(tp, qp, out, u * L.unit_len + i, u * L.k + j);
  };
  if (has_index_section(tp.desc) || mask != nullptr) {
    for_each_position(mask != nullptr ? mp : tp, offsets, s, put);
    return;
  }
  if (grid_reselect && grid_select_units(L)) return;  // RandK on the whole grid
  if (L.kept == 0) return;                             // e.g. many empty rows: nothing to select
  const uint64_t m = L.unit_len;
  for (uint64_t u = blockIdx.x; u < L.units; u += gridDim.x) {  // RandK
    const device_randk_keys key{tp.desc, sample_ids_section(tp.bytes, tp.hdr), u, m};
    block_radix_select(key, m, L.k, cand + u * (m / 4), m / 4, s);
    const topk_threshold t = s.t;
    block_compact(key, m, t, s, [&](uint64_t j, uint64_t i) { put(u, j, i); });
    __syncthreads();
  }
}

// RandK keys of a decode's re-selection: the unit's draws, which the init kernel read from
// the payload into the state.
struct state_randk_keys {
  const topk_grid_state* g;
  __device__ uint32_t operator()(uint64_t i) const { return randk_key(draw{g->key, g->stream, g->first}, i); }
};

// One block, before the grid select of unit u of a decode: the selection runs (k and seed
// from the header) only when the payload was accepted and is a RandK payload of `units`
// units of m elements that grid_select_units admits; otherwise every grid kernel returns at
// once. The host cannot tell which, so it enqueues each layout the output's shape allows.
template <uint32_t Threads>
__global__ void __launch_bounds__(Threads)
    topk_grid_randk_init_kernel(const uint8_t* payload, uint64_t len, const status* code, topk_grid_state* g,
                                ulonglong2* counts, uint64_t units, uint64_t m, uint64_t u) {
  PIPECODEC_SHARED(topk_payload, tp);
  PIPECODEC_SHARED(int, reselect);
  if (threadIdx.x == 0) {
    topk_payload local;
    reselect = ok(*code) && ok(parse_topk_payload(payload, len, local)) && !has_index_section(local.desc) &&
               grid_select_units(local.layout) && local.layout.units == units && local.layout.unit_len == m;
    tp = local;
  }
  __syncthreads();
  if (reselect) {
    grid_state_init(g, counts, m, tp.layout.k, randk_draw(tp.desc, sample_ids_section(payload, tp.hdr), u, m));
  } else if (threadIdx.x == 0) {
    g->done = 1;
    g->skip = 1;
  }
}

// Every block: the kept values of unit u of a re-selected RandK payload, in the chunks'
// rank order (the grid select's emit).
template <dtype Out, bool Accumulate>
__global__ void __launch_bounds__(topk_threads)
    topk_grid_randk_scatter_kernel(const uint8_t* payload, uint64_t len, void* out, const topk_grid_state* g,
                                   const ulonglong2* offsets, uint64_t u) {
  PIPECODEC_SHARED(topk_payload, tp);
  PIPECODEC_SHARED(topk_block_storage, s);
  if (g->skip) return;
  if (threadIdx.x == 0) (void)parse_topk_payload(payload, len, tp);  // accepted already
  __syncthreads();
  const topk_layout& L = tp.layout;
  const uint64_t m = L.unit_len;
  const topk_threshold t = g->t;
  const quant_payload qp = values_as_quant(tp);
  grid_compact_chunks(device_randk_keys{tp.desc, sample_ids_section(payload, tp.hdr), u, m}, m, t, offsets, s,
                      [&](uint64_t j, uint64_t i) {
    put_kept<Out, Accumulate>(tp, qp, out, u * m + i, u * L.k + j);
  });
}

}  // namespace pipecodec::cuda::detail

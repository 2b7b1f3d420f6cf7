// Decoding TopK / RandK payloads on the device without a host round trip. The host cannot
// read the payload, so a validation kernel (one block per unit) parses the header with the
// host's functions and checks the unit's positions and stored quantization parameters; any
// failure is recorded in the status word at the start of the (aligned) workspace, the
// layout cuda::read_status reads. The scatter kernel runs only when that word is still
// success, so a rejected payload leaves the output untouched. The same validation guards a
// shared-mask encode, which checks its mask before using it.
#pragma once

#include "../../core/topk_format.hpp"
#include "topk_kernels.cuh"

namespace pipecodec::cuda::detail {

__device__ __forceinline__ void record(status* code, status st) {
  atomicExch(reinterpret_cast<int*>(code), int(st));
}

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

// Block-wide check of unit u's positions (host::detail::validate_positions).
__device__ inline void check_unit_positions(const topk_payload& tp, uint64_t u, unsigned long long& count,
                                            status* code) {
  const topk_layout& L = tp.layout;
  const uint8_t* idx = tp.bytes + L.index_offset;
  if (tp.desc.index == index_layout::bitmap) {
    if (threadIdx.x == 0) count = 0;
    __syncthreads();
    const bitmap_keys key{idx, u * L.unit_len};
    for (uint64_t i = threadIdx.x; i < L.unit_len; i += blockDim.x)
      if (key(i)) atomicAdd(&count, 1ull);
    if (u == 0)  // nothing may be set at or after bit n
      for (uint64_t i = L.n + threadIdx.x; i < 8 * index_section_bytes(index_layout::bitmap, L.kept, L.n);
           i += blockDim.x)
        if ((idx[i / 8] >> (i % 8)) & 1u) record(code, status::corrupt_payload);
    __syncthreads();
    if (threadIdx.x == 0 && count != L.k) record(code, status::corrupt_payload);
    __syncthreads();
    return;
  }
  const bool u32 = tp.desc.index == index_layout::u32;
  for (uint64_t j = threadIdx.x; j < L.k; j += blockDim.x) {
    const uint64_t e = u * L.k + j;
    const uint64_t i = u32 ? get_u32(idx + 4 * e) : get_u16(idx + 2 * e);
    const uint64_t prev = j == 0 ? 0 : u32 ? get_u32(idx + 4 * (e - 1)) : get_u16(idx + 2 * (e - 1));
    if (i >= L.unit_len || (j > 0 && i <= prev)) record(code, status::corrupt_payload);
  }
}

template <uint32_t Threads>
__global__ void __launch_bounds__(Threads)
    topk_validate_kernel(const uint8_t* payload, uint64_t len, const uint8_t* mask, uint64_t mask_len, shape want,
                         topk_check what, status* code) {
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
  if (has_index_section(pos.desc))
    for (uint64_t u = blockIdx.x; u < pos.layout.units; u += gridDim.x) check_unit_positions(pos, u, count, code);
  if (what == topk_check::mask_only || tp.desc.values != value_kind::quant) return;
  const quant_payload qp = values_as_quant(tp);  // host::detail::validate_values
  for (uint64_t g = uint64_t(blockIdx.x) * Threads + threadIdx.x; g < qp.layout.groups;
       g += uint64_t(gridDim.x) * Threads)
    if (!valid_stored_group(qp, g)) record(code, status::corrupt_payload);
}

// Kept value e of a validated payload: raw, or dequantized from its chunk's bit planes
// exactly as the host's reader does.
__device__ inline float kept_value(const topk_payload& tp, uint64_t e) {
  const uint8_t* vals = tp.bytes + tp.layout.values_offset;
  switch (tp.desc.values) {
    case value_kind::f32: return bit_cast<float>(get_u32(vals + 4 * e));
    case value_kind::f16: return f16_to_f32(get_u16(vals + 2 * e));
    case value_kind::bf16: return bf16_to_f32(get_u16(vals + 2 * e));
    default: break;
  }
  const quant_payload qp = values_as_quant(tp);
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

// One block per unit: zero the unit (dense decode), then write its kept values, at positions
// from the payload, from its shared mask, or (RandK) re-derived from the seed.
template <dtype Out, bool Accumulate>
__global__ void __launch_bounds__(topk_threads)
    topk_scatter_kernel(const uint8_t* payload, uint64_t len, const uint8_t* mask, uint64_t mask_len, void* out,
                        const status* code, uint32_t* cand) {
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
  const uint64_t m = L.unit_len;
  for (uint64_t u = blockIdx.x; u < L.units; u += gridDim.x) {
    if (!Accumulate)
      for (uint64_t i = threadIdx.x; i < m; i += topk_threads) store<Out>(out, u * m + i, 0.0F);
    __syncthreads();
    auto put = [&](uint64_t j, uint64_t i) {
      const uint64_t pos = u * m + i;
      const float v = kept_value(tp, u * L.k + j);
      store<Out>(out, pos, Accumulate ? add_rn(load<Out>(out, pos), v) : v);
    };
    if (mask != nullptr) {
      block_for_each_position(mp, u, s, put);
    } else if (tp.desc.codec == codec_id::randk) {  // positions re-derived from the seed
      const device_randk_keys key{tp.desc.seed, u * m};
      block_radix_select(key, m, L.k, cand + u * (m / 4), m / 4, s);
      const topk_threshold t = s.t;
      block_compact(key, m, t, s, put);
    } else {
      block_for_each_position(tp, u, s, put);
    }
    __syncthreads();
  }
}

}  // namespace pipecodec::cuda::detail

// Decoding TopK / RandK payloads on the device without a host round trip. The host cannot
// read the payload, so a validation kernel (one block per unit) parses the header with the
// host's functions and checks the unit's positions; any failure is recorded in the status
// word at the start of the (aligned) workspace, the layout cuda::read_status reads. The
// scatter kernel runs only when that word is still success, so a rejected payload leaves the
// output untouched.
#pragma once

#include "../../core/topk_format.hpp"
#include "topk_kernels.cuh"

namespace pipecodec::cuda::detail {

__device__ __forceinline__ void record(status* code, status st) {
  atomicExch(reinterpret_cast<int*>(code), int(st));
}

// Bits of a bitmap as keys: 1 where set. block_compact with threshold (~0, 0, 0) then emits
// exactly the set bits, ranked in ascending order.
struct bitmap_keys {
  const uint8_t* bm;
  uint64_t base;
  __device__ uint32_t operator()(uint64_t i) const { return (bm[(base + i) / 8] >> ((base + i) % 8)) & 1u; }
};

template <uint32_t Threads>
__global__ void __launch_bounds__(Threads)
    topk_validate_kernel(const uint8_t* payload, uint64_t len, shape want, status* code) {
  __shared__ alignas(16) unsigned char raw[sizeof(topk_payload)];
  __shared__ int parsed_ok;
  __shared__ unsigned long long count;
  topk_payload& tp = *reinterpret_cast<topk_payload*>(raw);
  if (threadIdx.x == 0) {
    status st = parse_topk_payload(payload, len, tp);
    if (ok(st) && tp.hdr.shp != want) st = status::shape_mismatch;
    if (ok(st) && tp.desc.shared_mask) st = status::invalid_argument;       // needs its mask
    if (ok(st) && tp.desc.values == value_kind::quant) st = status::not_supported;
    if (ok(st) && !topk_padding_zero(tp)) st = status::corrupt_payload;
    if (!ok(st) && blockIdx.x == 0) record(code, st);
    parsed_ok = ok(st);
  }
  __syncthreads();
  if (!parsed_ok || !has_index_section(tp.desc)) return;
  const topk_layout& L = tp.layout;
  const uint8_t* idx = payload + L.index_offset;
  for (uint64_t u = blockIdx.x; u < L.units; u += gridDim.x) {
    if (tp.desc.index == index_layout::bitmap) {
      if (threadIdx.x == 0) count = 0;
      __syncthreads();
      const bitmap_keys key{idx, u * L.unit_len};
      for (uint64_t i = threadIdx.x; i < L.unit_len; i += topk_threads)
        if (key(i)) atomicAdd(&count, 1ull);
      if (u == 0)  // nothing may be set at or after bit n
        for (uint64_t i = L.n + threadIdx.x; i < 8 * index_section_bytes(index_layout::bitmap, L.kept, L.n);
             i += topk_threads)
          if ((idx[i / 8] >> (i % 8)) & 1u) record(code, status::corrupt_payload);
      __syncthreads();
      if (threadIdx.x == 0 && count != L.k) record(code, status::corrupt_payload);
      __syncthreads();
    } else {
      for (uint64_t j = threadIdx.x; j < L.k; j += topk_threads) {
        const uint64_t e = u * L.k + j;
        const bool u32 = tp.desc.index == index_layout::u32;
        const uint64_t i = u32 ? get_u32(idx + 4 * e) : get_u16(idx + 2 * e);
        const uint64_t prev = j == 0 ? 0 : u32 ? get_u32(idx + 4 * (e - 1)) : get_u16(idx + 2 * (e - 1));
        if (i >= L.unit_len || (j > 0 && i <= prev)) record(code, status::corrupt_payload);
      }
    }
  }
}

template <dtype Out, bool Accumulate>
__device__ void put_value(const topk_payload& tp, void* out, uint64_t u, uint64_t j, uint64_t i) {
  const topk_layout& L = tp.layout;
  const uint64_t e = u * L.k + j, pos = u * L.unit_len + i;
  const uint8_t* vals = tp.bytes + L.values_offset;
  float v = 0;
  switch (tp.desc.values) {
    case value_kind::f32: v = bit_cast<float>(get_u32(vals + 4 * e)); break;
    case value_kind::f16: v = f16_to_f32(get_u16(vals + 2 * e)); break;
    case value_kind::bf16: v = bf16_to_f32(get_u16(vals + 2 * e)); break;
    default: return;
  }
  store<Out>(out, pos, Accumulate ? add_rn(load<Out>(out, pos), v) : v);
}

// One block per unit: zero the unit (dense decode), then write its kept values.
template <dtype Out, bool Accumulate>
__global__ void __launch_bounds__(topk_threads)
    topk_scatter_kernel(const uint8_t* payload, uint64_t len, void* out, const status* code, uint32_t* cand) {
  __shared__ alignas(16) unsigned char raw_tp[sizeof(topk_payload)];
  __shared__ alignas(16) unsigned char raw_s[sizeof(topk_block_storage)];
  topk_payload& tp = *reinterpret_cast<topk_payload*>(raw_tp);
  topk_block_storage& s = *reinterpret_cast<topk_block_storage*>(raw_s);
  if (!ok(*code)) return;
  if (threadIdx.x == 0) (void)parse_topk_payload(payload, len, tp);  // validated already
  __syncthreads();
  const topk_layout& L = tp.layout;
  const uint64_t m = L.unit_len;
  for (uint64_t u = blockIdx.x; u < L.units; u += gridDim.x) {
    if (!Accumulate)
      for (uint64_t i = threadIdx.x; i < m; i += topk_threads) store<Out>(out, u * m + i, 0.0F);
    __syncthreads();
    auto put = [&](uint64_t j, uint64_t i) { put_value<Out, Accumulate>(tp, out, u, j, i); };
    if (tp.desc.codec == codec_id::randk) {  // positions re-derived from the seed
      const device_randk_keys key{tp.desc.seed, u * m};
      block_radix_select(key, m, L.k, cand + u * (m / 4), m / 4, s);
      const topk_threshold t = s.t;
      block_compact(key, m, t, s, put);
    } else if (tp.desc.index == index_layout::bitmap) {
      topk_threshold t;
      t.mask = ~0u;
      block_compact(bitmap_keys{payload + L.index_offset, u * m}, m, t, s, put);
    } else {
      const uint8_t* idx = payload + L.index_offset;
      for (uint64_t j = threadIdx.x; j < L.k; j += topk_threads) {
        const uint64_t e = u * L.k + j;
        put(j, tp.desc.index == index_layout::u32 ? get_u32(idx + 4 * e) : get_u16(idx + 2 * e));
      }
    }
    __syncthreads();
  }
}

}  // namespace pipecodec::cuda::detail

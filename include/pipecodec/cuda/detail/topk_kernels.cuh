// Kernels of the CUDA TopK / RandK encoder: the header written from a by-value copy; one
// block per unit that selects (detail/topk_select.cuh) and writes positions and values (or,
// for quantized values, gathers them into the workspace); and the shared-mask encoder that
// takes its positions from a validated TopK payload (detail/topk_positions.cuh).
#pragma once

#include "../../core/topk_format.hpp"
#include "portable.cuh"
#include "topk_positions.cuh"

namespace pipecodec::cuda::detail {

struct header_bytes64 {
  uint8_t b[header_bytes];
};

// A template (like every kernel here) so headers included by several translation units
// do not define it twice.
template <uint32_t Bytes>
__global__ void __launch_bounds__(Bytes) write_header_kernel(uint8_t* payload, header_bytes64 h) {
  if (threadIdx.x < header_bytes) payload[threadIdx.x] = h.b[threadIdx.x];
}

template <dtype T>
struct device_magnitude_keys {
  const void* x;
  uint64_t base;
  __device__ uint32_t operator()(uint64_t i) const { return magnitude_key(load<T>(x, base + i)); }
};

// RandK keys of unit u: `ids` is the payload's sample-id section (read for rng=sample only,
// on the device, so the host can build this before the section is written).
struct device_randk_keys {
  topk_desc d;
  const uint8_t* ids;
  uint64_t u, m;
  __device__ uint32_t operator()(uint64_t i) const { return randk_key(randk_draw(d, ids, u, m), i); }
};

// Everything a unit's block needs, by value.
struct topk_encode_args {
  topk_desc d;
  topk_layout L;
  const void* in;
  uint8_t* payload;   // any alignment
  bool aligned;       // payload 4-byte aligned: word stores (sections start at multiples of 16)
  uint32_t* bitmap;   // where bitmap positions are set: the index section, or (payload not
                      // aligned) a zeroed workspace area copied there afterwards
  uint32_t* cand;     // candidate region of the workspace
  float* gathered;    // kept values (fp32) when they are quantized afterwards
  float scale;        // unbiased RandK factor, else 1
  const uint8_t* ids; // rng=sample RandK: the payload's sample-id section
};

// A 2- or 4-byte element at p (element e of a section), whatever p's alignment.
__device__ __forceinline__ void store_u32(uint8_t* p, uint64_t e, uint32_t v, bool aligned) {
  if (aligned) reinterpret_cast<uint32_t*>(p)[e] = v;
  else put_u32(p + 4 * e, v);
}
__device__ __forceinline__ void store_u16(uint8_t* p, uint64_t e, uint16_t v, bool aligned) {
  if (aligned) reinterpret_cast<uint16_t*>(p)[e] = v;
  else put_u16(p + 2 * e, v);
}

// Writes position i (rank j) of unit u: its index entry and its value.
template <dtype T>
__device__ void emit_kept(const topk_encode_args& a, uint64_t u, uint64_t j, uint64_t i) {
  const uint64_t e = u * a.L.k + j, pos = u * a.L.unit_len + i;
  uint8_t* idx = a.payload + a.L.index_offset;
  switch (a.d.index) {
    case index_layout::u32: store_u32(idx, e, uint32_t(i), a.aligned); break;
    case index_layout::u16: store_u16(idx, e, uint16_t(i), a.aligned); break;
    case index_layout::bitmap: atomicOr(a.bitmap + pos / 32, 1u << (pos % 32)); break;
    default: break;
  }
  float v = load<T>(a.in, pos);
  if (a.d.unbiased) v = mul_rn(v, a.scale);
  uint8_t* vals = a.payload + a.L.values_offset;
  switch (a.d.values) {
    case value_kind::f32: store_u32(vals, e, bit_cast<uint32_t>(v), a.aligned); break;
    case value_kind::f16: store_u16(vals, e, f32_to_f16(v), a.aligned); break;
    case value_kind::bf16: store_u16(vals, e, f32_to_bf16(v), a.aligned); break;
    case value_kind::quant: a.gathered[e] = v; break;  // quantized once all are gathered
    default: break;
  }
}

// emit_kept as a functor, for kernels that take the emitter as a parameter.
template <dtype T>
struct kept_emitter {
  topk_encode_args a;
  uint64_t u;
  __device__ void operator()(uint64_t j, uint64_t i) const { emit_kept<T>(a, u, j, i); }
};

template <dtype T, bool RandK>
__global__ void __launch_bounds__(topk_threads) topk_encode_kernel(topk_encode_args a) {
  PIPECODEC_SHARED(topk_block_storage, s);
  const uint64_t m = a.L.unit_len, cap = m / 4;
  for (uint64_t u = blockIdx.x; u < a.L.units; u += gridDim.x) {
    uint32_t* cand = a.cand + u * cap;
    auto run = [&](const auto& key) {
      block_radix_select(key, m, a.L.k, cand, cap, s);
      const topk_threshold t = s.t;
      block_compact(key, m, t, s, [&](uint64_t j, uint64_t i) { emit_kept<T>(a, u, j, i); });
    };
    if constexpr (RandK)
      run(device_randk_keys{a.d, a.ids, u, m});
    else
      run(device_magnitude_keys<T>{a.in, u * m});
    __syncthreads();
  }
}

// Shared mask: writes the values at the positions of `mask`, which the validation kernel
// checked (status word `code`; bitmap chunk offsets at `offsets`); nothing is written if it
// was rejected.
template <dtype T>
__global__ void __launch_bounds__(topk_threads)
    topk_encode_masked_kernel(topk_encode_args a, const uint8_t* mask, uint64_t mask_len, const status* code,
                              const ulonglong2* offsets) {
  PIPECODEC_SHARED(topk_payload, mp);
  PIPECODEC_SHARED(topk_block_storage, s);
  if (!ok(*code)) return;
  if (threadIdx.x == 0) (void)parse_topk_payload(mask, mask_len, mp);  // validated already
  __syncthreads();
  for_each_position(mp, offsets, s, [&](uint64_t u, uint64_t j, uint64_t i) { emit_kept<T>(a, u, j, i); });
}

}  // namespace pipecodec::cuda::detail

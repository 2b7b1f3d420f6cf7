// Kernels of the plain codec: elements converted to the wire dtype and back, one thread per
// element. The wire section may sit at any address (the payload need not be aligned):
// elements are moved as raw 2- or 4-byte words, bytewise when misaligned.
#pragma once

#include "launch.cuh"

namespace pipecodec::cuda::detail {

template <dtype T>
__device__ __forceinline__ uint32_t to_raw(float v) {
  if constexpr (T == dtype::f32) return bit_cast<uint32_t>(v);
  else if constexpr (T == dtype::f16) return f32_to_f16(v);
  else return f32_to_bf16(v);
}

__device__ __forceinline__ float from_raw(uint32_t r, dtype t) {
  return t == dtype::f32 ? bit_cast<float>(r) : t == dtype::f16 ? f16_to_f32(uint16_t(r)) : bf16_to_f32(uint16_t(r));
}

// Element i of a buffer of 2- or 4-byte elements; `aligned`: the buffer start is aligned to its width.
__device__ __forceinline__ uint32_t load_raw(const void* p, uint64_t i, uint32_t width, bool aligned) {
  const uint8_t* b = static_cast<const uint8_t*>(p) + i * width;
  if (width == 4) return aligned ? *reinterpret_cast<const uint32_t*>(b) : get_u32(b);
  return aligned ? *reinterpret_cast<const uint16_t*>(b) : get_u16(b);
}

__device__ __forceinline__ void store_raw(void* p, uint64_t i, uint32_t width, uint32_t r, bool aligned) {
  uint8_t* b = static_cast<uint8_t*>(p) + i * width;
  if (width == 4) {
    if (aligned) *reinterpret_cast<uint32_t*>(b) = r;
    else put_u32(b, r);
  } else {
    if (aligned) *reinterpret_cast<uint16_t*>(b) = uint16_t(r);
    else put_u16(b, uint16_t(r));
  }
}

template <dtype In, dtype Wire>
__global__ void __launch_bounds__(block_threads)
    plain_encode_kernel(const void* x, header h, plain_layout L, uint8_t* payload) {
  constexpr uint32_t width = dtype_bytes(Wire);
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    write_header(payload, h);
    for (uint64_t i = L.data_offset + L.n * width; i < L.total; ++i) payload[i] = 0;
  }
  uint8_t* dst = payload + L.data_offset;
  const bool aligned = reinterpret_cast<uintptr_t>(dst) % width == 0;
  for (uint64_t i = global_thread(); i < L.n; i += thread_count()) {
    // Same dtype: the raw bits travel (NaN payloads included), as the host's memcpy does.
    const uint32_t r = In == Wire ? load_raw(x, i, width, true) : to_raw<Wire>(load<In>(x, i));
    store_raw(dst, i, width, r, aligned);
  }
}

// Decodes (or adds) an already validated plain payload into out.
template <dtype Out, bool Accumulate>
__device__ void decode_plain_threads(const plain_payload& pl, void* out) {
  const dtype wire = pl.pp.wire;
  const uint32_t width = dtype_bytes(wire);
  const uint8_t* src = pl.bytes + pl.layout.data_offset;
  const bool aligned = reinterpret_cast<uintptr_t>(src) % width == 0;
  for (uint64_t i = global_thread(); i < pl.layout.n; i += thread_count()) {
    const uint32_t r = load_raw(src, i, width, aligned);
    if (!Accumulate && wire == Out) {
      store_raw(out, i, width, r, true);
    } else {
      const float v = from_raw(r, wire);
      store<Out>(out, i, Accumulate ? add_rn(load<Out>(out, i), v) : v);
    }
  }
}

}  // namespace pipecodec::cuda::detail

// A check of the device's float arithmetic against the host's, as compiled at the call site.
// nvcc's --use_fast_math and -ftz=true make every single-precision operation flush subnormals
// to zero, the _rn intrinsics included (docs/CUDA.md), so payloads and decoded values stop
// being byte-identical to the host's; nvcc defines no macro a header could test. The check
// encodes a small tensor with subnormal and normal groups on the device (round to nearest,
// stochastic rounding, microscaling) and decodes the host's payloads of it there, and compares
// both with the host codec, bit for bit. The CUDA endpoints run it in init().
//
// Init-time only: it copies between host and device and synchronizes `stream`. In policy/, as
// the one place where the two backends meet (tests/headers/layers.sh).
#pragma once

#include <algorithm>
#include <array>

#include "../host/codec.hpp"
#include "../cuda/codec.cuh"

namespace pipecodec::cuda {

namespace detail {

// Specs whose bytes depend on subnormal arithmetic, scale division and rounding.
constexpr int arithmetic_check_specs = 5;
inline spec arithmetic_check_spec(int i) {
  spec s;
  switch (i) {
    case 0:  // quant:bits=8,group=32
    case 1:  // quant:bits=3,group=32,round=stochastic
      s.codec = codec_id::quant;
      s.quant.bits = i == 0 ? 8 : 3;
      s.quant.group_size = 32;
      s.quant.round = i == 0 ? rounding::nearest : rounding::stochastic;
      break;
    case 2: s.codec = codec_id::mx; break;   // mx:format=fp8_e4m3
    case 3: s.codec = codec_id::fp8; break;  // fp8:format=e4m3 (groups of 128)
    default:                                 // plain:dtype=bf16
      s.codec = codec_id::plain;
      s.plain.wire = dtype::bf16;
  }
  return s;
}
constexpr uint64_t arithmetic_check_rows = 2, arithmetic_check_cols = 64;
constexpr size_t arithmetic_check_n = arithmetic_check_rows * arithmetic_check_cols;
constexpr size_t arithmetic_check_payload = 1024;    // above every spec's encoded_bytes and
constexpr size_t arithmetic_check_workspace = 1024;  // workspace_bytes here (checked)
constexpr size_t arithmetic_check_tensor = 4 * arithmetic_check_n;

// Row 0: subnormals from -20 to 43 units of 1.5e-41 (groups whose range and scale are
// subnormal); row 1: sevenths from -26/7 to 37/7 (scales that round).
inline std::array<float, arithmetic_check_n> arithmetic_check_input() {
  std::array<float, arithmetic_check_n> x{};
  for (size_t i = 0; i < arithmetic_check_cols; ++i) {
    x[i] = float(int(i) - 20) * 1.5e-41F;
    x[arithmetic_check_cols + i] = float(int(i) - 26) / 7.0F;
  }
  return x;
}

struct arithmetic_check_buffers {
  void* x;
  void* payload;
  void* y;
  void* workspace;
  size_t workspace_size;
};

// Device encode vs host bytes, then device decode of the host payload vs host values.
inline status check_spec(const spec& s, const std::array<float, arithmetic_check_n>& x,
                         const arithmetic_check_buffers& d, cudaStream_t stream) {
  const shape shp(arithmetic_check_rows, arithmetic_check_cols);
  std::array<uint8_t, arithmetic_check_payload> want{}, got{};
  std::array<uint8_t, arithmetic_check_workspace> host_ws{};
  std::array<float, arithmetic_check_n> want_y{}, got_y{};
  if (encoded_bytes(s, shp) > want.size() || workspace_bytes(s, shp) > host_ws.size()) return status::invalid_argument;
  size_t len = 0, dlen = 0;
  status st = host::encode(s, const_tensor_view{x.data(), dtype::f32, shp}, want.data(), want.size(), host_ws.data(),
                           host_ws.size(), 1, &len);
  if (ok(st)) st = host::decode(want.data(), len, tensor_view{want_y.data(), dtype::f32, shp});
  if (!ok(st)) return st;
  st = encode(s, const_tensor_view{d.x, dtype::f32, shp}, d.payload, arithmetic_check_payload, d.workspace,
              d.workspace_size, 1, stream, &dlen);
  if (ok(st) && cudaMemcpyAsync(got.data(), d.payload, len, cudaMemcpyDeviceToHost, stream) != cudaSuccess)
    st = status::cuda_error;
  if (ok(st) && cudaMemcpyAsync(d.payload, want.data(), len, cudaMemcpyHostToDevice, stream) != cudaSuccess)
    st = status::cuda_error;
  if (ok(st)) st = decode(d.payload, len, tensor_view{d.y, dtype::f32, shp}, d.workspace, d.workspace_size, stream);
  status verdict = status::success;
  if (ok(st)) st = read_status(d.workspace, &verdict, stream);
  if (ok(st) && cudaMemcpyAsync(got_y.data(), d.y, arithmetic_check_tensor, cudaMemcpyDeviceToHost, stream) !=
                    cudaSuccess)
    st = status::cuda_error;
  if (ok(st) && cudaStreamSynchronize(stream) != cudaSuccess) st = status::cuda_error;
  if (!ok(st)) return st;
  // The host's own payload rejected on the device counts as a difference too: the device
  // recomputes what the header states (scales' ranges) with its arithmetic.
  const bool same = dlen == len && got == want && ok(verdict) &&
                    std::memcmp(got_y.data(), want_y.data(), arithmetic_check_tensor) == 0;
  return same ? status::success : status::device_math_mismatch;
}

}  // namespace detail

// Device memory check_device_arithmetic needs.
inline size_t arithmetic_check_bytes() {
  using namespace detail;
  size_t ws = 16;
  for (int i = 0; i < arithmetic_check_specs; ++i)
    ws = std::max(ws, workspace_bytes(arithmetic_check_spec(i), shape(arithmetic_check_rows, arithmetic_check_cols)));
  return 2 * arithmetic_check_tensor + arithmetic_check_payload + ws;
}

// success when this build's device code encodes and decodes exactly as the host codec does;
// device_math_mismatch when it does not (compiled with --use_fast_math or -ftz=true, or a
// device that is not IEEE-conforming); invalid_argument for a null or small `scratch`
// (device memory, arithmetic_check_bytes(), 16-byte aligned); cuda_error when a CUDA call
// fails. Synchronizes `stream`.
inline status check_device_arithmetic(void* scratch, size_t scratch_bytes, cudaStream_t stream) {
  using namespace detail;
  if (scratch == nullptr || scratch_bytes < arithmetic_check_bytes()) return status::invalid_argument;
  if (reinterpret_cast<uintptr_t>(scratch) % 16 != 0) return status::misaligned;
  uint8_t* base = static_cast<uint8_t*>(scratch);
  const arithmetic_check_buffers d{base, base + arithmetic_check_tensor,
                                   base + arithmetic_check_tensor + arithmetic_check_payload,
                                   base + 2 * arithmetic_check_tensor + arithmetic_check_payload,
                                   scratch_bytes - 2 * arithmetic_check_tensor - arithmetic_check_payload};
  const std::array<float, arithmetic_check_n> x = arithmetic_check_input();
  if (cudaMemcpyAsync(d.x, x.data(), arithmetic_check_tensor, cudaMemcpyHostToDevice, stream) != cudaSuccess)
    return status::cuda_error;
  for (int i = 0; i < arithmetic_check_specs; ++i) {
    const status st = check_spec(arithmetic_check_spec(i), x, d, stream);
    if (!ok(st)) return st;
  }
  return status::success;
}

}  // namespace pipecodec::cuda

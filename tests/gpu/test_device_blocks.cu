// The tile-level building blocks called from a user's own kernel, and the core math
// (PIPECODEC_HD) evaluated on the device against the host: the nvcc compile check of the
// core headers is this file. It also includes the whole CUDA backend, as gpu_backend.cu
// does, so linking the suite catches one-definition-rule breaks in the headers.
#include <doctest/doctest.h>

#include <cfloat>
#include <cmath>
#include <limits>
#include <vector>

#include "../common/backend_checks.hpp"
#include "gpu_backend.hpp"
#include "pipecodec/core/bitplane.hpp"
#include "pipecodec/core/dispatch.hpp"
#include "pipecodec/core/dtype.hpp"
#include "pipecodec/core/format.hpp"
#include "pipecodec/core/philox.hpp"
#include "pipecodec/core/plain_format.hpp"
#include "pipecodec/core/quant_format.hpp"
#include "pipecodec/core/quant_layout.hpp"
#include "pipecodec/core/quant_math.hpp"
#include "pipecodec/core/shape.hpp"
#include "pipecodec/core/sizes.hpp"
#include "pipecodec/core/spec.hpp"
#include "pipecodec/core/status.hpp"
#include "pipecodec/core/workspace.hpp"
#include "pipecodec/cuda/warp_quant.cuh"
#include "pipecodec/pipecodec.cuh"

using namespace pipecodec;

namespace {

// testdata::uniform's value of element i, computed in the kernel ("produced in registers").
__host__ __device__ float produced(uint64_t i) {
  return float(int32_t(uint32_t(i * 2654435761u) >> 8) - (1 << 23)) * 1.1920928955078125e-7F;
}

// A user kernel: each warp produces one group of 128 values in registers and encodes it.
template <uint32_t Bits, rounding R>
__global__ void epilogue_kernel(quant_params q, detail::quant_layout L, header h, uint64_t seed, uint8_t* payload) {
  if (blockIdx.x == 0 && threadIdx.x == 0) pipecodec::cuda::write_quant_header(payload, h, L);
  const uint64_t g = (uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  if (g >= L.groups) return;  // whole warps leave together
  const uint32_t lane = threadIdx.x & 31u;
  float v[4];
  for (uint32_t k = 0; k < 4; ++k) {
    const uint64_t e = L.group_begin(g) + 32 * k + lane;
    v[k] = e < L.n ? produced(e) : 0.0F;
  }
  pipecodec::cuda::warp_encode_group<Bits, R>(v, q, L, g, seed, payload);
}

// Core functions on the device, one input per thread.
__global__ void core_kernel(const float* lo, const float* hi, quant_params q, int count, float* params,
                            uint32_t* halves) {
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= count) return;
  detail::group_stats s;
  s.lo = lo[i];
  s.hi = hi[i];
  const detail::group_params p = detail::make_params(s, q);
  params[4 * i] = p.scale;
  params[4 * i + 1] = p.offset;
  params[4 * i + 2] = p.pre;
  params[4 * i + 3] = p.inv;
  halves[2 * i] = detail::f32_to_f16(lo[i]) | uint32_t(detail::f32_to_bf16(hi[i])) << 16;
  halves[2 * i + 1] = detail::bit_cast<uint32_t>(detail::f16_to_f32(uint16_t(detail::bit_cast<uint32_t>(hi[i]))));
}

}  // namespace

TEST_CASE("a user kernel encoding groups from registers writes the host backend's payload") {
  const uint64_t n = 10000 + 77;
  std::vector<float> x(n);
  for (uint64_t i = 0; i < n; ++i) x[i] = produced(i);
  const auto in = testdata::as_bytes(x, dtype::f32);
  for (rounding r : {rounding::nearest, rounding::stochastic}) {
    CAPTURE(int(r));
    spec s;
    s.codec = codec_id::quant;
    s.quant.bits = 3;
    s.quant.group_size = 128;
    s.quant.round = r;
    std::vector<uint8_t> want;
    REQUIRE(ok(testb::host_encode(s, in, dtype::f32, shape(n), 42, want)));
    detail::quant_layout L;
    REQUIRE(detail::make_quant_layout(s.quant, shape(n), L));
    header h;
    h.codec = codec_id::quant;
    h.type = dtype::f32;
    h.shp = shape(n);
    h.total_bytes = L.total;
    detail::write_quant_params(h.params, s.quant, L.group_len, 42);
    testg::device_buffer p;
    p.reserve(L.total);
    testg::check_cuda(cudaMemset(p.ptr, 0xEE, L.total), "poison");
    const unsigned blocks = unsigned((L.groups * 32 + 255) / 256);
    using pipecodec::cuda::detail::launch;
    uint8_t* dst = static_cast<uint8_t*>(p.ptr);
    if (r == rounding::nearest)
      launch<epilogue_kernel<3, rounding::nearest>>(blocks, 256, 0, nullptr, s.quant, L, h, uint64_t(42), dst);
    else
      launch<epilogue_kernel<3, rounding::stochastic>>(blocks, 256, 0, nullptr, s.quant, L, h, uint64_t(42), dst);
    testg::check_cuda(cudaGetLastError(), "launch");
    std::vector<uint8_t> got(L.total);
    testg::check_cuda(cudaMemcpy(got.data(), p.ptr, L.total, cudaMemcpyDeviceToHost), "copy");
    CHECK(testb::first_difference(want, got) == -1);
  }
}

TEST_CASE("core math on the device equals the host: parameters of extreme statistics, conversions") {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> lo{0.0F, -0.0F, -1.0F, -FLT_MAX, 1e-45F, -3.5F, 65504.0F, -70000.0F, inf, -1e-40F, 2.0F};
  const std::vector<float> hi{0.0F, 0.0F, 1.0F, FLT_MAX, 2e-45F, -3.5F, 65520.0F, 70000.0F, -inf, 1e-40F, 1e30F};
  const int count = int(lo.size());
  testg::device_buffer dlo, dhi, dp, dh;
  dlo.reserve(4 * lo.size());
  dhi.reserve(4 * hi.size());
  dp.reserve(16 * lo.size());
  dh.reserve(8 * lo.size());
  testg::check_cuda(cudaMemcpy(dlo.ptr, lo.data(), 4 * lo.size(), cudaMemcpyHostToDevice), "copy");
  testg::check_cuda(cudaMemcpy(dhi.ptr, hi.data(), 4 * hi.size(), cudaMemcpyHostToDevice), "copy");
  for (uint32_t bits = 1; bits <= 8; ++bits)
    for (scale_mode sm : {scale_mode::minmax, scale_mode::absmax})
      for (dtype sd : {dtype::f32, dtype::f16}) {
        CAPTURE(bits);
        CAPTURE(int(sm));
        CAPTURE(int(sd));
        quant_params q;
        q.bits = uint8_t(bits);
        q.scale = sm;
        q.scale_dtype = sd;
        pipecodec::cuda::detail::launch<core_kernel>(1, 64, 0, nullptr, static_cast<const float*>(dlo.ptr),
                                                     static_cast<const float*>(dhi.ptr), q, count,
                                                     static_cast<float*>(dp.ptr), static_cast<uint32_t*>(dh.ptr));
        testg::check_cuda(cudaGetLastError(), "launch");
        std::vector<float> params(4 * lo.size());
        std::vector<uint32_t> halves(2 * lo.size());
        testg::check_cuda(cudaMemcpy(params.data(), dp.ptr, 16 * lo.size(), cudaMemcpyDeviceToHost), "copy");
        testg::check_cuda(cudaMemcpy(halves.data(), dh.ptr, 8 * lo.size(), cudaMemcpyDeviceToHost), "copy");
        for (int i = 0; i < count; ++i) {
          CAPTURE(i);
          detail::group_stats s;
          s.lo = lo[i];
          s.hi = hi[i];
          const detail::group_params p = detail::make_params(s, q);
          const float host[4] = {p.scale, p.offset, p.pre, p.inv};
          CHECK(std::memcmp(host, &params[4 * i], 16) == 0);
          CHECK(halves[2 * i] == (detail::f32_to_f16(lo[i]) | uint32_t(detail::f32_to_bf16(hi[i])) << 16));
          CHECK(halves[2 * i + 1] ==
                detail::bit_cast<uint32_t>(detail::f16_to_f32(uint16_t(detail::bit_cast<uint32_t>(hi[i])))));
        }
      }
}

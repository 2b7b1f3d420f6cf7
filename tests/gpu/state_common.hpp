// Helpers of the CUDA state tests (test_state_*.cu): device and pinned buffers, payload
// corruptions, the device verdict of a decode.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "../common/state_check.hpp"
#include "gpu_backend.hpp"

using namespace pipecodec;

namespace tgs {

struct dmem {  // device (or pinned host) bytes, freed at scope end
  void* p = nullptr;
  size_t n = 0;
  bool pinned = false;
  explicit dmem(size_t bytes, bool host_pinned = false) : n(bytes), pinned(host_pinned) {
    testg::check_cuda(host_pinned ? cudaMallocHost(&p, bytes ? bytes : 1) : cudaMalloc(&p, bytes ? bytes : 1),
                      "alloc");
    if (!host_pinned) testg::check_cuda(cudaMemset(p, 0, n), "memset");
    else memset(p, 0, n);
  }
  ~dmem() { pinned ? (void)cudaFreeHost(p) : (void)cudaFree(p); }
  dmem(const dmem&) = delete;
  dmem& operator=(const dmem&) = delete;
  void put(const void* src, size_t bytes) {
    testg::check_cuda(cudaMemcpy(p, src, bytes, cudaMemcpyDefault), "put");
  }
  std::vector<uint8_t> get(size_t bytes) const {
    std::vector<uint8_t> out(bytes);
    testg::check_cuda(cudaDeviceSynchronize(), "sync");
    testg::check_cuda(cudaMemcpy(out.data(), p, bytes, cudaMemcpyDefault), "get");
    return out;
  }
};

// One corruption of a payload: byte `at` set to `value` (value 0: a NaN fp32 at `at`).
struct variant {
  const char* what;
  size_t at;
  uint8_t value;
  size_t len;
  void apply(std::vector<uint8_t>& b) const {
    if (value != 0) {
      b[at] = value;
      return;
    }
    b[at + 2] = 0xC0;
    b[at + 3] = 0x7F;
  }
};

inline const dtype dtypes[] = {dtype::f32, dtype::f16, dtype::bf16};

// Codecs the state tests run with: fused (quant, resident and tiled groups) and not (others),
// and the quant options whose state update takes a pass of its own (rotation, outliers).
inline const char* const state_specs[] = {"quant:bits=4", "quant:bits=3,group=row,scale=absmax,round=stochastic,scale_dtype=fp16",
                             "quant:bits=8,group=tensor", "topk:ratio=0.1,scope=row", "plain:dtype=bf16",
                             "fp8:format=e5m2,group=32,round=stochastic", "mx:format=fp4_e2m1",
                             "quant:bits=2,group=64,round=stochastic,rotate=hadamard,rotate_block=32",
                             "quant:bits=3,group=64,outliers=2"};

// Every bit width x rounding x (resident groups, tiled groups, outlier keeping): each fused
// quantization kernel instantiation of a stateful scheme, launched once (the emulated suite's
// kernel coverage check, tests/emu/kernel_coverage.hpp, fails on one that no test reaches).
// The reduced suite takes every fifth.
inline std::vector<std::string> fused_quant_sweep() {
  std::vector<std::string> out;
  int i = 0;
  for (int bits = 1; bits <= 8; ++bits)
    for (const char* round : {"nearest", "stochastic"})
      for (const char* group : {"group=32", "group=512", "group=32,outliers=2"})
        if (!testg::quick() || i++ % 5 == 0)
          out.push_back("quant:bits=" + std::to_string(bits) + ",round=" + round + "," + group);
  return out;
}

inline status device_verdict(const void* ws) {
  status* pinned = nullptr;
  testg::check_cuda(cudaMallocHost(&pinned, sizeof(status)), "pinned status");
  REQUIRE(ok(pipecodec::cuda::read_status(ws, pinned, nullptr)));
  testg::check_cuda(cudaDeviceSynchronize(), "sync");
  const status st = *pinned;
  (void)cudaFreeHost(pinned);
  return st;
}

}  // namespace tgs


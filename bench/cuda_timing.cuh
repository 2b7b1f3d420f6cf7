// What every CUDA benchmark measures with: one stream and event pair, a cold L2 before each
// timed run (a write of twice its size), the median of PIPECODEC_BENCH_REPS runs (default 15)
// after two warm-up runs, and an activation-like input written on the device.
#pragma once

#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "pipecodec/core/dtype.hpp"
#include "pipecodec/cuda/detail/portable.cuh"

namespace cudabench {

inline int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : fallback;
}

struct timing {
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  void* flush = nullptr;
  size_t flush_bytes = 0;
  bool ready = false;
};

inline timing& timer() {
  static timing t;
  if (t.ready) return t;
  int dev = 0, l2 = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev);
  t.flush_bytes = std::max<size_t>(size_t(2) * size_t(l2), size_t(64) << 20);
  cudaMalloc(&t.flush, t.flush_bytes);
  cudaStreamCreateWithFlags(&t.stream, cudaStreamNonBlocking);
  cudaEventCreate(&t.start);
  cudaEventCreate(&t.stop);
  t.ready = cudaDeviceSynchronize() == cudaSuccess;
  return t;
}

// Median time of op() (enqueues on timer().stream, false on failure); false if op or CUDA failed.
template <class Op>
bool median_ms(Op&& op, float& ms) {
  timing& t = timer();
  const int reps = std::max(1, env_int("PIPECODEC_BENCH_REPS", 15));
  std::vector<float> v;
  for (int w = 0; w < 2; ++w)
    if (!op()) return false;
  for (int r = 0; r < reps; ++r) {
    if (cudaMemsetAsync(t.flush, r & 0xFF, t.flush_bytes, t.stream) != cudaSuccess) return false;
    cudaEventRecord(t.start, t.stream);
    if (!op()) return false;
    cudaEventRecord(t.stop, t.stream);
    if (cudaEventSynchronize(t.stop) != cudaSuccess) return false;
    float e = 0;
    cudaEventElapsedTime(&e, t.start, t.stop);
    v.push_back(e);
  }
  std::sort(v.begin(), v.end());
  ms = v[v.size() / 2];
  return true;
}

// Times op against a device-to-device copy moving the same traffic (bytes read + written:
// traffic / 2 bytes copied from `from` to `to`) and reports GB/s, copy_GB/s, their ratio and
// the traffic; false (the run marked failed) if a CUDA call failed.
inline bool report(benchmark::State& st, const std::function<bool()>& op, double traffic, const void* from, void* to) {
  float ms = 0, copy_ms = 0;
  const size_t half = size_t(traffic / 2);
  auto copy = [&] { return cudaMemcpyAsync(to, from, half, cudaMemcpyDeviceToDevice, timer().stream) == cudaSuccess; };
  for (auto _ : st) {
    if (!median_ms(op, ms) || !median_ms(copy, copy_ms)) {
      st.SkipWithError("a CUDA call failed");
      return false;
    }
    st.SetIterationTime(ms / 1e3);
  }
  const double gbs = traffic / (ms * 1e6), copy_gbs = 2.0 * double(half) / (copy_ms * 1e6);
  st.counters["GB/s"] = gbs;
  st.counters["copy_GB/s"] = copy_gbs;
  st.counters["ratio"] = gbs / copy_gbs;
  st.counters["bytes"] = traffic;
  return true;
}

// Activation-like values: a hash of the index mapped to [-4, 4).
template <class Word>
__global__ void fill_kernel(Word* x, uint64_t n) {
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += uint64_t(gridDim.x) * blockDim.x) {
    const uint32_t h = uint32_t(i * 2654435761u) ^ uint32_t(i >> 32);
    const float v = float(int32_t(h >> 8) - (1 << 23)) * 4.76837158203125e-7F;
    if constexpr (sizeof(Word) == 4) x[i] = v;
    else x[i] = pipecodec::detail::f32_to_bf16(v);
  }
}

// n such values as fp32 (type f32) or bf16 (any 16-bit type), enqueued on timer().stream.
inline void fill(void* x, uint64_t n, pipecodec::dtype type) {
  using pipecodec::cuda::detail::launch;
  if (type == pipecodec::dtype::f32) launch<fill_kernel<float>>(1024, 256, 0, timer().stream, static_cast<float*>(x), n);
  else launch<fill_kernel<uint16_t>>(1024, 256, 0, timer().stream, static_cast<uint16_t*>(x), n);
}

// Registers fn(state, args...) as one manually timed run, reported in microseconds.
template <class Fn, class... Args>
void add(const std::string& name, Fn fn, Args... args) {
  benchmark::RegisterBenchmark(name.c_str(), fn, args...)
      ->UseManualTime()
      ->Iterations(1)
      ->Unit(benchmark::kMicrosecond);
}

// Runs the registered benchmarks; without a device says so and measures nothing.
inline int run(int argc, char** argv, const char* program) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("%s: no CUDA device, nothing measured\n", program);
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace cudabench

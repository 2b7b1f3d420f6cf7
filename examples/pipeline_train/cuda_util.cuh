// CUDA helpers of the GPU build: error checks that end the program with a message, device
// arrays (through the library's device allocator), a stream, and the GPU timer of a scope.
#pragma once

#include <cuda_runtime.h>
#include <pipecodec/cuda/allocators.cuh>

#include <cstdio>
#include <cstdlib>

namespace train {

inline void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "pipeline_train_cuda: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

// n elements of T in device memory, uninitialised; movable, freed with the array.
template <class T>
class device_array {
 public:
  device_array() = default;
  explicit device_array(size_t n) {
    if (!pipecodec::ok(mem_.allocate(n * sizeof(T), pipecodec::cuda::device_allocator()))) {
      std::fprintf(stderr, "pipeline_train_cuda: out of device memory (%zu bytes)\n", n * sizeof(T));
      std::exit(1);
    }
  }
  T* get() const { return static_cast<T*>(mem_.data()); }
  size_t size() const { return mem_.size() / sizeof(T); }

 private:
  pipecodec::owned_bytes mem_;
};

class cuda_stream {
 public:
  cuda_stream() { check_cuda(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking), "create stream"); }
  cuda_stream(const cuda_stream&) = delete;
  cuda_stream& operator=(const cuda_stream&) = delete;
  ~cuda_stream() { (void)cudaStreamDestroy(s_); }
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

// A pair of timing events for gpu_scope.
class gpu_timer {
 public:
  gpu_timer() {
    check_cuda(cudaEventCreate(&start_), "create event");
    check_cuda(cudaEventCreate(&stop_), "create event");
  }
  gpu_timer(const gpu_timer&) = delete;
  gpu_timer& operator=(const gpu_timer&) = delete;
  ~gpu_timer() {
    (void)cudaEventDestroy(start_);
    (void)cudaEventDestroy(stop_);
  }
  cudaEvent_t start() const { return start_; }
  cudaEvent_t stop() const { return stop_; }

 private:
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

// Adds the GPU seconds of the work its scope queues on `stream` to `acc`: the GPU twin of
// stage.hpp's cpu_scope. It waits for that work at the end of the scope, which costs little
// here: the stages synchronize at every boundary anyway (payloads go through host memory).
class gpu_scope {
 public:
  gpu_scope(double& acc, const gpu_timer& t, cudaStream_t stream) : acc_(acc), t_(t), stream_(stream) {
    check_cuda(cudaEventRecord(t_.start(), stream_), "record event");
  }
  gpu_scope(const gpu_scope&) = delete;
  gpu_scope& operator=(const gpu_scope&) = delete;
  ~gpu_scope() {
    check_cuda(cudaEventRecord(t_.stop(), stream_), "record event");
    check_cuda(cudaEventSynchronize(t_.stop()), "wait for the stream");
    float ms = 0;
    check_cuda(cudaEventElapsedTime(&ms, t_.start(), t_.stop()), "event time");
    acc_ += 1e-3 * double(ms);
  }

 private:
  double& acc_;
  const gpu_timer& t_;
  cudaStream_t stream_;
};

}  // namespace train

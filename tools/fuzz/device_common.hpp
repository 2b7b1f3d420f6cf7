// Helpers of the device fuzz harnesses (device_harnesses.hpp): the CUDA backend run on the
// emulated GPU (tests/emu), compared with the host backend. Device buffers are allocated at
// the exact size of each input, so AddressSanitizer sees a device-side read past a payload.
#pragma once

#include <cuda_runtime.h>

#include "common.hpp"
#include "pipecodec/pipecodec.cuh"

#define PCFUZZ_CUDA(call) PCFUZZ_CHECK((call) == cudaSuccess, "%s", #call)

namespace pcfuzz {

// The stream every device call and copy runs on, and the pinned status word read_status()
// fills. The stream is non-blocking, as a pipeline runtime's is: a copy on the legacy stream
// (cudaMemcpy from pageable memory may return before it lands) would not be ordered before
// its kernels.
struct device_context {
  cudaStream_t stream = nullptr;
  pipecodec::status* pinned = nullptr;
  device_context() {
    PCFUZZ_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    PCFUZZ_CUDA(cudaMallocHost(&pinned, sizeof(pipecodec::status)));
  }
  void sync() { PCFUZZ_CUDA(cudaStreamSynchronize(stream)); }
  // A decoder's status: the host-side one of the enqueued call if it failed, else the
  // device-side verdict in its workspace.
  pipecodec::status finish(pipecodec::status host_side, const void* workspace) {
    using namespace pipecodec;
    *pinned = status::cuda_error;
    if (ok(host_side)) PCFUZZ_CHECK(ok(cuda::read_status(workspace, pinned, stream)), "read_status");
    sync();
    return ok(host_side) ? *pinned : host_side;
  }
  static device_context& get() {
    static device_context c;  // lives for the process, as the emulated device does
    return c;
  }
};

// One device allocation of exactly `bytes` (at least 1), filled with `init` when given.
class device_bytes {
 public:
  explicit device_bytes(size_t bytes, const std::vector<uint8_t>* init = nullptr) {
    PCFUZZ_CUDA(cudaMalloc(&ptr_, bytes > 0 ? bytes : 1));
    if (init != nullptr && !init->empty())
      PCFUZZ_CUDA(cudaMemcpyAsync(ptr_, init->data(), init->size(), cudaMemcpyHostToDevice,
                                  device_context::get().stream));
  }
  ~device_bytes() { (void)cudaFree(ptr_); }
  device_bytes(const device_bytes&) = delete;
  device_bytes& operator=(const device_bytes&) = delete;
  void* get() const { return ptr_; }
  std::vector<uint8_t> read(size_t bytes) const {
    device_context& ctx = device_context::get();
    std::vector<uint8_t> out(bytes);
    if (bytes > 0) PCFUZZ_CUDA(cudaMemcpyAsync(out.data(), ptr_, bytes, cudaMemcpyDeviceToHost, ctx.stream));
    ctx.sync();
    return out;
  }

 private:
  void* ptr_ = nullptr;
};

// ramp() as the bytes of a tensor of dtype t.
inline std::vector<uint8_t> ramp_bytes(pipecodec::dtype t, uint64_t n, int period, float step) {
  using namespace pipecodec;
  const std::vector<float> x = ramp(n, period, step);
  std::vector<uint8_t> out(n * dtype_bytes(t));
  (void)detail::dispatch_dtype(t, [&](auto tc) {
    for (uint64_t i = 0; i < n; ++i) detail::store<decltype(tc)::value>(out.data(), i, x[i]);
    return status::success;
  });
  return out;
}

// First differing byte of two equal-size buffers, or -1.
inline long first_difference(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  if (a.size() != b.size()) return 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return long(i);
  return -1;
}

}  // namespace pcfuzz

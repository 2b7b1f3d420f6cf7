// The CUDA backend behind the host-vector interface of tests/common/backend_checks.hpp.
// Only gpu_backend.cu includes the CUDA codec (and instantiates its kernels), so the other
// test files compile quickly.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "pipecodec/pipecodec.hpp"

namespace testg {

using namespace pipecodec;

// PIPECODEC_GPU_QUICK=1: a reduced suite for compute-sanitizer runs (tools/gpu-check).
// PIPECODEC_GPU_QUICK=2, for the ThreadSanitizer
// build, where an emulated element costs ~25x more: the reduced suite with its costliest cases
// thinned to their smaller shapes and fewer steps, still launching the same kernels.
inline char quick_level() {
  const char* q = std::getenv("PIPECODEC_GPU_QUICK");
  return q != nullptr && (q[0] == '1' || q[0] == '2') ? q[0] : '0';
}
inline bool quick() { return quick_level() != '0'; }
inline bool thin() { return quick_level() == '2'; }

// The suite runs on a GPU and, unchanged, on the CPU execution of its kernels (tests/emu),
// where an element costs about a microsecond: sized(gpu, emulated) is a case's size in this
// build. Emulated sizes still reach every path (tails, grid-stride wrap-around on the small
// emulated device, the multi-block TopK select); what only GPU sizes reach is named where used.
#if defined(PIPECODEC_EMU)
constexpr bool emulated = true;
#else
constexpr bool emulated = false;
#endif
constexpr uint64_t sized(uint64_t gpu, uint64_t emu) { return emulated ? emu : gpu; }

// Fails the current test on a CUDA runtime error.
void check_cuda(cudaError_t e, const char* what);

// A grow-only device allocation.
struct device_buffer {
  void* ptr = nullptr;
  size_t size = 0;
  void reserve(size_t bytes);
  ~device_buffer();
};

enum class launch_mode { stream, default_stream, graph };

struct gpu_backend {
  launch_mode mode = launch_mode::stream;
  size_t payload_offset = 0;    // byte offsets of the payload and workspace pointers,
  size_t workspace_offset = 0;  // e.g. 1 to check unaligned buffers
  codec_id decode_codec{};      // decode_topk's `codec` (default: either)
  cudaStream_t stream = nullptr;
  device_buffer in, payload, workspace, out, mask, ids;
  status* pinned_status = nullptr;

  gpu_backend();
  ~gpu_backend();
  gpu_backend(const gpu_backend&) = delete;
  gpu_backend& operator=(const gpu_backend&) = delete;

  // rng=sample: `rnd.sample_ids` (host memory, one per row) go to the device first.
  status encode(const spec& s, const std::vector<uint8_t>& x, dtype t, shape shp, randomness rnd,
                std::vector<uint8_t>& bytes);
  // lowrank with a warm start: `q` (cols x rank) goes to the device, is Q0 there and comes
  // back as the payload's Q.
  status lowrank_encode(const spec& s, const std::vector<uint8_t>& x, dtype t, shape shp, uint64_t seed,
                        std::vector<float>& q, std::vector<uint8_t>& bytes);
  // The host-side status if it is an error, else the device-side one (read_status).
  status decode(const std::vector<uint8_t>& bytes, size_t len, dtype t, shape shp, std::vector<uint8_t>& y,
                bool accumulate);
  // TopK / RandK: shared-mask encode (the status is the device-side one when the host-side
  // checks passed), and decode with or without a shared mask (decode_topk / decode_shared).
  status encode_shared(const spec& s, const std::vector<uint8_t>& x, dtype t, shape shp, uint64_t seed,
                       const std::vector<uint8_t>& mask_bytes, std::vector<uint8_t>& bytes);
  status decode_topk(const std::vector<uint8_t>& bytes, const std::vector<uint8_t>* mask_bytes, dtype t, shape shp,
                     std::vector<uint8_t>& y, bool accumulate);
  // Raw call for argument checks: encode with explicit sizes and pointers (device buffers).
  status encode_raw(const spec& s, const_tensor_view x, void* p, size_t capacity, void* ws, size_t ws_size);
  status decode_raw(const void* p, size_t len, tensor_view y, void* ws, size_t ws_size);

 private:
  // The stream the codec runs on in this mode; copies and fills go there too.
  cudaStream_t work_stream() const;
  void put(void* dst, const void* src, size_t bytes);
  void fill(void* dst, int byte, size_t bytes);
  void get(void* dst, const void* src, size_t bytes);  // and waits for it
};

}  // namespace testg

// gpu_backend: copies host vectors to the device, runs the CUDA codec in the chosen launch
// mode (own stream, legacy default stream, or captured into a CUDA graph), copies back. Every
// copy and poison fill goes on the stream the codec runs on: the own stream is non-blocking,
// so work on the legacy stream (cudaMemcpy, cudaMemset) would not be ordered before it.
#include "gpu_backend.hpp"

#include <doctest/doctest.h>

#include "pipecodec/pipecodec.cuh"

namespace testg {

void check_cuda(cudaError_t e, const char* what) {
  REQUIRE_MESSAGE(e == cudaSuccess, what << ": " << cudaGetErrorString(e));
}

void device_buffer::reserve(size_t bytes) {
  if (bytes <= size) return;
  if (ptr) check_cuda(cudaFree(ptr), "cudaFree");
  ptr = nullptr;
  size = 0;
  check_cuda(cudaMalloc(&ptr, bytes), "cudaMalloc");
  size = bytes;
}

device_buffer::~device_buffer() {
  if (ptr) (void)cudaFree(ptr);
}

gpu_backend::gpu_backend() {
  check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  check_cuda(cudaMallocHost(&pinned_status, sizeof(status)), "cudaMallocHost");
}

gpu_backend::~gpu_backend() {
  (void)cudaStreamDestroy(stream);
  (void)cudaFreeHost(pinned_status);
}

cudaStream_t gpu_backend::work_stream() const {
  return mode == launch_mode::default_stream ? cudaStream_t(0) : stream;
}

void gpu_backend::put(void* dst, const void* src, size_t bytes) {
  if (bytes > 0) check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, work_stream()), "copy in");
}

void gpu_backend::fill(void* dst, int byte, size_t bytes) {
  check_cuda(cudaMemsetAsync(dst, byte, bytes, work_stream()), "poison");
}

void gpu_backend::get(void* dst, const void* src, size_t bytes) {
  check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, work_stream()), "copy out");
  check_cuda(cudaStreamSynchronize(work_stream()), "sync");
}

namespace {
// Runs f(stream) directly, on the legacy default stream, or captured into a graph that is
// then launched; returns f's status. Synchronizes before returning.
template <class F>
status run(launch_mode mode, cudaStream_t own, F&& f) {
  status st = status::success;
  if (mode == launch_mode::graph) {
    check_cuda(cudaStreamBeginCapture(own, cudaStreamCaptureModeThreadLocal), "begin capture");
    st = f(own);
    cudaGraph_t graph = nullptr;
    check_cuda(cudaStreamEndCapture(own, &graph), "end capture");
    cudaGraphExec_t exec = nullptr;
    check_cuda(cudaGraphInstantiate(&exec, graph, 0), "graph instantiate");
    check_cuda(cudaGraphLaunch(exec, own), "graph launch");
    check_cuda(cudaStreamSynchronize(own), "sync");
    (void)cudaGraphExecDestroy(exec);
    (void)cudaGraphDestroy(graph);
    return st;
  }
  cudaStream_t s = mode == launch_mode::default_stream ? cudaStream_t(0) : own;
  st = f(s);
  check_cuda(cudaStreamSynchronize(s), "sync");
  return st;
}
}  // namespace

status gpu_backend::encode(const spec& s, const std::vector<uint8_t>& x, dtype t, shape shp, randomness rnd,
                           std::vector<uint8_t>& bytes) {
  const size_t cap = encoded_bytes(s, shp), ws = workspace_bytes(s, shp);
  REQUIRE(cap > 0);
  in.reserve(x.size() + 1);
  payload.reserve(cap + payload_offset);
  workspace.reserve(ws + workspace_offset);
  put(in.ptr, x.data(), x.size());
  fill(payload.ptr, 0xEE, cap + payload_offset);  // every byte must be written by the encoder
  uint8_t* p = static_cast<uint8_t*>(payload.ptr) + payload_offset;
  void* w = static_cast<uint8_t*>(workspace.ptr) + workspace_offset;
  if (rnd.sample_ids != nullptr) {
    ids.reserve(8 * shp.rows + 8);
    put(ids.ptr, rnd.sample_ids, 8 * shp.rows);
    rnd.sample_ids = static_cast<const uint64_t*>(ids.ptr);
  }
  size_t written = 0;
  const status st = run(mode, stream, [&](cudaStream_t str) {
    return pipecodec::cuda::encode(s, const_tensor_view{in.ptr, t, shp}, p, cap, w, ws, rnd, str, &written);
  });
  if (!ok(st)) return st;
  REQUIRE(written == cap);
  bytes.resize(cap);
  get(bytes.data(), p, cap);
  return st;
}

status gpu_backend::lowrank_encode(const spec& s, const std::vector<uint8_t>& x, dtype t, shape shp, uint64_t seed,
                                   std::vector<float>& q, std::vector<uint8_t>& bytes) {
  const size_t cap = encoded_bytes(s, shp), ws = workspace_bytes(s, shp), q_bytes = q.size() * 4;
  REQUIRE(cap > 0);
  in.reserve(x.size() + 1);
  payload.reserve(cap + payload_offset);
  workspace.reserve(ws + workspace_offset);
  mask.reserve(q_bytes + 4);  // the warm Q
  put(in.ptr, x.data(), x.size());
  put(mask.ptr, q.data(), q_bytes);
  fill(payload.ptr, 0xEE, cap + payload_offset);
  uint8_t* p = static_cast<uint8_t*>(payload.ptr) + payload_offset;
  void* w = static_cast<uint8_t*>(workspace.ptr) + workspace_offset;
  size_t written = 0;
  const tensor_view qv{mask.ptr, dtype::f32, shape(shp.cols, s.lowrank.rank)};
  const status st = run(mode, stream, [&](cudaStream_t str) {
    return pipecodec::cuda::lowrank_encode(s, const_tensor_view{in.ptr, t, shp}, qv, p, cap, w, ws, seed, str, &written);
  });
  if (!ok(st)) return st;
  REQUIRE(written == cap);
  bytes.resize(cap);
  get(bytes.data(), p, cap);
  get(q.data(), mask.ptr, q_bytes);
  return st;
}

status gpu_backend::decode(const std::vector<uint8_t>& bytes, size_t len, dtype t, shape shp,
                           std::vector<uint8_t>& y, bool accumulate) {
  const size_t ws = size_t(detail::workspace_request(detail::workspace_status_bytes));
  payload.reserve(bytes.size() + payload_offset + 1);
  workspace.reserve(ws + workspace_offset);
  out.reserve(y.size() + 1);
  uint8_t* p = static_cast<uint8_t*>(payload.ptr) + payload_offset;
  void* w = static_cast<uint8_t*>(workspace.ptr) + workspace_offset;
  put(p, bytes.data(), bytes.size());
  put(out.ptr, y.data(), y.size());
  fill(workspace.ptr, 0x7F, ws + workspace_offset);  // a stale success must not hide a missing status
  *pinned_status = status::cuda_error;
  const tensor_view v{out.ptr, t, shp};
  const status st = run(mode, stream, [&](cudaStream_t str) {
    const status s = accumulate ? pipecodec::cuda::decode_accumulate(p, len, v, w, ws, str) : pipecodec::cuda::decode(p, len, v, w, ws, str);
    if (!ok(s)) return s;
    return pipecodec::cuda::read_status(w, pinned_status, str);
  });
  if (!ok(st)) return st;
  get(y.data(), out.ptr, y.size());
  return *pinned_status;
}

status gpu_backend::encode_shared(const spec& s, const std::vector<uint8_t>& x, dtype t, shape shp, uint64_t seed,
                                  const std::vector<uint8_t>& mask_bytes, std::vector<uint8_t>& bytes) {
  const size_t cap = encoded_bytes(s, shp), ws = workspace_bytes(s, shp);
  REQUIRE(cap > 0);
  in.reserve(x.size() + 1);
  mask.reserve(mask_bytes.size() + 1);
  payload.reserve(cap + payload_offset);
  workspace.reserve(ws + workspace_offset);
  put(in.ptr, x.data(), x.size());
  put(mask.ptr, mask_bytes.data(), mask_bytes.size());
  fill(payload.ptr, 0xEE, cap + payload_offset);
  fill(workspace.ptr, 0x7F, ws + workspace_offset);
  uint8_t* p = static_cast<uint8_t*>(payload.ptr) + payload_offset;
  void* w = static_cast<uint8_t*>(workspace.ptr) + workspace_offset;
  size_t written = 0;
  *pinned_status = status::cuda_error;
  const status st = run(mode, stream, [&](cudaStream_t str) {
    const status e = pipecodec::cuda::encode_shared(s, const_tensor_view{in.ptr, t, shp}, mask.ptr, mask_bytes.size(),
                                                    p, cap, w, ws, seed, str, &written);
    if (!ok(e)) return e;
    return pipecodec::cuda::read_status(w, pinned_status, str);
  });
  if (!ok(st)) return st;
  REQUIRE(written == cap);
  bytes.resize(cap);
  get(bytes.data(), p, cap);
  return *pinned_status;
}

status gpu_backend::decode_topk(const std::vector<uint8_t>& bytes, const std::vector<uint8_t>* mask_bytes, dtype t,
                                shape shp, std::vector<uint8_t>& y, bool accumulate) {
  const size_t ws = size_t(detail::workspace_request(detail::topk_decode_workspace(shp.size(), mask_bytes != nullptr)));
  payload.reserve(bytes.size() + payload_offset + 1);
  workspace.reserve(ws + workspace_offset);
  out.reserve(y.size() + 1);
  mask.reserve((mask_bytes ? mask_bytes->size() : 0) + 1);
  uint8_t* p = static_cast<uint8_t*>(payload.ptr) + payload_offset;
  void* w = static_cast<uint8_t*>(workspace.ptr) + workspace_offset;
  put(p, bytes.data(), bytes.size());
  if (mask_bytes) put(mask.ptr, mask_bytes->data(), mask_bytes->size());
  put(out.ptr, y.data(), y.size());
  fill(workspace.ptr, 0x7F, ws + workspace_offset);
  *pinned_status = status::cuda_error;
  const tensor_view v{out.ptr, t, shp};
  const status st = run(mode, stream, [&](cudaStream_t str) {
    status s = status::success;
    if (mask_bytes) {
      const size_t ml = mask_bytes->size();
      s = accumulate ? pipecodec::cuda::decode_shared_accumulate(p, bytes.size(), mask.ptr, ml, v, w, ws, str)
                     : pipecodec::cuda::decode_shared(p, bytes.size(), mask.ptr, ml, v, w, ws, str);
    } else {
      s = accumulate ? pipecodec::cuda::decode_topk_accumulate(p, bytes.size(), v, w, ws, str, decode_codec)
                     : pipecodec::cuda::decode_topk(p, bytes.size(), v, w, ws, str, decode_codec);
    }
    if (!ok(s)) return s;
    return pipecodec::cuda::read_status(w, pinned_status, str);
  });
  if (!ok(st)) return st;
  get(y.data(), out.ptr, y.size());
  return *pinned_status;
}

status gpu_backend::encode_raw(const spec& s, const_tensor_view x, void* p, size_t capacity, void* ws,
                               size_t ws_size) {
  const status st = pipecodec::cuda::encode(s, x, p, capacity, ws, ws_size, 0, stream);
  check_cuda(cudaStreamSynchronize(stream), "sync");
  return st;
}

status gpu_backend::decode_raw(const void* p, size_t len, tensor_view y, void* ws, size_t ws_size) {
  const status st = pipecodec::cuda::decode(p, len, y, ws, ws_size, stream);
  check_cuda(cudaStreamSynchronize(stream), "sync");
  return st;
}

}  // namespace testg

// CUDA k-bit quantization throughput against a device-to-device copy of the same traffic,
// measured in the same run. For each case: warm-up, then `reps` timed runs (CUDA events),
// each preceded by writing a buffer of twice the L2 size (cold L2); the reported time is
// the median. Counters: GB/s = (bytes read + bytes written) / time; copy_GB/s for a copy
// moving the same traffic; ratio = GB/s / copy_GB/s.
//   PIPECODEC_BENCH_LOG2N (default 28)   elements = 2^LOG2N
//   PIPECODEC_BENCH_REPS  (default 15)   timed runs per case
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "pipecodec/pipecodec.cuh"

namespace pc = pipecodec;

namespace {

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : fallback;
}

bool check(cudaError_t e, benchmark::State& st, const char* what) {
  if (e == cudaSuccess) return true;
  st.SkipWithError((std::string(what) + ": " + cudaGetErrorString(e)).c_str());
  return false;
}

// Device buffers shared by every case, sized for the largest (fp32 input and output).
struct buffers {
  uint64_t n = 0;
  void *in = nullptr, *payload = nullptr, *ws = nullptr, *out = nullptr, *flush = nullptr;
  size_t payload_bytes = 0, ws_bytes = 0, flush_bytes = 0;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  bool ready = false;
};

buffers& bufs() {
  static buffers b;
  if (b.ready) return b;
  b.n = uint64_t(1) << env_int("PIPECODEC_BENCH_LOG2N", 28);
  int dev = 0, l2 = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev);
  b.flush_bytes = std::max<size_t>(size_t(2) * size_t(l2), size_t(64) << 20);
  pc::spec s;
  s.codec = pc::codec_id::quant;
  s.quant.bits = 8;
  s.quant.group_size = 128;
  b.payload_bytes = pc::encoded_bytes(s, pc::shape(b.n));
  b.ws_bytes = pc::workspace_bytes(s, pc::shape(b.n));
  cudaMalloc(&b.in, b.n * 4);
  cudaMalloc(&b.out, b.n * 4);
  cudaMalloc(&b.payload, b.payload_bytes);
  cudaMalloc(&b.ws, b.ws_bytes);
  cudaMalloc(&b.flush, b.flush_bytes);
  cudaStreamCreateWithFlags(&b.stream, cudaStreamNonBlocking);
  cudaEventCreate(&b.start);
  cudaEventCreate(&b.stop);
  // Input: a smooth, sign-mixed ramp, written as bytes so any dtype reads finite values.
  cudaMemset(b.in, 0x3C, b.n * 4);
  cudaMemset(b.out, 0, b.n * 4);
  b.ready = cudaDeviceSynchronize() == cudaSuccess;
  return b;
}

// Activation-like input: a hash of the index mapped to [-4, 4), stored as `type`.
__global__ void fill_kernel(void* x, uint64_t n, pc::dtype type) {
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += uint64_t(gridDim.x) * blockDim.x) {
    const uint32_t h = uint32_t(i * 2654435761u) ^ uint32_t(i >> 32);
    const float v = float(int32_t(h >> 8) - (1 << 23)) * 4.76837158203125e-7F;
    if (type == pc::dtype::f32) static_cast<float*>(x)[i] = v;
    else static_cast<uint16_t*>(x)[i] = pc::detail::f32_to_bf16(v);
  }
}

// Median over reps of the time of op(), each run after an L2 flush.
template <class Op>
bool median_ms(benchmark::State& st, Op&& op, int reps, float& ms) {
  buffers& b = bufs();
  std::vector<float> t;
  for (int w = 0; w < 2; ++w)
    if (!op()) return false;  // warm-up
  for (int r = 0; r < reps; ++r) {
    if (!check(cudaMemsetAsync(b.flush, r & 0xFF, b.flush_bytes, b.stream), st, "flush")) return false;
    cudaEventRecord(b.start, b.stream);
    if (!op()) return false;
    cudaEventRecord(b.stop, b.stream);
    if (!check(cudaEventSynchronize(b.stop), st, "sync")) return false;
    float e = 0;
    cudaEventElapsedTime(&e, b.start, b.stop);
    t.push_back(e);
  }
  std::sort(t.begin(), t.end());
  ms = t[t.size() / 2];
  return true;
}

void bench_quant(benchmark::State& st, pc::dtype type, uint32_t bits, pc::rounding round, bool decode) {
  buffers& b = bufs();
  if (!b.ready) {
    st.SkipWithError("device setup failed");
    return;
  }
  const int reps = std::max(1, env_int("PIPECODEC_BENCH_REPS", 15));
  pc::spec s;
  s.codec = pc::codec_id::quant;
  s.quant.bits = uint8_t(bits);
  s.quant.group_size = 128;
  s.quant.round = round;
  const pc::shape shp(b.n);
  const size_t cap = pc::encoded_bytes(s, shp), ws = pc::workspace_bytes(s, shp);
  fill_kernel<<<1024, 256, 0, b.stream>>>(b.in, b.n, type);
  const pc::const_tensor_view in{b.in, type, shp};
  const pc::tensor_view out{b.out, type, shp};
  auto encode = [&] { return pc::ok(pc::cuda::encode(s, in, b.payload, cap, b.ws, ws, 7, b.stream)); };
  auto dec = [&] { return pc::ok(pc::cuda::decode(b.payload, cap, out, b.ws, ws, b.stream)); };
  if (decode && !encode()) {
    st.SkipWithError("encode failed");
    return;
  }
  const double traffic = double(b.n) * pc::dtype_bytes(type) + double(cap);
  const size_t copy_bytes = size_t(traffic / 2);
  auto copy = [&] {
    return cudaMemcpyAsync(b.out, b.in, copy_bytes, cudaMemcpyDeviceToDevice, b.stream) == cudaSuccess;
  };
  float codec_ms = 0, copy_ms = 0;
  for (auto _ : st) {
    if (!median_ms(st, decode ? std::function<bool()>(dec) : std::function<bool()>(encode), reps, codec_ms) ||
        !median_ms(st, copy, reps, copy_ms)) {
      st.SkipWithError("a CUDA call failed");
      return;
    }
    st.SetIterationTime(codec_ms / 1e3);
  }
  if (decode) {  // the decode must have been accepted on the device
    pc::status dst = pc::status::cuda_error;
    (void)pc::cuda::read_status(b.ws, &dst, b.stream);
    cudaStreamSynchronize(b.stream);
    if (!pc::ok(dst)) st.SkipWithError(pc::to_string(dst));
  }
  const double gbs = traffic / (codec_ms * 1e6), copy_gbs = 2.0 * double(copy_bytes) / (copy_ms * 1e6);
  st.counters["GB/s"] = gbs;
  st.counters["copy_GB/s"] = copy_gbs;
  st.counters["ratio"] = gbs / copy_gbs;
  st.counters["bytes"] = traffic;
}

}  // namespace

int main(int argc, char** argv) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("cuda_quant bench: no CUDA device, nothing measured\n");
    return 0;
  }
  for (bool decode : {false, true})
    for (pc::dtype t : {pc::dtype::f32, pc::dtype::bf16})
      for (uint32_t bits : {2u, 4u, 8u})
        for (pc::rounding r : {pc::rounding::nearest, pc::rounding::stochastic}) {
          if (decode && r == pc::rounding::stochastic) continue;  // decoding does not depend on rounding
          const std::string name = std::string(decode ? "decode" : "encode") + "/" + pc::to_string(t) + "/b" +
                                   std::to_string(bits) + "/g128/" + (r == pc::rounding::nearest ? "nearest" : "stochastic");
          benchmark::RegisterBenchmark(name.c_str(), bench_quant, t, bits, r, decode)
              ->UseManualTime()
              ->Iterations(1)
              ->Unit(benchmark::kMicrosecond);
        }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

// CUDA k-bit quantization throughput against a device-to-device copy of the same traffic,
// measured in the same run. For each case: warm-up, then `reps` timed runs (CUDA events),
// each preceded by writing a buffer of twice the L2 size (cold L2); the reported time is
// the median. Counters: GB/s = (bytes read + bytes written) / time; copy_GB/s for a copy
// moving the same traffic; ratio = GB/s / copy_GB/s.
//   PIPECODEC_BENCH_LOG2N (default 28)   elements = 2^LOG2N
//   PIPECODEC_BENCH_REPS  (default 15)   timed runs per case
#include <functional>
#include <string>

#include "cuda_timing.cuh"
#include "pipecodec/pipecodec.cuh"

namespace pc = pipecodec;
using namespace cudabench;

namespace {

// Device buffers shared by every case, sized for the largest (fp32 input and output).
struct buffers {
  uint64_t n = 0;
  void *in = nullptr, *payload = nullptr, *ws = nullptr, *out = nullptr;
  bool ready = false;
};

buffers& bufs() {
  static buffers b;
  if (b.ready) return b;
  b.n = uint64_t(1) << env_int("PIPECODEC_BENCH_LOG2N", 28);
  pc::spec s;
  s.codec = pc::codec_id::quant;
  s.quant.bits = 8;
  s.quant.group_size = 128;
  cudaMalloc(&b.in, b.n * 4);
  cudaMalloc(&b.out, b.n * 4);
  cudaMalloc(&b.payload, pc::encoded_bytes(s, pc::shape(b.n)));
  cudaMalloc(&b.ws, pc::workspace_bytes(s, pc::shape(b.n)));
  cudaMemset(b.out, 0, b.n * 4);
  b.ready = timer().ready && cudaDeviceSynchronize() == cudaSuccess;
  return b;
}

void bench_quant(benchmark::State& st, pc::dtype type, uint32_t bits, pc::rounding round, bool decode) {
  buffers& b = bufs();
  if (!b.ready) {
    st.SkipWithError("device setup failed");
    return;
  }
  pc::spec s;
  s.codec = pc::codec_id::quant;
  s.quant.bits = uint8_t(bits);
  s.quant.group_size = 128;
  s.quant.round = round;
  const pc::shape shp(b.n);
  const size_t cap = pc::encoded_bytes(s, shp), ws = pc::workspace_bytes(s, shp);
  fill(b.in, b.n, type);
  cudaStream_t stream = timer().stream;
  const pc::const_tensor_view in{b.in, type, shp};
  const pc::tensor_view out{b.out, type, shp};
  auto encode = [&] { return pc::ok(pc::cuda::encode(s, in, b.payload, cap, b.ws, ws, 7, stream)); };
  auto dec = [&] { return pc::ok(pc::cuda::decode(b.payload, cap, out, b.ws, ws, stream)); };
  if (decode && !encode()) {
    st.SkipWithError("encode failed");
    return;
  }
  const double traffic = double(b.n) * pc::dtype_bytes(type) + double(cap);
  if (!report(st, decode ? std::function<bool()>(dec) : std::function<bool()>(encode), traffic, b.in, b.out)) return;
  if (decode) {  // the decode must have been accepted on the device
    pc::status dst = pc::status::cuda_error;
    (void)pc::cuda::read_status(b.ws, &dst, stream);
    cudaStreamSynchronize(stream);
    if (!pc::ok(dst)) st.SkipWithError(pc::to_string(dst));
  }
}

}  // namespace

int main(int argc, char** argv) {
  for (bool decode : {false, true})
    for (pc::dtype t : {pc::dtype::f32, pc::dtype::bf16})
      for (uint32_t bits : {2u, 4u, 8u})
        for (pc::rounding r : {pc::rounding::nearest, pc::rounding::stochastic}) {
          if (decode && r == pc::rounding::stochastic) continue;  // decoding does not depend on rounding
          add(std::string(decode ? "decode" : "encode") + "/" + pc::to_string(t) + "/b" + std::to_string(bits) +
                  "/g128/" + (r == pc::rounding::nearest ? "nearest" : "stochastic"),
              bench_quant, t, bits, r, decode);
        }
  return run(argc, argv, "cuda_quant bench");
}

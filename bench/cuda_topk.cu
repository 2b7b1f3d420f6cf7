// CUDA TopK encode and decode time against one device read of the input, measured in the
// same run.
// Cases (issue 4): n = 2^LOG2N fp32 and bf16, k = 0.1 / 1 / 10 %, scope=tensor (the
// multi-block select); 4096 x 16384 fp32 and bf16, scope=row, k = 1 / 10 %. For each case:
// warm-up, then `reps` timed runs (CUDA events), each preceded by writing a buffer of twice
// the L2 size (cold L2); the reported time is the median. Counters:
//   read_us   median time of a kernel that reads the input once (vector loads, one sum)
//   x_read    encode time / read time (the issue's target: <= 3)
//   decode_x_read  dense decode_topk of that payload / read time (the whole-grid decode for
//             scope=tensor; the decode is checked to have accepted the payload)
//   GB/s      input bytes / encode time
// Since 2026-12-02 also: RandK (tensor scope; its decode re-selects on the whole grid) and 8
// rows of 2^(LOG2N - 3) (u32 and bitmap positions), whose decode runs on the whole grid.
//   PIPECODEC_BENCH_LOG2N (default 28)   tensor-scope elements = 2^LOG2N
//   PIPECODEC_BENCH_REPS  (default 15)   timed runs per case
#include <string>

#include "cuda_timing.cuh"
#include "pipecodec/pipecodec.cuh"

namespace pc = pipecodec;
using namespace cudabench;

namespace {

// Device buffers shared by every case, grown to the largest need.
struct buffers {
  void *in = nullptr, *out = nullptr, *payload = nullptr, *ws = nullptr, *sink = nullptr;
  size_t in_bytes = 0, out_bytes = 0, payload_bytes = 0, ws_bytes = 0;
  bool ready = false;
};

buffers& bufs() {
  static buffers b;
  if (b.ready) return b;
  cudaMalloc(&b.sink, 1 << 20);
  b.ready = timer().ready && cudaDeviceSynchronize() == cudaSuccess;
  return b;
}

bool grow(void*& p, size_t& have, size_t want) {
  if (want <= have) return true;
  if (p) cudaFree(p);
  p = nullptr;
  have = 0;
  if (cudaMalloc(&p, want) != cudaSuccess) return false;
  have = want;
  return true;
}

// One read of `words` 16-byte words: xor-reduced per thread, one store per block so the
// loads cannot be dropped.
__global__ void read_kernel(const uint4* x, uint64_t words, uint32_t* sink) {
  uint32_t acc = 0;
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < words; i += uint64_t(gridDim.x) * blockDim.x) {
    const uint4 v = x[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9E3779B9u) sink[blockIdx.x] = acc;  // practically never taken, but not provably
}

void bench_topk(benchmark::State& st, pc::dtype type, pc::shape shp, std::string text) {
  buffers& b = bufs();
  pc::spec s;
  if (!b.ready || !pc::ok(pc::parse_spec(text, s))) {
    st.SkipWithError("setup failed");
    return;
  }
  const uint64_t n = shp.size();
  const size_t cap = pc::encoded_bytes(s, shp), ws = pc::workspace_bytes(s, shp);
  const size_t in_bytes = size_t(n) * pc::dtype_bytes(type);
  if (!grow(b.in, b.in_bytes, in_bytes) || !grow(b.out, b.out_bytes, in_bytes) ||
      !grow(b.payload, b.payload_bytes, cap) || !grow(b.ws, b.ws_bytes, ws)) {
    st.SkipWithError("cudaMalloc failed");
    return;
  }
  fill(b.in, n, type);
  cudaStream_t stream = timer().stream;
  const pc::const_tensor_view in{b.in, type, shp};
  const pc::tensor_view out{b.out, type, shp};
  auto encode = [&] { return pc::ok(pc::cuda::encode(s, in, b.payload, cap, b.ws, ws, 7, stream)); };
  auto decode = [&] { return pc::ok(pc::cuda::decode_topk(b.payload, cap, out, b.ws, ws, stream)); };
  auto read = [&] {
    pc::cuda::detail::launch<read_kernel>(2048, 256, 0, stream, static_cast<const uint4*>(b.in), in_bytes / 16,
                                          static_cast<uint32_t*>(b.sink));
    return cudaGetLastError() == cudaSuccess;
  };
  float enc_ms = 0, dec_ms = 0, read_ms = 0;
  for (auto _ : st) {
    if (!median_ms(encode, enc_ms) || !median_ms(decode, dec_ms) || !median_ms(read, read_ms)) {
      st.SkipWithError("a CUDA call failed");
      return;
    }
    st.SetIterationTime(enc_ms / 1e3);
  }
  pc::status decoded = pc::status::cuda_error;
  if (!pc::ok(pc::cuda::read_status(b.ws, &decoded, stream)) || cudaStreamSynchronize(stream) != cudaSuccess ||
      !pc::ok(decoded)) {
    st.SkipWithError("the decode rejected the payload");
    return;
  }
  st.counters["read_us"] = read_ms * 1e3;
  st.counters["x_read"] = enc_ms / read_ms;
  st.counters["decode_x_read"] = dec_ms / read_ms;
  st.counters["GB/s"] = double(in_bytes) / (enc_ms * 1e6);
  st.counters["payload_bytes"] = double(cap);
}

}  // namespace

int main(int argc, char** argv) {
  const int log2n = env_int("PIPECODEC_BENCH_LOG2N", 28);
  const pc::shape tensor(uint64_t(1) << log2n), rows(4096, 16384);
  for (pc::dtype t : {pc::dtype::f32, pc::dtype::bf16}) {
    const std::string values = t == pc::dtype::f32 ? "fp32" : "bf16";
    for (const char* ratio : {"0.001", "0.01", "0.1"})
      add("tensor/2^" + std::to_string(log2n) + "/" + pc::to_string(t) + "/k=" + ratio, bench_topk, t, tensor,
          std::string("topk:ratio=") + ratio + ",scope=tensor,values=" + values);
    for (const char* ratio : {"0.01", "0.1"})
      add("row/4096x16384/" + std::string(pc::to_string(t)) + "/k=" + ratio, bench_topk, t, rows,
          std::string("topk:ratio=") + ratio + ",scope=row,values=" + values);
  }
  // The paths that left most of a GPU idle until 2026-12-02: a RandK decode's re-selection of a
  // large tensor, and 8 very long rows (selected, validated and scattered by the whole grid, row
  // after row). bitmap: the grid's chunk-count ranks.
  const pc::shape few_rows(8, uint64_t(1) << (log2n - 3));
  add("randk-tensor/2^" + std::to_string(log2n) + "/f32/k=0.01", bench_topk, pc::dtype::f32, tensor,
      std::string("randk:ratio=0.01,scope=tensor"));
  for (const char* index : {"u32", "bitmap"})
    add("few-rows/8x2^" + std::to_string(log2n - 3) + "/f32/k=0.01/" + index, bench_topk, pc::dtype::f32, few_rows,
        std::string("topk:ratio=0.01,scope=row,index=") + index);
  return run(argc, argv, "cuda_topk bench");
}

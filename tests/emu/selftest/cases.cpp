// The self-test's cases (cases.hpp): kernels from kernels.hpp, launched the way the library
// launches its own, with the host's expectation for each output.
#include "cases.hpp"

#include <cstdio>
#include <functional>

#include "kernels.hpp"

namespace selftest {

namespace {

using pipecodec::cuda::detail::launch;

// n device words (poisoned by the emulator), freed with the object.
struct words {
  uint32_t* p = nullptr;
  uint32_t n;
  explicit words(uint32_t count) : n(count) { cudaMalloc(&p, n * sizeof(uint32_t)); }
  ~words() { cudaFree(p); }
  std::vector<uint32_t> get() const {
    std::vector<uint32_t> v(n);
    cudaMemcpy(v.data(), p, n * sizeof(uint32_t), cudaMemcpyDeviceToHost);
    return v;
  }
};

uint64_t hash(const std::vector<uint32_t>& v) {
  uint64_t h = 1469598103934665603ull;
  for (uint32_t x : v) h = (h ^ x) * 1099511628211ull;
  return h;
}

// The output against want(i) for the indices `check` accepts.
outcome compare(const std::vector<uint32_t>& got, const std::function<uint32_t(uint32_t)>& want,
                const std::function<bool(uint32_t)>& check = [](uint32_t) { return true; }) {
  outcome o;
  o.hash = hash(got);
  o.correct = true;
  for (uint32_t i = 0; i < got.size(); ++i)
    if (check(i) && got[i] != want(i)) o.correct = false;
  return o;
}

outcome api_failure(cudaError_t e) {
  outcome o;
  o.api_error = cudaGetErrorName(e);
  return o;
}

outcome missing_barrier(bool broken) {
  words out(threads);
  if (broken) launch<neighbour_kernel<false>>(1, threads, 0, nullptr, out.p);
  else launch<neighbour_kernel<true>>(1, threads, 0, nullptr, out.p);
  return compare(out.get(), [](uint32_t t) { return (t + 1) % threads * 7 + 1; });
}

outcome block_race(bool broken) {
  words out(threads);
  if (broken) launch<one_word_kernel<true>>(1, threads, 0, nullptr, out.p);
  else launch<one_word_kernel<false>>(1, threads, 0, nullptr, out.p);
  return compare(out.get(), [](uint32_t) { return 0u; });
}

outcome exited_lane(bool broken) {
  words out(threads);
  cudaMemset(out.p, 0, threads * sizeof(uint32_t));  // lane 7 writes nothing
  if (broken) launch<exited_lane_kernel<true>>(1, threads, 0, nullptr, out.p);
  else launch<exited_lane_kernel<false>>(1, threads, 0, nullptr, out.p);
  return compare(
      out.get(),
      [](uint32_t t) {
        const uint32_t lane = t % 32, src = lane == 6 ? 8 : (lane + 1) % 32;
        return (t - lane + src) * 3;
      },
      [](uint32_t t) { return t % 32 != 7; });
}

outcome global_oob(bool broken) {
  words out(threads);
  cudaMemset(out.p, 0, threads * sizeof(uint32_t));
  launch<global_write_kernel>(1, 32, 0, nullptr, out.p, broken ? threads : threads - 1);
  return compare(out.get(), [](uint32_t i) { return i == threads - 1 ? 1u : 0u; });
}

outcome misaligned_vector(bool broken) {
  const uint32_t offset = broken ? 1 : 4;
  words in(threads * 4 + 4), out(threads);
  std::vector<uint32_t> x(in.n);
  for (uint32_t i = 0; i < in.n; ++i) x[i] = i;
  cudaMemcpy(in.p, x.data(), in.n * sizeof(uint32_t), cudaMemcpyHostToDevice);
  launch<vector_load_kernel>(1, threads, 0, nullptr, in.p, offset, out.p);
  return compare(out.get(), [offset](uint32_t i) { return 4 * (offset + 4 * i) + 6; });
}

outcome shared_oob(bool broken) {
  words out(threads);
  launch<shared_write_kernel>(1, threads, 0, nullptr, out.p, broken ? threads : threads - 1);
  return compare(out.get(), [](uint32_t i) { return i == threads - 1 ? 5u : i; });
}

// A cudaMemset on the legacy stream, then a kernel that reads the memory on a stream that
// is ordered after it (created blocking) or not (cudaStreamNonBlocking).
outcome unordered_streams(bool broken) {
  const uint32_t n = 4096;
  words in(n), out(n);
  cudaStream_t s = nullptr;
  cudaStreamCreateWithFlags(&s, broken ? cudaStreamNonBlocking : cudaStreamDefault);
  cudaMemset(in.p, 1, n * sizeof(uint32_t));
  launch<copy_kernel>(4, threads, 0, s, in.p, out.p, n);
  cudaStreamSynchronize(s);
  const outcome o = compare(out.get(), [](uint32_t) { return 0x01010101u; });
  cudaDeviceSynchronize();
  cudaStreamDestroy(s);
  return o;
}

outcome barrier_sites(bool broken) {
  words out(threads);
  if (broken) launch<barrier_sites_kernel<true>>(1, threads, 0, nullptr, out.p);
  else launch<barrier_sites_kernel<false>>(1, threads, 0, nullptr, out.p);
  return compare(out.get(), [](uint32_t t) { return t; });
}

outcome shuffle_sites(bool broken) {
  words out(threads);
  if (broken) launch<shuffle_sites_kernel<true>>(1, threads, 0, nullptr, out.p);
  else launch<shuffle_sites_kernel<false>>(1, threads, 0, nullptr, out.p);
  return compare(out.get(), [](uint32_t) { return 0u; });
}

outcome shuffle_source(bool broken) {
  words out(threads);
  if (broken) launch<shuffle_source_kernel<true>>(1, threads, 0, nullptr, out.p);
  else launch<shuffle_source_kernel<false>>(1, threads, 0, nullptr, out.p);
  return compare(out.get(), [](uint32_t t) { return t % 32 < 16 ? 50u : 0u; });
}

outcome uninitialised(bool broken) {
  words out(threads);
  if (broken) launch<uninitialised_kernel<true>>(1, threads, 0, nullptr, out.p);
  else launch<uninitialised_kernel<false>>(1, threads, 0, nullptr, out.p);
  return compare(out.get(), [](uint32_t) { return 3u; });
}

outcome rotate(bool) {
  words out(threads);
  launch<rotate_kernel>(1, threads, 0, nullptr, out.p);
  return compare(out.get(), [](uint32_t t) { return t - t % 32 + (t % 32 + 3) % 32; });
}

outcome cub_threads(bool broken) {
  words out(1);
  launch<block_sum_kernel>(1, broken ? 2 * threads : threads, 0, nullptr, out.p);
  return compare(out.get(), [](uint32_t) { return threads * (threads - 1) / 2; });
}

outcome block_too_large(bool broken) {
  const uint32_t n = 1024;
  words in(n), out(n);
  cudaMemset(in.p, 2, n * sizeof(uint32_t));
  launch<copy_kernel>(1, broken ? 1025 : 1024, 0, nullptr, in.p, out.p, n);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return api_failure(e);
  return compare(out.get(), [](uint32_t) { return 0x02020202u; });
}

outcome dynamic_shared(bool broken) {
  const uint32_t words_needed = (64 << 10) / 4;  // 64 KiB: above the 48 KiB default
  words out(1);
  if (!broken)
    cudaFuncSetAttribute(dynamic_shared_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 << 10);
  launch<dynamic_shared_kernel>(1, threads, size_t(64) << 10, nullptr, out.p, words_needed);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return api_failure(e);
  return compare(out.get(), [&](uint32_t) { return words_needed * (words_needed - 1) / 2; });
}

// Work captured into a graph: a synchronization inside the capture is illegal.
outcome capture_sync(bool broken) {
  const uint32_t n = 512;
  words in(n), out(n);
  cudaStream_t s = nullptr;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cudaMemsetAsync(in.p, 3, n * sizeof(uint32_t), s);
  cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
  launch<copy_kernel>(2, threads, 0, s, in.p, out.p, n);
  const cudaError_t sync = broken ? cudaStreamSynchronize(s) : cudaSuccess;
  cudaGraph_t g = nullptr;
  const cudaError_t end = cudaStreamEndCapture(s, &g);
  outcome o;
  if (sync != cudaSuccess || end != cudaSuccess) {
    o = api_failure(sync != cudaSuccess ? sync : end);
  } else {
    cudaGraphExec_t exec = nullptr;
    cudaGraphInstantiate(&exec, g, 0);
    cudaGraphLaunch(exec, s);
    cudaStreamSynchronize(s);
    o = compare(out.get(), [](uint32_t) { return 0x03030303u; });
    cudaGraphExecDestroy(exec);
  }
  cudaGraphDestroy(g);
  cudaStreamDestroy(s);
  return o;
}

}  // namespace

const std::vector<test_case>& cases() {
  static const std::vector<test_case> all = {
      {"missing-barrier", "reads a neighbour's shared word with no __syncthreads after the writes", results | tsan,
       "", missing_barrier},
      {"shuffle-exited-lane", "__shfl_sync with a full mask after lane 7 returned", emulator, "exited",
       exited_lane},
      {"block-race", "every thread writes the same shared word between two barriers", results | tsan, "", block_race},
      {"global-oob-write", "writes one word past the end of a cudaMalloc buffer", asan, "heap-buffer-overflow",
       global_oob},
      {"shared-oob-write", "writes one word past the end of a __shared__ array", asan, "heap-buffer-overflow",
       shared_oob},
      {"misaligned-vector-load", "loads a uint4 from an address 4 bytes past 16-byte alignment", ubsan,
       "misaligned address", misaligned_vector},
      {"unordered-streams", "a kernel on a non-blocking stream reads what a legacy-stream cudaMemset writes",
       results | tsan, "", unordered_streams},
      {"barrier-divergence", "half the block at one __syncthreads, half at another", emulator, "barrier divergence",
       barrier_sites},
      {"warp-divergence", "half a warp at one __shfl_sync, half at another", emulator, "warp divergence",
       shuffle_sites},
      {"shuffle-outside-mask", "a half-warp shuffle reads lane 20, outside its mask", emulator,
       "which its mask 0x0000ffff does not name", shuffle_source},
      {"uninitialised-shared", "reads shared memory no thread wrote", results, "", uninitialised},
      {"cub-thread-count", "cub::BlockReduce for 256 threads in a 512-thread block", emulator,
       "instantiated for 256 threads", cub_threads},
      {"block-too-large", "a launch of 1025 threads per block", api, "cudaErrorInvalidConfiguration",
       block_too_large},
      {"dynamic-shared-limit", "64 KiB of dynamic shared memory without cudaFuncSetAttribute", api,
       "cudaErrorInvalidValue", dynamic_shared},
      {"capture-sync", "cudaStreamSynchronize on a stream being captured", api, "cudaErrorStreamCaptureUnsupported",
       capture_sync},
      {"shuffle-reads-before-writes", "(behaviour) three rotations by __shfl_sync read every lane's old value", 0, "",
       rotate},
  };
  return all;
}

}  // namespace selftest

// Host k-bit quantization throughput for n = 2^24 fp32 elements, group 128.
// Every codec iteration is paired with a memcpy of the same input bytes, timed in the same
// loop, so `x_memcpy` (codec time / memcpy time) survives a noisy, shared machine.
// Targets (one core): nearest encode <= 2x, decode <= 1.5x, stochastic encode <= 4x memcpy.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstring>
#include <vector>

#include "../tests/common/data.hpp"
#include "pipecodec/pipecodec.hpp"

namespace pc = pipecodec;

namespace {

constexpr uint64_t n = uint64_t(1) << 24;

const std::vector<float>& input() {
  static const std::vector<float> x = testdata::activations(n, 1);
  return x;
}

pc::spec quant_spec(int64_t bits, pc::rounding r) {
  pc::spec s;
  s.codec = pc::codec_id::quant;
  s.quant.bits = uint8_t(bits);
  s.quant.group_size = 128;
  s.quant.round = r;
  s.quant.scale_dtype = pc::dtype::f16;
  return s;
}

// Runs `op` once per iteration (timed) and a memcpy of the input bytes (timed separately).
template <class Op>
void timed_against_memcpy(benchmark::State& state, Op&& op) {
  const size_t bytes = n * sizeof(float);
  std::vector<char> a(bytes, 1), b(bytes, 2);
  double copy_s = 0, op_s = 0;
  for (auto _ : state) {
    state.PauseTiming();
    const auto t0 = std::chrono::steady_clock::now();
    std::memcpy(b.data(), a.data(), bytes);
    benchmark::ClobberMemory();
    copy_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    state.ResumeTiming();
    const auto t1 = std::chrono::steady_clock::now();
    op();
    benchmark::ClobberMemory();
    op_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(bytes));
  state.counters["x_memcpy"] = op_s / copy_s;
  state.counters["memcpy_GBps"] = double(state.iterations()) * double(bytes) / copy_s / 1e9;
}

void encode(benchmark::State& state, pc::rounding r) {
  const pc::spec s = quant_spec(state.range(0), r);
  const pc::shape shp(n);
  std::vector<uint8_t> payload(pc::encoded_bytes(s, shp));
  const pc::const_tensor_view in{input().data(), pc::dtype::f32, shp};
  timed_against_memcpy(state, [&] {
    if (!pc::ok(pc::host::encode(s, in, payload.data(), payload.size(), nullptr, 0, 7)))
      state.SkipWithError("encode failed");
  });
}

void decode(benchmark::State& state, pc::rounding r) {
  const pc::spec s = quant_spec(state.range(0), r);
  const pc::shape shp(n);
  std::vector<uint8_t> payload(pc::encoded_bytes(s, shp));
  std::vector<float> out(n);
  if (!pc::ok(pc::host::encode(s, pc::const_tensor_view{input().data(), pc::dtype::f32, shp},
                               payload.data(), payload.size(), nullptr, 0, 7)))
    state.SkipWithError("encode failed");
  timed_against_memcpy(state, [&] {
    if (!pc::ok(pc::host::decode(payload.data(), payload.size(), pc::tensor_view{out.data(), pc::dtype::f32, shp})))
      state.SkipWithError("decode failed");
  });
}

void encode_nearest(benchmark::State& st) { encode(st, pc::rounding::nearest); }
void encode_stochastic(benchmark::State& st) { encode(st, pc::rounding::stochastic); }
void decode_nearest(benchmark::State& st) { decode(st, pc::rounding::nearest); }

// Sanity row: a second memcpy as the "codec" should read x_memcpy ~ 1.
void memcpy_input(benchmark::State& state) {
  std::vector<char> a(n * sizeof(float), 3), b(n * sizeof(float), 4);
  timed_against_memcpy(state, [&] { std::memcpy(b.data(), a.data(), a.size()); });
}

}  // namespace

BENCHMARK(memcpy_input)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(encode_nearest)->ArgName("bits")->Arg(2)->Arg(4)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(encode_stochastic)->ArgName("bits")->Arg(2)->Arg(4)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(decode_nearest)->ArgName("bits")->Arg(2)->Arg(4)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_MAIN();

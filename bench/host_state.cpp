// Host benchmarks of the stateful schemes at n = 2^24 elements with 4-bit quantization
// (group 128, nearest): EF and EF21 sender steps, EF21 receiver step (g alone, g and an fp32
// output), AQ-SGD sender and receiver steps on a batch of 4096 samples x 4096 features whose
// samples are all seen (steady-state delta path). Each reports bytes_moved, the logical
// traffic of the scheme (inputs read + outputs written: x, state read, state written,
// payload), and copy_ratio: the time a memcpy moving the same number of bytes (bytes_moved / 2
// copied) took in the same run divided by the scheme's time, each the best of 20 (1.0 = copy
// speed).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "pipecodec/host/aqsgd.hpp"
#include "pipecodec/host/ef.hpp"
#include "pipecodec/host/ef21.hpp"
#include "pipecodec/policy/spec_string.hpp"

namespace pc = pipecodec;

namespace {

constexpr uint64_t kRows = 4096, kCols = 4096, kN = kRows * kCols;  // 2^24

pc::spec quant4() {
  pc::spec s;
  (void)pc::parse_spec("quant:bits=4,group=128", s);
  return s;
}

std::vector<float> input(uint64_t seed) {
  std::vector<float> v(kN);
  uint32_t x = uint32_t(seed) * 2654435761u + 1;
  for (auto& f : v) {
    x = x * 1664525u + 1013904223u;
    f = float(int32_t(x >> 8) - (1 << 23)) * 0x1p-22F;
  }
  return v;
}

// Seconds for a memcpy moving `bytes` (bytes / 2 read, bytes / 2 written): best of 20.
double copy_seconds(uint64_t bytes) {
  static std::vector<uint8_t> src, dst;
  src.resize(bytes / 2, 1);
  dst.resize(bytes / 2);
  double best = 1e30;
  for (int r = 0; r < 20; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    std::memcpy(dst.data(), src.data(), src.size());
    benchmark::ClobberMemory();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

// Runs `step` under the benchmark loop with manual timing and sets the counters; copy_ratio
// compares best with best (a mean of steps against the best copy would charge the scheme
// for every pause of this noisy guest).
template <class Step>
void run(benchmark::State& state, uint64_t bytes, Step&& step) {
  double best = 1e30;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    if (!pc::ok(step())) state.SkipWithError("step failed");
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    state.SetIterationTime(s);
    best = std::min(best, s);
  }
  state.SetBytesProcessed(int64_t(bytes) * state.iterations());
  state.counters["bytes_moved"] = double(bytes);
  state.counters["best_ms"] = 1e3 * best;
  state.counters["copy_ratio"] = copy_seconds(bytes) / best;
}

void BM_ef_encode(benchmark::State& state) {
  const pc::spec s = quant4();
  const pc::shape shp(kRows, kCols);
  pc::host::ef_state ef;
  if (!pc::ok(ef.init(s, shp, pc::dtype::f32))) return state.SkipWithError("init");
  const auto x = input(1);
  std::vector<uint8_t> payload(ef.payload_bytes());
  run(state, 12 * kN + payload.size(), [&] {
    return ef.encode(pc::const_tensor_view{x.data(), pc::dtype::f32, shp}, payload.data(), payload.size());
  });
}

void BM_ef21_encode(benchmark::State& state) {
  const pc::spec s = quant4();
  const pc::shape shp(kRows, kCols);
  pc::host::ef21_state tx;
  if (!pc::ok(tx.init(s, shp, pc::dtype::f32))) return state.SkipWithError("init");
  const auto x = input(2);
  std::vector<uint8_t> payload(tx.payload_bytes());
  run(state, 12 * kN + payload.size(), [&] {
    return tx.encode(pc::const_tensor_view{x.data(), pc::dtype::f32, shp}, payload.data(), payload.size());
  });
}

// The receiver updates g alone, or g and an fp32 output (the receiver's tensor, as the
// policy endpoints ask for it).
void BM_ef21_decode(benchmark::State& state, bool with_out) {
  const pc::spec s = quant4();
  const pc::shape shp(kRows, kCols);
  pc::host::ef21_state tx, rx;
  if (!pc::ok(tx.init(s, shp, pc::dtype::f32)) || !pc::ok(rx.init(s, shp, pc::dtype::f32)))
    return state.SkipWithError("init");
  const auto x = input(3);
  std::vector<uint8_t> payload(tx.payload_bytes());
  if (!pc::ok(tx.encode(pc::const_tensor_view{x.data(), pc::dtype::f32, shp}, payload.data(), payload.size())))
    return state.SkipWithError("encode");
  std::vector<float> out(with_out ? kN : 0);
  const pc::tensor_view ov{with_out ? out.data() : nullptr, pc::dtype::f32, shp};
  run(state, (with_out ? 12 : 8) * kN + payload.size(), [&] { return rx.decode(payload.data(), payload.size(), ov); });
}

// AQ-SGD with all samples already in both stores (state dtype from the argument).
void BM_aqsgd(benchmark::State& state, bool receiver) {
  pc::host::aqsgd_config c;
  c.codec = quant4();
  c.cols = kCols;
  c.state_type = pc::dtype(state.range(0));
  c.capacity = kRows;
  pc::host::aqsgd_state tx, rx;
  if (!pc::ok(tx.init(c, kRows)) || !pc::ok(rx.init(c, kRows))) return state.SkipWithError("init");
  const auto a = input(4);
  std::vector<uint64_t> ids(kRows);
  for (uint64_t r = 0; r < kRows; ++r) ids[r] = 0x5EED0000ull + 977 * r;
  std::vector<uint8_t> msg(tx.message_bytes());
  size_t len = 0;
  const pc::const_tensor_view av{a.data(), pc::dtype::f32, pc::shape(kRows, kCols)};
  for (bool warm : {true, false}) {
    if (!pc::ok(tx.encode(ids.data(), av, warm, msg.data(), msg.size(), 0, &len)) ||
        !pc::ok(rx.decode(msg.data(), len, ids.data())))
      return state.SkipWithError("prime");
  }
  const uint64_t m = kN * pc::dtype_bytes(c.state_type);
  if (receiver) {
    run(state, 2 * m + len, [&] { return rx.decode(msg.data(), len, ids.data()); });
  } else {
    run(state, 4 * kN + 2 * m + len, [&] { return tx.encode(ids.data(), av, false, msg.data(), msg.size(), 0, &len); });
  }
}

}  // namespace

BENCHMARK(BM_ef_encode)->UseManualTime()->Iterations(20)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ef21_encode)->UseManualTime()->Iterations(20)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ef21_decode, state, false)->UseManualTime()->Iterations(20)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ef21_decode, out, true)->UseManualTime()->Iterations(20)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_aqsgd, sender, false)
    ->Arg(int(pc::dtype::f32))->Arg(int(pc::dtype::f16))->UseManualTime()->Iterations(20)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_aqsgd, receiver, true)
    ->Arg(int(pc::dtype::f32))->Arg(int(pc::dtype::f16))->UseManualTime()->Iterations(20)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();

// Host TopK selection for n = 2^24 fp32 (tensor scope), k = 0.1%, 1%, 10%: the library's
// radix select (host/topk_select.hpp) against a std::nth_element-based selection, both
// producing the same thing (the k kept positions, ascending, ties to the lower index),
// timed in the same loop so `speedup` (nth_element time / radix time) survives a noisy
// machine. Target: speedup >= 5. Also the whole encode and decode (automatic index layout,
// fp32 values) against a memcpy of the input, per tensor and in rows of 256 and 1024.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "host_input.hpp"
#include "pipecodec/pipecodec.hpp"

namespace pc = pipecodec;

namespace {

using benchdata::input;
using benchdata::n;

uint64_t k_of(const benchmark::State& state) { return n * uint64_t(state.range(0)) / 1000; }

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Radix select + ordered compaction into `out` (k positions).
void radix_topk(const std::vector<float>& x, uint64_t k, std::vector<uint32_t>& cand, std::vector<uint32_t>& out) {
  const pc::host::detail::magnitude_keys<pc::dtype::f32> key{x.data(), 0};
  const auto t = pc::host::detail::radix_select(key, n, k, cand.data(), cand.size());
  pc::host::detail::compact_kept(key, n, t, [&](uint64_t j, uint64_t i) { out[j] = uint32_t(i); });
}

// Baseline: (magnitude key, inverted index) packed in a u64 so one integer comparison ranks
// by magnitude then lower index; nth_element puts the k largest first; sort their indices.
void nth_element_topk(const std::vector<float>& x, uint64_t k, std::vector<uint64_t>& packed,
                      std::vector<uint32_t>& out) {
  for (uint64_t i = 0; i < n; ++i)
    packed[i] = uint64_t(pc::detail::magnitude_key(x[i])) << 32 | (0xFFFFFFFFu - uint32_t(i));
  std::nth_element(packed.begin(), packed.begin() + long(k) - 1, packed.end(), std::greater<uint64_t>());
  for (uint64_t j = 0; j < k; ++j) out[j] = 0xFFFFFFFFu - uint32_t(packed[j]);
  std::sort(out.begin(), out.begin() + long(k));
}

void BM_select_radix_vs_nth_element(benchmark::State& state) {
  const auto& x = input();
  const uint64_t k = k_of(state);
  std::vector<uint32_t> cand(n / 4), a(k), b(k);
  std::vector<uint64_t> packed(n);
  double radix_s = 0, nth_s = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto t0 = std::chrono::steady_clock::now();
    nth_element_topk(x, k, packed, b);
    benchmark::ClobberMemory();
    nth_s += seconds_since(t0);
    state.ResumeTiming();
    t0 = std::chrono::steady_clock::now();
    radix_topk(x, k, cand, a);
    benchmark::ClobberMemory();
    radix_s += seconds_since(t0);
    if (a != b) state.SkipWithError("radix and nth_element selections differ");
  }
  const double it = double(state.iterations());
  state.counters["radix_ms"] = 1e3 * radix_s / it;
  state.counters["nth_element_ms"] = 1e3 * nth_s / it;
  state.counters["speedup"] = nth_s / radix_s;
}

// The shape of a row: rows of range(1) elements (0: one unit of n).
pc::shape topk_shape(const benchmark::State& state) {
  const uint64_t row = uint64_t(state.range(1));
  return row == 0 ? pc::shape(n) : pc::shape(n / row, row);
}

// k in thousandths of the unit (range 0); scope=row when range(1) gives rows; automatic
// index layout, fp32 values.
pc::spec topk_spec(const benchmark::State& state) {
  pc::spec s;
  s.codec = pc::codec_id::topk;
  s.topk.ratio = double(state.range(0)) / 1000;
  s.topk.scope = state.range(1) == 0 ? pc::topk_scope::tensor : pc::topk_scope::row;
  return s;
}

// Times op() and a memcpy of the input in the same loop; reports op / memcpy.
template <class Op>
void against_memcpy(benchmark::State& state, Op&& op) {
  const auto& x = input();
  std::vector<char> copy(n * 4);
  double op_s = 0, copy_s = 0;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    const pc::status st = op();
    benchmark::ClobberMemory();
    op_s += seconds_since(t0);
    if (!pc::ok(st)) state.SkipWithError(pc::to_string(st));
    state.PauseTiming();
    t0 = std::chrono::steady_clock::now();
    std::memcpy(copy.data(), x.data(), n * 4);
    benchmark::ClobberMemory();
    copy_s += seconds_since(t0);
    state.ResumeTiming();
  }
  state.counters["x_memcpy"] = op_s / copy_s;
  state.SetBytesProcessed(int64_t(state.iterations() * n * 4));
}

struct encoded {
  pc::shape shp;
  pc::spec s;
  std::vector<uint8_t> payload, ws;
  void* wsp = nullptr;
  size_t len = 0;

  explicit encoded(const benchmark::State& state) : shp(topk_shape(state)), s(topk_spec(state)) {
    payload.resize(pc::encoded_bytes(s, shp));
    ws.resize(pc::workspace_bytes(s, shp) + 16);
    wsp = ws.data() + (16 - reinterpret_cast<uintptr_t>(ws.data()) % 16) % 16;
  }
  pc::status encode() {
    return pc::host::encode(s, pc::const_tensor_view{input().data(), pc::dtype::f32, shp}, payload.data(),
                            payload.size(), wsp, pc::workspace_bytes(s, shp), {}, &len);
  }
};

void BM_encode_vs_memcpy(benchmark::State& state) {
  encoded e(state);
  against_memcpy(state, [&] { return e.encode(); });
}

void BM_decode_vs_memcpy(benchmark::State& state) {
  encoded e(state);
  if (!pc::ok(e.encode())) state.SkipWithError("encode failed");
  std::vector<float> out(n);
  against_memcpy(state, [&] {
    return pc::host::decode(e.payload.data(), e.len, pc::tensor_view{out.data(), pc::dtype::f32, e.shp});
  });
}

}  // namespace

// Argument: k in thousandths of n (1 = 0.1%, 10 = 1%, 100 = 10%).
BENCHMARK(BM_select_radix_vs_nth_element)->Arg(1)->Arg(10)->Arg(100)->Unit(benchmark::kMillisecond)->UseRealTime();
// Arguments: k in thousandths of the unit; row length (0: scope=tensor; 256 and 1024: the
// training example's rows, quick and full size).
BENCHMARK(BM_encode_vs_memcpy)->ArgsProduct({{1, 10, 100}, {0, 256, 1024}})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_decode_vs_memcpy)->ArgsProduct({{1, 10, 100}, {0, 256, 1024}})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_MAIN();

// Host k-bit quantization (and fp8 / mx / rotated / outlier-keeping quantization) throughput for n = 2^24 fp32 elements, group 128.
// Every codec iteration is paired with a memcpy of the same input bytes, timed in the same
// loop, so `x_memcpy` (codec time / memcpy time; `_cpu`: thread CPU time) survives a noisy,
// shared machine.
// Targets (one core): nearest encode <= 2x, decode <= 1.5x, stochastic encode <= 4x memcpy.
// encode_threads / decode_threads run encode_parallel / decode_parallel on a pool of T
// threads (the calling one included) against the same one-thread memcpy: compare their
// x_memcpy (wall time; the _cpu ratio counts the calling thread only) across T.
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <ctime>
#include <mutex>
#include <thread>
#include <vector>

#include "host_input.hpp"
#include "pipecodec/pipecodec.hpp"

namespace pc = pipecodec;

namespace {

using benchdata::input;
using benchdata::n;

pc::spec quant_spec(int64_t bits, pc::rounding r) {
  pc::spec s;
  s.codec = pc::codec_id::quant;
  s.quant.bits = uint8_t(bits);
  s.quant.group_size = 128;
  s.quant.round = r;
  s.quant.scale_dtype = pc::dtype::f16;
  return s;
}

double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// CPU time of this thread: on a shared, oversubscribed machine it leaves out the time the
// thread waits to be scheduled, which wall time charges at random to either side.
double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

// Runs `op` once per iteration (timed) and a memcpy of the input bytes (timed separately),
// and reports op / memcpy as wall-time and as thread-CPU-time ratios.
template <class Op>
void timed_against_memcpy(benchmark::State& state, Op&& op) {
  const size_t bytes = n * sizeof(float);
  std::vector<char> a(bytes, 1), b(bytes, 2);
  double copy_wall = 0, copy_cpu = 0, op_wall = 0, op_cpu = 0;
  for (auto _ : state) {
    state.PauseTiming();
    double w = wall_seconds(), c = cpu_seconds();
    std::memcpy(b.data(), a.data(), bytes);
    benchmark::ClobberMemory();
    copy_wall += wall_seconds() - w;
    copy_cpu += cpu_seconds() - c;
    state.ResumeTiming();
    w = wall_seconds();
    c = cpu_seconds();
    op();
    benchmark::ClobberMemory();
    op_wall += wall_seconds() - w;
    op_cpu += cpu_seconds() - c;
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(bytes));
  state.counters["x_memcpy"] = op_wall / copy_wall;
  state.counters["x_memcpy_cpu"] = op_cpu / copy_cpu;
  state.counters["memcpy_GBps"] = double(state.iterations()) * double(bytes) / copy_wall / 1e9;
}

// Rows by spec text (fp8, mx, rotated and outlier-keeping quantization, lowrank (cold)): range(0) indexes these specs. The
// rotated rows use shape 1024 x (n / 1024), so rotation blocks lie along rows; lowrank: the same matrix.
const char* const text_specs[] = {"fp8:format=e4m3,group=128,scale_dtype=fp16", "fp8:format=e4m3,round=stochastic",
                                  "mx:format=fp8_e4m3", "mx:format=fp6_e2m3", "mx:format=fp4_e2m1",
                                  "quant:bits=2,group=128,scale_dtype=fp16,rotate=hadamard",
                                  "quant:bits=4,group=128,scale_dtype=fp16,rotate=hadamard",
                                  "quant:bits=4,group=128,scale_dtype=fp16,rotate=hadamard,rotate_block=1024",
                                  "quant:bits=2,group=128,scale_dtype=fp16,outliers=2",
                                  "quant:bits=4,group=128,scale_dtype=fp16,outliers=4",
                                  "lowrank:rank=4", "lowrank:rank=16"};
constexpr int text_spec_count = sizeof(text_specs) / sizeof(text_specs[0]);

pc::spec text_spec(benchmark::State& state) {
  pc::spec s;
  if (!pc::ok(pc::parse_spec(text_specs[state.range(0)], s))) state.SkipWithError("bad spec");
  state.SetLabel(text_specs[state.range(0)]);
  return s;
}

const pc::shape shp(1024, n / 1024);

void encode_spec(benchmark::State& state, const pc::spec& s) {
  std::vector<uint8_t> payload(pc::encoded_bytes(s, shp)), ws(pc::workspace_bytes(s, shp));
  const pc::const_tensor_view in{input().data(), pc::dtype::f32, shp};
  timed_against_memcpy(state, [&] {
    if (!pc::ok(pc::host::encode(s, in, payload.data(), payload.size(), ws.data(), ws.size(), 7)))
      state.SkipWithError("encode failed");
  });
}

void decode_spec(benchmark::State& state, const pc::spec& s) {
  std::vector<uint8_t> payload(pc::encoded_bytes(s, shp)), ws(pc::workspace_bytes(s, shp));
  std::vector<float> out(n);
  if (!pc::ok(pc::host::encode(s, pc::const_tensor_view{input().data(), pc::dtype::f32, shp},
                               payload.data(), payload.size(), ws.data(), ws.size(), 7)))
    state.SkipWithError("encode failed");
  timed_against_memcpy(state, [&] {
    if (!pc::ok(pc::host::decode(payload.data(), payload.size(), pc::tensor_view{out.data(), pc::dtype::f32, shp})))
      state.SkipWithError("decode failed");
  });
}

void encode_nearest(benchmark::State& st) { encode_spec(st, quant_spec(st.range(0), pc::rounding::nearest)); }
void encode_stochastic(benchmark::State& st) { encode_spec(st, quant_spec(st.range(0), pc::rounding::stochastic)); }
void decode_nearest(benchmark::State& st) { decode_spec(st, quant_spec(st.range(0), pc::rounding::nearest)); }
void encode_by_text(benchmark::State& st) { encode_spec(st, text_spec(st)); }
void decode_by_text(benchmark::State& st) { decode_spec(st, text_spec(st)); }

// A fixed pool of `threads` threads (the caller's included) that runs the parts of one call
// at a time, handed out by an atomic counter: the executor encode_parallel asks for.
class pool {
 public:
  explicit pool(size_t threads) {
    for (size_t k = 1; k < threads; ++k) workers_.emplace_back([this] { serve(); });
  }
  ~pool() {
    {
      std::lock_guard<std::mutex> l(m_);
      stop_ = true;
      ++generation_;
    }
    wake_.notify_all();
    for (auto& t : workers_) t.join();
  }
  void operator()(size_t parts, const pc::host::task_ref& task) {
    {
      std::lock_guard<std::mutex> l(m_);
      task_ = &task;
      parts_ = parts;
      next_ = 0;
      busy_ = workers_.size();
      ++generation_;
    }
    wake_.notify_all();
    work();
    std::unique_lock<std::mutex> l(m_);
    done_.wait(l, [&] { return busy_ == 0; });
  }

 private:
  void work() {
    for (size_t i; (i = next_.fetch_add(1)) < parts_;) (*task_)(i);
  }
  void serve() {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> l(m_);
        wake_.wait(l, [&] { return generation_ != seen; });
        seen = generation_;
        if (stop_) return;
      }
      work();
      std::lock_guard<std::mutex> l(m_);
      if (--busy_ == 0) done_.notify_one();
    }
  }
  std::vector<std::thread> workers_;
  std::mutex m_;
  std::condition_variable wake_, done_;
  const pc::host::task_ref* task_ = nullptr;
  size_t parts_ = 0, busy_ = 0;
  std::atomic<size_t> next_{0};
  uint64_t generation_ = 0;
  bool stop_ = false;
};

// 4-bit nearest encode / decode on range(0) threads, split in 4 parts per thread.
void encode_threads(benchmark::State& state) {
  const pc::spec s = quant_spec(4, pc::rounding::nearest);
  const size_t threads = size_t(state.range(0));
  pool run(threads);
  std::vector<uint8_t> payload(pc::encoded_bytes(s, shp));
  const pc::const_tensor_view in{input().data(), pc::dtype::f32, shp};
  timed_against_memcpy(state, [&] {
    if (!pc::ok(pc::host::encode_parallel(s, in, payload.data(), payload.size(), nullptr, 0, 7, nullptr, 4 * threads,
                                          run)))
      state.SkipWithError("encode failed");
  });
}

void decode_threads(benchmark::State& state) {
  const pc::spec s = quant_spec(4, pc::rounding::nearest);
  const size_t threads = size_t(state.range(0));
  pool run(threads);
  std::vector<uint8_t> payload(pc::encoded_bytes(s, shp));
  std::vector<float> out(n);
  if (!pc::ok(pc::host::encode(s, pc::const_tensor_view{input().data(), pc::dtype::f32, shp}, payload.data(),
                               payload.size(), nullptr, 0, 7)))
    state.SkipWithError("encode failed");
  timed_against_memcpy(state, [&] {
    if (!pc::ok(pc::host::decode_parallel(payload.data(), payload.size(),
                                          pc::tensor_view{out.data(), pc::dtype::f32, shp}, nullptr, 0, 4 * threads,
                                          run)))
      state.SkipWithError("decode failed");
  });
}

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
BENCHMARK(encode_by_text)->ArgName("spec")->DenseRange(0, text_spec_count - 1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(decode_by_text)->ArgName("spec")->DenseRange(0, text_spec_count - 1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(encode_threads)->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(decode_threads)->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_MAIN();

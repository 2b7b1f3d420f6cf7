// Pipeline-parallel training of an S-stage MLP (784-H-...-H-10, ReLU, softmax cross-entropy;
// S = 4 by default) on Fashion-MNIST with every stage boundary compressed by a pipecodec
// policy: activations forward, gradients backward, encode -> bytes -> decode. In one process
// (default) or over MPI with one rank per stage (--mpi, e.g. mpirun -np 4), with a step cut
// into micro-batches under a GPipe or 1F1B schedule (pipeline.hpp). Run with --help for the
// options. Prints progress per epoch and these lines (tools/demo and tools/links-measure
// collect them):
//   CSV,name,fwd_bits,bwd_bits,bytes_per_step,acc_compressed,acc_plain,codec_share
//   EVAL,name,step,train_seconds,accuracy                         (--eval-every K)
//   TIMING,name,schedule,micro_batches,steps,median_step_s,samples_per_s,train_seconds
//   STAGE,name,stage,compute_s_per_step,codec_s_per_step          (training steps only)
//   LEDGER,name,boundary,direction,payload_bytes,framing_bytes,messages,   (whole run, then
//          train_payload_bytes,train_framing_bytes,train_messages        training steps only)
// Times are wall-clock seconds of stage 0's process, whose step ends last; STAGE seconds
// are the stage's own clock (Stage::clock_name).
//
// The driver is a template over the stage type, so the host build (main.cpp: stage.hpp,
// OpenBLAS, host endpoints) and the CUDA build (main_cuda.cu: stage_cuda.cuh, cuBLAS, CUDA
// endpoints) share the options, data, schedule, evaluation and output. A stage type has:
//   Stage(s, stages, in, out, micro_rows, slots, policy, samples, seed)
//   forward(slot, host_input, payload, len, rows, step_info, out, cap) -> payload length
//   loss(slot, host_labels, rows, bool grad, int& correct, norm) -> summed loss (last stage)
//   backward(slot, payload, len, rows, step_info, out, cap) -> payload length
//   sgd(lr, momentum), set_inference(mode), endpoints() (stage_endpoints.hpp),
//   codec_seconds(), compute_seconds(), static constexpr const char* clock_name
#pragma once

#include <pipecodec/policy/policy_parse.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "../../tools/npy.hpp"
#include "fashion_mnist.hpp"
#include "options.hpp"
#include "pipeline.hpp"
#include "transport.hpp"
#ifdef PIPECODEC_WITH_MPI
#include "transport_mpi.hpp"
#endif

namespace train {

using clock_type = std::chrono::steady_clock;

inline double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

// What the local stages' senders produced: fwd payload bytes, fwd elements, bwd payload bytes,
// bwd elements, then per boundary and direction (fwd, bwd) payload bytes, framing bytes and
// messages, by the sending stage.
template <class Stage>
std::vector<double> sent_counters(const pipeline<Stage>& p, int stages) {
  std::vector<double> v(4 + size_t(6 * (stages - 1)), 0.0);
  p.for_each_stage([&](const Stage& s, int) {
    const auto f = s.endpoints().fwd_sent(), b = s.endpoints().bwd_sent();
    v[0] += double(f.bytes_out);
    v[1] += double(f.elements);
    v[2] += double(b.bytes_out);
    v[3] += double(b.elements);
  });
  p.for_each_sent([&](int s, const sent_bytes& b) {
    for (int d = 0; d < 2; ++d) {
      const int boundary = d == 0 ? s : s - 1;
      if (boundary < 0 || boundary >= stages - 1) continue;
      double* at = &v[4 + size_t(6 * boundary + 3 * d)];
      at[0] += b.payload[d];
      at[1] += b.framing[d];
      at[2] += b.messages[d];
    }
  });
  return v;
}

inline void add_difference(std::vector<double>& into, const std::vector<double>& a, const std::vector<double>& b) {
  for (size_t i = 0; i < into.size(); ++i) into[i] += a[i] - b[i];
}

// Test accuracy in the stages' current inference mode, on every process.
template <class Stage>
double evaluate(pipeline<Stage>& p, transport& t, const dataset& test, int batch) {
  std::vector<uint64_t> ids(static_cast<size_t>(batch));
  int correct = 0;
  for (size_t b = 0; b < test.n; b += size_t(batch)) {
    const int rows = int(std::min(size_t(batch), test.n - b));
    std::iota(ids.begin(), ids.begin() + rows, uint64_t(b));
    pipecodec::step_info at;
    at.training = false;
    p.run(test, ids.data(), rows, at, correct);
  }
  double c = correct;
  t.sum(&c, 1);
  return c / double(test.n);
}

// Per-stage training seconds (compute, codec) of the local stages, added up over the
// steps run between start() and stop().
template <class Stage>
class stage_clock {
 public:
  explicit stage_clock(int stages) : total_(size_t(2 * stages), 0.0), mark_(total_.size(), 0.0) {}
  void start(const pipeline<Stage>& p) { read(p, mark_, -1); }
  void stop(const pipeline<Stage>& p) { read(p, total_, +1); }
  std::vector<double>& totals() { return total_; }

 private:
  void read(const pipeline<Stage>& p, std::vector<double>& into, int sign) {
    p.for_each_stage([&](const Stage& s, int i) {
      const double now[2] = {s.compute_seconds(), s.codec_seconds()};
      for (int k = 0; k < 2; ++k) {
        double& v = into[size_t(2 * i + k)];
        v = sign < 0 ? now[k] : v + now[k] - mark_[size_t(2 * i + k)];
      }
    });
  }
  std::vector<double> total_, mark_;
};

// --dump-activations: stage 0's output for the first 4096 test samples, as .npy (the real
// boundary activations the codecs see, for tools/quant_table). The host stage only.
template <class Stage, class = void>
struct can_dump : std::false_type {};
template <class Stage>
struct can_dump<Stage, std::void_t<decltype(&Stage::layer_forward)>> : std::true_type {};

template <class Stage>
bool dump_activations(const pipeline<Stage>& p, const dataset& test, int hidden, const std::string& path) {
  bool done = true;
  if constexpr (can_dump<Stage>::value) {
    p.for_each_stage([&](const Stage& st, int s) {
      if (s != 0) return;
      const int rows = int(std::min<size_t>(test.n, 4096));
      std::vector<float> y(size_t(rows) * size_t(hidden));
      st.layer_forward(test.images.data(), rows, y.data());
      const std::vector<uint8_t> file = npy::serialize(pipecodec::dtype::f32, pipecodec::shape(uint64_t(rows), uint64_t(hidden)),
                                                       y.data(), y.size() * 4);
      std::FILE* f = std::fopen(path.c_str(), "wb");
      done = f && std::fwrite(file.data(), 1, file.size(), f) == file.size();
      if (f) done = std::fclose(f) == 0 && done;
    });
  } else {
    done = false;
  }
  return done;
}

// The whole program; `prog` names it in messages.
template <class Stage>
int train_main(int argc, char** argv, const char* prog) {
  options o;
  if (!parse_args(argc, argv, o)) {
    std::fprintf(stderr, "usage: %s %s", prog, usage);
    return 2;
  }
  const pipeline_shape& ps = o.shape;
  pipecodec::policy pol;
  std::string err;
  if (!pipecodec::ok(pipecodec::parse_policy(o.policy_text, pol, &err))) {
    std::fprintf(stderr, "%s: bad --policy: %s\n", prog, err.c_str());
    return 2;
  }
  std::unique_ptr<transport> tp;
  int rank = 0;
  if (o.mpi) {
#ifdef PIPECODEC_WITH_MPI
    MPI_Init(&argc, &argv);
    auto* m = new mpi_transport(ps.stages);
    rank = m->rank();
    tp.reset(m);
#else
    std::fprintf(stderr, "%s: built without MPI\n", prog);
    return 2;
#endif
  } else {
    tp.reset(new inprocess_transport(ps.stages));
  }
  const bool talk = rank == 0;
  dataset train_set, test_set;
  if (!load_fashion_mnist(o.data, "train", o.train_limit, train_set, err) ||
      !load_fashion_mnist(o.data, "t10k", o.test_limit, test_set, err)) {
    std::fprintf(stderr, "%s: %s\n", prog, err.c_str());
    return 1;
  }
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> log(nullptr, &std::fclose);
  if (!o.payload_log.empty()) {
    const std::string path = o.mpi ? o.payload_log + "." + std::to_string(rank) : o.payload_log;
    log.reset(std::fopen(path.c_str(), "w"));
    if (!log) {
      std::fprintf(stderr, "%s: cannot write %s\n", prog, path.c_str());
      return 1;
    }
  }
  if (talk)
    std::printf("[%s] %s, %zu train / %zu test samples, %d stages 784-%d-...-10, batch %d in %d micro-batches (%s), "
                "%d epochs, seed %llu\n  policy: %s\n",
                o.name.c_str(), o.mpi ? "MPI, one rank per stage" : "in-process", train_set.n, test_set.n, ps.stages,
                ps.hidden, ps.batch, ps.micro, to_string(ps.kind), o.epochs, (unsigned long long)o.seed,
                pipecodec::to_string(pol).c_str());
  if (o.cosine) o.shape.cosine_steps = uint64_t(o.epochs) * (train_set.n / size_t(ps.batch));
  pipeline<Stage> p(*tp, ps, pol, train_set.n, o.seed, log.get());
  std::vector<uint64_t> order(train_set.n);
  std::iota(order.begin(), order.end(), 0);
  const size_t steps_per_epoch = train_set.n / size_t(ps.batch);  // the last partial batch is dropped
  std::vector<double> before_last, step_seconds;  // training's counters when the last epoch began
  size_t last_epoch_steps = 0;
  bool reached = false;  // --stop-at-acc
  // What evaluation sends is counted apart, so that the per-step figures are training's alone.
  const size_t counters = sent_counters(p, ps.stages).size();
  std::vector<double> eval_sent(counters, 0.0);
  auto evaluate_apart = [&]() {
    const std::vector<double> before = sent_counters(p, ps.stages);
    const double acc = evaluate(p, *tp, test_set, ps.batch);
    add_difference(eval_sent, sent_counters(p, ps.stages), before);
    return acc;
  };
  stage_clock<Stage> clock(ps.stages);
  double train_seconds = 0;
  uint64_t step = 0;
  const auto t0 = clock_type::now();
  for (int e = 0; e < o.epochs && !reached; ++e) {
    before_last.assign(counters, 0.0);
    add_difference(before_last, sent_counters(p, ps.stages), eval_sent);
    last_epoch_steps = 0;
    std::mt19937_64 rng(o.seed * 1000 + uint64_t(e));  // same order on every rank
    std::shuffle(order.begin(), order.end(), rng);
    double stats[2] = {0, 0};  // loss, correct
    for (size_t b = 0; b < steps_per_epoch && !reached; ++b) {
      pipecodec::step_info at;
      at.step = step;
      at.epoch = uint64_t(e);
      int correct = 0;
      const auto s0 = clock_type::now();
      clock.start(p);
      stats[0] += p.run(train_set, &order[b * size_t(ps.batch)], ps.batch, at, correct);
      clock.stop(p);
      step_seconds.push_back(seconds_since(s0));
      train_seconds += step_seconds.back();
      stats[1] += correct;
      ++step;
      ++last_epoch_steps;
      if (o.eval_every > 0 && step % uint64_t(o.eval_every) == 0) {
        const double acc = evaluate_apart();
        if (talk) std::printf("EVAL,%s,%llu,%.4f,%.4f\n", o.name.c_str(), (unsigned long long)step, train_seconds, acc);
        reached = o.stop_at_acc > 0 && acc >= o.stop_at_acc;  // every rank sees the same summed accuracy
      }
    }
    tp->sum(stats, 2);
    const double n = double(last_epoch_steps) * ps.batch;
    if (talk)
      std::printf("  epoch %d/%d  loss %.4f  train acc %.4f  %.1f s (%.1f s training)\n", e + 1, o.epochs,
                  stats[0] / n, stats[1] / n, seconds_since(t0), train_seconds);
    std::fflush(stdout);
  }
  // sums: training's counters of the last epoch, then of the whole run (sent_counters' layout),
  // then per stage compute and codec seconds, then the whole run's counters.
  std::vector<double> sums(2 * counters, 0.0);
  {
    const std::vector<double> now = sent_counters(p, ps.stages);
    std::vector<double> trained(counters, 0.0);
    add_difference(trained, now, eval_sent);
    for (size_t i = 0; i < counters; ++i) sums[i] = trained[i] - before_last[i];
    std::copy(trained.begin(), trained.end(), sums.begin() + std::ptrdiff_t(counters));
  }
  const bool dump_failed = !o.dump_activations.empty() && !dump_activations(p, test_set, ps.hidden, o.dump_activations);
  if (dump_failed) std::fprintf(stderr, "%s: cannot write %s (the CUDA build cannot dump)\n", prog, o.dump_activations.c_str());
  const std::vector<double>& per_stage = clock.totals();
  sums.insert(sums.end(), per_stage.begin(), per_stage.end());
  double acc[2] = {0, 0};  // compressed, plain
  for (int m = 0; m < 2; ++m) {
    p.set_inference(m == 0 ? pipecodec::inference_mode::compress : pipecodec::inference_mode::plain);
    acc[m] = evaluate(p, *tp, test_set, ps.batch);
  }
  const std::vector<double> whole = sent_counters(p, ps.stages);
  sums.insert(sums.end(), whole.begin(), whole.end());
  tp->sum(sums.data(), int(sums.size()));
  const double fwd_bits = sums[1] > 0 ? 8 * sums[0] / sums[1] : 0, bwd_bits = sums[3] > 0 ? 8 * sums[2] / sums[3] : 0;
  const double bytes_per_step = (sums[0] + sums[2]) / double(last_epoch_steps);
  double codec = 0, compute = 0;
  const size_t clocks = 2 * counters;
  for (int s = 0; s < ps.stages; ++s) {
    compute += sums[clocks + size_t(2 * s)];
    codec += sums[clocks + size_t(2 * s + 1)];
  }
  // Encode+decode time over encode+decode+layer time (Stage::clock_name), all stages, training steps.
  const double share = codec / (codec + compute);
  if (talk) {
    std::vector<double> sorted = step_seconds;
    std::sort(sorted.begin(), sorted.end());
    const double median = sorted.empty() ? 0 : sorted[sorted.size() / 2];
    std::printf("  test acc %.4f (compressed inference) %.4f (plain inference); %.2f / %.2f bits per element "
                "fwd / bwd; %.0f bytes per step; codec %.1f%% of %s time; median step %.2f ms; %.1f s training, "
                "%.1f s in all\n",
                acc[0], acc[1], fwd_bits, bwd_bits, bytes_per_step, 100 * share, Stage::clock_name, 1e3 * median,
                train_seconds, seconds_since(t0));
    std::printf("CSV,%s,%.4f,%.4f,%.0f,%.4f,%.4f,%.4f\n", o.name.c_str(), fwd_bits, bwd_bits, bytes_per_step,
                acc[0], acc[1], share);
    std::printf("TIMING,%s,%s,%d,%zu,%.6f,%.1f,%.3f\n", o.name.c_str(), to_string(ps.kind), ps.micro,
                step_seconds.size(), median, median > 0 ? ps.batch / median : 0.0, train_seconds);
    for (int s = 0; s < ps.stages; ++s)
      std::printf("STAGE,%s,%d,%.6f,%.6f\n", o.name.c_str(), s, sums[clocks + size_t(2 * s)] / double(step),
                  sums[clocks + size_t(2 * s + 1)] / double(step));
    for (int b = 0; b < ps.stages - 1; ++b)
      for (int d = 0; d < 2; ++d) {
        const size_t at = 4 + size_t(6 * b + 3 * d);
        const double* all = &sums[clocks + 2 * size_t(ps.stages) + at];
        const double* trained = &sums[counters + at];
        std::printf("LEDGER,%s,%d,%s,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f\n", o.name.c_str(), b, d == 0 ? "fwd" : "bwd",
                    all[0], all[1], all[2], trained[0], trained[1], trained[2]);
      }
  }
  const bool below = acc[0] < o.min_acc || acc[1] < o.min_acc;
  if (below && talk) std::printf("  FAIL: accuracy below the floor %.3f\n", o.min_acc);
#ifdef PIPECODEC_WITH_MPI
  if (o.mpi) MPI_Finalize();
#endif
  return below || dump_failed ? 1 : 0;
}

}  // namespace train

// Pipeline-parallel training of an S-stage MLP (784-H-...-H-10, ReLU, softmax cross-entropy;
// S = 4 by default) on Fashion-MNIST with every stage boundary compressed by a pipecodec
// policy: activations forward, gradients backward, encode -> bytes -> decode. In one process
// (default) or over MPI with one rank per stage (--mpi, e.g. mpirun -np 4). Prints progress per epoch and one
// line "CSV,<name>,fwd_bits,bwd_bits,bytes_per_step,acc_compressed,acc_plain,codec_share"
// (tools/demo collects them). Run with --help for the options.
//
// The driver is a template over the stage type, so the host build (main.cpp: stage.hpp,
// OpenBLAS, host endpoints) and the CUDA build (main_cuda.cu: stage_cuda.cuh, cuBLAS, CUDA
// endpoints) share the options, data, batching, evaluation and output. A stage type has:
//   Stage(s, stages, in, out, batch, policy, samples, seed)
//   forward(transport&, const float* host_input, rows, step)   host_input: stage 0 only
//   loss(const uint8_t* host_labels, rows, bool grad, int& correct) -> summed loss (last stage;
//        with grad it keeps dL/dlogits for backward)
//   backward(transport&, rows, step), sgd(lr, momentum), set_inference(mode)
//   fwd_sent(), bwd_sent() (endpoint counters), codec_seconds(), compute_seconds()
//   static constexpr const char* clock_name: what those seconds measure ("CPU", "GPU")
#pragma once

#include <pipecodec/policy/policy_parse.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "fashion_mnist.hpp"
#include "transport.hpp"
#ifdef PIPECODEC_WITH_MPI
#include "transport_mpi.hpp"
#endif

namespace train {

using clock_type = std::chrono::steady_clock;

struct options {
  std::string name = "run", policy_text, data = "/usr/share/datasets/fashion-mnist";
  int epochs = 2, hidden = 1024, batch = 100, stages = 4;
  size_t train_limit = 0, test_limit = 0;
  float lr = 0.02f, momentum = 0.9f;
  uint64_t seed = 1;
  double min_acc = 0;
  bool mpi = false;
};

// Printed after "usage: <program> ".
inline const char* usage =
    "[--policy TEXT] [--name NAME] [--epochs N] [--hidden H] [--stages S] [--batch B]\n"
    "         [--train N] [--test N] [--lr X] [--momentum X] [--seed N] [--data DIR]\n"
    "         [--min-acc X] [--mpi]\n"
    "  --policy   pipecodec policy text (policy_parse.hpp), default: everything plain fp32\n"
    "  --stages   S stages, S - 1 compressed boundaries of width H (--mpi: S ranks)\n"
    "  --train/--test  use the first N samples (0: all)   --min-acc  exit 1 below this accuracy\n";

inline bool parse_args(int argc, char** argv, options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (a == "--mpi") o.mpi = true;
    else if (a == "--help" || a == "-h") return false;
    else if ((v = next()) == nullptr) return false;
    else if (a == "--policy") o.policy_text = v;
    else if (a == "--name") o.name = v;
    else if (a == "--data") o.data = v;
    else if (a == "--epochs") o.epochs = std::atoi(v);
    else if (a == "--hidden") o.hidden = std::atoi(v);
    else if (a == "--stages") o.stages = std::atoi(v);
    else if (a == "--batch") o.batch = std::atoi(v);
    else if (a == "--train") o.train_limit = size_t(std::atoll(v));
    else if (a == "--test") o.test_limit = size_t(std::atoll(v));
    else if (a == "--lr") o.lr = float(std::atof(v));
    else if (a == "--momentum") o.momentum = float(std::atof(v));
    else if (a == "--seed") o.seed = uint64_t(std::atoll(v));
    else if (a == "--min-acc") o.min_acc = std::atof(v);
    else return false;
  }
  return o.epochs > 0 && o.hidden > 0 && o.batch > 0 && o.stages >= 2 && o.stages <= 64;
}

template <class Stage>
struct pipeline {
  std::vector<std::unique_ptr<Stage>> stages;  // null where another rank runs the stage
  transport& t;

  pipeline(transport& tr, const options& o, const pipecodec::policy& pol, uint64_t samples) : t(tr) {
    auto width = [&](int b) { return b == 0 ? int(dataset::features) : b == o.stages ? 10 : o.hidden; };
    for (int s = 0; s < o.stages; ++s)
      stages.emplace_back(t.runs(s) ? new Stage(s, o.stages, width(s), width(s + 1), o.batch, pol, samples, o.seed)
                                    : nullptr);
  }
  // One batch forward (and backward when training). Returns the summed loss and adds the
  // correct predictions to `correct` (both only on the process that runs the last stage).
  double step(const dataset& d, const uint64_t* ids, int rows, const pipecodec::step_info& at, bool train,
              int& correct, std::vector<float>& input, std::vector<uint8_t>& labels) {
    for (int r = 0; r < rows; ++r) {
      if (stages[0]) std::memcpy(&input[size_t(r) * 784], &d.images[ids[r] * 784], 784 * sizeof(float));
      labels[size_t(r)] = d.labels[ids[r]];
    }
    for (auto& s : stages)
      if (s) s->forward(t, input.data(), rows, at);
    double loss = 0;
    if (stages.back()) loss = stages.back()->loss(labels.data(), rows, train, correct);
    if (!train) return loss;
    for (int s = int(stages.size()) - 1; s >= 0; --s)
      if (stages[size_t(s)]) stages[size_t(s)]->backward(t, rows, at);
    return loss;
  }
};

struct traffic {  // fwd/bwd payload bytes and elements sent, codec and layer seconds
  double v[6] = {};
};

template <class Stage>
traffic measure(const pipeline<Stage>& p) {
  traffic tr;
  for (const auto& s : p.stages)
    if (s) {
      tr.v[0] += double(s->fwd_sent().bytes_out);
      tr.v[1] += double(s->fwd_sent().elements);
      tr.v[2] += double(s->bwd_sent().bytes_out);
      tr.v[3] += double(s->bwd_sent().elements);
      tr.v[4] += s->codec_seconds();
      tr.v[5] += s->compute_seconds();
    }
  return tr;
}

// The whole program; `prog` names it in messages.
template <class Stage>
int train_main(int argc, char** argv, const char* prog) {
  options o;
  if (!parse_args(argc, argv, o)) {
    std::fprintf(stderr, "usage: %s %s", prog, usage);
    return 2;
  }
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
    auto* m = new mpi_transport(o.stages);
    rank = m->rank();
    tp.reset(m);
#else
    std::fprintf(stderr, "%s: built without MPI\n", prog);
    return 2;
#endif
  } else {
    tp.reset(new inprocess_transport(o.stages));
  }
  const bool talk = rank == 0;
  dataset train_set, test_set;
  if (!load_fashion_mnist(o.data, "train", o.train_limit, train_set, err) ||
      !load_fashion_mnist(o.data, "t10k", o.test_limit, test_set, err)) {
    std::fprintf(stderr, "%s: %s\n", prog, err.c_str());
    return 1;
  }
  if (talk)
    std::printf("[%s] %s, %zu train / %zu test samples, %d stages 784-%d-...-10, batch %d, %d epochs, seed %llu\n"
                "  policy: %s\n",
                o.name.c_str(), o.mpi ? "MPI, one rank per stage" : "in-process", train_set.n, test_set.n,
                o.stages, o.hidden, o.batch, o.epochs, (unsigned long long)o.seed, pipecodec::to_string(pol).c_str());
  pipeline<Stage> p(*tp, o, pol, train_set.n);
  std::vector<float> input(size_t(o.batch) * 784);
  std::vector<uint8_t> labels(size_t(o.batch));
  std::vector<uint64_t> order(train_set.n);
  std::iota(order.begin(), order.end(), 0);
  const size_t steps_per_epoch = train_set.n / size_t(o.batch);  // the last partial batch is dropped
  traffic before_last;
  uint64_t step = 0;
  const auto t0 = clock_type::now();
  for (int e = 0; e < o.epochs; ++e) {
    if (e == o.epochs - 1) before_last = measure(p);
    std::mt19937_64 rng(o.seed * 1000 + uint64_t(e));  // same order on every rank
    std::shuffle(order.begin(), order.end(), rng);
    double stats[2] = {0, 0};  // loss, correct
    for (size_t b = 0; b < steps_per_epoch; ++b, ++step) {
      pipecodec::step_info at;
      at.step = step;
      at.epoch = uint64_t(e);
      at.sample_ids = &order[b * size_t(o.batch)];
      at.seed = step;
      int correct = 0;
      stats[0] += p.step(train_set, at.sample_ids, o.batch, at, true, correct, input, labels);
      stats[1] += correct;
      for (auto& s : p.stages)
        if (s) s->sgd(o.lr, o.momentum);
    }
    tp->sum(stats, 2);
    const double n = double(steps_per_epoch) * o.batch;
    if (talk)
      std::printf("  epoch %d/%d  loss %.4f  train acc %.4f  %.1f s\n", e + 1, o.epochs, stats[0] / n,
                  stats[1] / n, std::chrono::duration<double>(clock_type::now() - t0).count());
    std::fflush(stdout);
  }
  double wall = std::chrono::duration<double>(clock_type::now() - t0).count();
  traffic end = measure(p);
  double acc[2] = {0, 0};  // compressed, plain
  for (int m = 0; m < 2; ++m) {
    for (auto& s : p.stages)
      if (s) s->set_inference(m == 0 ? pipecodec::inference_mode::compress : pipecodec::inference_mode::plain);
    std::vector<uint64_t> ids(size_t(o.batch));
    int correct = 0;
    for (size_t b = 0; b < test_set.n; b += size_t(o.batch)) {
      const int rows = int(std::min(size_t(o.batch), test_set.n - b));
      std::iota(ids.begin(), ids.begin() + rows, uint64_t(b));
      pipecodec::step_info at;
      at.training = false;
      at.sample_ids = ids.data();
      p.step(test_set, ids.data(), rows, at, false, correct, input, labels);
    }
    acc[m] = double(correct) / double(test_set.n);
  }
  tp->sum(acc, 2);
  double sums[6] = {end.v[0] - before_last.v[0], end.v[1] - before_last.v[1], end.v[2] - before_last.v[2],
                    end.v[3] - before_last.v[3], end.v[4], end.v[5]};
  tp->sum(sums, 6);
  const double fwd_bits = sums[1] > 0 ? 8 * sums[0] / sums[1] : 0, bwd_bits = sums[3] > 0 ? 8 * sums[2] / sums[3] : 0;
  const double bytes_per_step = (sums[0] + sums[2]) / double(steps_per_epoch);
  // Encode+decode time over encode+decode+layer time (Stage::clock_name), all stages, whole training.
  const double share = sums[4] / (sums[4] + sums[5]);
  if (talk) {
    std::printf("  test acc %.4f (compressed inference) %.4f (plain inference); %.2f / %.2f bits per element "
                "fwd / bwd; %.0f bytes per step; codec %.1f%% of %s time; %.1f s\n",
                acc[0], acc[1], fwd_bits, bwd_bits, bytes_per_step, 100 * share, Stage::clock_name, wall);
    std::printf("CSV,%s,%.4f,%.4f,%.0f,%.4f,%.4f,%.4f\n", o.name.c_str(), fwd_bits, bwd_bits, bytes_per_step,
                acc[0], acc[1], share);
  }
  const bool below = acc[0] < o.min_acc || acc[1] < o.min_acc;
  if (below && talk) std::printf("  FAIL: accuracy below the floor %.3f\n", o.min_acc);
#ifdef PIPECODEC_WITH_MPI
  if (o.mpi) MPI_Finalize();
#endif
  return below ? 1 : 0;
}

}  // namespace train

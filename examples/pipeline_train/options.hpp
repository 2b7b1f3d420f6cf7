// pipeline_train's command line.
#pragma once

#include <cstdlib>
#include <string>

#include "pipeline.hpp"

namespace train {

struct options {
  std::string name = "run", policy_text, data = "/usr/share/datasets/fashion-mnist", payload_log, dump_activations;
  int epochs = 2;
  pipeline_shape shape;
  size_t train_limit = 0, test_limit = 0;
  int eval_every = 0;
  uint64_t seed = 1;
  double min_acc = 0, stop_at_acc = 0;
  bool mpi = false, cosine = false;
};

// Printed after "usage: <program> ".
inline const char* usage =
    "[--policy TEXT] [--name NAME] [--epochs N] [--hidden H] [--stages S] [--batch B]\n"
    "         [--micro-batches M] [--schedule gpipe|1f1b] [--train N] [--test N] [--lr X]\n"
    "         [--momentum X] [--seed N] [--data DIR] [--eval-every K] [--payload-log FILE]\n"
    "         [--lr-schedule constant|cosine] [--min-acc X] [--stop-at-acc X] [--mpi]\n"
    "         [--dump-activations FILE.npy]\n"
    "  --policy   pipecodec policy text (policy_parse.hpp), default: everything plain fp32\n"
    "  --stages   S stages, S - 1 compressed boundaries of width H (--mpi: S ranks)\n"
    "  --micro-batches  M micro-batches of B / M rows per step (B a multiple of M; default 1),\n"
    "             run by the --schedule (default gpipe); one optimizer step per B rows\n"
    "  --eval-every  test accuracy every K steps (line EVAL,name,step,train_seconds,accuracy;\n"
    "             train_seconds excludes evaluation)\n"
    "  --payload-log  one line per payload sent: kind,step,micro,boundary,direction,bytes,fnv1a\n"
    "             (--mpi: FILE.<rank>)\n"
    "  --lr-schedule  cosine: the learning rate falls from --lr to 0 over the run's steps (default constant)\n"
    "  --stop-at-acc  end training at the first evaluation (--eval-every) with accuracy >= X\n"
    "  --train/--test  use the first N samples (0: all)   --min-acc  exit 1 below this accuracy\n"
    "  --dump-activations  after training, boundary 0's activations (stage 0's output, before any\n"
    "             codec) for the first 4096 test samples as float32 rows x H (host build, the rank of stage 0)\n";

inline bool parse_args(int argc, char** argv, options& o) {
  pipeline_shape& p = o.shape;
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
    else if (a == "--payload-log") o.payload_log = v;
    else if (a == "--dump-activations") o.dump_activations = v;
    else if (a == "--epochs") o.epochs = std::atoi(v);
    else if (a == "--hidden") p.hidden = std::atoi(v);
    else if (a == "--stages") p.stages = std::atoi(v);
    else if (a == "--batch") p.batch = std::atoi(v);
    else if (a == "--micro-batches") p.micro = std::atoi(v);
    else if (a == "--schedule") { if (!parse_schedule(v, p.kind)) return false; }
    else if (a == "--train") o.train_limit = size_t(std::atoll(v));
    else if (a == "--test") o.test_limit = size_t(std::atoll(v));
    else if (a == "--lr") p.lr = float(std::atof(v));
    else if (a == "--lr-schedule") {
      if (std::string(v) != "constant" && std::string(v) != "cosine") return false;
      o.cosine = std::string(v) == "cosine";
    } else if (a == "--momentum") p.momentum = float(std::atof(v));
    else if (a == "--seed") o.seed = uint64_t(std::atoll(v));
    else if (a == "--eval-every") o.eval_every = std::atoi(v);
    else if (a == "--min-acc") o.min_acc = std::atof(v);
    else if (a == "--stop-at-acc") o.stop_at_acc = std::atof(v);
    else return false;
  }
  return o.epochs > 0 && p.hidden > 0 && p.batch > 0 && p.stages >= 2 && p.stages <= 64 && p.micro >= 1 &&
         p.batch % p.micro == 0 && o.eval_every >= 0 &&
         (o.stop_at_acc <= 0 || o.eval_every > 0);
}

}  // namespace train

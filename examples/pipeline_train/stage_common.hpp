// What the host stage (stage.hpp) and the CUDA stage (stage_cuda.cuh) share: the status check
// and the He initialisation, so both builds report alike and start from the same weights.
#pragma once

#include <pipecodec/core/status.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

namespace train {

inline void check(pipecodec::status st, const char* what, int stage) {
  if (!pipecodec::ok(st)) {
    std::fprintf(stderr, "pipeline_train: stage %d: %s: %s\n", stage, what, pipecodec::to_string(st));
    std::exit(1);
  }
}

// He-initialised weights of a layer in -> out (out x in, row-major); same seed, same weights
// on every rank and on either backend.
inline std::vector<float> he_init(int in, int out, uint64_t seed) {
  std::vector<float> w(size_t(in) * size_t(out));
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.0f, std::sqrt(2.0f / float(in)));
  for (float& v : w) v = nd(rng);
  return w;
}

}  // namespace train

// The input every host benchmark measures: 2^24 activation-like fp32 values (64 MiB, far
// beyond the caches), built once per process.
#pragma once

#include <vector>

#include "../tests/common/data.hpp"

namespace benchdata {

constexpr uint64_t n = uint64_t(1) << 24;

inline const std::vector<float>& input() {
  static const std::vector<float> x = testdata::activations(n, 1);
  return x;
}

}  // namespace benchdata

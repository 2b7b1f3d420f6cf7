// Reconstruction error of a lossy round trip, shared by `pipecodec eval` and the demo table.
#pragma once

#include <cmath>
#include <cstdint>

namespace metrics {

struct error_stats {
  double max_abs = 0;     // max |x - y|
  double rmse = 0;        // sqrt(mean (x - y)^2)
  double rel_l2 = 0;      // ||x - y|| / ||x||  (0 when ||x|| = 0 and y = x)
  uint64_t skipped = 0;   // elements with a non-finite x, left out of every figure
};

// x(i), y(i): the original and reconstructed element i as float, for i < n.
template <class X, class Y>
error_stats compare(uint64_t n, X&& x, Y&& y) {
  error_stats s;
  double sq = 0, ref = 0;
  uint64_t used = 0;
  for (uint64_t i = 0; i < n; ++i) {
    const double a = x(i);
    if (!std::isfinite(a)) {
      ++s.skipped;
      continue;
    }
    const double d = std::fabs(a - double(y(i)));
    s.max_abs = d > s.max_abs || std::isnan(d) ? d : s.max_abs;
    sq += d * d;
    ref += a * a;
    ++used;
  }
  s.rmse = used ? std::sqrt(sq / double(used)) : 0;
  s.rel_l2 = ref > 0 ? std::sqrt(sq / ref) : (sq > 0 ? INFINITY : 0);
  return s;
}

}  // namespace metrics

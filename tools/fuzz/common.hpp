// Helpers shared by the fuzz harness bodies. The bodies are plain functions, compiled both
// by clang with libFuzzer (tools/fuzz/run) and by the regular compiler in the replay test
// (tests/fuzz_replay.cpp), so nothing here depends on libFuzzer.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "pipecodec/core/dispatch.hpp"
#include "pipecodec/pipecodec.hpp"

// A failed property: report and abort, which both libFuzzer and the replay test see as a crash.
#define PCFUZZ_CHECK(cond, ...)                                                          \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);      \
      std::fprintf(stderr, __VA_ARGS__);                                                 \
      std::fprintf(stderr, "\n");                                                        \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)

namespace pcfuzz {

// Consumes fuzzer bytes front to back; yields zeros once they run out.
class reader {
 public:
  reader(const uint8_t* d, size_t n) : d_(d), n_(n) {}
  uint8_t u8() { return pos_ < n_ ? d_[pos_++] : 0; }
  uint16_t u16() { return uint16_t(u8() | (u8() << 8)); }
  uint64_t u64() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t(u8()) << (8 * i);
    return v;
  }
  const uint8_t* rest() const { return d_ + pos_; }
  size_t remaining() const { return n_ - pos_; }

 private:
  const uint8_t* d_;
  size_t n_;
  size_t pos_ = 0;
};

// An exact-size heap copy, so AddressSanitizer flags any read past the end.
inline std::vector<uint8_t> exact_copy(const uint8_t* d, size_t n) { return std::vector<uint8_t>(d, d + n); }

inline pipecodec::dtype dtype_from(uint8_t b) { return pipecodec::dtype(1 + b % 3); }

// n values of a repeating ramp, (i mod period - period / 2) x step: deterministic, finite data
// for seeds and starting states.
inline std::vector<float> ramp(uint64_t n, int period, float step) {
  std::vector<float> x(n);
  for (uint64_t i = 0; i < n; ++i) x[i] = float(int(i % uint64_t(period)) - period / 2) * step;
  return x;
}

}  // namespace pcfuzz

// Harness (d): stateful sequences. The first byte picks EF21 (state_seq_ef21.hpp) or AQ-SGD
// (state_seq_aqsgd.hpp); the rest drives a sequence of sender/receiver steps with faults and
// corrupted payloads. Each half states its properties.
#pragma once

#include "state_seq_aqsgd.hpp"
#include "state_seq_ef21.hpp"

namespace pcfuzz {

inline int fuzz_state_seq(const uint8_t* data, size_t size) {
  reader r(data, size);
  return r.u8() & 1 ? fuzz_aqsgd_seq(r) : fuzz_ef21_seq(r);
}

}  // namespace pcfuzz

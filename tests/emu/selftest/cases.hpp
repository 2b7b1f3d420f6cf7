// The self-test's cases: each runs a broken kernel (or runtime call) or its correct twin in
// a child process and reports how the result compares with the host's expectation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace selftest {

// How a broken variant must be reported.
enum detector : unsigned {
  emulator = 1,  // the emulator's own check ends the run (exit 3, "pipecodec-emu: <check>")
  results = 2,   // a wrong result, or results that differ between schedules or poison bytes
  api = 4,       // a CUDA call returns the error a GPU gives (exit 5, "api-error <name>")
  tsan = 8,      // ThreadSanitizer reports a data race (its build)
  asan = 16,     // AddressSanitizer reports the access (its build)
  ubsan = 32,    // UndefinedBehaviorSanitizer reports it (the AddressSanitizer build has it too)
};

// What a child run found.
struct outcome {
  bool correct = false;  // output equals the host's expectation
  uint64_t hash = 0;     // of the output, to compare runs
  std::string api_error; // set when a CUDA call failed as expected
};

struct test_case {
  const char* name;
  const char* defect;  // what the broken variant does wrong
  unsigned detectors;  // 0: a behaviour check with no broken variant
  const char* expect;  // text the detector's report must contain
  outcome (*run)(bool broken);
};

const std::vector<test_case>& cases();

}  // namespace selftest

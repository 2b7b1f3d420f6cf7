// The fuzz harness table. X(name, extra seed directory): harness body pcfuzz::fuzz_<name>,
// corpus tools/fuzz/corpus/<name>/, crash regressions tools/fuzz/regressions/<name>/, plus
// an optional extra seed directory relative to the repository root ("" for none).
// tools/fuzz/run and tests/fuzz_replay.cpp both read this list: a new harness is its header
// and one line here (a new codec in an existing harness is one line in its own case table).
#pragma once

#include "checkpoint_restore.hpp"
#include "decode.hpp"
#include "policy_parse.hpp"
#include "roundtrip.hpp"
#include "spec_string.hpp"
#include "state_seq.hpp"

#define PCFUZZ_HARNESSES(X)          \
  X(decode, "tests/golden")          \
  X(roundtrip, "")                   \
  X(spec_string, "")                 \
  X(state_seq, "")                   \
  X(policy_parse, "")                \
  X(checkpoint_restore, "")

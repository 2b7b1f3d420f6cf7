// Harness (e): the policy text parser on any text. Properties: no crash; a rejected text gives
// invalid_spec, a message quoting the bad token, and leaves the output policy untouched; an
// accepted one prints (to_string) to a text that parses back to an equal policy and prints
// identically.
#pragma once

#include <string>

#include "common.hpp"

namespace pcfuzz {

inline int fuzz_policy_parse(const uint8_t* data, size_t size) {
  using namespace pipecodec;
  const std::string text(reinterpret_cast<const char*>(data), size);
  policy sentinel;
  PCFUZZ_CHECK(ok(parse_policy("fwd=quant:bits=3+ef21; b7.warmup=2epochs", sentinel)), "sentinel policy");
  policy p = sentinel;
  std::string err;
  const status st = parse_policy(text, p, &err);
  if (!ok(st)) {
    PCFUZZ_CHECK(st == status::invalid_spec, "rejection with %s", to_string(st));
    PCFUZZ_CHECK(err.find('\'') != std::string::npos, "message names no token: '%s'", err.c_str());
    PCFUZZ_CHECK(p == sentinel && to_string(p) == to_string(sentinel), "rejected text changed the policy");
    return 0;
  }
  const std::string canon = to_string(p);
  policy back;
  const status sb = parse_policy(canon, back, &err);
  PCFUZZ_CHECK(ok(sb), "canonical text '%s' rejected: %s", canon.c_str(), err.c_str());
  PCFUZZ_CHECK(back == p, "'%s' parses to a different policy", canon.c_str());
  PCFUZZ_CHECK(to_string(back) == canon, "'%s' prints differently the second time", canon.c_str());
  return 0;
}

}  // namespace pcfuzz

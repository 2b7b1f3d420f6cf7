// Helper of the endpoint tests (host and gpu suites): a policy from its text form.
#pragma once

#include <doctest/doctest.h>

#include <string>

#include "pipecodec/policy/policy_parse.hpp"
#include "print.hpp"

namespace tpolicy {

inline pipecodec::policy policy_of(const char* text) {
  pipecodec::policy p;
  std::string err;
  REQUIRE_MESSAGE(pipecodec::ok(pipecodec::parse_policy(text, p, &err)), err);
  return p;
}

}  // namespace tpolicy

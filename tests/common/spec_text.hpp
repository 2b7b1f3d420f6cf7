// A spec from its text, for tests: the parse must succeed, or the test stops with the
// parser's message.
#pragma once

#include <doctest/doctest.h>

#include <string>

#include "pipecodec/policy/spec_string.hpp"

namespace testspec {

inline pipecodec::spec parse(const std::string& text) {
  pipecodec::spec s;
  std::string err;
  REQUIRE_MESSAGE(pipecodec::ok(pipecodec::parse_spec(text, s, &err)), text << ": " << err);
  return s;
}

}  // namespace testspec

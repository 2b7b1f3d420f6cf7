// How the suites print library values in failure messages: statuses by name.
#pragma once

#include <doctest/doctest.h>

#include <ostream>
#include <string>

#include "pipecodec/core/status.hpp"

namespace pipecodec {
// doctest 2.4 prints an enum as its underlying integer in CHECK values, CAPTURE and messages
// whatever operator<< exists; an overload of toString found by ADL takes precedence.
inline doctest::String toString(status s) { return to_string(s); }
inline std::ostream& operator<<(std::ostream& os, status s) { return os << to_string(s); }
}  // namespace pipecodec

// CAPTURE of a C string prints its address with doctest 2.4: capture its text instead.
#define CAPTURE_TEXT(x) INFO(#x " := " << std::string(x))

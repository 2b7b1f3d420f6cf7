// How the suites print library values in failure messages: statuses by name.
#pragma once

#include <ostream>
#include <string>

#include "pipecodec/core/status.hpp"

namespace pipecodec {
inline std::ostream& operator<<(std::ostream& os, status s) { return os << to_string(s); }
}  // namespace pipecodec

// CAPTURE of a C string prints its address with doctest 2.4: capture its text instead.
#define CAPTURE_TEXT(x) INFO(#x " := " << std::string(x))

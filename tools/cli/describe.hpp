// Text forms of payload fields shared by the info and eval commands.
#pragma once

#include <string>

#include "pipecodec/core/spec.hpp"
#include "pipecodec/core/shape.hpp"

namespace cli {

inline std::string shape_text(const pipecodec::shape& s) {
  return s.ndim == 1 ? std::to_string(s.cols) : std::to_string(s.rows) + "x" + std::to_string(s.cols);
}

}  // namespace cli

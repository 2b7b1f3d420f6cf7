// Text forms of payload fields shared by the info and eval commands.
#pragma once

#include <string>

#include "pipecodec/core/spec.hpp"
#include "pipecodec/core/shape.hpp"

namespace cli {

inline const char* codec_name(pipecodec::codec_id c) {
  switch (c) {
    case pipecodec::codec_id::plain: return "plain";
    case pipecodec::codec_id::quant: return "quant";
    case pipecodec::codec_id::topk: return "topk";
    case pipecodec::codec_id::randk: return "randk";
  }
  return "unknown";
}

inline std::string shape_text(const pipecodec::shape& s) {
  return s.ndim == 1 ? std::to_string(s.cols) : std::to_string(s.rows) + "x" + std::to_string(s.cols);
}

}  // namespace cli

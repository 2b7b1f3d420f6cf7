// The one rule for tools that allocate an output from a header they did not write (a payload's
// or a checkpoint's declared shape): the CLI's `decode` and the fuzz harnesses. A header is a
// few bytes; a TopK payload of a few hundred bytes can honestly declare 2^31 elements (k = 1),
// and a flipped bit can declare far more. The library never allocates (the caller passes the
// output), so the cap belongs to the tools, checked before the allocation, never after.
#pragma once

#include <cstdint>

#include "pipecodec/core/shape.hpp"

namespace pipecodec::tools {

// The CLI's default: 2^28 elements, 1 GiB as fp32. Above any single boundary tensor of common
// pipeline runs (micro-batch 8 x 4096 tokens x hidden 8192 is exactly 2^28) and still an
// allocation a laptop survives; `pipecodec decode --max-elements N` raises it.
constexpr uint64_t default_max_output_elements = uint64_t(1) << 28;

// Whether a declared shape holds at most `limit` elements (false when rows x cols overflows).
inline bool output_fits(const shape& declared, uint64_t limit) {
  uint64_t n = 0;
  return declared.count(n) && n <= limit;
}

}  // namespace pipecodec::tools

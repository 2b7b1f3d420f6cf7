// Buffer overlap test used to reject aliasing input/output arguments.
#pragma once

#include <cstdint>
#include <functional>

namespace pipecodec::host::detail {

inline bool overlaps(const void* a, uint64_t a_bytes, const void* b, uint64_t b_bytes) {
  if (a == nullptr || b == nullptr || a_bytes == 0 || b_bytes == 0) return false;
  // std::less gives a total order on unrelated pointers, unlike the built-in <.
  const auto* a0 = static_cast<const unsigned char*>(a);
  const auto* b0 = static_cast<const unsigned char*>(b);
  return std::less<const unsigned char*>{}(a0, b0 + b_bytes) &&
         std::less<const unsigned char*>{}(b0, a0 + a_bytes);
}

}  // namespace pipecodec::host::detail

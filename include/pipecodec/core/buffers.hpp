// Checks on the caller's buffers that both backends make in the same way: overlap (aliasing)
// and element alignment of typed tensor pointers.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>

#include "dtype.hpp"

namespace pipecodec::detail {

inline bool overlaps(const void* a, uint64_t a_bytes, const void* b, uint64_t b_bytes) {
  if (a == nullptr || b == nullptr || a_bytes == 0 || b_bytes == 0) return false;
  // std::less gives a total order on unrelated pointers, unlike the built-in <.
  const auto* a0 = static_cast<const unsigned char*>(a);
  const auto* b0 = static_cast<const unsigned char*>(b);
  return std::less<const unsigned char*>{}(a0, b0 + b_bytes) &&
         std::less<const unsigned char*>{}(b0, a0 + a_bytes);
}

// One buffer of a call: where, how many bytes, and whether the call writes it.
struct region {
  const void* data;
  uint64_t bytes;
  bool written;
};

// True when a buffer the call writes overlaps any other buffer of the call. The stateful
// schemes read their inputs and state again after writing scratch, payload or state, so any
// such overlap would corrupt the state or desynchronise the two sides; read-only buffers may
// share memory.
inline bool any_written_overlap(std::initializer_list<region> rs) {
  for (const region* a = rs.begin(); a != rs.end(); ++a)
    for (const region* b = a + 1; b != rs.end(); ++b)
      if ((a->written || b->written) && overlaps(a->data, a->bytes, b->data, b->bytes)) return true;
  return false;
}

// A tensor pointer must be aligned to its element size (`misaligned` otherwise): both backends
// read and write tensors through typed pointers. Payloads and workspaces may have any alignment.
PIPECODEC_HD bool element_aligned(const void* p, dtype t) {
  return reinterpret_cast<uintptr_t>(p) % dtype_bytes(t) == 0;
}

// Sample ids are read as uint64_t.
PIPECODEC_HD bool ids_aligned(const uint64_t* ids) { return reinterpret_cast<uintptr_t>(ids) % alignof(uint64_t) == 0; }

}  // namespace pipecodec::detail

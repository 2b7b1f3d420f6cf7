// A tiny pluggable allocator for the RAII owners that sit on top of the caller-owned-memory
// API (stateful schemes, endpoints). Two function pointers and a context, so a caller can
// plug in a pool, pinned host memory or cudaMalloc without templates or inheritance.
#pragma once

#include <cstdlib>

#include "status.hpp"

namespace pipecodec {

struct allocator {
  // Returns nullptr on failure. Memory must be aligned to at least 16 bytes.
  void* (*allocate)(size_t bytes, void* ctx) = nullptr;
  void (*deallocate)(void* p, size_t bytes, void* ctx) = nullptr;
  void* ctx = nullptr;
};

namespace detail {
inline void* malloc_allocate(size_t bytes, void*) { return std::malloc(bytes == 0 ? 1 : bytes); }
inline void malloc_deallocate(void* p, size_t, void*) { std::free(p); }
}  // namespace detail

// The default: std::malloc / std::free (malloc memory is aligned for max_align_t >= 16).
inline allocator malloc_allocator() {
  allocator a;
  a.allocate = detail::malloc_allocate;
  a.deallocate = detail::malloc_deallocate;
  return a;
}

// Owns `size` bytes from an allocator; move-only. The building block of the state owners.
class owned_bytes {
 public:
  owned_bytes() = default;
  owned_bytes(const owned_bytes&) = delete;
  owned_bytes& operator=(const owned_bytes&) = delete;
  owned_bytes(owned_bytes&& o) noexcept { swap(o); }
  owned_bytes& operator=(owned_bytes&& o) noexcept {
    if (this != &o) {
      reset();
      swap(o);
    }
    return *this;
  }
  ~owned_bytes() { reset(); }

  // Replaces the current block by a fresh one of `bytes` bytes (contents unspecified).
  [[nodiscard]] status allocate(size_t bytes, const allocator& a) {
    if (a.allocate == nullptr || a.deallocate == nullptr) return status::invalid_argument;
    void* p = a.allocate(bytes, a.ctx);
    if (p == nullptr) return status::out_of_memory;
    reset();
    ptr_ = p;
    size_ = bytes;
    alloc_ = a;
    return status::success;
  }
  void reset() {
    if (ptr_ != nullptr) alloc_.deallocate(ptr_, size_, alloc_.ctx);
    ptr_ = nullptr;
    size_ = 0;
  }
  void* data() const { return ptr_; }
  size_t size() const { return size_; }

 private:
  void swap(owned_bytes& o) noexcept {
    void* p = ptr_;
    ptr_ = o.ptr_;
    o.ptr_ = p;
    const size_t s = size_;
    size_ = o.size_;
    o.size_ = s;
    const allocator a = alloc_;
    alloc_ = o.alloc_;
    o.alloc_ = a;
  }
  void* ptr_ = nullptr;
  size_t size_ = 0;
  allocator alloc_{};
};

}  // namespace pipecodec

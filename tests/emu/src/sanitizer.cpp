// Sanitizer hooks of the emulator. ThreadSanitizer: every emulated thread and every stream
// is a TSan fiber context, created from one context that never synchronizes, so the only
// happens-before edges between them are the ones the emulator adds for CUDA's ordering
// (kernel start and end, barriers, stream and event order); this file is compiled without
// TSan instrumentation, so the emulator's bookkeeping is invisible to it. AddressSanitizer:
// the fiber stack switches, and stacks reused from a pool.
#include <atomic>

#include "internal.hpp"

// GCC defines __SANITIZE_ADDRESS__ under -fsanitize=address; clang (the device fuzz
// harnesses, tools/fuzz/run) says so through __has_feature.
#if defined(__SANITIZE_ADDRESS__)
#define PIPECODEC_EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PIPECODEC_EMU_ASAN 1
#endif
#endif

#if defined(PIPECODEC_EMU_ASAN)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

// Present when the program is linked with the TSan runtime.
extern "C" {
void* __tsan_get_current_fiber() __attribute__((weak));
void* __tsan_create_fiber(unsigned flags) __attribute__((weak));
void __tsan_switch_to_fiber(void* fiber, unsigned flags) __attribute__((weak));
void __tsan_set_fiber_name(void* fiber, const char* name) __attribute__((weak));
void __tsan_acquire(void* addr) __attribute__((weak));
void __tsan_release(void* addr) __attribute__((weak));
void __tsan_ignore_thread_begin() __attribute__((weak));
void __tsan_ignore_thread_end() __attribute__((weak));
}

namespace pipecodec_emu::detail::san {

namespace {
constexpr unsigned no_sync = 1;  // __tsan_switch_to_fiber_no_sync
bool tsan() { return __tsan_create_fiber != nullptr; }

// Contexts are created from here: a new TSan fiber inherits its creator's history.
void* factory() {
  static void* f = [] {
    void* ctx = __tsan_create_fiber(0);
    __tsan_set_fiber_name(ctx, "pipecodec-emu context factory");
    return ctx;
  }();
  return f;
}
}  // namespace

void* new_context(const char* name) {
  if (!tsan()) return nullptr;
  // One host thread at a time in the factory (a context runs on one thread); this lock is
  // invisible to TSan (this file is not instrumented), so it orders nothing for it.
  static std::atomic_flag busy = ATOMIC_FLAG_INIT;
  while (busy.test_and_set(std::memory_order_acquire)) {
  }
  void* self = __tsan_get_current_fiber();
  __tsan_switch_to_fiber(factory(), no_sync);
  void* ctx = __tsan_create_fiber(0);
  __tsan_switch_to_fiber(self, no_sync);
  busy.clear(std::memory_order_release);
  __tsan_set_fiber_name(ctx, name);
  return ctx;
}

void name_context(void* ctx, const char* name) {
  if (tsan() && ctx) __tsan_set_fiber_name(ctx, name);
}

void* current_context() { return tsan() ? __tsan_get_current_fiber() : nullptr; }

void switch_context(void* ctx) {
  if (tsan() && ctx) __tsan_switch_to_fiber(ctx, no_sync);
}

void acquire(void* sync) {
  if (tsan()) __tsan_acquire(sync);
}
void release(void* sync) {
  if (tsan()) __tsan_release(sync);
}
void ignore_begin() {
  if (tsan()) __tsan_ignore_thread_begin();
}
void ignore_end() {
  if (tsan()) __tsan_ignore_thread_end();
}

#if defined(PIPECODEC_EMU_ASAN)
void start_switch(void** fake_stack, const void* bottom, size_t size) {
  __sanitizer_start_switch_fiber(fake_stack, bottom, size);
}
void finish_switch(void* fake_stack, const void** old_bottom, size_t* old_size) {
  __sanitizer_finish_switch_fiber(fake_stack, old_bottom, old_size);
}
void unpoison(void* p, size_t size) { __asan_unpoison_memory_region(p, size); }
#else
void start_switch(void**, const void*, size_t) {}
void finish_switch(void*, const void**, size_t*) {}
void unpoison(void*, size_t) {}
#endif

}  // namespace pipecodec_emu::detail::san

// clang's -fsanitize-coverage=trace-loads,trace-stores calls these on every load and store of
// the code it instrumented (the kernels of kernel_traffic); the emulator counts those that an
// emulated thread makes to device or pinned memory (src/traffic.cpp).
#include <cstdint>

#include "../src/internal.hpp"

#define PIPECODEC_EMU_HOOKS(N)                                                                      \
  extern "C" void __sanitizer_cov_load##N(void* p) {                                              \
    pipecodec_emu::detail::traffic_record(p, N, false, __builtin_return_address(0));              \
  }                                                                                               \
  extern "C" void __sanitizer_cov_store##N(void* p) {                                             \
    pipecodec_emu::detail::traffic_record(p, N, true, __builtin_return_address(0));               \
  }
PIPECODEC_EMU_HOOKS(1)
PIPECODEC_EMU_HOOKS(2)
PIPECODEC_EMU_HOOKS(4)
PIPECODEC_EMU_HOOKS(8)
PIPECODEC_EMU_HOOKS(16)

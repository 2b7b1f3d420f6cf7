// What the emulator's sources share: its settings, fault reports, the sanitizer hooks and
// the grid executor.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace pipecodec_emu::detail {

enum class order { forward, reverse, shuffle };

// Read once from the environment (docs/CUDA.md, "The emulated GPU"):
//   PIPECODEC_EMU_SMS        multiprocessors of the emulated device (default 2)
//   PIPECODEC_EMU_SCHEDULE   forward | reverse | shuffle[:seed]: the order in which a block's
//                            runnable threads, and a grid's blocks, are run (default forward)
//   PIPECODEC_EMU_POISON     byte that fills fresh shared and device memory (default 0xA5)
//   PIPECODEC_EMU_WORKERS    host threads that run blocks (default: hardware threads, up to 4)
//   PIPECODEC_EMU_STATS      file that receives, at exit, one line per kernel that ran:
//                            launches, blocks, threads, name
//   PIPECODEC_EMU_RESIDENT_BLOCKS  blocks per multiprocessor the occupancy query answers for
//                            every kernel (default: computed from threads and shared memory)
struct settings {
  int sms = 2;
  order schedule = order::forward;
  uint64_t seed = 0;
  uint8_t poison = 0xA5;
  int workers = 1;
  const char* stats = nullptr;
  int resident_blocks = 0;  // 0: computed
  bool ftz = false;  // emulated threads flush subnormals, as nvcc's -ftz=true device code does
};
const settings& config();

// Reports an error the emulator detected and ends the process (exit status 3). `what` names
// the check; when called from an emulated thread the report names its kernel, block and thread.
[[noreturn]] void fault(const char* what, const char* file, int line, const char* detail);

// cudaSuccess, or the error a GPU would report for this launch configuration.
cudaError_t validate_launch(const kernel_launch& k);

// Counts a grid that ran, for PIPECODEC_EMU_STATS.
void count_launch(const kernel_launch& k);

// [begin, end) of every device and pinned allocation, sorted.
std::vector<std::pair<uintptr_t, uintptr_t>> memory_ranges();
// Memory traffic counting (traffic.cpp): a grid starts (on the host thread that runs it); an
// access of `bytes` at p by the code at `site`.
void traffic_grid_begin(const kernel_launch& k);
void traffic_record(const void* p, uint32_t bytes, bool write, const void* site);

// Runs every block of a grid on the worker threads and returns when all have finished.
// sync_start / sync_done: the happens-before objects (ThreadSanitizer) the grid's threads
// acquire when they start and release when they end.
void run_grid(const kernel_launch& k, void* sync_start, void* sync_done);

// ThreadSanitizer and AddressSanitizer hooks; no-ops in a build without them.
namespace san {
void* new_context(const char* name);  // a TSan context that inherits no history (costs ~2 ms)
void name_context(void* ctx, const char* name);  // how reports name it from now on
void* current_context();
void switch_context(void* ctx);       // without synchronization: edges are explicit
void acquire(void* sync);
void release(void* sync);
void ignore_begin();                  // the emulator's own accesses are not the program's
void ignore_end();
// AddressSanitizer fiber switches.
void start_switch(void** fake_stack, const void* bottom, size_t size);
void finish_switch(void* fake_stack, const void** old_bottom, size_t* old_size);
void unpoison(void* p, size_t size);
}  // namespace san

}  // namespace pipecodec_emu::detail

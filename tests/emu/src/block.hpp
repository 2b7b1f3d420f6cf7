// The state of one emulated block while it runs, shared by the grid executor (scheduler.cpp)
// and the calls a kernel makes into it (kernel_calls.cpp).
#pragma once

#include <boost/context/fiber.hpp>
#include <cstdint>
#include <vector>

#include "internal.hpp"

namespace pipecodec_emu::detail {

constexpr size_t static_shared_limit = 48 << 10;
constexpr size_t shared_optin_limit = 227 << 10;  // sm_90: static + dynamic per block
constexpr int max_warp_collectives = 4;            // pending at once in one warp (disjoint masks)


// initial-exec: this library is linked into the executable, so TLS needs no __tls_get_addr.
// A copy loaded with dlopen (the Python extension's emulated test build) cannot use the static
// TLS block, too small for the blocks' state: it defines PIPECODEC_EMU_DLOPEN.
#ifdef PIPECODEC_EMU_DLOPEN
#define PIPECODEC_EMU_TLS thread_local
#else
#define PIPECODEC_EMU_TLS thread_local __attribute__((tls_model("initial-exec")))
#endif

enum class waits : uint8_t { none, barrier, warp };

struct emu_thread {
  boost::context::fiber fiber;
  coords at{};
  uint3 idx{};
  uint32_t linear = 0, slot = 0;
  bool started = false, done = false;
  waits wait = waits::none;
  const char* what = nullptr;  // the call it waits in
  const char* file = nullptr;
  int line = 0;
  uint64_t result = 0;
  uint32_t barrier_gen = 0, warp_gen = 0;
  void* tsan = nullptr;
  void* fake_stack = nullptr;
  const void* stack_bottom = nullptr;
  size_t stack_size = 0;
};

struct pending_collective {
  bool active = false;
  collective kind = collective::shfl;
  uint32_t mask = 0, arrived = 0;
  int width = 32;
  const char* file = nullptr;
  int line = 0;
  uint64_t value[32];
  int param[32];
};

struct shared_alloc {
  const shared_site* site;
  void* p;
};

struct block_run {
  const kernel_launch* k = nullptr;
  uint3 idx{};
  uint32_t nthreads = 0, nwarps = 0, live = 0;
  std::vector<emu_thread> threads;
  std::vector<uint64_t> runnable;  // bit per thread
  std::vector<pending_collective> warps;  // max_warp_collectives per warp
  std::vector<uint32_t> warp_gen;
  std::vector<uint32_t> exited, blocked;  // per warp: lanes that have exited / wait somewhere
  uint32_t bar_arrived = 0, bar_gen = 0;
  const char* bar_file = nullptr;
  int bar_line = 0;
  char* sync = nullptr;  // TSan objects: barrier parity [0, 2), warp w parity [2 + 2w, 4 + 2w)
  std::vector<shared_alloc> shared;
  size_t static_shared = 0;
  void* dynamic = nullptr;
  boost::context::fiber sched;  // the scheduler, while one of the block's threads runs
  emu_thread* cur = nullptr;
  const void* sched_bottom = nullptr;
  size_t sched_size = 0;
  void* sched_fake_stack = nullptr;
  void* sched_tsan = nullptr;
  void* sync_start = nullptr;
  void* sync_done = nullptr;
  uint64_t rng = 0;
  order schedule = order::forward;
};

extern PIPECODEC_EMU_TLS block_run* tl_run;  // the block this host thread runs, if any

// The block of the calling emulated thread; a fault naming `what` outside a kernel.
block_run& current_block(const char* what, const char* file, int line);

// Memory traffic counting (traffic.cpp): the calling host thread finished block b.
void traffic_block_end(const block_run& b);

const char* collective_name(collective c);
bool same_site(const char* fa, int la, const char* fb, int lb);
void set_runnable(block_run& b, const emu_thread& t);
// The calling emulated thread gives control back to the scheduler until it is picked again.
void yield(block_run& b, emu_thread& t);
void set_waiting(block_run& b, emu_thread& t, waits w, const char* what, const char* file, int line);
void wake(block_run& b, emu_thread& t);
void complete_barrier(block_run& b);
// Lanes of `warp` named by a collective pending in it that `lane` has not reached.
const pending_collective* waiting_for(block_run& b, uint32_t warp, uint32_t lane);
// ThreadSanitizer synchronization objects of the block's barrier and of each warp.
inline char* barrier_sync(block_run& b, uint32_t gen) { return b.sync + (gen & 1); }
inline char* warp_sync(block_run& b, uint32_t warp, uint32_t gen) { return b.sync + 2 + 2 * warp + (gen & 1); }
[[noreturn]] void faultf(const char* what, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));

}  // namespace pipecodec_emu::detail

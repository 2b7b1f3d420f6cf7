// Executes a grid: every block on one host thread, its threads as cooperative fibers
// (Boost.Context) that run until they reach a barrier or a warp collective, picked in the
// configured order. A collective completes when every thread it names has reached the same
// call (all source values are read before any result is written); anything else is a fault
// reported with the kernel, block, thread and source line: divergent barriers or
// collectives, masks that name exited or absent lanes, reads from lanes outside the mask,
// deadlocks, shared memory over the device's limits.
#include <sys/mman.h>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "block.hpp"

namespace pipecodec_emu::detail {

namespace {

namespace bctx = boost::context;

constexpr size_t page_bytes = 4096;
constexpr size_t stack_bytes = size_t(256) << 10;  // sanitizers need deep frames; pages are touched lazily
// What an emulated thread runs on, per host thread and slot: a fiber stack (a guard page
// below it) and a ThreadSanitizer context. Thread t of block b takes slot (t + 37 b) mod 1024:
// distinct slots within a block, another slot for thread t of the next block. Both are
// reused block after block (a TSan context costs about 2 ms to create), and always together:
// memory of a stack is only ever reused by the same TSan context. A reused context keeps its
// history, so blocks that run one after another on one host thread are largely ordered for
// TSan; races between blocks show between blocks that run on different host threads.
constexpr uint32_t slot_count = 1024;
struct slot {
  char* stack = nullptr;  // base of the mapping: guard page, then stack_bytes
  void* tsan = nullptr;
};
struct slot_pool {
  slot slots[slot_count];
  ~slot_pool() {
    for (const slot& s : slots)
      if (s.stack) munmap(s.stack, page_bytes + stack_bytes);
  }
};
PIPECODEC_EMU_TLS slot_pool tl_slots;

struct slot_stack {  // Boost.Context StackAllocator: the thread's slot's stack, kept after the fiber ends
  emu_thread* t;
  bctx::stack_context allocate() {
    char*& base = tl_slots.slots[t->slot].stack;
    if (base == nullptr) {
      void* m = mmap(nullptr, page_bytes + stack_bytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (m == MAP_FAILED) fault("fiber stack", __FILE__, __LINE__, "mmap failed");
      base = static_cast<char*>(m);
      mprotect(base, page_bytes, PROT_NONE);
    }
    // A finished fiber leaves poisoned redzones only in the frames that never returned: the
    // fiber's entry frames, at the top of the stack.
    constexpr size_t entry_frames = 8 << 10;
    san::unpoison(base + page_bytes + stack_bytes - entry_frames, entry_frames);
    t->stack_bottom = base + page_bytes;
    t->stack_size = stack_bytes;
    bctx::stack_context sc;
    sc.size = stack_bytes;
    sc.sp = base + page_bytes + stack_bytes;
    return sc;
  }
  void deallocate(bctx::stack_context&) noexcept {}
};

uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

emu_thread* pick(block_run& b) {
  const size_t words = b.runnable.size();
  size_t w = words;
  int bit = 0;
  switch (b.schedule) {
    case order::forward:
      for (size_t i = 0; i < words; ++i)
        if (b.runnable[i]) {
          w = i;
          bit = __builtin_ctzll(b.runnable[i]);
          break;
        }
      break;
    case order::reverse:
      for (size_t i = words; i-- > 0;)
        if (b.runnable[i]) {
          w = i;
          bit = 63 - __builtin_clzll(b.runnable[i]);
          break;
        }
      break;
    case order::shuffle: {
      uint64_t count = 0;
      for (uint64_t x : b.runnable) count += uint64_t(__builtin_popcountll(x));
      if (count == 0) break;
      uint64_t r = splitmix(b.rng) % count;
      for (size_t i = 0; i < words && w == words; ++i) {
        uint64_t x = b.runnable[i];
        const uint64_t c = uint64_t(__builtin_popcountll(x));
        if (r >= c) {
          r -= c;
          continue;
        }
        for (; r > 0; --r) x &= x - 1;
        w = i;
        bit = __builtin_ctzll(x);
      }
      break;
    }
  }
  if (w == words) return nullptr;
  b.runnable[w] &= ~(uint64_t(1) << bit);
  return &b.threads[w * 64 + size_t(bit)];
}

void thread_exit(block_run& b, emu_thread& t) {
  const uint32_t lane = t.linear % 32, warp = t.linear / 32;
  if (const pending_collective* p = waiting_for(b, warp, lane))
    faultf("warp collective", p->file, p->line,
           "lane %u exited while lanes 0x%08x wait in %s (mask 0x%08x), which names it", lane, p->arrived,
           collective_name(p->kind), p->mask);
  t.done = true;
  b.exited[warp] |= 1u << lane;
  --b.live;
  if (b.bar_arrived > 0 && b.bar_arrived == b.live) complete_barrier(b);
}

// PIPECODEC_EMU_FTZ=1: the kernel's float operations flush subnormal inputs and results to
// zero (SSE's DAZ and FTZ bits), the effect of --use_fast_math or -ftz=true on device code.
// A fiber keeps its own MXCSR across switches; it is restored before the fiber ends anyway.
struct flush_subnormals {
#if defined(__SSE__)
  unsigned saved = _mm_getcsr();
  flush_subnormals() {
    if (config().ftz) _mm_setcsr(saved | 0x8040u);
  }
  ~flush_subnormals() { _mm_setcsr(saved); }
#else
  flush_subnormals() {
    if (config().ftz) fault("PIPECODEC_EMU_FTZ", __FILE__, __LINE__, "needs an SSE host (x86-64)");
  }
#endif
};

void thread_main(block_run& b, emu_thread& t) {
  san::finish_switch(nullptr, &b.sched_bottom, &b.sched_size);
  san::acquire(b.sync_start);
  {
    const flush_subnormals mode;
    b.k->body(b.k->params.get());
  }
  thread_exit(b, t);
  san::release(b.sync_done);
}

// The TSan context of thread t's slot, named for reports after the thread it now runs.
void* context_for(const block_run& b, const emu_thread& t) {
  void*& ctx = tl_slots.slots[t.slot].tsan;
  if (ctx == nullptr) ctx = san::new_context("emulated thread");
  san::ignore_begin();  // the name is formatted on this host thread's stack, under another context
  char name[320];
  std::snprintf(name, sizeof name, "%s block (%u,%u,%u) thread (%u,%u,%u)", b.k->name, b.idx.x, b.idx.y, b.idx.z,
                t.idx.x, t.idx.y, t.idx.z);
  san::name_context(ctx, name);
  san::ignore_end();
  return ctx;
}

void start_thread(block_run& b, emu_thread& t) {
  t.started = true;
  if (san::current_context()) t.tsan = context_for(b, t);
  block_run* bp = &b;
  emu_thread* tp = &t;
  t.fiber = bctx::fiber(std::allocator_arg, slot_stack{tp}, [bp, tp](bctx::fiber&& sched) {
    bp->sched = std::move(sched);
    thread_main(*bp, *tp);
    san::switch_context(bp->sched_tsan);
    san::start_switch(nullptr, bp->sched_bottom, bp->sched_size);
    return std::move(bp->sched);
  });
}

[[noreturn]] void deadlock(block_run& b) {
  char buf[900];
  size_t used = 0;
  for (const emu_thread& t : b.threads) {
    if (t.done || t.wait == waits::none || used + 120 > sizeof buf) continue;
    used += size_t(std::snprintf(buf + used, sizeof buf - used, "\n  thread (%u,%u,%u) waits in %s at %s:%d", t.idx.x,
                                 t.idx.y, t.idx.z, t.what, t.file, t.line));
  }
  fault("deadlock", nullptr, 0, buf);
}

void run_block(block_run& b, const kernel_launch& k, uint32_t linear_block, void* sync_start, void* sync_done) {
  // The containers are reused from earlier blocks, whose threads read them: their resizing is
  // the emulator's, not an access of the program's.
  san::ignore_begin();
  b.k = &k;
  b.idx = uint3{linear_block % k.grid.x, linear_block / k.grid.x % k.grid.y, linear_block / (k.grid.x * k.grid.y)};
  b.nthreads = k.block.x * k.block.y * k.block.z;
  b.nwarps = (b.nthreads + 31) / 32;
  b.live = b.nthreads;
  if (b.threads.size() != b.nthreads) b.threads.resize(b.nthreads);  // a finished thread's fiber is empty
  for (uint32_t i = 0; i < b.nthreads; ++i) {
    emu_thread& t = b.threads[i];
    t.linear = i;
    t.slot = (i + 37 * linear_block) % slot_count;
    t.idx = uint3{i % k.block.x, i / k.block.x % k.block.y, i / (k.block.x * k.block.y)};
    t.at = coords{t.idx, b.idx, k.block, k.grid};
    t.started = t.done = false;
    t.wait = waits::none;
    t.tsan = nullptr;
  }
  b.runnable.assign((b.nthreads + 63) / 64, 0);
  for (emu_thread& t : b.threads) set_runnable(b, t);
  b.warps.resize(size_t(b.nwarps) * max_warp_collectives);
  for (pending_collective& p : b.warps) p.active = false;
  b.warp_gen.assign(b.nwarps, 0);
  b.exited.assign(b.nwarps, 0);
  b.blocked.assign(b.nwarps, 0);
  b.bar_arrived = 0;
  b.bar_gen = 0;
  b.shared.clear();
  b.shared.reserve(16);
  b.static_shared = 0;
  b.sync_start = sync_start;
  b.sync_done = sync_done;
  b.sched_tsan = san::current_context();
  b.schedule = config().schedule;
  b.rng = config().seed ^ (uint64_t(linear_block) * 0x9E3779B97F4A7C15ull) ^ reinterpret_cast<uintptr_t>(k.entry);
  b.sync = static_cast<char*>(std::malloc(2 + 2 * size_t(b.nwarps)));
  b.dynamic = nullptr;
  if (k.dynamic_shared > 0) {
    if (posix_memalign(&b.dynamic, 16, k.dynamic_shared) != 0) fault("dynamic shared memory", nullptr, 0, "out of memory");
    std::memset(b.dynamic, config().poison, k.dynamic_shared);
  }
  san::ignore_end();
  tl_run = &b;
  for (;;) {
    emu_thread* t = pick(b);
    if (t == nullptr) {
      if (b.live == 0) break;
      deadlock(b);
    }
    b.cur = t;
    if (!t->started) start_thread(b, *t);
    san::switch_context(t->tsan);
    san::start_switch(&b.sched_fake_stack, t->stack_bottom, t->stack_size);
    t->fiber = std::move(t->fiber).resume();
    san::finish_switch(b.sched_fake_stack, nullptr, nullptr);
  }
  b.cur = nullptr;
  tl_run = nullptr;
  traffic_block_end(b);
  san::ignore_begin();
  for (shared_alloc& s : b.shared) std::free(s.p);
  std::free(b.dynamic);
  std::free(b.sync);  // TSan forgets the synchronization objects that lived there
  san::ignore_end();
}

// Host threads that run blocks next to the one that forces the grid.
class worker_pool {
 public:
  void run(const kernel_launch& k, const std::vector<uint32_t>& order, void* sync_start, void* sync_done) {
    ensure_started();
    {
      std::lock_guard<std::mutex> lock(m_);
      k_ = &k;
      order_ = &order;
      sync_start_ = sync_start;
      sync_done_ = sync_done;
      next_.store(0);
      remaining_ = threads_.size() + 1;
      ++generation_;
    }
    wake_.notify_all();
    work();
    std::unique_lock<std::mutex> lock(m_);
    if (--remaining_ > 0) done_.wait(lock, [&] { return remaining_ == 0; });
  }

  ~worker_pool() {
    {
      std::lock_guard<std::mutex> lock(m_);
      stop_ = true;
      ++generation_;
    }
    wake_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

 private:
  void ensure_started() {
    if (!threads_.empty() || config().workers <= 1) return;
    for (int i = 1; i < config().workers; ++i) threads_.emplace_back([this] { loop(); });
  }
  void work() {
    static PIPECODEC_EMU_TLS block_run b;
    for (uint32_t i = next_.fetch_add(1); i < order_->size(); i = next_.fetch_add(1))
      run_block(b, *k_, (*order_)[i], sync_start_, sync_done_);
  }
  void loop() {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(m_);
        wake_.wait(lock, [&] { return generation_ != seen; });
        seen = generation_;
        if (stop_) return;
      }
      work();
      std::lock_guard<std::mutex> lock(m_);
      if (--remaining_ == 0) done_.notify_one();
    }
  }

  std::vector<std::thread> threads_;
  std::mutex m_;
  std::condition_variable wake_, done_;
  uint64_t generation_ = 0;
  bool stop_ = false;
  size_t remaining_ = 0;
  const kernel_launch* k_ = nullptr;
  const std::vector<uint32_t>* order_ = nullptr;
  void* sync_start_ = nullptr;
  void* sync_done_ = nullptr;
  std::atomic<uint32_t> next_{0};
};

}  // namespace

PIPECODEC_EMU_TLS block_run* tl_run = nullptr;

block_run& current_block(const char* what, const char* file, int line) {
  if (tl_run == nullptr) fault(what, file, line, "called outside a kernel");
  return *tl_run;
}

const char* collective_name(collective c) {
  switch (c) {
    case collective::shfl: return "__shfl_sync";
    case collective::shfl_up: return "__shfl_up_sync";
    case collective::shfl_down: return "__shfl_down_sync";
    case collective::shfl_xor: return "__shfl_xor_sync";
    case collective::ballot: return "__ballot_sync";
    case collective::any: return "__any_sync";
    case collective::all: return "__all_sync";
    case collective::syncwarp: return "__syncwarp";
  }
  return "?";
}

bool same_site(const char* fa, int la, const char* fb, int lb) {
  return la == lb && (fa == fb || std::strcmp(fa, fb) == 0);
}

void set_runnable(block_run& b, const emu_thread& t) { b.runnable[t.linear / 64] |= uint64_t(1) << (t.linear % 64); }

void yield(block_run& b, emu_thread& t) {
  san::switch_context(b.sched_tsan);
  san::start_switch(&t.fake_stack, b.sched_bottom, b.sched_size);
  b.sched = std::move(b.sched).resume();
  san::finish_switch(t.fake_stack, nullptr, nullptr);
}

void set_waiting(block_run& b, emu_thread& t, waits w, const char* what, const char* file, int line) {
  t.wait = w;
  t.what = what;
  t.file = file;
  t.line = line;
  b.blocked[t.linear / 32] |= 1u << (t.linear % 32);
}

void wake(block_run& b, emu_thread& t) {
  t.wait = waits::none;
  b.blocked[t.linear / 32] &= ~(1u << (t.linear % 32));
  set_runnable(b, t);
}

void complete_barrier(block_run& b) {
  for (emu_thread& u : b.threads)
    if (u.wait == waits::barrier) wake(b, u);
  b.bar_arrived = 0;
  ++b.bar_gen;
}

void faultf(const char* what, const char* file, int line, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  fault(what, file, line, buf);
}

const pending_collective* waiting_for(block_run& b, uint32_t warp, uint32_t lane) {
  for (int i = 0; i < max_warp_collectives; ++i) {
    const pending_collective& p = b.warps[warp * max_warp_collectives + i];
    if (p.active && (p.mask >> lane & 1u) && !(p.arrived >> lane & 1u)) return &p;
  }
  return nullptr;
}

void run_grid(const kernel_launch& k, void* sync_start, void* sync_done) {
  static uint64_t launches = 0;
  count_launch(k);
  traffic_grid_begin(k);
  const uint32_t blocks = k.grid.x * k.grid.y * k.grid.z;
  std::vector<uint32_t> order(blocks);
  for (uint32_t i = 0; i < blocks; ++i) order[i] = i;
  if (config().schedule == order::reverse) std::reverse(order.begin(), order.end());
  if (config().schedule == order::shuffle) {
    uint64_t s = config().seed + 0x51ED270B27ull * ++launches;
    for (uint32_t i = blocks; i > 1; --i) std::swap(order[i - 1], order[splitmix(s) % i]);
  }
  if (blocks == 1 || config().workers <= 1) {
    static PIPECODEC_EMU_TLS block_run b;
    for (uint32_t i : order) run_block(b, k, i, sync_start, sync_done);
    return;
  }
  static worker_pool pool;
  pool.run(k, order, sync_start, sync_done);
}

void fault(const char* what, const char* file, int line, const char* detail) {
  static std::atomic<bool> reported{false};
  if (!reported.exchange(true)) {
    const block_run* b = tl_run;
    std::fprintf(stderr, "pipecodec-emu: %s", what);
    if (b != nullptr && b->cur != nullptr)
      std::fprintf(stderr, " in kernel %s, block (%u,%u,%u), thread (%u,%u,%u)", b->k->name, b->idx.x, b->idx.y,
                   b->idx.z, b->cur->idx.x, b->cur->idx.y, b->cur->idx.z);
    if (file != nullptr) std::fprintf(stderr, " at %s:%d", file, line);
    std::fprintf(stderr, ": %s\n", detail);
    std::fflush(stderr);
  }
  std::_Exit(3);
}

}  // namespace pipecodec_emu::detail

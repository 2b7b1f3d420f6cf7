// Executes a grid: every block on one host thread, its threads as cooperative fibers
// (Boost.Context) that run until they reach a barrier or a warp collective, picked in the
// configured order. A collective completes when every thread it names has reached the same
// call (all source values are read before any result is written); anything else is a fault
// reported with the kernel, block, thread and source line: divergent barriers or
// collectives, masks that name exited or absent lanes, reads from lanes outside the mask,
// deadlocks, shared memory over the device's limits.
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <boost/context/fiber.hpp>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "internal.hpp"

namespace pipecodec_emu::detail {

namespace {

namespace bctx = boost::context;

constexpr size_t page_bytes = 4096;
constexpr size_t stack_bytes = size_t(256) << 10;  // sanitizers need deep frames; pages are touched lazily
constexpr size_t static_shared_limit = 48 << 10;
constexpr size_t shared_optin_limit = 227 << 10;  // sm_90: static + dynamic per block
constexpr int max_warp_collectives = 4;            // pending at once in one warp (disjoint masks)

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
// initial-exec: this library is linked into the executable, so TLS needs no __tls_get_addr.
#define PIPECODEC_EMU_TLS thread_local __attribute__((tls_model("initial-exec")))
PIPECODEC_EMU_TLS slot_pool tl_slots;

enum class waits : uint8_t { none, barrier, warp };

struct emu_thread {
  bctx::fiber fiber;
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
  uint32_t linear_block = 0;
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
  bctx::fiber sched;  // the scheduler, while one of the block's threads runs
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
PIPECODEC_EMU_TLS block_run* tl_run = nullptr;

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

// The calling emulated thread gives control back to the scheduler until it is picked again.
void yield(block_run& b, emu_thread& t) {
  san::switch_context(b.sched_tsan);
  san::start_switch(&t.fake_stack, b.sched_bottom, b.sched_size);
  b.sched = std::move(b.sched).resume();
  san::finish_switch(t.fake_stack, nullptr, nullptr);
}

char* barrier_sync(block_run& b, uint32_t gen) { return b.sync + (gen & 1); }
char* warp_sync(block_run& b, uint32_t warp, uint32_t gen) { return b.sync + 2 + 2 * warp + (gen & 1); }

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

[[noreturn]] void faultf(const char* what, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));
void faultf(const char* what, const char* file, int line, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  fault(what, file, line, buf);
}

// Lanes of `warp` named by a collective pending in it that `lane` has not reached.
const pending_collective* waiting_for(block_run& b, uint32_t warp, uint32_t lane) {
  for (int i = 0; i < max_warp_collectives; ++i) {
    const pending_collective& p = b.warps[warp * max_warp_collectives + i];
    if (p.active && (p.mask >> lane & 1u) && !(p.arrived >> lane & 1u)) return &p;
  }
  return nullptr;
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

void thread_main(block_run& b, emu_thread& t) {
  san::finish_switch(nullptr, &b.sched_bottom, &b.sched_size);
  san::acquire(b.sync_start);
  b.k->body(b.k->params.get());
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
  b.linear_block = linear_block;
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

void run_grid(const kernel_launch& k, void* sync_start, void* sync_done) {
  static uint64_t launches = 0;
  count_launch(k);
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

void syncthreads(const char* file, int line) {
  block_run* bp = tl_run;
  if (bp == nullptr) fault("__syncthreads", file, line, "called outside a kernel");
  block_run& b = *bp;
  emu_thread& t = *b.cur;
  const uint32_t lane = t.linear % 32, warp = t.linear / 32;
  if (const pending_collective* p = waiting_for(b, warp, lane))
    faultf("barrier divergence", file, line,
           "lane %u reached __syncthreads while lanes 0x%08x wait for it in %s at %s:%d (mask 0x%08x)", lane,
           p->arrived, collective_name(p->kind), p->file, p->line, p->mask);
  if (b.bar_arrived > 0 && !same_site(b.bar_file, b.bar_line, file, line))
    faultf("barrier divergence", file, line, "%u thread(s) wait at a different __syncthreads, at %s:%d",
           b.bar_arrived, b.bar_file, b.bar_line);
  if (b.bar_arrived == 0) {
    b.bar_file = file;
    b.bar_line = line;
  }
  t.barrier_gen = b.bar_gen;
  san::release(barrier_sync(b, t.barrier_gen));
  if (++b.bar_arrived == b.live) {
    complete_barrier(b);
    set_runnable(b, t);
  } else {
    set_waiting(b, t, waits::barrier, "__syncthreads", file, line);
  }
  yield(b, t);
  san::acquire(barrier_sync(b, t.barrier_gen));
}

namespace {

// Lane `lane`'s result of a completed shuffle.
uint64_t shuffle_result(const pending_collective& p, uint32_t lane) {
  const uint32_t w = uint32_t(p.width), seg = lane & ~(w - 1), pos = lane & (w - 1);
  const uint32_t d = uint32_t(p.param[lane]);
  int64_t src = -1;  // -1: the lane's own value
  switch (p.kind) {
    case collective::shfl: src = seg + (d & (w - 1)); break;
    case collective::shfl_up:
      if (pos >= d) src = lane - d;
      break;
    case collective::shfl_down:
      if (pos + d < w) src = lane + d;
      break;
    case collective::shfl_xor:
      if ((lane ^ d) < seg + w && (lane ^ d) < 32) src = lane ^ d;
      break;
    default: break;
  }
  if (src < 0) return p.value[lane];
  if (!(p.mask >> src & 1u))
    faultf("warp collective", p.file, p.line, "lane %u reads lane %lld in %s, which its mask 0x%08x does not name",
           lane, static_cast<long long>(src), collective_name(p.kind), p.mask);
  return p.value[src];
}

// Every named lane's result, written only after all were read.
void complete_collective(block_run& b, uint32_t warp, pending_collective& p) {
  uint32_t votes = 0;
  for (uint32_t bits = p.mask; bits != 0; bits &= bits - 1)
    if (p.value[__builtin_ctz(bits)] != 0) votes |= 1u << __builtin_ctz(bits);
  for (uint32_t bits = p.mask; bits != 0; bits &= bits - 1) {
    const uint32_t j = uint32_t(__builtin_ctz(bits));
    emu_thread& u = b.threads[warp * 32 + j];
    switch (p.kind) {
      case collective::ballot: u.result = votes; break;
      case collective::any: u.result = votes != 0; break;
      case collective::all: u.result = votes == p.mask; break;
      case collective::syncwarp: u.result = 0; break;
      default: u.result = shuffle_result(p, j);
    }
    wake(b, u);
  }
  p.active = false;
  ++b.warp_gen[warp];
}

}  // namespace

uint64_t warp_collective(collective kind, uint32_t mask, uint64_t value, int param, int width, const char* file,
                         int line) {
  block_run* bp = tl_run;
  if (bp == nullptr) fault(collective_name(kind), file, line, "called outside a kernel");
  block_run& b = *bp;
  emu_thread& t = *b.cur;
  const uint32_t lane = t.linear % 32, warp = t.linear / 32;
  const char* name = collective_name(kind);
  if (width < 1 || width > 32 || (width & (width - 1)) != 0)
    faultf("warp collective", file, line, "%s with width %d (a power of two up to 32)", name, width);
  if (!(mask >> lane & 1u))
    faultf("warp collective", file, line, "lane %u calls %s with mask 0x%08x, which does not name it", lane, name,
           mask);
  const uint32_t lanes = std::min<uint32_t>(32, b.nthreads - warp * 32);
  if (lanes < 32 && (mask >> lanes) != 0)
    faultf("warp collective", file, line, "%s mask 0x%08x names lanes the block does not have (warp of %u lanes)",
           name, mask, lanes);
  if (const uint32_t gone = mask & b.exited[warp])
    faultf("warp collective", file, line, "%s mask 0x%08x names lane %d, which has exited", name, mask,
           __builtin_ctz(gone));
  pending_collective* slots = &b.warps[size_t(warp) * max_warp_collectives];
  pending_collective* p = nullptr;
  for (int i = 0; i < max_warp_collectives; ++i)
    if (slots[i].active && (slots[i].mask & mask)) p = &slots[i];
  if (p != nullptr) {
    if (p->mask != mask || p->kind != kind || p->width != width || !same_site(p->file, p->line, file, line))
      faultf("warp divergence", file, line,
             "lane %u reached %s (mask 0x%08x) while lanes 0x%08x wait in %s at %s:%d (mask 0x%08x)", lane, name,
             mask, p->arrived, collective_name(p->kind), p->file, p->line, p->mask);
  } else {
    if (const uint32_t elsewhere = mask & b.blocked[warp]) {
      const emu_thread& u = b.threads[warp * 32 + uint32_t(__builtin_ctz(elsewhere))];
      faultf("warp divergence", file, line, "lane %u reached %s (mask 0x%08x) while lane %u waits in %s at %s:%d", lane,
             name, mask, u.linear % 32, u.what, u.file, u.line);
    }
    for (int i = 0; i < max_warp_collectives && p == nullptr; ++i)
      if (!slots[i].active) p = &slots[i];
    if (p == nullptr) fault("warp collective", file, line, "too many collectives pending in one warp");
    p->active = true;
    p->kind = kind;
    p->mask = mask;
    p->arrived = 0;
    p->width = width;
    p->file = file;
    p->line = line;
  }
  p->value[lane] = value;
  p->param[lane] = param;
  p->arrived |= 1u << lane;
  const bool fence = kind == collective::syncwarp;
  t.warp_gen = b.warp_gen[warp];
  if (fence) san::release(warp_sync(b, warp, t.warp_gen));
  if (p->arrived == p->mask) {
    complete_collective(b, warp, *p);
  } else {
    set_waiting(b, t, waits::warp, name, file, line);
  }
  yield(b, t);
  if (fence) san::acquire(warp_sync(b, warp, t.warp_gen));
  return t.result;
}

void* block_shared(const shared_site& site) {
  block_run* bp = tl_run;
  if (bp == nullptr) fault("shared memory", site.file, site.line, "declared outside a kernel");
  block_run& b = *bp;
  for (const shared_alloc& s : b.shared)
    if (s.site == &site) return s.p;
  b.static_shared += site.bytes;
  if (b.static_shared > static_shared_limit)
    faultf("shared memory", site.file, site.line,
           "%s brings the kernel's static shared memory to %zu bytes, over 48 KiB (ptxas refuses it)", site.name,
           b.static_shared);
  if (b.static_shared + b.k->dynamic_shared > shared_optin_limit)
    faultf("shared memory", site.file, site.line, "%zu bytes static + %zu dynamic, over the 227 KiB of a block",
           b.static_shared, b.k->dynamic_shared);
  // The emulator's allocation, not an access of the kernel's: each block's copy of the
  // variable is its own heap block, so AddressSanitizer sees both of its ends.
  san::ignore_begin();
  void* p = nullptr;
  if (posix_memalign(&p, std::max<size_t>(16, site.align), site.bytes) != 0) p = nullptr;
  if (p != nullptr) std::memset(p, config().poison, site.bytes);
  b.shared.push_back(shared_alloc{&site, p});
  san::ignore_end();
  if (p == nullptr) fault("shared memory", site.file, site.line, "out of host memory");
  return p;
}

const coords& current_coords() {
  const block_run* b = tl_run;
  if (b == nullptr || b->cur == nullptr) fault("threadIdx/blockIdx", nullptr, 0, "read outside a kernel");
  return b->cur->at;
}

void* dynamic_shared() {
  block_run* bp = tl_run;
  if (bp == nullptr) fault("dynamic shared memory", nullptr, 0, "requested outside a kernel");
  return bp->dynamic;
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

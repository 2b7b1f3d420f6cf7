// Memory traffic per kernel (pipecodec_emu::count_traffic; docs/CUDA.md, "Memory traffic per
// kernel"). In a program whose kernel code clang compiled with
// -fsanitize-coverage=trace-loads,trace-stores, every load and store calls a hook
// (tests/emu/traffic/hooks.cpp) that records it here. An access by an emulated thread to
// device or pinned memory counts for its kernel: the 32-byte sectors each launch read and
// wrote, and per warp-level request the distinct sectors its lanes touched. The emulator runs
// a warp's lanes one after another, so a request is the same access site (the hook's return
// address) reached for the n-th time by each lane of one warp. Atomics and aggregate copies
// the compiler turns into memcpy are not seen. Counting assumes one host thread launches
// kernels (the grids' blocks may run on several).
#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "block.hpp"

namespace pipecodec_emu::detail {

namespace {

// A kernel's counts: the sectors each launch read and wrote (a GPU whose L2 keeps what a grid
// touched moves each once from DRAM; the sets are the running launch's), and its requests.
struct kernel_counts {
  uint64_t launches = 0, requests = 0, request_sectors = 0, ideal_sectors = 0, lane_bytes = 0;
  uint64_t read_sectors = 0, written_sectors = 0, watched_sectors = 0;
  std::unordered_set<uint64_t> read, written;
};

std::atomic<bool> counting{false};
std::vector<std::pair<uintptr_t, uintptr_t>> ranges;  // device and pinned, sorted; fixed while a grid runs
std::mutex totals_lock;
std::map<std::string, kernel_counts> totals;
uint64_t watch_begin = 0, watch_end = 0;  // sectors of the range count_traffic watches

struct request_key {
  uintptr_t site;
  uint32_t warp, occurrence;
  bool operator==(const request_key& o) const {
    return site == o.site && warp == o.warp && occurrence == o.occurrence;
  }
};
struct key_hash {
  size_t operator()(const request_key& k) const {
    return std::hash<uintptr_t>()(k.site) ^ (size_t(k.warp) << 40) ^ (size_t(k.occurrence) * 0x9E3779B97F4A7C15ull);
  }
};
struct access {
  uintptr_t address;
  uint32_t bytes;
  bool operator<(const access& o) const { return address < o.address; }
  bool operator==(const access& o) const { return address == o.address; }
};

// What the block this host thread runs did so far.
struct block_traffic {
  std::vector<std::unordered_map<uintptr_t, uint32_t>> seen;  // per thread: site -> times reached
  std::unordered_map<request_key, std::vector<access>, key_hash> requests;
  std::unordered_set<uint64_t> read, written;
};
PIPECODEC_EMU_TLS block_traffic* tl_traffic = nullptr;

bool device_or_pinned(uintptr_t a) {
  auto it = std::upper_bound(ranges.begin(), ranges.end(), std::make_pair(a, ~uintptr_t(0)));
  return it != ranges.begin() && a < std::prev(it)->second;
}

// Adds the finished launches' sets to the counts (totals_lock held).
void fold_launches() {
  for (auto& [name, k] : totals) {
    k.read_sectors += k.read.size();
    k.written_sectors += k.written.size();
    for (uint64_t sector : k.read) k.watched_sectors += sector >= watch_begin && sector < watch_end;
    k.read.clear();
    k.written.clear();
  }
}

}  // namespace

void traffic_record(const void* p, uint32_t bytes, bool write, const void* site) {
  if (!counting.load(std::memory_order_relaxed)) return;
  block_run* b = tl_run;
  if (b == nullptr || b->cur == nullptr) return;  // the host, or the emulator's scheduler
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  if (!device_or_pinned(a)) return;  // shared memory, the stack, the host
  if (tl_traffic == nullptr) tl_traffic = new block_traffic;  // per host thread, for the program's life
  block_traffic& t = *tl_traffic;
  if (t.seen.size() < b->nthreads) t.seen.resize(b->nthreads);
  const uintptr_t s = reinterpret_cast<uintptr_t>(site);
  const uint32_t n = t.seen[b->cur->linear][s]++;
  t.requests[request_key{s, b->cur->linear / 32, n}].push_back(access{a, bytes});
  for (uint64_t sector = a / 32; sector <= (a + bytes - 1) / 32; ++sector) (write ? t.written : t.read).insert(sector);
}

void traffic_grid_begin(const kernel_launch& k) {
  if (!counting.load()) return;
  ranges = memory_ranges();
  std::lock_guard<std::mutex> lock(totals_lock);
  fold_launches();
  totals[k.name].launches += 1;
}

void traffic_block_end(const block_run& b) {
  block_traffic* t = tl_traffic;
  if (t == nullptr || t->requests.empty()) return;
  uint64_t requests = 0, sectors = 0, ideal = 0, lane_bytes = 0;
  for (auto& [key, accesses] : t->requests) {
    for (const access& x : accesses) lane_bytes += x.bytes;
    // Lanes that read the same address (a broadcast) need its bytes once.
    std::sort(accesses.begin(), accesses.end());
    accesses.erase(std::unique(accesses.begin(), accesses.end()), accesses.end());
    uint64_t distinct = 0, bytes = 0, last = ~uint64_t(0);
    for (const access& x : accesses) {
      bytes += x.bytes;
      for (uint64_t sector = x.address / 32; sector <= (x.address + x.bytes - 1) / 32; ++sector)
        if (sector != last) ++distinct, last = sector;
    }
    requests += 1;
    sectors += distinct;
    ideal += (bytes + 31) / 32;
  }
  {
    std::lock_guard<std::mutex> lock(totals_lock);
    kernel_counts& k = totals[b.k->name];
    k.requests += requests;
    k.request_sectors += sectors;
    k.ideal_sectors += ideal;
    k.lane_bytes += lane_bytes;
    k.read.insert(t->read.begin(), t->read.end());
    k.written.insert(t->written.begin(), t->written.end());
  }
  t->requests.clear();
  for (auto& m : t->seen) m.clear();
  t->read.clear();
  t->written.clear();
}

}  // namespace pipecodec_emu::detail

using namespace pipecodec_emu::detail;

void pipecodec_emu::count_traffic(bool on, const void* watch, size_t watch_bytes) {
  std::lock_guard<std::mutex> lock(totals_lock);
  fold_launches();
  const uintptr_t w = reinterpret_cast<uintptr_t>(watch);
  watch_begin = w / 32;
  watch_end = watch_bytes == 0 ? watch_begin : (w + watch_bytes - 1) / 32 + 1;
  counting.store(on);
}

std::vector<pipecodec_emu::kernel_traffic> pipecodec_emu::take_traffic() {
  std::lock_guard<std::mutex> lock(totals_lock);
  std::vector<kernel_traffic> out;
  fold_launches();
  for (const auto& [name, k] : totals)
    out.push_back(kernel_traffic{name, k.launches, 32 * k.read_sectors, 32 * k.written_sectors,
                                 32 * k.watched_sectors, k.lane_bytes, k.requests, k.request_sectors,
                                 k.ideal_sectors});
  totals.clear();
  return out;
}

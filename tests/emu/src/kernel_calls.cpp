// What a kernel calls into its block: __syncthreads, the warp collectives (each completes
// when every lane it names has reached the same call, all source values read before any
// result is written), static and dynamic shared memory, its coordinates.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "block.hpp"

namespace pipecodec_emu::detail {

void syncthreads(const char* file, int line) {
  block_run& b = current_block("__syncthreads", file, line);
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
  block_run& b = current_block(collective_name(kind), file, line);
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
  block_run& b = current_block("shared memory", site.file, site.line);
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
  return current_block("dynamic shared memory", nullptr, 0).dynamic;
}

}  // namespace pipecodec_emu::detail

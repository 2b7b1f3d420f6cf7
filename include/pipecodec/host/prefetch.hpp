// Software prefetch of the next tile's inputs, a few lines at a time, spread over the
// compute-bound encode of the current tile. The tiled sender steps (encode_quant_tiled)
// alternate a memory-bound fill with encoding from cache; while they encode no demand miss
// keeps the hardware prefetcher busy, so without this the DRAM reads of each fill and the
// arithmetic of each encode add up instead of overlapping. All requests of a tile issued at
// once overflow the miss queue and are dropped; a few lines per chunk of 32 codes is what
// works (bench/RESULTS.md, "The tiled senders request the next tile while they encode").
#pragma once

#include <cstdint>

namespace pipecodec::host::detail {

class line_prefetcher {
 public:
  static constexpr uint32_t max_ranges = 32;    // more pieces (rows of under 256) are left to the hardware
  static constexpr uint64_t max_lines = 1024;   // 64 KiB a tile: beyond it the fill streams anyway
  // Tensors of fewer than 2^21 elements (8 MiB of fp32) are not prefetched: a step's inputs that
  // size may well be in cache (the layer just wrote them), where the requests cost 3-6 % of
  // the step and gain nothing; from 2^22 elements on they saved 25 % (bench/RESULTS.md).
  static constexpr uint64_t min_elements = uint64_t(1) << 21;

  // Adds bytes [p, p + bytes) to the lines to request.
  void add(const void* p, uint64_t bytes) {
    if (count_ == max_ranges || bytes == 0 || lines_ >= max_lines) return;
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    const uintptr_t first = a & ~uintptr_t(line - 1), end = a + bytes;
    at_[count_] = first;
    end_[count_] = end;
    ++count_;
    lines_ += (end - first + line - 1) / line;
  }

  // Spreads the lines added so far over `steps` calls of step().
  void pace(uint64_t steps) {
    const uint64_t lines = lines_ < max_lines ? lines_ : max_lines;
    per_step_ = steps == 0 ? lines : (lines + steps - 1) / steps;
    budget_ = lines;
  }

  // Lines still to request.
  uint64_t pending() const { return budget_; }

  // Requests the next per_step lines (into L2: the fill reads them a tile later).
  void step() {
    uint64_t k = per_step_ < budget_ ? per_step_ : budget_;
    budget_ -= k;
    while (k > 0 && cur_ < count_) {
      uintptr_t a = at_[cur_];
      const uintptr_t e = end_[cur_];
      for (; k > 0 && a < e; --k, a += line) {
#if defined(__GNUC__)
        __builtin_prefetch(reinterpret_cast<const void*>(a), 0, 2);
#endif
      }
      at_[cur_] = a;
      if (a >= e) ++cur_;
    }
  }

 private:
  static constexpr uintptr_t line = 64;
  uintptr_t at_[max_ranges] = {}, end_[max_ranges] = {};
  uint32_t count_ = 0, cur_ = 0;
  uint64_t lines_ = 0, per_step_ = 0, budget_ = 0;
};

}  // namespace pipecodec::host::detail

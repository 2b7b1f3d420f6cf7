// The AQ-SGD sample table: 64-bit sample id -> dense slot 0..count-1, in caller memory whose
// size is known from the capacity alone. Open addressing with linear probing over a
// power-of-two bucket array at most half full; slots are handed out in insertion order, so
// two sides that insert the same ids in the same order hold identical tables. Nothing is
// ever erased (no silent eviction), so there are no tombstones. Callers validate a whole
// batch (duplicates, capacity) before inserting, so an insert never fails.
//
// Memory (u64 words): count | capacity | buckets | 0 | ids_by_slot[capacity] |
//                     bucket keys[buckets] | bucket slot+1[buckets] (0 = empty)
// It is host memory: a device backend looks slots up on the host and ships slot indices.
#pragma once

#include "format.hpp"

namespace pipecodec {

// Capacities beyond this are refused so every derived size stays far from 2^64.
constexpr uint64_t aqsgd_max_capacity = uint64_t(1) << 40;

namespace detail {

PIPECODEC_HD uint64_t table_buckets(uint64_t capacity) {
  uint64_t b = 16;
  while (b < 2 * capacity) b <<= 1;
  return b;
}

PIPECODEC_HD uint64_t mix_id(uint64_t z) {  // splitmix64 finaliser
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace detail

// Bytes of table memory for `capacity` samples; 0 when the capacity is out of range.
PIPECODEC_HD uint64_t aqsgd_table_bytes(uint64_t capacity) {
  if (capacity == 0 || capacity > aqsgd_max_capacity) return 0;
  return 8 * (4 + capacity + 2 * detail::table_buckets(capacity));
}

// A view of table memory (it owns nothing; copies refer to the same table).
struct aqsgd_table {
  uint64_t* words = nullptr;

  static constexpr uint64_t npos = ~uint64_t(0);

  PIPECODEC_HD uint64_t count() const { return words[0]; }
  PIPECODEC_HD uint64_t capacity() const { return words[1]; }
  PIPECODEC_HD uint64_t buckets() const { return words[2]; }
  PIPECODEC_HD const uint64_t* ids_by_slot() const { return words + 4; }
  PIPECODEC_HD uint64_t* keys() const { return words + 4 + capacity(); }
  PIPECODEC_HD uint64_t* slots1() const { return keys() + buckets(); }

  // Slot of `id`, or npos.
  PIPECODEC_HD uint64_t find(uint64_t id) const {
    const uint64_t mask = buckets() - 1;
    for (uint64_t b = detail::mix_id(id) & mask;; b = (b + 1) & mask) {
      const uint64_t s1 = slots1()[b];
      if (s1 == 0) return npos;
      if (keys()[b] == id) return s1 - 1;
    }
  }

  // Inserts an id that is not present into the next slot (the caller checked find() and
  // count() < capacity()); returns the slot.
  PIPECODEC_HD uint64_t insert_new(uint64_t id) const {
    const uint64_t mask = buckets() - 1;
    uint64_t b = detail::mix_id(id) & mask;
    while (slots1()[b] != 0) b = (b + 1) & mask;
    const uint64_t slot = words[0]++;
    keys()[b] = id;
    slots1()[b] = slot + 1;
    words[4 + slot] = id;
    return slot;
  }

  // Refills the buckets from n little-endian u64 ids (slot i for id i), leaving ids_by_slot
  // and count alone; false at the first duplicate id. Inserting in slot order places every
  // id in the bucket insert_new would have, so rebuilding from a table's own ids reproduces
  // it exactly (restore uses that to undo a rejected checkpoint).
  PIPECODEC_HD bool rebuild_buckets(const uint8_t* ids_le, uint64_t n) const {
    const uint64_t mask = buckets() - 1;
    memset(keys(), 0, 16 * buckets());
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t id = detail::get_u64(ids_le + 8 * i);
      uint64_t b = detail::mix_id(id) & mask;
      for (; slots1()[b] != 0; b = (b + 1) & mask)
        if (keys()[b] == id) return false;
      keys()[b] = id;
      slots1()[b] = i + 1;
    }
    return true;
  }

  // After rebuild_buckets succeeded for the same ids: sets ids_by_slot and count.
  PIPECODEC_HD void assign_ids(const uint8_t* ids_le, uint64_t n) const {
    for (uint64_t i = 0; i < capacity(); ++i) words[4 + i] = i < n ? detail::get_u64(ids_le + 8 * i) : 0;
    words[0] = n;
  }
};

// Formats `bytes` of memory as an empty table for `capacity` samples.
PIPECODEC_HD status init_aqsgd_table(void* mem, uint64_t bytes, uint64_t capacity, aqsgd_table& t) {
  const uint64_t need = aqsgd_table_bytes(capacity);
  if (need == 0) return status::invalid_argument;
  if (mem == nullptr) return status::invalid_argument;
  if (reinterpret_cast<uintptr_t>(mem) % 8 != 0) return status::misaligned;
  if (bytes < need) return status::buffer_too_small;
  memset(mem, 0, need);
  t.words = static_cast<uint64_t*>(mem);
  t.words[1] = capacity;
  t.words[2] = detail::table_buckets(capacity);
  return status::success;
}

}  // namespace pipecodec

// Host side of CUDA AQ-SGD: the id -> slot lookup stays on the host (core/aqsgd_table.hpp),
// which turns a batch's ids into a plan in caller memory (pinned host memory, so the calls
// that upload it stay asynchronous): the frame header and row kinds, and per part row its
// batch row, state row and id. The call uploads the plan's first device_bytes to the
// workspace (and, on the sender, the header and kinds into the message) with
// cudaMemcpyAsync; the caller must not rewrite the plan until `stream` has passed that
// point (alternate two plans, or order with an event).
//   [frame header 64 | kinds, padded to 16 | src[rows] | mrow[rows] | part ids[rows] |
//    batch ids[rows] | slot[rows] (batch order)]  = device_bytes  | sort scratch[rows] |
//   meta: rows, table count before the batch (for the receiver's later commit)
#pragma once

#include <cstring>

#include "../../core/sizes.hpp"
#include "../../core/sample_store.hpp"

namespace pipecodec::cuda::detail {

using namespace pipecodec::detail;

struct aqsgd_plan_layout {
  uint64_t rows = 0;
  uint64_t head = 0;  // header + kinds: the frame's warm_offset()
  uint64_t src = 0, mrow = 0, part_ids = 0, batch_ids = 0, slot = 0, sort = 0, meta = 0;
  uint64_t device_bytes = 0, total = 0;
};

inline aqsgd_plan_layout plan_layout(uint64_t rows) {
  aqsgd_plan_layout L;
  L.rows = rows;
  L.head = aqsgd_header_bytes + align16(rows);
  L.src = L.head;
  L.mrow = L.src + 8 * rows;
  L.part_ids = L.mrow + 8 * rows;
  L.batch_ids = L.part_ids + 8 * rows;
  L.slot = L.batch_ids + 8 * rows;
  L.device_bytes = align16(L.slot + 8 * rows);
  L.sort = L.device_bytes;
  L.meta = L.sort + 8 * rows;
  L.total = L.meta + 16;
  return L;
}

struct aqsgd_planned {
  aqsgd_frame frame;
  uint64_t known = 0;        // table count before the batch: slots at or above are new samples
  const uint64_t* slot = nullptr;  // plan memory: slot of each batch row
  const uint64_t* ids = nullptr;   // plan memory: ids of the batch rows
};

// The planned batch recorded in plan memory (for commit_plan after the device's verdict).
inline status read_plan(const void* plan, aqsgd_planned& out) {
  if (plan == nullptr || reinterpret_cast<uintptr_t>(plan) % 16 != 0) return status::invalid_argument;
  const uint8_t* p = static_cast<const uint8_t*>(plan);
  const uint64_t rows = get_u64(p + 16);
  const aqsgd_plan_layout L = plan_layout(rows);
  if (get_u64(p + L.meta) != rows) return status::invalid_argument;
  out.frame.rows = rows;
  out.known = get_u64(p + L.meta + 8);
  out.slot = reinterpret_cast<const uint64_t*>(p + L.slot);
  out.ids = reinterpret_cast<const uint64_t*>(p + L.batch_ids);
  return status::success;
}

// Plans a batch: looks ids up (duplicates -> invalid_argument, too many new ids ->
// capacity_exceeded, as pipecodec::detail::plan_rows), gives new ids the next slots in row order
// (exactly the slots insert_new will hand out), sends a row warm when new or in warm-up.
// staged: state rows are a staging buffer in batch order (pinned store), else slots.
inline status make_plan(const aqsgd_config& c, const aqsgd_table& t, const uint64_t* ids, uint64_t rows,
                        bool warmup, bool staged, void* plan, size_t plan_size, aqsgd_planned& out) {
  const aqsgd_plan_layout L = plan_layout(rows);
  if (plan == nullptr || (ids == nullptr && rows > 0)) return status::invalid_argument;  // no ids for no rows
  if (plan_size < L.total) return status::buffer_too_small;
  if (reinterpret_cast<uintptr_t>(plan) % 16 != 0 || !ids_aligned(ids)) return status::misaligned;
  uint8_t* p = static_cast<uint8_t*>(plan);
  auto* src = reinterpret_cast<uint64_t*>(p + L.src);
  auto* mrow = reinterpret_cast<uint64_t*>(p + L.mrow);
  auto* pids = reinterpret_cast<uint64_t*>(p + L.part_ids);
  auto* bids = reinterpret_cast<uint64_t*>(p + L.batch_ids);
  auto* slot = reinterpret_cast<uint64_t*>(p + L.slot);
  uint64_t unseen = 0;
  status st = pipecodec::detail::plan_rows(t, ids, rows, reinterpret_cast<uint64_t*>(p + L.sort), slot, unseen);
  if (!ok(st)) return st;
  out.known = t.count();
  uint8_t* kinds = p + aqsgd_header_bytes;
  memset(kinds, 0, L.head - aqsgd_header_bytes);
  aqsgd_frame& f = out.frame;
  f = aqsgd_frame{};
  f.rows = rows;
  f.cols = c.cols;
  f.warm_rows = warmup ? rows : unseen;
  for (uint64_t r = 0, next = out.known, w = 0, d = f.warm_rows; r < rows; ++r) {
    if (slot[r] == aqsgd_table::npos) slot[r] = next++;
    const bool warm = warmup || slot[r] >= out.known;
    kinds[r] = warm ? aqsgd_row_warm : aqsgd_row_delta;
    const uint64_t q = warm ? w++ : d++;
    src[q] = r;
    mrow[q] = staged ? r : slot[r];
    pids[q] = ids[r];
    bids[r] = ids[r];
  }
  f.warm_bytes = aqsgd_part_bytes(c.warmup, f.warm_rows, c.cols);
  f.delta_bytes = aqsgd_part_bytes(c.codec, rows - f.warm_rows, c.cols);
  if ((f.warm_rows > 0 && f.warm_bytes == 0) || (f.warm_rows < rows && f.delta_bytes == 0))
    return status::invalid_spec;
  f.total_bytes = f.end_offset();
  write_aqsgd_header(p, f);
  put_u64(p + L.meta, rows);
  put_u64(p + L.meta + 8, out.known);
  out.slot = slot;
  out.ids = bids;
  return status::success;
}

// Inserts the batch's new ids into the table in row order, so they get the planned slots;
// the table must not have changed since the plan was made.
inline status commit_plan(const aqsgd_table& t, const aqsgd_planned& pl) {
  if (t.count() != pl.known) return status::state_mismatch;
  for (uint64_t r = 0; r < pl.frame.rows; ++r)
    if (pl.slot[r] >= pl.known) (void)t.insert_new(pl.ids[r]);
  return status::success;
}

}  // namespace pipecodec::cuda::detail

// The per-sample store AQ-SGD (host/aqsgd.hpp) and per-sample EF (host/ef_sample.hpp) keep
// on each side in host memory: the id table (core/aqsgd_table.hpp) and rows of state, the
// workspace split, and the checks every batch step runs before it touches the store. The
// configuration, sizes and row plan are the CUDA backend's too (core/sample_store.hpp).
#pragma once

#include "../core/allocator.hpp"
#include "../core/sample_store.hpp"
#include "state_common.hpp"

namespace pipecodec::host {

using pipecodec::aqsgd_config;
using pipecodec::aqsgd_memory;
using pipecodec::aqsgd_memory_use;
using pipecodec::aqsgd_rows_bytes;

// One side's store: the id table (host memory) and the rows m, a capacity x cols tensor.
struct aqsgd_store {
  aqsgd_table table{};
  tensor_view rows{};
};

namespace detail {

// Workspace pieces: fp32 rows (warm rows first, then delta rows), two u64 arrays per row,
// and the codecs' own workspace.
struct aqsgd_ws {
  float* f32 = nullptr;
  uint64_t* ids = nullptr;    // sort scratch, then ids in part order (sender) / batch order (receiver)
  uint64_t* slots = nullptr;  // slot of each batch row, npos while unseen
  void* codec = nullptr;
  size_t codec_bytes = 0;
};

inline size_t aqsgd_codec_ws(const aqsgd_config& c, uint64_t rows) {
  const shape shp(rows, c.cols);
  return std::max(workspace_bytes(c.codec, shp), workspace_bytes(c.warmup, shp));
}

inline status split_aqsgd_ws(const aqsgd_config& c, uint64_t rows, void* ws, size_t size, aqsgd_ws& w) {
  state_workspace sw;
  const size_t ids = size_t(align16(16 * rows));
  const status st = split_workspace(ws, size, rows * c.cols, ids + aqsgd_codec_ws(c, rows), sw);
  if (!ok(st)) return st;
  w.f32 = sw.f32;
  w.ids = reinterpret_cast<uint64_t*>(sw.codec);
  w.slots = w.ids + rows;
  w.codec = static_cast<uint8_t*>(sw.codec) + ids;
  w.codec_bytes = sw.codec_bytes - ids;
  return status::success;
}

// Everything a sender step over a batch checks before it touches its store (AQ-SGD and
// per-sample EF, host/ef_sample.hpp): config, store, batch shape and views, the workspace
// split, aliasing (a written buffer overlapping another), then the row plan (duplicates,
// capacity).
inline status prepare_batch(const aqsgd_config& c, const aqsgd_store& s, const uint64_t* ids,
                            const_tensor_view batch, const void* out, size_t capacity, void* workspace,
                            size_t workspace_size, aqsgd_ws& w, uint64_t& unseen) {
  status st = check_aqsgd_config(c);
  if (ok(st)) st = check_store_layout(c, s.table, s.rows);
  if (!ok(st)) return st;
  const uint64_t rows = batch.shp.rows;
  if (batch.shp.cols != c.cols || rows > max_elements / c.cols) return status::shape_mismatch;
  if (!valid_view(batch.data, rows) || !valid_view(ids, rows) || out == nullptr) return status::invalid_argument;
  st = split_aqsgd_ws(c, rows, workspace, workspace_size, w);
  if (!ok(st)) return st;
  if (!element_aligned(batch.data, batch.type) || !ids_aligned(ids)) return status::misaligned;
  if (any_written_overlap({{ids, 8 * rows, false},
                           {batch.data, rows * c.cols * dtype_bytes(batch.type), false},
                           {s.table.words, aqsgd_table_bytes(c.capacity), true},
                           {s.rows.data, aqsgd_rows_bytes(c), true},
                           {out, capacity, true},
                           {workspace, workspace_size, true}}))
    return status::aliasing;
  return pipecodec::detail::plan_rows(s.table, ids, rows, w.ids, w.slots, unseen);
}

// Owner of a per-sample store (table and zeroed rows) and a workspace, memory from an allocator.
class owned_store {
 public:
  [[nodiscard]] status allocate(const aqsgd_config& c, size_t workspace, const allocator& a) {
    status st = table_.allocate(size_t(aqsgd_table_bytes(c.capacity)), a);
    if (ok(st)) st = rows_.allocate(size_t(aqsgd_rows_bytes(c)), a);
    if (ok(st)) st = ws_.allocate(workspace, a);
    if (ok(st)) st = init_aqsgd_table(table_.data(), table_.size(), c.capacity, store_.table);
    if (!ok(st)) return st;
    memset(rows_.data(), 0, rows_.size());
    store_.rows = tensor_view{rows_.data(), c.state_type, shape(c.capacity, c.cols)};
    return status::success;
  }
  const aqsgd_store& store() const { return store_; }
  void* ws() const { return ws_.data(); }
  size_t ws_size() const { return ws_.size(); }
  uint64_t count() const { return store_.table.words ? store_.table.count() : 0; }

 private:
  aqsgd_store store_{};
  owned_bytes table_, rows_, ws_;
};

}  // namespace detail

}  // namespace pipecodec::host

// A CUDA per-sample store with caller-owned memory (the AQ-SGD and per-sample EF tests): the
// id table in host memory, the rows in device memory or (pinned) in pinned host memory with a
// staging buffer, a device workspace of the scheme's size and a pinned plan buffer.
#pragma once

#include "pipecodec/cuda/aqsgd.cuh"
#include "state_common.hpp"

namespace tgs {

struct cuda_store_side {
  host::aqsgd_config c;
  std::vector<uint64_t> table_mem;
  dmem rows, staging, ws, plan;
  pipecodec::cuda::aqsgd_device_store store;
  cuda_store_side(const host::aqsgd_config& cfg, uint64_t max_rows, bool pinned, size_t workspace_bytes)
      : c(cfg),
        table_mem(aqsgd_table_bytes(cfg.capacity) / 8),
        rows(host::aqsgd_rows_bytes(cfg), pinned),
        staging(pinned ? max_rows * cfg.cols * dtype_bytes(cfg.state_type) : 0),
        ws(workspace_bytes),
        plan(pipecodec::cuda::aqsgd_plan_bytes(max_rows), true) {
    REQUIRE(ok(init_aqsgd_table(table_mem.data(), table_mem.size() * 8, cfg.capacity, store.table)));
    store.rows = tensor_view{rows.p, cfg.state_type, shape(cfg.capacity, cfg.cols)};
    if (pinned) store.staging = tensor_view{staging.p, cfg.state_type, shape(max_rows, cfg.cols)};
  }
  // Table and rows, byte for byte (the host owners' snapshot layout).
  std::vector<uint8_t> snapshot() const {
    auto out = tstate::bytes_of(store.table.words, aqsgd_table_bytes(c.capacity));
    const auto r = rows.get(host::aqsgd_rows_bytes(c));
    out.insert(out.end(), r.begin(), r.end());
    return out;
  }
};

// Random batch ids from a pool of `pool` samples: some seen before, some new, no duplicates
// within a batch.
inline std::vector<uint64_t> batch_ids(uint64_t rows, uint64_t step, uint64_t pool) {
  std::vector<uint64_t> ids;
  uint64_t s = step * 0x9E3779B97F4A7C15ull + 1;
  while (ids.size() < rows) {
    const uint64_t id = 1000 + testdata::splitmix(s) % pool;
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  }
  return ids;
}

}  // namespace tgs

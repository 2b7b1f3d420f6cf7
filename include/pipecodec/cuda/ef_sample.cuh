// Classic error feedback with one residual per training sample on the device, byte-identical
// to host::ef_sample_encode (host/ef_sample.hpp): for each batch row with sample id xi
//   v = x + e(xi);  payload = C(v);  e(xi) = v - D(payload)        (e = 0 for an unseen id)
// The residuals live in the per-sample store CUDA AQ-SGD uses (cuda/aqsgd.cuh:
// aqsgd_device_store, id table in host memory, rows in device memory or in pinned host
// memory with a device staging buffer), with the host's table and rows bit for bit, so a
// host checkpoint (host/checkpoint.hpp, kind ef_sample_store) of a copy of it restores into
// either backend. The call plans the batch on the host (ids -> slots; new ids take the next
// slots in row order) into a caller plan buffer (pinned host memory) and uploads it; the
// step itself is cuda/ef.cuh's, with the residual read and written through the batch's rows:
// one fused pass for quantization, otherwise v -> encode -> validated decode -> e = v - d.
// Asynchronous on `stream`; no allocation, no synchronization. On an error returned by the
// call the store is untouched; the table takes the batch's new ids when it returns success.
#pragma once

#include "../core/sample_store.hpp"
#include "aqsgd.cuh"
#include "ef.cuh"

namespace pipecodec::cuda {

// Device workspace bytes for batches of up to `rows` samples (any alignment).
inline size_t ef_sample_workspace_bytes(const aqsgd_config& c, uint64_t rows) {
  const shape shp(rows, c.cols);
  return size_t(detail::workspace_request(detail::plan_layout(rows).device_bytes + detail::align16(4 * shp.size()))) +
         workspace_bytes(c.codec, shp);
}

namespace detail {

// Batch row r's residual: staging row r (pinned store) or slot[r]; an id the table did not
// hold before this batch (slot >= known) has e = 0.
struct sample_rows {
  uint64_t cols;
  const uint64_t* slot;  // device copy of the plan's slots, batch order
  uint64_t known;
  bool staged;
  __device__ __forceinline__ uint64_t state_index(uint64_t i) const {
    const uint64_t r = i / cols;
    return (staged ? r : slot[r]) * cols + i % cols;
  }
  __device__ __forceinline__ bool seen(uint64_t i) const { return slot[i / cols] < known; }
};

// v = x + e(xi); add_rn(x, 0) for an unseen sample, as the host computes it (-0 becomes +0).
struct sample_sum_source {
  dyn_tensor x, e;
  sample_rows rows;
  __device__ __forceinline__ float operator()(uint64_t i) const {
    return add_rn(x.load(i), rows.seen(i) ? e.load(rows.state_index(i)) : 0.0f);
  }
};

// e(xi) = v - d.
struct sample_residual_sink {
  dyn_tensor e;
  sample_rows rows;
  __device__ __forceinline__ void operator()(uint64_t i, float v, float d) const {
    e.store(rows.state_index(i), sub_rn(v, d));
  }
};

}  // namespace detail

// Sender step for a batch (device tensor, rows = samples, cols = c.cols) with host ids
// ids[0..rows) into one payload of the codec c.codec (capacity >=
// ef_sample_payload_bytes). Duplicate ids: invalid_argument; more new ids than the free
// capacity: capacity_exceeded (host::ef_sample_encode's statuses).
inline status ef_sample_encode(const aqsgd_config& c, aqsgd_device_store& s, const uint64_t* ids,
                               const_tensor_view batch, void* payload, size_t capacity, void* plan, size_t plan_size,
                               void* workspace, size_t workspace_size, uint64_t seed, cudaStream_t stream,
                               size_t* written = nullptr) {
  using namespace detail;
  const uint64_t rows = batch.shp.rows;
  status st = check_device_store(c, s, rows);
  if (!ok(st)) return st;
  if (batch.shp.cols != c.cols) return status::shape_mismatch;
  if ((batch.data == nullptr && rows > 0) || payload == nullptr || workspace == nullptr)
    return status::invalid_argument;
  if (!valid_dtype(uint8_t(batch.type))) return status::not_supported;
  if (!element_aligned(batch.data, batch.type)) return status::misaligned;
  const shape shp(rows, c.cols);
  if (workspace_size < pipecodec::cuda::ef_sample_workspace_bytes(c, rows)) return status::workspace_too_small;
  const uint64_t row_bytes = c.cols * dtype_bytes(c.state_type);
  void* e = s.pinned() ? s.staging.data : s.rows.data;
  if (pipecodec::detail::any_written_overlap({{batch.data, shp.size() * dtype_bytes(batch.type), false},
                                         {e, (s.pinned() ? rows : c.capacity) * row_bytes, true},
                                         {payload, capacity, true},
                                         {workspace, workspace_size, true}}))
    return status::aliasing;
  aqsgd_planned pl;
  st = make_plan(c, s.table, ids, rows, false, s.pinned(), plan, plan_size, pl);
  if (!ok(st)) return st;
  const aqsgd_plan_layout L = plan_layout(rows);
  uint8_t* base = align_workspace(workspace);
  state_ws ws;
  ws.f32 = reinterpret_cast<float*>(base + L.device_bytes);
  ws.codec = reinterpret_cast<uint8_t*>(ws.f32) + align16(4 * shp.size());
  ws.codec_bytes = workspace_size - size_t(static_cast<uint8_t*>(ws.codec) - static_cast<uint8_t*>(workspace));
  st = upload(base, plan, L.device_bytes, stream);
  if (ok(st)) st = stage_batch(s, pl, row_bytes, stream);
  if (!ok(st)) return st;
  const auto* dslot = reinterpret_cast<const uint64_t*>(base + L.slot);
  const sample_rows sr{c.cols, dslot, pl.known, s.pinned()};
  const dyn_tensor et = dyn(e, c.state_type);
  st = state_encode<false>(c.codec, batch, sample_sum_source{dyn(batch.data, batch.type), et, sr},
                           sample_residual_sink{et, sr}, tensor_view{}, payload, capacity, ws,
                           randomness(seed, reinterpret_cast<const uint64_t*>(base + L.batch_ids)), stream, written);
  if (ok(st) && s.pinned())
    st = scatter_rows_back(c.state_type, s.staging.data, s.rows.data, dslot, rows, c.cols, stream, {});
  if (ok(st)) st = commit_plan(s.table, pl);
  return st;
}

}  // namespace pipecodec::cuda

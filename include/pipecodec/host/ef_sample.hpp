// Classic error feedback with the residual kept per training sample, sender side only (the
// receiver decodes payloads as usual). For a batch of samples with ids xi, row by row:
//   v = x + e(xi);  payload = C(v);  e(xi) = v - D(payload)
// with v = fp32(x + e) and e = T(fp32(v - D(payload))) for e stored as T, as host/ef.hpp does
// for its per-batch-row residual. A sample not seen yet has e = 0. The residuals live in the
// per-sample store AQ-SGD uses (core/sample_store.hpp: aqsgd_config without its warm-up
// codec; host/sample_store.hpp: aqsgd_store), so memory is bounded by the capacity and the
// store is saved and restored by host/checkpoint.hpp (kind ef_sample_store).
//
// Why per sample: with the classic residual, row r of a batch inherits what row r of the
// previous batch did not send; when batches are shuffled that is another sample's activation.
// Here a sample's residual only ever returns to that sample.
#pragma once

#include "aqsgd.hpp"

namespace pipecodec::host {

using pipecodec::ef_sample_payload_bytes;

inline size_t ef_sample_workspace_bytes(const aqsgd_config& c, uint64_t rows) {
  return aqsgd_workspace_bytes(c, rows);
}

// Encodes a batch (rows = samples, cols = c.cols) with sample ids ids[0..rows) into one
// payload of the codec c.codec, updating the store's residuals. Duplicate ids in a batch
// are rejected (invalid_argument), as are unseen ids beyond the free capacity
// (capacity_exceeded). On any error the store is left untouched.
inline status ef_sample_encode(const aqsgd_config& c, const aqsgd_store& s, const uint64_t* ids,
                               const_tensor_view batch, void* payload, size_t capacity, void* workspace,
                               size_t workspace_size, uint64_t seed = 0, size_t* written = nullptr) {
  using namespace detail;
  aqsgd_ws w;
  uint64_t unseen = 0;
  status st = prepare_batch(c, s, ids, batch, payload, capacity, workspace, workspace_size, w, unseen);
  if (!ok(st)) return st;
  const uint64_t rows = batch.shp.rows, cols = c.cols;
  const shape shp(rows, cols);
  // v = x + e (e = 0 for an unseen sample), in the same operation order as the commit below
  // recomputes it: body(r, j, v, len, T) gets columns j .. j + len of row r.
  const auto for_rows = [&](auto&& body) {
    return dispatch_dtype(batch.type, [&](auto bc) {
      return dispatch_dtype(c.state_type, [&](auto tc) {
        constexpr dtype B = decltype(bc)::value, T = decltype(tc)::value;
        float v[span_chunk];
        const auto add = [&](uint64_t r, uint64_t j, const float* x, const float* e, uint64_t len) {
          if (e != nullptr) {
            for (uint64_t k = 0; k < len; ++k) v[k] = add_rn(x[k], e[k]);
          } else {
            for (uint64_t k = 0; k < len; ++k) v[k] = add_rn(x[k], 0.0f);
          }
          body(r, j, v, len, tc);
        };
        for (uint64_t r = 0; r < rows; ++r) {
          const uint64_t slot = w.slots[r];
          if (slot != aqsgd_table::npos) {
            zip_spans<B, T>(batch.data, r * cols, s.rows.data, slot * cols, cols,
                            [&](uint64_t j, const float* x, const float* e, uint64_t len) { add(r, j, x, e, len); });
            continue;
          }
          float t[span_chunk];
          for (uint64_t j = 0; j < cols; j += span_chunk) {
            const uint64_t len = cols - j < span_chunk ? cols - j : span_chunk;
            add(r, j, span_f32<B>(batch.data, r * cols + j, len, t), nullptr, len);
          }
        }
        return status::success;
      });
    });
  };
  st = for_rows([&](uint64_t r, uint64_t j, const float* v, uint64_t len, auto) {
    memcpy(w.f32 + r * cols + j, v, len * sizeof(float));
  });
  if (!ok(st)) return st;
  size_t len = 0;
  st = encode(c.codec, const_tensor_view(w.f32, dtype::f32, shp), payload, capacity, w.codec, w.codec_bytes,
              randomness(seed, ids), &len);
  if (!ok(st)) return st;
  st = decode(payload, len, tensor_view{w.f32, dtype::f32, shp}, w.codec, w.codec_bytes);
  if (!ok(st)) return st;
  // Commit: unseen ids take the next slots in row order, then e = v - D(payload). Row r's
  // residual is read (inside for_rows) before it is written, element by element.
  // w.ids (plan_rows' sort scratch) now takes each row's destination slot.
  for (uint64_t r = 0; r < rows; ++r)
    w.ids[r] = w.slots[r] == aqsgd_table::npos ? s.table.insert_new(ids[r]) : w.slots[r];
  st = for_rows([&](uint64_t r, uint64_t j, const float* v, uint64_t len, auto tc) {
    float e[span_chunk];
    for (uint64_t k = 0; k < len; ++k) e[k] = sub_rn(v[k], w.f32[r * cols + j + k]);
    store_span<decltype(tc)::value>(e, len, s.rows.data, w.ids[r] * cols + j);
  });
  if (ok(st) && written) *written = len;
  return st;
}

// Owner of a per-sample residual store and a workspace for batches of up to `max_rows` samples.
class ef_sample_state {
 public:
  // c.codec is C, c.cols the features per sample, c.state_type the residuals' dtype and
  // c.capacity the samples the store holds; c.warmup is not used.
  [[nodiscard]] status init(const aqsgd_config& c, uint64_t max_rows, const allocator& a = malloc_allocator()) {
    status st = check_aqsgd_config(c);
    if (!ok(st)) return st;
    const size_t bytes = ef_sample_payload_bytes(c, max_rows);
    if (bytes == 0) return status::invalid_spec;
    st = mem_.allocate(c, ef_sample_workspace_bytes(c, max_rows), a);
    if (!ok(st)) return st;
    cfg_ = c;
    payload_bytes_ = bytes;
    return status::success;
  }
  [[nodiscard]] status encode(const uint64_t* ids, const_tensor_view batch, void* payload, size_t capacity,
                              uint64_t seed = 0, size_t* written = nullptr) {
    return ef_sample_encode(cfg_, store(), ids, batch, payload, capacity, mem_.ws(), mem_.ws_size(), seed, written);
  }
  // Capacity a payload buffer needs for a batch of up to max_rows samples.
  size_t payload_bytes() const { return payload_bytes_; }
  const aqsgd_config& config() const { return cfg_; }
  const aqsgd_store& store() const { return mem_.store(); }
  uint64_t count() const { return mem_.count(); }
  aqsgd_memory memory() const { return aqsgd_memory_use(cfg_, count()); }

 private:
  aqsgd_config cfg_{};
  size_t payload_bytes_ = 0;
  detail::owned_store mem_;
};

}  // namespace pipecodec::host

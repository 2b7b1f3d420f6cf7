// What both backends' per-sample stores (AQ-SGD: host/aqsgd.hpp, cuda/aqsgd.cuh; per-sample
// EF: host/ef_sample.hpp, cuda/ef_sample.cuh) share, so they cannot drift apart in what they
// accept: the configuration and its check, the memory a store takes, the message and payload
// sizes, and the row plan every batch step runs against the id table before it touches a store.
#pragma once

#include <algorithm>

#include "aqsgd_format.hpp"
#include "aqsgd_table.hpp"
#include "sizes.hpp"

namespace pipecodec {

struct aqsgd_config {
  spec codec{};                  // C, applied to a - m
  spec warmup = plain_f32();     // W, for unseen samples and warm-up steps
  uint64_t cols = 0;             // features per sample
  dtype state_type = dtype::f32; // storage dtype of m
  uint64_t capacity = 0;         // samples the store can hold

  static spec plain_f32() {
    spec s;
    s.codec = codec_id::plain;
    s.plain.wire = dtype::f32;
    return s;
  }
};

struct aqsgd_memory {
  uint64_t bytes_per_sample = 0;  // row of m plus its id and table share
  uint64_t total_bytes = 0;       // table + rows at full capacity (what is allocated)
  uint64_t used_bytes = 0;        // bytes_per_sample * samples stored
};

inline uint64_t aqsgd_rows_bytes(const aqsgd_config& c) {
  return c.capacity * c.cols * dtype_bytes(c.state_type);
}

inline aqsgd_memory aqsgd_memory_use(const aqsgd_config& c, uint64_t count) {
  aqsgd_memory m;
  const uint64_t table = aqsgd_table_bytes(c.capacity);
  if (table == 0) return m;
  m.total_bytes = table + aqsgd_rows_bytes(c);
  m.bytes_per_sample = detail::ceil_div(m.total_bytes, c.capacity);
  m.used_bytes = m.bytes_per_sample * count;
  return m;
}

inline status check_aqsgd_config(const aqsgd_config& c) {
  if (c.cols == 0 || c.cols > max_elements || !valid_dtype(uint8_t(c.state_type)))
    return status::invalid_argument;
  if (aqsgd_table_bytes(c.capacity) == 0) return status::invalid_argument;
  if (c.capacity > max_elements / c.cols) return status::size_overflow;
  // RandK with rng=sample carries the rows' ids itself; AQ-SGD's parts append their own.
  for (const spec* s : {&c.codec, &c.warmup})
    if (s->codec == codec_id::randk && keyed_by_sample(*s)) return status::not_supported;
  return status::success;
}

// A store's table and rows (on either side of the PCIe bus) against the configuration.
inline status check_store_layout(const aqsgd_config& c, const aqsgd_table& table, const tensor_view& rows) {
  if (table.words == nullptr || rows.data == nullptr) return status::invalid_argument;
  if (table.capacity() != c.capacity || rows.type != c.state_type || rows.shp.rows != c.capacity ||
      rows.shp.cols != c.cols)
    return status::state_mismatch;
  return status::success;
}

// Batches above this many rows get a message bound without trying every warm/delta split.
constexpr uint64_t aqsgd_exact_bound_rows = 65536;

// AQ-SGD message size for a batch of `rows` samples, whatever its warm/delta split: exact for
// fixed-size codecs up to aqsgd_exact_bound_rows rows (the largest over all splits), an upper
// bound otherwise (above that, both parts at full size: part sizes grow with rows, so this
// bounds every split without a loop of 2^32 steps). 0 when a spec is invalid for the shape.
inline size_t aqsgd_message_bytes(const aqsgd_config& c, uint64_t rows) {
  if (!ok(check_aqsgd_config(c)) || rows > max_elements / c.cols) return 0;
  if (rows > aqsgd_exact_bound_rows) {
    const uint64_t a = aqsgd_part_bytes(c.warmup, rows, c.cols), b = aqsgd_part_bytes(c.codec, rows, c.cols);
    return a == 0 || b == 0 ? 0 : size_t(aqsgd_header_bytes + detail::align16(rows) + a + b);
  }
  uint64_t worst = 0;
  for (uint64_t w = 0; w <= rows; ++w) {
    const uint64_t a = aqsgd_part_bytes(c.warmup, w, c.cols), b = aqsgd_part_bytes(c.codec, rows - w, c.cols);
    if ((w > 0 && a == 0) || (w < rows && b == 0)) return 0;
    worst = std::max(worst, a + b);
  }
  return size_t(aqsgd_header_bytes + detail::align16(rows) + worst);
}

// Per-sample EF payload capacity for a batch of up to `rows` samples (exact for fixed-size
// codecs): one payload of c.codec; c.warmup is not used.
inline size_t ef_sample_payload_bytes(const aqsgd_config& c, uint64_t rows) {
  if (!ok(check_aqsgd_config(c)) || rows == 0 || rows > max_elements / c.cols) return 0;
  return encoded_bytes(c.codec, shape(rows, c.cols));
}

namespace detail {

// Looks every batch id up in the table; rejects duplicates within the batch and a batch whose
// unseen ids would not fit. `scratch` (rows u64) is clobbered. Returns the unseen count in
// `unseen`.
inline status plan_rows(const aqsgd_table& t, const uint64_t* ids, uint64_t rows, uint64_t* scratch, uint64_t* slots,
                        uint64_t& unseen) {
  std::copy(ids, ids + rows, scratch);
  std::sort(scratch, scratch + rows);
  if (std::adjacent_find(scratch, scratch + rows) != scratch + rows) return status::invalid_argument;
  unseen = 0;
  for (uint64_t r = 0; r < rows; ++r) {
    slots[r] = t.find(ids[r]);
    unseen += slots[r] == aqsgd_table::npos;
  }
  if (unseen > t.capacity() - t.count()) return status::capacity_exceeded;
  return status::success;
}

}  // namespace detail

}  // namespace pipecodec

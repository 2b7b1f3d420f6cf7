// Save and restore of stateful-scheme state (core/checkpoint_format.hpp). Saving streams
// through a sink (a callable bool(const void*, size_t), never called for 0 bytes: an empty
// section's pointer may be null), so a multi-GB AQ-SGD store goes to a file without a second
// copy in memory. Restoring validates the whole checkpoint first (fields, sizes, padding,
// checksum, duplicate ids) and leaves the target untouched on error.
#pragma once

#include <cstdio>

#include "../core/allocator.hpp"
#include "../core/checkpoint_format.hpp"
#include "aqsgd.hpp"

namespace pipecodec::host {

// Sink writing into a caller buffer.
struct memory_sink {
  uint8_t* data = nullptr;
  size_t capacity = 0;
  size_t used = 0;
  bool operator()(const void* p, size_t n) {
    if (capacity - used < n) return false;
    memcpy(data + used, p, n);
    used += n;
    return true;
  }
};

// Sink writing to an open file.
struct file_sink {
  std::FILE* file = nullptr;
  bool operator()(const void* p, size_t n) { return std::fwrite(p, 1, n, file) == n; }
};

namespace detail {

inline checkpoint_header tensor_checkpoint(checkpoint_kind k, const_tensor_view v) {
  checkpoint_header h;
  h.kind = k;
  h.type = v.type;
  h.shp = v.shp;
  h.total_bytes = h.expected_total();
  return h;
}

inline checkpoint_header store_checkpoint(checkpoint_kind k, const aqsgd_config& c, const aqsgd_store& s) {
  checkpoint_header h;
  h.kind = k;
  h.type = c.state_type;
  h.shp = shape(c.cols);
  h.capacity = c.capacity;
  h.count = s.table.count();
  h.total_bytes = h.expected_total();
  return h;
}

// Writes header, the two sections (with their padding) and the checksum trailer.
template <class Sink>
status write_checkpoint(const checkpoint_header& h, const void* s0, uint64_t n0, const void* s1, uint64_t n1,
                        Sink& sink) {
  uint8_t head[checkpoint_header_bytes];
  write_checkpoint_header(head, h);
  const uint8_t zeros[16] = {};
  fnv1a64 sum;
  const auto put = [&](const void* p, uint64_t n) {
    sum.update(p, n);
    return n == 0 || sink(p, size_t(n));
  };
  bool good = put(head, sizeof(head)) && put(s0, n0) && put(zeros, h.section0() - n0);
  if (h.is_store()) good = good && put(s1, n1) && put(zeros, h.section1() - n1);
  uint8_t trailer[checkpoint_trailer_bytes] = {};
  put_u64(trailer, sum.h);
  good = good && sink(trailer, sizeof(trailer));
  return good ? status::success : status::io_error;
}

}  // namespace detail

inline size_t checkpoint_bytes(const_tensor_view state) {
  return size_t(detail::tensor_checkpoint(checkpoint_kind::ef_residual, state).total_bytes);
}
inline size_t checkpoint_bytes(const aqsgd_config& c, const aqsgd_store& s) {
  return size_t(detail::store_checkpoint(checkpoint_kind::aqsgd_store, c, s).total_bytes);
}

// Saves an EF residual (kind ef_residual), an EF21 g (kind ef21_state) or lowrank's warm Q
// (kind lowrank_q).
template <class Sink>
status save_checkpoint(checkpoint_kind k, const_tensor_view state, Sink&& sink) {
  uint64_t n = 0;
  if (k != checkpoint_kind::ef_residual && k != checkpoint_kind::ef21_state && k != checkpoint_kind::lowrank_q)
    return status::invalid_argument;
  if (!state.shp.count(n) || n > max_elements) return status::invalid_argument;
  if (!detail::valid_view(state.data, n)) return status::invalid_argument;
  const checkpoint_header h = detail::tensor_checkpoint(k, state);
  return detail::write_checkpoint(h, state.data, n * dtype_bytes(state.type), nullptr, 0, sink);
}

// Saves a per-sample store, kind aqsgd_store (AQ-SGD m) or ef_sample_store (per-sample EF
// residuals, host/ef_sample.hpp): ids by slot and the rows of the samples stored.
template <class Sink>
status save_checkpoint(checkpoint_kind k, const aqsgd_config& c, const aqsgd_store& s, Sink&& sink) {
  status st = check_aqsgd_config(c);
  if (ok(st)) st = check_store_layout(c, s.table, s.rows);
  if (!ok(st)) return st;
  if (k != checkpoint_kind::aqsgd_store && k != checkpoint_kind::ef_sample_store) return status::invalid_argument;
  const checkpoint_header h = detail::store_checkpoint(k, c, s);
  return detail::write_checkpoint(h, s.table.ids_by_slot(), 8 * h.count, s.rows.data,
                                  h.count * c.cols * dtype_bytes(c.state_type), sink);
}

template <class Sink>
status save_checkpoint(const aqsgd_config& c, const aqsgd_store& s, Sink&& sink) {
  return save_checkpoint(checkpoint_kind::aqsgd_store, c, s, sink);
}

// Restores a tensor state saved with the same kind, dtype and shape.
inline status restore_checkpoint(const void* buf, size_t len, checkpoint_kind k, tensor_view state) {
  checkpoint_header h;
  const status st = detail::parse_checkpoint(buf, len, h);
  if (!ok(st)) return st;
  if (h.kind != k || h.type != state.type || h.shp != state.shp) return status::state_mismatch;
  if (!detail::valid_view(state.data, h.shp.size())) return status::invalid_argument;
  // An empty tensor may have a null pointer, which memcpy must not get even for 0 bytes.
  if (h.shp.size() > 0)
    memcpy(state.data, static_cast<const uint8_t*>(buf) + checkpoint_header_bytes,
           size_t(h.shp.size() * dtype_bytes(h.type)));
  return status::success;
}

// Restores a per-sample store saved with the same kind (same cols and dtype; the target's
// capacity may differ but must hold the saved samples). Rows beyond the restored count are zeroed.
inline status restore_checkpoint(const void* buf, size_t len, checkpoint_kind k, const aqsgd_config& c,
                                 const aqsgd_store& s) {
  status st = check_aqsgd_config(c);
  if (ok(st)) st = check_store_layout(c, s.table, s.rows);
  if (!ok(st)) return st;
  checkpoint_header h;
  st = detail::parse_checkpoint(buf, len, h);
  if (!ok(st)) return st;
  if (h.kind != k || !h.is_store() || h.type != c.state_type || h.shp.cols != c.cols) return status::state_mismatch;
  if (h.count > c.capacity) return status::capacity_exceeded;
  const uint8_t* ids = static_cast<const uint8_t*>(buf) + checkpoint_header_bytes;
  if (!s.table.rebuild_buckets(ids, h.count)) {
    // Duplicate ids: put the buckets back exactly as they were, from the untouched ids.
    s.table.rebuild_buckets(reinterpret_cast<const uint8_t*>(s.table.ids_by_slot()), s.table.count());
    return status::corrupt_payload;
  }
  s.table.assign_ids(ids, h.count);
  const uint64_t row_bytes = c.cols * dtype_bytes(c.state_type);
  memcpy(s.rows.data, ids + h.section0(), size_t(h.count * row_bytes));
  memset(static_cast<uint8_t*>(s.rows.data) + h.count * row_bytes, 0, size_t((c.capacity - h.count) * row_bytes));
  return status::success;
}

inline status restore_checkpoint(const void* buf, size_t len, const aqsgd_config& c, const aqsgd_store& s) {
  return restore_checkpoint(buf, len, checkpoint_kind::aqsgd_store, c, s);
}

// File helpers: save streams to `path`; restore reads the whole file into malloc memory
// first (the checkpoint is validated before the target is touched).
template <class... Args>
status save_checkpoint_file(const char* path, const Args&... args) {
  std::FILE* f = std::fopen(path, "wb");
  if (f == nullptr) return status::io_error;
  status st = save_checkpoint(args..., file_sink{f});
  if (std::fclose(f) != 0 && ok(st)) st = status::io_error;
  return st;
}

inline status read_file(const char* path, owned_bytes& buf, size_t& len, const allocator& a = malloc_allocator()) {
  std::FILE* f = std::fopen(path, "rb");
  if (f == nullptr) return status::io_error;
  status st = std::fseek(f, 0, SEEK_END) == 0 ? status::success : status::io_error;
  const long size = ok(st) ? std::ftell(f) : -1;
  if (size < 0 || std::fseek(f, 0, SEEK_SET) != 0) st = status::io_error;
  if (ok(st)) st = buf.allocate(size_t(size), a);
  if (ok(st) && std::fread(buf.data(), 1, size_t(size), f) != size_t(size)) st = status::io_error;
  std::fclose(f);
  if (ok(st)) len = size_t(size);
  return st;
}

template <class... Args>
status restore_checkpoint_file(const char* path, const Args&... args) {
  owned_bytes buf;
  size_t len = 0;
  const status st = read_file(path, buf, len);
  return ok(st) ? restore_checkpoint(buf.data(), len, args...) : st;
}

}  // namespace pipecodec::host

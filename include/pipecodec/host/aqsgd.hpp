// AQ-SGD per-sample state, both sides of a boundary hold m(xi) for every sample id xi seen:
//   warm row (unseen sample, or any sample in a warm-up step): payload = W(a);  m = D(payload)
//   delta row:  payload = C(a - m);  m = T(fp32(m + D(payload)));  the receiver's tensor is m
// One message per batch (rows = samples) frames a warm payload and a delta payload
// (core/aqsgd_format.hpp), each carrying its rows' sample ids. Sender and receiver insert
// unseen ids in batch-row order, so slots, table and rows stay equal bit for bit.
// Duplicate ids within one batch are rejected (the update order would be ambiguous).
#pragma once

#include <algorithm>

#include "../core/aqsgd_format.hpp"
#include "sample_store.hpp"

namespace pipecodec::host {

using pipecodec::aqsgd_exact_bound_rows;
using pipecodec::aqsgd_message_bytes;

namespace detail {

// Loads m of the delta rows into their fp32 scratch rows, ready for decode_accumulate.
template <dtype T>
inline void gather_delta(const aqsgd_store& s, const uint8_t* kinds, const uint64_t* slots,
                         uint64_t rows, uint64_t warm_rows, uint64_t cols, float* f32) {
  uint64_t d = warm_rows;
  for (uint64_t r = 0; r < rows; ++r) {
    if (kinds[r] != aqsgd_row_delta) continue;
    load_span<T>(s.rows.data, slots[r] * cols, cols, f32 + d * cols);
    ++d;
  }
}

// The batch row holding each row of the delta part, for delta rows asked in non-decreasing order.
struct delta_row_cursor {
  const uint8_t* kinds;
  uint64_t r = 0, d = 0;  // batch row r is delta row d, once found
  uint64_t batch_row(uint64_t want) {
    for (;; ++r)
      if (kinds[r] == aqsgd_row_delta) {
        if (d == want) return r;
        ++d;
      }
  }
};

// body(r, col, i, n) for the pieces of elements first .. first + count - 1 of the delta part
// that lie in one row: batch row r from column col, n elements from offset i of the tile.
template <class Body>
inline void delta_pieces(delta_row_cursor& at, uint64_t cols, uint64_t first, uint64_t count, Body&& body) {
  for (uint64_t i = 0; i < count;) {
    const uint64_t e = first + i, col = e % cols, n = cols - col < count - i ? cols - col : count - i;
    body(at.batch_row(e / cols), col, i, n);
    i += n;
  }
}

// m = T(fp32(m + d)) in the store for elements first .. first + count - 1 of the delta part,
// d their decoded values: what decode_accumulate and the commit give through the scratch.
template <dtype T>
inline void apply_delta_tile(const aqsgd_store& s, delta_row_cursor& at, const uint64_t* slots, uint64_t cols,
                             uint64_t first, uint64_t count, const float* d) {
  delta_pieces(at, cols, first, count, [&](uint64_t r, uint64_t col, uint64_t i, uint64_t n) {
    accumulate_span<T>(s.rows.data, slots[r] * cols + col, d + i, n);
  });
}

// How decode_parts applies the delta rows: through the fp32 scratch (m + D(payload), stored
// by the commit), straight into the store a tile at a time (quantization, validated whole
// first), or not at all (the sender's tiled delta part applied them while encoding).
enum class delta_apply { scratch, tiled, done };

// The commit both sides run once everything is validated: insert unseen ids in row order,
// then store each row's new m (fp32 scratch, rounded once to T); delta rows only when they
// are not `delta_stored` already (the sender's tiled delta part).
template <dtype T>
inline void commit_rows(const aqsgd_store& s, const uint8_t* kinds, const uint64_t* ids, uint64_t* slots,
                        uint64_t rows, uint64_t warm_rows, uint64_t cols, const float* f32, bool delta_stored) {
  uint64_t w = 0, d = warm_rows;
  for (uint64_t r = 0; r < rows; ++r) {
    if (slots[r] == aqsgd_table::npos) slots[r] = s.table.insert_new(ids[r]);
    const bool warm = kinds[r] == aqsgd_row_warm;
    const uint64_t src = warm ? w++ : d++;
    if (warm || !delta_stored) store_span<T>(f32 + src * cols, cols, s.rows.data, slots[r] * cols);
  }
}

// Decodes the warm part into the fp32 scratch (D(payload)) and applies the delta part as
// `mode` says. Validates each part completely before the state is touched.
inline status decode_parts(const aqsgd_config& c, const aqsgd_store& s, const uint8_t* msg,
                           const aqsgd_frame& f, const uint64_t* slots, const aqsgd_ws& w, delta_apply mode) {
  const uint8_t* kinds = msg + f.kinds_offset();
  const uint64_t delta_rows = f.rows - f.warm_rows;
  if (f.warm_rows > 0) {
    const status st = decode(msg + f.warm_offset(), f.warm_bytes,
                             tensor_view{w.f32, dtype::f32, shape(f.warm_rows, c.cols)}, w.codec, w.codec_bytes);
    if (!ok(st)) return st;
  }
  if (delta_rows == 0 || mode == delta_apply::done) return status::success;
  float* delta_f32 = w.f32 + f.warm_rows * c.cols;
  if (mode == delta_apply::tiled) {
    return dispatch_dtype(c.state_type, [&](auto tc) {
      constexpr dtype T = decltype(tc)::value;
      delta_row_cursor at{kinds}, ahead{kinds};
      const auto apply = [&](uint64_t first, uint64_t count) {
        apply_delta_tile<T>(s, at, slots, c.cols, first, count, delta_f32);
      };
      const auto reads = [&](uint64_t first, uint64_t count, line_prefetcher& pf) {
        delta_pieces(ahead, c.cols, first, count, [&](uint64_t r, uint64_t col, uint64_t, uint64_t n) {
          add_elements(pf, s.rows.data, T, slots[r] * c.cols + col, n);
        });
      };
      return decode_quant<false, true>(msg + f.delta_offset(), f.delta_bytes,
                                       tensor_view{delta_f32, dtype::f32, shape(delta_rows, c.cols)}, apply, reads);
    });
  }
  const status st = dispatch_dtype(c.state_type, [&](auto tc) {
    gather_delta<decltype(tc)::value>(s, kinds, slots, f.rows, f.warm_rows, c.cols, w.f32);
    return status::success;
  });
  if (!ok(st)) return st;
  return decode_accumulate(msg + f.delta_offset(), f.delta_bytes,
                           tensor_view{delta_f32, dtype::f32, shape(delta_rows, c.cols)}, w.codec, w.codec_bytes);
}

inline status commit(const aqsgd_config& c, const aqsgd_store& s, const uint8_t* kinds, const uint64_t* ids,
                     uint64_t* slots, uint64_t rows, uint64_t warm_rows, const float* f32, bool delta_stored) {
  return dispatch_dtype(c.state_type, [&](auto tc) {
    commit_rows<decltype(tc)::value>(s, kinds, ids, slots, rows, warm_rows, c.cols, f32, delta_stored);
    return status::success;
  });
}

// Encodes one part (`rows` rows with ids `ids`) at msg + off and returns its size: the
// payload by encode_payload(dst, capacity, &len), then the ids.
template <class EncodePayload>
inline status encode_part(const uint64_t* ids, uint64_t rows, uint8_t* msg, uint64_t off, uint64_t capacity,
                          uint64_t& bytes, EncodePayload&& encode_payload) {
  bytes = 0;
  if (rows == 0) return status::success;
  size_t len = 0;
  status st = encode_payload(msg + off, size_t(capacity - off), &len);
  if (!ok(st)) return st;
  st = append_sample_ids(msg + off, capacity - off, ids, &bytes);
  if (!ok(st)) return st;
  if (capacity - off < align16(bytes)) return status::buffer_too_small;
  memset(msg + off + bytes, 0, align16(bytes) - bytes);
  return status::success;
}

// Encodes one part whose rows (fp32) are in `f32`.
inline status encode_rows(const spec& s, const float* f32, const uint64_t* ids, uint64_t rows, uint64_t cols,
                          uint8_t* msg, uint64_t off, uint64_t capacity, const aqsgd_ws& w, uint64_t seed,
                          uint64_t& bytes) {
  return encode_part(ids, rows, msg, off, capacity, bytes, [&](uint8_t* dst, size_t cap, size_t* len) {
    return encode(s, const_tensor_view(f32, dtype::f32, shape(rows, cols)), dst, cap, w.codec, w.codec_bytes,
                  randomness(seed, ids), len);
  });
}

// The delta part's payload with a tiled codec (host/quant.hpp, encode_quant_tiled): each tile
// of a - m is computed from the batch and the store, and m of its elements becomes
// T(fp32(m + D(payload))) in the store while the tile is in cache, the update the receiver's
// decode_accumulate and commit make. `buf` holds the delta part's rows.
template <dtype B, dtype T>
inline status encode_delta_tiled(const aqsgd_config& c, const aqsgd_store& s, const_tensor_view batch,
                                 const uint8_t* kinds, const uint64_t* slots, uint64_t delta_rows, float* buf,
                                 const randomness& rnd, uint8_t* dst, size_t capacity, size_t* len) {
  const uint64_t cols = c.cols;
  delta_row_cursor filled{kinds}, updated{kinds}, ahead{kinds};
  const auto fill = [&](uint64_t first, uint64_t count, float* v) {
    delta_pieces(filled, cols, first, count, [&](uint64_t r, uint64_t col, uint64_t i, uint64_t n) {
      sub_span<B, T>(batch.data, r * cols + col, s.rows.data, slots[r] * cols + col, n, v + i);
    });
  };
  const auto update = [&](uint64_t first, uint64_t count, const float* d) {
    apply_delta_tile<T>(s, updated, slots, cols, first, count, d);
  };
  const auto reads = [&](uint64_t first, uint64_t count, line_prefetcher& pf) {
    delta_pieces(ahead, cols, first, count, [&](uint64_t r, uint64_t col, uint64_t, uint64_t n) {
      add_elements(pf, batch.data, B, r * cols + col, n);
      add_elements(pf, s.rows.data, T, slots[r] * cols + col, n);
    });
  };
  return encode_quant_tiled(c.codec.quant, shape(delta_rows, cols), buf, fill, update, reads, dst, capacity, rnd,
                            len);
}

}  // namespace detail

inline size_t aqsgd_workspace_bytes(const aqsgd_config& c, uint64_t rows) {
  return detail::f32_scratch_bytes(rows * c.cols) + size_t(detail::align16(16 * rows)) +
         detail::aqsgd_codec_ws(c, rows);
}

// Sender step for a batch (rows = samples, cols = c.cols) with sample ids ids[0..rows).
// `warmup` sends every row with the warm-up codec. On any error the store is untouched.
inline status aqsgd_encode(const aqsgd_config& c, const aqsgd_store& s, const uint64_t* ids,
                           const_tensor_view batch, bool warmup, void* message, size_t capacity,
                           void* workspace, size_t workspace_size, uint64_t seed = 0,
                           size_t* written = nullptr) {
  using namespace detail;
  aqsgd_ws w;
  uint64_t unseen = 0;
  status st = prepare_batch(c, s, ids, batch, message, capacity, workspace, workspace_size, w, unseen);
  if (!ok(st)) return st;
  const uint64_t rows = batch.shp.rows;

  aqsgd_frame f;
  f.rows = rows;
  f.cols = c.cols;
  f.warm_rows = warmup ? rows : unseen;
  uint8_t* msg = static_cast<uint8_t*>(message);
  if (capacity < f.warm_offset()) return status::buffer_too_small;
  uint8_t* kinds = msg + f.kinds_offset();
  memset(kinds, 0, f.warm_offset() - f.kinds_offset());
  const uint64_t delta_rows = rows - f.warm_rows;
  // With a tiled codec the delta rows go from the batch and the store a tile at a time
  // (detail::encode_delta_tiled) instead of through the scratch.
  const bool delta_tiled = delta_rows > 0 && tiled(c.codec);
  // Rows into the fp32 scratch: warm rows a, delta rows a - m; ids in the same part order.
  st = dispatch_dtype(batch.type, [&](auto bc) {
    return dispatch_dtype(c.state_type, [&](auto tc) {
      constexpr dtype B = decltype(bc)::value, T = decltype(tc)::value;
      uint64_t wr = 0, dr = f.warm_rows;
      for (uint64_t r = 0; r < rows; ++r) {
        const bool warm = warmup || w.slots[r] == aqsgd_table::npos;
        kinds[r] = warm ? aqsgd_row_warm : aqsgd_row_delta;
        const uint64_t dst = warm ? wr++ : dr++;
        w.ids[dst] = ids[r];
        float* out = w.f32 + dst * c.cols;
        if (warm) {
          load_span<B>(batch.data, r * c.cols, c.cols, out);
          continue;
        }
        if (!delta_tiled) sub_span<B, T>(batch.data, r * c.cols, s.rows.data, w.slots[r] * c.cols, c.cols, out);
      }
      return status::success;
    });
  });
  if (!ok(st)) return st;
  st = encode_rows(c.warmup, w.f32, w.ids, f.warm_rows, c.cols, msg, f.warm_offset(), capacity, w, seed,
                   f.warm_bytes);
  if (!ok(st)) return st;
  float* delta_f32 = w.f32 + f.warm_rows * c.cols;
  const uint64_t* delta_ids = w.ids + f.warm_rows;
  if (delta_tiled) {
    // The store changes while the part is encoded: every check comes first.
    if (capacity < f.delta_offset() + aqsgd_part_bytes(c.codec, delta_rows, c.cols)) return status::buffer_too_small;
    st = encode_part(delta_ids, delta_rows, msg, f.delta_offset(), capacity, f.delta_bytes,
                     [&](uint8_t* dst, size_t cap, size_t* len) {
                       return dispatch_dtype(batch.type, [&](auto bc) {
                         return dispatch_dtype(c.state_type, [&](auto tc) {
                           return encode_delta_tiled<decltype(bc)::value, decltype(tc)::value>(
                               c, s, batch, kinds, w.slots, delta_rows, delta_f32, randomness(seed, delta_ids), dst,
                               cap, len);
                         });
                       });
                     });
  } else {
    st = encode_rows(c.codec, delta_f32, delta_ids, delta_rows, c.cols, msg, f.delta_offset(), capacity, w, seed,
                     f.delta_bytes);
  }
  if (!ok(st)) return st;
  f.total_bytes = f.end_offset();
  write_aqsgd_header(msg, f);

  // Apply the message to our own copy exactly as the receiver will (the tiled delta rows are
  // applied already). w.ids now holds ids in part order, so the commit takes the caller's
  // batch-order ids.
  st = decode_parts(c, s, msg, f, w.slots, w, delta_tiled ? delta_apply::done : delta_apply::scratch);
  if (!ok(st)) return st;
  st = commit(c, s, kinds, ids, w.slots, rows, f.warm_rows, w.f32, delta_tiled);
  if (ok(st) && written) *written = size_t(f.total_bytes);
  return st;
}

// Receiver step: validates the whole message (frame, codecs c.warmup / c.codec, sample ids
// against `expected_ids` when not null, every delta id known, capacity, part sizes), then
// applies it.
// If `out` has data (rows x c.cols, any dtype) it receives m of the batch rows. On any error
// the store and out are left untouched.
inline status aqsgd_decode(const aqsgd_config& c, const aqsgd_store& s, const void* message, size_t len,
                           const uint64_t* expected_ids, tensor_view out, void* workspace,
                           size_t workspace_size) {
  using namespace detail;
  status st = check_aqsgd_config(c);
  if (ok(st)) st = check_store_layout(c, s.table, s.rows);
  if (!ok(st)) return st;
  aqsgd_frame f;
  st = parse_aqsgd_frame(message, len, f);
  if (!ok(st)) return st;
  const uint8_t* msg = static_cast<const uint8_t*>(message);
  if (f.cols != c.cols) return status::shape_mismatch;
  if (out.data != nullptr && (out.shp.rows != f.rows || out.shp.cols != c.cols)) return status::shape_mismatch;
  if (f.warm_rows > 0) st = check_codec(msg + f.warm_offset(), f.warm_bytes, c.warmup.codec);
  if (ok(st) && f.rows > f.warm_rows) st = check_codec(msg + f.delta_offset(), f.delta_bytes, c.codec.codec);
  if (!ok(st)) return st;
  aqsgd_ws w;
  st = split_aqsgd_ws(c, f.rows, workspace, workspace_size, w);
  if (!ok(st)) return st;
  if (!ids_aligned(expected_ids) || (out.data != nullptr && !element_aligned(out.data, out.type)))
    return status::misaligned;
  if (any_written_overlap({{message, len, false},
                           {expected_ids, expected_ids ? 8 * f.rows : 0, false},
                           {s.table.words, aqsgd_table_bytes(c.capacity), true},
                           {s.rows.data, aqsgd_rows_bytes(c), true},
                           {out.data, out.data ? f.rows * c.cols * dtype_bytes(out.type) : 0, true},
                           {workspace, workspace_size, true}}))
    return status::aliasing;
  // Sample ids in batch order, merged from the two parts' id sections.
  const uint8_t* kinds = msg + f.kinds_offset();
  header hw, hd;
  const uint8_t* wid = nullptr;
  const uint8_t* did = nullptr;
  if (f.warm_rows > 0 && ok(read_header(msg + f.warm_offset(), f.warm_bytes, hw)))
    wid = sample_ids_section(msg + f.warm_offset(), hw);
  if (f.rows > f.warm_rows && ok(read_header(msg + f.delta_offset(), f.delta_bytes, hd)))
    did = sample_ids_section(msg + f.delta_offset(), hd);
  uint64_t* row_ids = w.ids;
  for (uint64_t r = 0, wr = 0, dr = 0; r < f.rows; ++r) {
    row_ids[r] = kinds[r] == aqsgd_row_warm ? sample_id(wid, wr++) : sample_id(did, dr++);
    if (expected_ids != nullptr && expected_ids[r] != row_ids[r]) return status::id_mismatch;
  }
  uint64_t unseen = 0;
  st = plan_rows(s.table, row_ids, f.rows, w.slots, w.slots, unseen);
  // plan_rows sorted a copy into w.slots before filling it with slots; duplicates and
  // capacity are its errors, an unknown delta id is ours: the two sides' stores differ.
  if (st == status::invalid_argument) return status::id_mismatch;
  if (!ok(st)) return st;
  for (uint64_t r = 0; r < f.rows; ++r)
    if (kinds[r] == aqsgd_row_delta && w.slots[r] == aqsgd_table::npos) return status::id_mismatch;
  // Parts of other sizes than the configured codecs give for their rows were encoded with other
  // parameters (bits, scale dtype, ...): the sender holds another configuration. The CUDA
  // receiver, which launches its part decoders at the sizes it predicts, rejects them too.
  if (f.warm_bytes != aqsgd_part_bytes(c.warmup, f.warm_rows, c.cols) ||
      f.delta_bytes != aqsgd_part_bytes(c.codec, f.rows - f.warm_rows, c.cols))
    return status::state_mismatch;
  const delta_apply mode = c.codec.codec == codec_id::quant ? delta_apply::tiled : delta_apply::scratch;
  st = decode_parts(c, s, msg, f, w.slots, w, mode);
  if (!ok(st)) return st;
  st = commit(c, s, kinds, row_ids, w.slots, f.rows, f.warm_rows, w.f32, mode != delta_apply::scratch);
  if (!ok(st) || out.data == nullptr) return st;
  return dispatch_dtype(c.state_type, [&](auto tc) {
    return dispatch_dtype(out.type, [&](auto oc) {
      constexpr dtype T = decltype(tc)::value, O = decltype(oc)::value;
      for (uint64_t r = 0; r < f.rows; ++r)
        convert_span<T, O>(s.rows.data, w.slots[r] * c.cols, out.data, r * c.cols, c.cols);
      return status::success;
    });
  });
}

// Owner of one side's store (table, rows) and a workspace for batches of up to
// `max_rows` samples; the same object type serves as sender or receiver.
class aqsgd_state {
 public:
  [[nodiscard]] status init(const aqsgd_config& c, uint64_t max_rows, const allocator& a = malloc_allocator()) {
    status st = check_aqsgd_config(c);
    if (!ok(st)) return st;
    const size_t msg = aqsgd_message_bytes(c, max_rows);
    if (msg == 0) return status::invalid_spec;
    st = mem_.allocate(c, aqsgd_workspace_bytes(c, max_rows), a);
    if (!ok(st)) return st;
    cfg_ = c;
    message_bytes_ = msg;
    return status::success;
  }
  [[nodiscard]] status encode(const uint64_t* ids, const_tensor_view batch, bool warmup, void* message,
                              size_t capacity, uint64_t seed = 0, size_t* written = nullptr) {
    return aqsgd_encode(cfg_, store(), ids, batch, warmup, message, capacity, mem_.ws(), mem_.ws_size(), seed,
                        written);
  }
  [[nodiscard]] status decode(const void* message, size_t len, const uint64_t* expected_ids,
                              tensor_view out = {}) {
    return aqsgd_decode(cfg_, store(), message, len, expected_ids, out, mem_.ws(), mem_.ws_size());
  }
  // Capacity a message buffer needs for a batch of up to max_rows samples.
  size_t message_bytes() const { return message_bytes_; }
  const aqsgd_config& config() const { return cfg_; }
  const aqsgd_store& store() const { return mem_.store(); }
  uint64_t count() const { return mem_.count(); }
  aqsgd_memory memory() const { return aqsgd_memory_use(cfg_, count()); }

 private:
  aqsgd_config cfg_{};
  size_t message_bytes_ = 0;
  detail::owned_store mem_;
};

}  // namespace pipecodec::host

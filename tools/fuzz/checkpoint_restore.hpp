// Harness (f): arbitrary bytes through host::restore_checkpoint for every state kind. The
// first byte picks the target (kind, and whether it takes its dtype, shape and capacity from
// the checkpoint's header so a valid checkpoint can be accepted) and whether the harness fixes
// up the checksum; the rest is the checkpoint, an exact-size heap copy. The target starts non-trivial (a pattern; a store with ids).
// Properties: no crash or over-read; a rejected checkpoint leaves the target bit for bit
// untouched; an accepted one saves back to the same bytes (the checkpoint's first
// total_bytes; for a store restored into a different capacity, with that capacity field and
// the checksum updated), an accepted store holds exactly the table the ids' inserts give and
// zero rows beyond the restored count.
#pragma once

#include <algorithm>

#include "../output_limit.hpp"
#include "common.hpp"

namespace pcfuzz {

// Largest state the harness allocates from a checkpoint header (output_limit.hpp's rule).
constexpr uint64_t restore_max_elements = uint64_t(1) << 16;
static_assert(restore_max_elements <= pipecodec::tools::default_max_output_elements, "the tools' cap");

inline std::vector<uint8_t> save_tensor(pipecodec::checkpoint_kind k, pipecodec::const_tensor_view v) {
  std::vector<uint8_t> buf(pipecodec::host::checkpoint_bytes(v));
  pipecodec::host::memory_sink sink{buf.data(), buf.size()};
  PCFUZZ_CHECK(ok(pipecodec::host::save_checkpoint(k, v, sink)) && sink.used == buf.size(), "save tensor");
  return buf;
}

inline void restore_tensor(const std::vector<uint8_t>& ck, pipecodec::checkpoint_kind k, pipecodec::dtype t,
                           pipecodec::shape shp) {
  using namespace pipecodec;
  std::vector<uint8_t> state(size_t(shp.size() * dtype_bytes(t)));
  for (size_t i = 0; i < state.size(); ++i) state[i] = uint8_t(i * 41 + 5);
  const auto before = state;
  const status st = host::restore_checkpoint(ck.data(), ck.size(), k, tensor_view{state.data(), t, shp});
  if (!ok(st)) {
    PCFUZZ_CHECK(state == before, "rejected checkpoint (%s) changed the state", to_string(st));
    return;
  }
  const auto again = save_tensor(k, const_tensor_view{state.data(), t, shp});
  PCFUZZ_CHECK(again.size() <= ck.size() && std::equal(again.begin(), again.end(), ck.begin()),
               "accepted checkpoint does not save back to its bytes");
}

inline void restore_store(const std::vector<uint8_t>& ck, const pipecodec::host::aqsgd_config& c) {
  using namespace pipecodec;
  std::vector<uint64_t> words(size_t(aqsgd_table_bytes(c.capacity) / 8));
  std::vector<uint8_t> rows(size_t(host::aqsgd_rows_bytes(c)));
  host::aqsgd_store s;
  PCFUZZ_CHECK(ok(init_aqsgd_table(words.data(), 8 * words.size(), c.capacity, s.table)), "table");
  s.rows = tensor_view{rows.data(), c.state_type, shape(c.capacity, c.cols)};
  for (uint64_t i = 0; i < c.capacity && i < 3; ++i) s.table.insert_new(0x1234567 * (i + 1));
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = uint8_t(i * 41 + 5);
  const auto words0 = words;
  const auto rows0 = rows;
  const status st = host::restore_checkpoint(ck.data(), ck.size(), c, s);
  if (!ok(st)) {
    PCFUZZ_CHECK(words == words0 && rows == rows0, "rejected checkpoint (%s) changed the store", to_string(st));
    return;
  }
  // The table is the one inserting the restored ids in slot order gives.
  std::vector<uint64_t> fresh(words.size());
  aqsgd_table t;
  PCFUZZ_CHECK(ok(init_aqsgd_table(fresh.data(), 8 * fresh.size(), c.capacity, t)), "table");
  const uint64_t count = s.table.count();
  for (uint64_t i = 0; i < count; ++i) t.insert_new(s.table.ids_by_slot()[i]);
  PCFUZZ_CHECK(fresh == words, "restored table differs from the inserts' table");
  const size_t used = size_t(count * c.cols * dtype_bytes(c.state_type));
  for (size_t i = used; i < rows.size(); ++i) PCFUZZ_CHECK(rows[i] == 0, "row byte %zu beyond the count not zero", i);
  // Saved back: the checkpoint's bytes, with the target's capacity.
  std::vector<uint8_t> again(host::checkpoint_bytes(c, s));
  host::memory_sink sink{again.data(), again.size()};
  PCFUZZ_CHECK(ok(host::save_checkpoint(c, s, sink)) && sink.used == again.size(), "save store");
  PCFUZZ_CHECK(again.size() <= ck.size(), "saved store larger than the checkpoint");
  std::vector<uint8_t> expect(ck.begin(), ck.begin() + long(again.size()));
  detail::put_u64(expect.data() + 32, c.capacity);
  detail::fnv1a64 sum;
  sum.update(expect.data(), expect.size() - checkpoint_trailer_bytes);
  detail::put_u64(expect.data() + expect.size() - checkpoint_trailer_bytes, sum.h);
  PCFUZZ_CHECK(again == expect, "accepted store checkpoint does not save back to its bytes");
}

inline int fuzz_checkpoint_restore(const uint8_t* data, size_t size) {
  using namespace pipecodec;
  if (size == 0) return 0;
  const uint8_t sel = data[0];
  auto ck = exact_copy(data + 1, size - 1);
  // Selector bit 3: write the right checksum for the declared size, so mutations get past the
  // checksum to the field, padding, id and capacity checks behind it.
  if ((sel & 8) != 0 && ck.size() >= checkpoint_header_bytes) {
    const uint64_t total = detail::get_u64(ck.data() + 48);
    if (total >= checkpoint_header_bytes + checkpoint_trailer_bytes && total <= ck.size()) {
      detail::fnv1a64 sum;
      sum.update(ck.data(), total - checkpoint_trailer_bytes);
      detail::put_u64(ck.data() + total - checkpoint_trailer_bytes, sum.h);
    }
  }
  // The header's fields when it parses far enough; a small default target otherwise.
  dtype t = dtype_from(sel >> 4);
  shape shp(3, 5);
  uint64_t capacity = 4, count = 0;
  checkpoint_kind kind = checkpoint_kind((sel & 3) == 0 ? 1 : sel & 3);
  if (ck.size() >= checkpoint_header_bytes && (sel & 4) == 0) {
    const uint8_t* p = ck.data();
    if (valid_dtype(p[9])) t = dtype(p[9]);
    const shape h = p[10] == 1 ? shape(detail::get_u64(p + 24)) : shape(detail::get_u64(p + 16), detail::get_u64(p + 24));
    if (tools::output_fits(h, restore_max_elements)) shp = h;
    capacity = detail::get_u64(p + 32);
    count = detail::get_u64(p + 40);
    if ((sel & 3) == 0 && p[8] >= 1 && p[8] <= 3) kind = checkpoint_kind(p[8]);
  }
  if (kind != checkpoint_kind::aqsgd_store) {
    restore_tensor(ck, kind, t, shp);
    return 0;
  }
  host::aqsgd_config c;
  c.state_type = t;
  c.cols = shp.cols == 0 ? 1 : shp.cols;
  // Capacity: the checkpoint's, a larger one, exactly its count, or a fixed small one.
  const uint64_t pick[4] = {capacity, capacity + 3, count, 4};
  c.capacity = pick[(sel >> 6) & 3];
  if (c.capacity == 0 || c.capacity > 256 || !tools::output_fits(shape(c.capacity, c.cols), restore_max_elements))
    c.capacity = 4;
  if (c.cols > restore_max_elements / c.capacity) c.cols = 1;
  restore_store(ck, c);
  return 0;
}

}  // namespace pcfuzz

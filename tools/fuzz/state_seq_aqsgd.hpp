// AQ-SGD half of the state_seq harness: sender and receiver stores (caller memory, the view
// API) under fuzzer-chosen batches: sizes 0..max_rows, ids from a pool a little larger than
// the capacity (repeats, new ids, duplicates within a batch, overflow), warm-up steps.
// Properties: the sender's status is exactly what the batch implies (duplicates:
// invalid_argument; too many unseen ids: capacity_exceeded; else success) and a refused batch
// changes nothing; sender faults (small message buffer, small or misaligned workspace,
// message over the rows) give their status and change nothing; receiver faults (corrupt
// message, wrong expected ids, small or misaligned workspace) are rejected with store and
// output untouched; after every genuine step both stores (table and rows) are equal bit for
// bit, the table holds exactly the ids seen, and the output is m of the batch rows.
#pragma once

#include <algorithm>

#include "state_seq_common.hpp"

namespace pcfuzz {

struct aqsgd_side {
  std::vector<uint64_t> words;
  std::vector<uint8_t> rows, ws;
  pipecodec::host::aqsgd_store store;
  aqsgd_side(const pipecodec::host::aqsgd_config& c, size_t ws_bytes)
      : words(size_t(pipecodec::aqsgd_table_bytes(c.capacity) / 8)), rows(size_t(pipecodec::host::aqsgd_rows_bytes(c))),
        ws(ws_bytes + 16) {
    PCFUZZ_CHECK(pipecodec::ok(pipecodec::init_aqsgd_table(words.data(), 8 * words.size(), c.capacity, store.table)), "table");
    store.rows = pipecodec::tensor_view{rows.data(), c.state_type, pipecodec::shape(c.capacity, c.cols)};
  }
  std::vector<uint8_t> snapshot() const {
    auto s = bytes_of(words.data(), 8 * words.size());
    s.insert(s.end(), rows.begin(), rows.end());
    return s;
  }
  void restore(const std::vector<uint8_t>& s) {
    memcpy(words.data(), s.data(), 8 * words.size());
    if (!rows.empty()) memcpy(rows.data(), s.data() + 8 * words.size(), rows.size());
  }
};

inline uint64_t pool_id(uint64_t i) { return i == 0 ? 0 : i == 1 ? ~uint64_t(0) : mix64(i); }

inline int fuzz_aqsgd_seq(reader& r) {
  using namespace pipecodec;
  host::aqsgd_config c;
  c.cols = 1 + r.u8() % 48;
  c.capacity = 1 + r.u8() % 8;
  c.state_type = dtype_from(r.u8());
  c.codec = pick_state_spec(r, c.cols);
  const uint8_t w = r.u8() % 4;
  if (w > 0) PCFUZZ_CHECK(ok(parse_spec(w == 1 ? "plain:dtype=fp16" : w == 2 ? "quant:bits=8,group=row" : "plain:dtype=bf16", c.warmup)), "warmup spec");
  const uint64_t max_rows = 1 + r.u8() % 6, pool = c.capacity + 3;
  const dtype bt = dtype_from(r.u8()), ot = dtype_from(r.u8());
  const size_t cap = host::aqsgd_message_bytes(c, max_rows), ws_max = host::aqsgd_workspace_bytes(c, max_rows);
  PCFUZZ_CHECK(cap > 0, "configuration refused");
  aqsgd_side tx(c, ws_max), rx(c, ws_max);
  std::vector<uint64_t> seen;  // the model: ids the stores must hold, in insertion order
  for (int step = 0; step < 16 && r.remaining() > 0; ++step) {
    const uint64_t rows = r.u8() % (max_rows + 1);
    std::vector<uint64_t> ids(rows);
    for (auto& id : ids) id = pool_id(r.u8() % pool);
    const bool warmup = r.u8() % 4 == 0;
    const auto a = step_data(r, rows * c.cols, bt);
    const const_tensor_view av{a.data(), bt, shape(rows, c.cols)};
    const uint64_t seed = r.u8();
    const size_t ws = host::aqsgd_workspace_bytes(c, rows);
    std::vector<uint64_t> sorted = ids;
    std::sort(sorted.begin(), sorted.end());
    uint64_t unseen = 0;
    for (uint64_t id : ids) unseen += std::find(seen.begin(), seen.end(), id) == seen.end();
    const status expect = std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end() ? status::invalid_argument
                          : unseen > c.capacity - seen.size()                           ? status::capacity_exceeded
                                                                                         : status::success;
    const auto tx0 = tx.snapshot();
    std::vector<uint8_t> msg(cap);
    size_t len = 0;
    status se = status::success;
    const uint8_t fault = ok(expect) ? r.u8() % 8 : 0;
    if (fault == 4) {  // message buffer too small: refused, or enough for a TopK/RandK bound
      const size_t small = r.u16() % host::aqsgd_message_bytes(c, rows);
      se = host::aqsgd_encode(c, tx.store, ids.data(), av, warmup, msg.data(), small, tx.ws.data(), ws, seed, &len);
      if (!ok(se)) PCFUZZ_CHECK(se == status::buffer_too_small, "small message buffer: %s", to_string(se));
    } else if (fault >= 5) {
      const size_t cut = 1 + r.u8() % 16;
      void* wsp = fault == 6 ? tx.ws.data() + 8 : tx.ws.data();
      void* m = fault == 7 && !tx.rows.empty() ? tx.rows.data() : msg.data();
      se = host::aqsgd_encode(c, tx.store, ids.data(), av, warmup, m, cap, wsp,
                              fault == 5 ? (ws > cut ? ws - cut : 0) : ws, seed, &len);
      const status want = fault == 5 ? status::workspace_too_small : fault == 6 ? status::misaligned : status::aliasing;
      PCFUZZ_CHECK(se == want, "sender fault %d: %s", fault, to_string(se));
    }
    if (!ok(se)) PCFUZZ_CHECK(tx.snapshot() == tx0, "failed encode (%s) changed the store", to_string(se));
    if (fault < 4 || !ok(se))
      se = host::aqsgd_encode(c, tx.store, ids.data(), av, warmup, msg.data(), cap, tx.ws.data(), ws, seed, &len);
    PCFUZZ_CHECK(se == expect, "sender gave %s, expected %s", to_string(se), to_string(expect));
    if (!ok(se)) {
      PCFUZZ_CHECK(tx.snapshot() == tx0, "refused batch (%s) changed the store", to_string(se));
      continue;
    }
    for (uint64_t id : ids)
      if (std::find(seen.begin(), seen.end(), id) == seen.end()) seen.push_back(id);

    const bool want_out = r.u8() & 1;
    std::vector<uint8_t> out(want_out ? size_t(rows * c.cols * dtype_bytes(ot)) : 0);
    for (size_t i = 0; i < out.size(); ++i) out[i] = uint8_t(i * 29 + 3);
    const tensor_view ov{want_out ? out.data() : nullptr, ot, shape(rows, c.cols)};
    const uint8_t mode = r.u8() % 8;  // expected ids: 0-1 none, 2-4 right, 5 one wrong; 6 small, 7 misaligned ws
    std::vector<uint64_t> expected = ids;
    if (mode == 5 && rows > 0) expected[r.u8() % rows] ^= uint64_t(1) << (r.u8() % 64);
    const uint64_t* exp_ptr = mode < 2 ? nullptr : expected.data();
    auto bad = msg;
    size_t bad_len = len;
    const bool corrupted = corrupt(r, bad, bad_len);
    const bool fault_rx = (mode == 5 && rows > 0) || mode >= 6;
    if (corrupted || fault_rx) {
      const auto wire = exact_copy(bad.data(), bad_len);
      const auto rx0 = rx.snapshot(), out0 = out;
      const size_t cut = 1 + r.u8() % 16;
      const size_t rws = mode == 6 ? (ws > cut ? ws - cut : 0) : ws;
      const status sr = host::aqsgd_decode(c, rx.store, wire.data(), wire.size(), exp_ptr, ov,
                                           mode == 7 ? rx.ws.data() + 8 : rx.ws.data(), rws);
      if (!ok(sr)) {
        PCFUZZ_CHECK(rx.snapshot() == rx0 && out == out0, "rejected message (%s) changed store or out", to_string(sr));
        if (!corrupted) {
          const status want = mode == 5 ? status::id_mismatch : mode == 6 ? status::workspace_too_small : status::misaligned;
          PCFUZZ_CHECK(sr == want, "receiver fault %d: %s", mode, to_string(sr));
        }
        if (bad_len < len && !fault_rx) PCFUZZ_CHECK(cut_status(sr, bad_len), "cut message: %s", to_string(sr));
      } else {
        PCFUZZ_CHECK(corrupted, "receiver fault %d accepted", mode);
        rx.restore(rx0);  // a corruption that is still a valid message: undo it
      }
    }
    const auto wire = exact_copy(msg.data(), len);
    const status sr = host::aqsgd_decode(c, rx.store, wire.data(), wire.size(), exp_ptr == nullptr ? nullptr : ids.data(),
                                         ov, rx.ws.data(), ws);
    PCFUZZ_CHECK(ok(sr), "receiver rejected a genuine message: %s", to_string(sr));
    PCFUZZ_CHECK(tx.snapshot() == rx.snapshot(), "step %d: sender and receiver stores differ", step);
    PCFUZZ_CHECK(rx.store.table.count() == seen.size(), "store holds %llu ids, expected %zu",
                 (unsigned long long)rx.store.table.count(), seen.size());
    for (size_t i = 0; i < seen.size(); ++i)
      PCFUZZ_CHECK(rx.store.table.find(seen[i]) == i, "id %zu not in its slot", i);
    if (want_out) {
      std::vector<uint8_t> expect_out(out.size());
      for (uint64_t row = 0; row < rows; ++row) {
        const uint64_t slot = rx.store.table.find(ids[row]);
        const size_t tb = dtype_bytes(c.state_type), ob = dtype_bytes(ot);
        PCFUZZ_CHECK(ok(host::detail::convert(rx.rows.data() + slot * c.cols * tb, c.state_type,
                                              expect_out.data() + row * c.cols * ob, ot, c.cols)), "convert");
      }
      PCFUZZ_CHECK(out == expect_out, "receiver output is not m of the batch rows");
    }
  }
  return 0;
}

}  // namespace pcfuzz

// Stress arguments of the stateful schemes' view API (EF, EF21, AQ-SGD): payload buffer too
// small, workspace too small or misaligned, and every pair of overlapping buffers where the
// call writes one of them. Each gives its status (docs/ERRORS.md) and leaves the state, the
// output and the caller's other buffers untouched; a later genuine step still works.
#include <algorithm>

#include "../common/state_check.hpp"

using namespace pipecodec;
using namespace tstate;

namespace {

// One arena holding every buffer of a call, so a test can point any two of them at
// overlapping bytes. Offsets are 16-aligned.
struct arena {
  std::vector<uint8_t> mem;
  explicit arena(size_t bytes) : mem(bytes + 64) {}
  uint8_t* at(size_t off) {
    auto p = reinterpret_cast<uintptr_t>(mem.data()) + off;
    return reinterpret_cast<uint8_t*>((p + 15) & ~uintptr_t(15));
  }
};

}  // namespace

TEST_CASE("EF and EF21 encode: small buffers, bad workspaces and aliasing leave the state untouched") {
  const spec s = parse("quant:bits=4,group=row");
  const shape shp(4, 40);
  const uint64_t n = shp.size();
  const size_t cap = encoded_bytes(s, shp), ws = host::ef21_workspace_bytes(s, shp), xb = 4 * n, gb = 2 * n;
  REQUIRE(ws == host::ef_workspace_bytes(s, shp));
  // Layout: x | g (bf16) | payload | workspace, each at a 16-aligned offset.
  const size_t ox = 0, og = detail::align16(xb), op = og + detail::align16(gb), ow = op + detail::align16(cap);
  arena a(ow + ws + 16);
  const auto x = make_step(n, 11, dtype::f32);
  memcpy(a.at(ox), x.bytes.data(), xb);
  for (size_t i = 0; i < gb; ++i) a.at(og)[i] = uint8_t(i % 7 == 0 ? 0x3F : i);  // a non-zero bf16 state
  const const_tensor_view xv{a.at(ox), dtype::f32, shp};
  const tensor_view gv{a.at(og), dtype::bf16, shp};
  using enc_fn = status (*)(const spec&, const_tensor_view, tensor_view, void*, size_t, void*, size_t, randomness,
                            size_t*);
  const enc_fn fns[2] = {host::ef_encode, host::ef21_encode};
  for (enc_fn f : fns) {
    const auto before = a.mem;
    CHECK(f(s, xv, gv, a.at(op), cap - 1, a.at(ow), ws, 0, nullptr) == status::buffer_too_small);
    CHECK(f(s, xv, gv, a.at(op), cap, a.at(ow), ws - 1, 0, nullptr) == status::workspace_too_small);
    CHECK(f(s, xv, gv, a.at(op), cap, a.at(ow) + 8, ws, 0, nullptr) == status::misaligned);
    CHECK(f(s, xv, gv, a.at(op), cap, nullptr, ws, 0, nullptr) == status::invalid_argument);
    // Every written buffer over each other buffer: payload over x, g, workspace; workspace over x, g.
    CHECK(f(s, xv, gv, a.at(ox), cap, a.at(ow), ws, 0, nullptr) == status::aliasing);
    CHECK(f(s, xv, gv, a.at(og), cap, a.at(ow), ws, 0, nullptr) == status::aliasing);
    CHECK(f(s, xv, gv, a.at(ow), cap, a.at(ow), ws, 0, nullptr) == status::aliasing);
    CHECK(f(s, xv, gv, a.at(op), cap, a.at(ox), ws, 0, nullptr) == status::aliasing);
    CHECK(f(s, xv, gv, a.at(op), cap, a.at(og), ws, 0, nullptr) == status::aliasing);
    // State over the input (the sum x + g would read a half-updated state).
    CHECK(f(s, xv, tensor_view{a.at(ox) + 16, dtype::bf16, shp}, a.at(op), cap, a.at(ow), ws, 0, nullptr) ==
          status::aliasing);
    // x, g and the payload are untouched (the workspace is scratch).
    const size_t kept = size_t(a.at(ow) - a.mem.data());
    CHECK(std::equal(before.begin(), before.begin() + long(kept), a.mem.begin()));
    // Adjacent buffers are fine.
    size_t len = 0;
    CHECK(ok(f(s, xv, gv, a.at(op), cap, a.at(ow), ws, 0, &len)));
    CHECK(len == cap);
  }
}

TEST_CASE("EF21 decode: aliasing output, state, payload or workspace is rejected untouched") {
  const spec s = parse("quant:bits=3,group=32");
  const shape shp(2, 64);
  const uint64_t n = shp.size();
  host::ef21_state tx;
  REQUIRE(ok(tx.init(s, shp, dtype::f32)));
  std::vector<uint8_t> payload(tx.payload_bytes());
  size_t len = 0;
  const auto x = make_step(n, 4, dtype::f32);
  REQUIRE(ok(tx.encode(const_tensor_view{x.bytes.data(), dtype::f32, shp}, payload.data(), payload.size(), 0, &len)));
  // Layout: g (f32) | out (f16) | payload copy | workspace (64 bytes).
  const size_t og = 0, oo = detail::align16(4 * n), op = oo + detail::align16(2 * n), ow = op + detail::align16(len);
  arena a(ow + 64);
  memcpy(a.at(op), payload.data(), len);
  for (size_t i = 0; i < 4 * n; ++i) a.at(og)[i] = uint8_t(i % 4 == 3 ? 0x3E : 0);
  const tensor_view g{a.at(og), dtype::f32, shp};
  const auto before = a.mem;
  const auto dec = [&](size_t out_off, size_t ws_off) {
    return host::ef21_decode(s.codec, a.at(op), len, g, tensor_view{a.at(out_off), dtype::f16, shp}, a.at(ws_off), 64);
  };
  CHECK(dec(og + 8, ow) == status::aliasing);  // out over g
  CHECK(dec(op, ow) == status::aliasing);      // out over the payload
  CHECK(dec(oo, og) == status::aliasing);      // workspace over g
  CHECK(dec(oo, op) == status::aliasing);      // workspace over the payload
  CHECK(dec(oo, oo) == status::aliasing);      // workspace over out
  CHECK(host::ef21_decode(s.codec, a.at(op), len, tensor_view{a.at(op) - 16, dtype::f32, shp}) == status::aliasing);
  CHECK(a.mem == before);
  REQUIRE(ok(dec(oo, ow)));
  CHECK(bytes_of(a.at(og), 4 * n) != bytes_of(before.data() + (a.at(og) - a.mem.data()), 4 * n));
}

TEST_CASE("AQ-SGD: small buffers, bad workspaces and aliasing leave both stores untouched") {
  const host::aqsgd_config c = store_config("quant:bits=4,group=row", 24, dtype::f16, 8);
  const uint64_t rows = 3;
  host::aqsgd_state tx, rx;
  REQUIRE(ok(tx.init(c, rows)));
  REQUIRE(ok(rx.init(c, rows)));
  const uint64_t ids[rows] = {5, 9, 2};
  const auto b = make_step(rows * c.cols, 2, dtype::f32);
  const const_tensor_view bv{b.bytes.data(), dtype::f32, shape(rows, c.cols)};
  std::vector<uint8_t> msg(tx.message_bytes());
  size_t len = 0;
  // Prime both stores, then make a message with delta rows.
  REQUIRE(ok(tx.encode(ids, bv, false, msg.data(), msg.size(), 0, &len)));
  REQUIRE(ok(rx.decode(msg.data(), len, ids)));
  const auto tx0 = snapshot(tx), rx0 = snapshot(rx);
  const size_t ws = host::aqsgd_workspace_bytes(c, rows);
  std::vector<uint8_t> wsb(ws + 16);
  const auto& st = tx.store();
  const auto enc = [&](const uint64_t* i, const void* data, void* m, size_t cap, void* w, size_t wsz) {
    return host::aqsgd_encode(c, st, i, const_tensor_view{data, dtype::f32, bv.shp}, false, m, cap, w, wsz, 0, &len);
  };
  CHECK(enc(ids, bv.data, msg.data(), 100, wsb.data(), ws) == status::buffer_too_small);
  CHECK(enc(ids, bv.data, msg.data(), msg.size(), wsb.data(), ws - 1) == status::workspace_too_small);
  CHECK(enc(ids, bv.data, msg.data(), msg.size(), wsb.data() + 8, ws) == status::misaligned);
  auto* table = reinterpret_cast<uint8_t*>(st.table.words);
  auto* rows_mem = static_cast<uint8_t*>(st.rows.data);
  CHECK(enc(ids, bv.data, table, msg.size(), wsb.data(), ws) == status::aliasing);     // message over the table
  CHECK(enc(ids, bv.data, rows_mem, msg.size(), wsb.data(), ws) == status::aliasing);  // message over the rows
  CHECK(enc(ids, bv.data, msg.data(), msg.size(), table, ws) == status::aliasing);     // workspace over the table
  CHECK(enc(ids, bv.data, msg.data(), msg.size(), msg.data(), ws) == status::aliasing);  // workspace over the message
  std::vector<uint8_t> shared(ws + 64);
  // ids over the workspace's end (8-aligned: misaligned ids are a status of their own)
  const auto* ids_in_ws = reinterpret_cast<const uint64_t*>(shared.data() + ((ws - 16) & ~size_t(7)));
  CHECK(enc(ids_in_ws, bv.data, msg.data(), msg.size(), shared.data(), ws) == status::aliasing);
  CHECK(enc(ids, msg.data() + 64, msg.data(), msg.size(), wsb.data(), ws) == status::aliasing);  // batch over the message
  CHECK(snapshot(tx) == tx0);

  REQUIRE(ok(tx.encode(ids, bv, false, msg.data(), msg.size(), 1, &len)));
  const auto dec = [&](const void* m, void* out, void* w, size_t wsz) {
    return host::aqsgd_decode(c, rx.store(), m, len, ids, tensor_view{out, dtype::f32, bv.shp}, w, wsz);
  };
  std::vector<float> out(rows * c.cols, 7.0F);
  const auto out0 = out;
  CHECK(dec(msg.data(), out.data(), wsb.data(), ws - 1) == status::workspace_too_small);
  CHECK(dec(msg.data(), out.data(), wsb.data() + 8, ws) == status::misaligned);
  CHECK(dec(msg.data(), rx.store().rows.data, wsb.data(), ws) == status::aliasing);  // out over the rows
  CHECK(dec(msg.data(), rx.store().table.words, wsb.data(), ws) == status::aliasing);  // out over the table
  CHECK(dec(msg.data(), msg.data(), wsb.data(), ws) == status::aliasing);              // out over the message
  CHECK(dec(msg.data(), out.data(), msg.data(), ws) == status::aliasing);              // workspace over the message
  CHECK(dec(msg.data(), out.data(), rx.store().rows.data, ws) == status::aliasing);    // workspace over the rows
  CHECK(snapshot(rx) == rx0);
  CHECK(out == out0);
  REQUIRE(ok(dec(msg.data(), out.data(), wsb.data(), ws)));
  CHECK(snapshot(rx) == snapshot(tx));
}

TEST_CASE("stateful sizes above 2^32 elements: 64-bit size math, checked before any element is touched") {
  const uint64_t two32 = uint64_t(1) << 32;
  const spec s = parse("quant:bits=4,group=row");
  const shape big(two32 + 1);
  // Workspace sizes do not wrap: the fp32 scratch is 4 bytes per element, 16-aligned.
  CHECK(host::ef21_workspace_bytes(s, big) == detail::align16(4 * (two32 + 1)) + workspace_bytes(s, big));
  CHECK(host::ef_workspace_bytes(s, big) == host::ef21_workspace_bytes(s, big));
  // The view calls reject a too-small workspace or an oversized shape from sizes alone
  // (the data pointers are never dereferenced).
  alignas(16) uint8_t small[256] = {};
  const float dummy = 0;
  const const_tensor_view xv{&dummy, dtype::f32, big};
  const tensor_view gv{small, dtype::f32, big};
  CHECK(host::ef21_encode(s, xv, gv, small + 128, 64, small, 64) == status::workspace_too_small);
  CHECK(host::ef_encode(s, xv, gv, small + 128, 64, small, 64) == status::workspace_too_small);
  const shape huge(max_elements + 1);
  CHECK(host::ef21_encode(s, const_tensor_view{&dummy, dtype::f32, huge}, tensor_view{small, dtype::f32, huge},
                          small + 128, 64, small, 64) == status::invalid_shape);
  host::ef21_state st;
  CHECK(st.init(s, huge, dtype::f32) == status::invalid_spec);  // refused before allocating

  // AQ-SGD message bound for batches of 2^32 rows: computed without a loop over every split,
  // and at least every split's size.
  host::aqsgd_config c;
  c.codec = s;
  c.cols = 3;
  c.state_type = dtype::f16;
  c.capacity = 16;
  const uint64_t rows = two32;
  const uint64_t bound = host::aqsgd_message_bytes(c, rows);
  REQUIRE(bound > 0);
  for (uint64_t w : {uint64_t(0), uint64_t(1), rows / 3, rows - 1, rows}) {
    const uint64_t split = aqsgd_header_bytes + detail::align16(rows) + aqsgd_part_bytes(c.warmup, w, c.cols) +
                           aqsgd_part_bytes(c.codec, rows - w, c.cols);
    CHECK(bound >= split);
  }
  CHECK(host::aqsgd_message_bytes(c, host::aqsgd_exact_bound_rows + 1) >=
        host::aqsgd_message_bytes(c, host::aqsgd_exact_bound_rows));
  CHECK(host::aqsgd_message_bytes(c, max_elements / c.cols + 1) == 0);
  // A batch of 2^32 rows against a small workspace: refused from sizes alone.
  host::aqsgd_state a;
  REQUIRE(ok(a.init(c, 4)));
  const uint64_t ids[1] = {1};
  CHECK(host::aqsgd_encode(c, a.store(), ids, const_tensor_view{&dummy, dtype::f32, shape(rows, c.cols)}, false,
                           small + 128, 64, small, 64) == status::workspace_too_small);
  // Capacities beyond aqsgd_max_capacity are refused before any allocation.
  c.capacity = aqsgd_max_capacity + 1;
  CHECK(a.init(c, 4) == status::invalid_argument);
}

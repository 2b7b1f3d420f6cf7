// EF21 half of the state_seq harness: a sender and a receiver g (caller memory, the view API)
// under a fuzzer-chosen sequence of steps. Per step: sender faults (payload buffer too small,
// workspace too small or misaligned, payload aliasing g) must fail with their status and leave
// g untouched; a genuine encode must succeed; a corrupted payload must be rejected with g and
// the output untouched, or, when it is still a valid payload, update g exactly as
// decode_accumulate says; after every accepted genuine step the two g are equal bit for bit
// and the receiver's output is g converted to the output dtype.
#pragma once

#include "state_seq_common.hpp"

namespace pcfuzz {

struct ef21_side {
  std::vector<uint8_t> g, ws;
  pipecodec::tensor_view view;
  ef21_side(pipecodec::dtype t, pipecodec::shape shp, size_t ws_bytes)
      : g(size_t(shp.size() * pipecodec::dtype_bytes(t))), ws(ws_bytes + 16), view{g.data(), t, shp} {}
};

// One sender fault, if the fuzzer chose one. Returns true when it still produced a payload
// (a smaller buffer can be enough for TopK/RandK, whose size is an upper bound): that payload
// is then the step's genuine one.
inline bool ef21_sender_fault(reader& r, const pipecodec::spec& s, const pipecodec::const_tensor_view& x,
                              ef21_side& tx, size_t cap, size_t ws_bytes, uint64_t seed,
                              std::vector<uint8_t>& payload, size_t& len) {
  using namespace pipecodec;
  const uint8_t op = r.u8() % 8;
  if (op < 4) return false;
  const auto before = tx.g;
  status st = status::success;
  if (op == 4) {
    st = host::ef21_encode(s, x, tx.view, payload.data(), r.u16() % cap, tx.ws.data(), ws_bytes, seed, &len);
    if (ok(st)) return true;
    PCFUZZ_CHECK(st == status::buffer_too_small, "small payload buffer: %s", to_string(st));
  } else if (op == 5) {
    const size_t cut = 1 + r.u8() % 16;
    st = host::ef21_encode(s, x, tx.view, payload.data(), cap, tx.ws.data(), ws_bytes > cut ? ws_bytes - cut : 0);
    PCFUZZ_CHECK(st == status::workspace_too_small, "small workspace: %s", to_string(st));
  } else if (op == 6) {
    st = host::ef21_encode(s, x, tx.view, payload.data(), cap, tx.ws.data() + 8, ws_bytes);
    PCFUZZ_CHECK(st == status::misaligned, "misaligned workspace: %s", to_string(st));
  } else {
    st = host::ef21_encode(s, x, tx.view, tx.g.data(), cap, tx.ws.data(), ws_bytes);
    PCFUZZ_CHECK(st == status::aliasing, "payload over g: %s", to_string(st));
  }
  PCFUZZ_CHECK(tx.g == before, "failed encode (%s) changed g", to_string(st));
  return false;
}

inline int fuzz_ef21_seq(reader& r) {
  using namespace pipecodec;
  const uint64_t rows = 1 + r.u8() % 4, cols = 1 + r.u8() % 96;
  const shape shp = r.u8() & 1 ? shape(rows, cols) : shape(rows * cols);
  const spec s = pick_state_spec(r, shp.cols);
  const dtype gt = dtype_from(r.u8()), xt = dtype_from(r.u8()), ot = dtype_from(r.u8());
  const size_t cap = encoded_bytes(s, shp), ws_bytes = host::ef21_workspace_bytes(s, shp);
  PCFUZZ_CHECK(cap > 0, "spec invalid for its shape");
  ef21_side tx(gt, shp, ws_bytes), rx(gt, shp, ws_bytes);
  const size_t n = size_t(shp.size()), out_bytes = n * dtype_bytes(ot);
  const size_t codec_ws = ws_bytes - host::detail::f32_scratch_bytes(shp.size());
  uint8_t* rx_codec_ws = rx.ws.data() + host::detail::f32_scratch_bytes(shp.size());
  for (int step = 0; step < 16 && r.remaining() > 0; ++step) {
    const auto x = step_data(r, n, xt);
    const const_tensor_view xv{x.data(), xt, shp};
    const uint64_t seed = r.u8();
    std::vector<uint8_t> payload(cap);
    size_t len = 0;
    if (!ef21_sender_fault(r, s, xv, tx, cap, ws_bytes, seed, payload, len)) {
      const status se = host::ef21_encode(s, xv, tx.view, payload.data(), cap, tx.ws.data(), ws_bytes, seed, &len);
      PCFUZZ_CHECK(ok(se), "sender failed on valid input: %s", to_string(se));
    }
    PCFUZZ_CHECK(len > 0 && len <= cap, "written %zu of capacity %zu", len, cap);

    const bool want_out = r.u8() & 1;
    std::vector<uint8_t> out(want_out ? out_bytes : 0);
    for (size_t i = 0; i < out.size(); ++i) out[i] = uint8_t(i * 29 + 3);
    const tensor_view ov{want_out ? out.data() : nullptr, ot, shp};

    auto bad = payload;
    size_t bad_len = len;
    if (corrupt(r, bad, bad_len)) {
      const auto wire = exact_copy(bad.data(), bad_len);
      const auto g0 = rx.g, out0 = out;
      const status sr = host::ef21_decode(s.codec, wire.data(), wire.size(), rx.view, ov, rx_codec_ws, codec_ws);
      if (!ok(sr)) {
        PCFUZZ_CHECK(rx.g == g0 && out == out0, "rejected payload (%s) changed g or out", to_string(sr));
        if (bad_len < len) PCFUZZ_CHECK(cut_status(sr, bad_len), "cut to %zu of %zu: %s", bad_len, len, to_string(sr));
      } else {
        // Still a valid payload: g must be exactly what decode_accumulate gives.
        std::vector<uint8_t> expect = g0;
        const status sa = host::decode_accumulate(wire.data(), wire.size(), tensor_view{expect.data(), gt, shp});
        PCFUZZ_CHECK(ok(sa) && expect == rx.g, "accepted corrupt payload: g is not g + D(payload)");
        rx.g = g0;  // undo, so the genuine payload below keeps the two sides comparable
      }
    }
    const auto wire = exact_copy(payload.data(), len);
    const status sr = host::ef21_decode(s.codec, wire.data(), wire.size(), rx.view, ov, rx_codec_ws, codec_ws);
    PCFUZZ_CHECK(ok(sr), "receiver rejected a genuine payload: %s", to_string(sr));
    PCFUZZ_CHECK(tx.g == rx.g, "step %d: sender and receiver g differ", step);
    if (want_out) {
      std::vector<uint8_t> expect(out_bytes);
      PCFUZZ_CHECK(ok(host::detail::convert(rx.g.data(), gt, expect.data(), ot, n)), "convert");
      PCFUZZ_CHECK(out == expect, "receiver output is not g");
    }
  }
  return 0;
}

}  // namespace pcfuzz

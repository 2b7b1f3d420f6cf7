// Every host entry point that takes a typed tensor (or sample-id) pointer rejects one that is
// not aligned to its element size with `misaligned`, as the CUDA backend does, before touching
// any buffer: reading or writing through it would be undefined behaviour.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>

#include "../common/print.hpp"
#include "../common/topk_check.hpp"

using namespace pipecodec;

namespace {

// Bytes with room to place a tensor at any offset; filled with a pattern to see writes.
struct patterned_arena {
  std::vector<uint64_t> words;  // 8-aligned storage
  explicit patterned_arena(size_t bytes) : words(bytes / 8 + 4) { std::memset(words.data(), 0x3C, 8 * words.size()); }
  uint8_t* at(size_t off) { return reinterpret_cast<uint8_t*>(words.data()) + off; }
  bool untouched() const {
    const auto* b = reinterpret_cast<const uint8_t*>(words.data());
    return std::all_of(b, b + 8 * words.size(), [](uint8_t v) { return v == 0x3C; });
  }
};

spec spec_of(const char* text) {
  spec s;
  REQUIRE(ok(parse_spec(text, s)));
  return s;
}

}  // namespace

TEST_CASE("misaligned tensors: encode and decode of every codec") {
  const shape shp(4, 64);
  const auto x = testdata::activations(shp.size(), 3);
  for (const char* text : {"plain", "quant:bits=4", "quant:bits=3,rotate=hadamard,rotate_block=32", "topk:ratio=0.1",
                           "randk:k=5,scope=row", "fp8", "mx:format=fp4_e2m1", "lowrank:rank=2"}) {
    CAPTURE_TEXT(text);
    const spec s = spec_of(text);
    const auto good = testk::encode(s, x.data(), dtype::f32, shp);
    std::vector<uint8_t> ws(workspace_bytes(s, shp));
    for (dtype t : {dtype::f32, dtype::f16}) {
      CAPTURE(int(t));
      patterned_arena in(shp.size() * 4 + 16), out(shp.size() * 4 + 16);
      std::vector<uint8_t> p(encoded_bytes(s, shp), 0x77);
      const auto p0 = p;
      CHECK(host::encode(s, const_tensor_view{in.at(1), t, shp}, p.data(), p.size(), ws.data(), ws.size()) ==
            status::misaligned);
      CHECK(p == p0);
      CHECK(host::decode(good.data(), good.size(), tensor_view{out.at(1), t, shp}, ws.data(), ws.size()) ==
            status::misaligned);
      CHECK(host::decode_accumulate(good.data(), good.size(), tensor_view{out.at(1), t, shp}) == status::misaligned);
      CHECK(out.untouched());
      if (t == dtype::f32) {  // 2-aligned is enough for 16-bit elements, not for fp32
        CHECK(host::decode(good.data(), good.size(), tensor_view{out.at(2), t, shp}, ws.data(), ws.size()) ==
              status::misaligned);
        CHECK(out.untouched());
      }
    }
  }
}

TEST_CASE("misaligned tensors: EF, EF21 and rng=sample ids") {
  const shape shp(2, 64);
  const uint64_t n = shp.size();
  const auto x = testdata::activations(n, 4);
  const spec s = spec_of("quant:bits=4,group=row,round=stochastic,rng=sample");
  std::vector<uint8_t> p(encoded_bytes(s, shp)), ws(host::ef_workspace_bytes(s, shp));
  patterned_arena a(3 * n * 4 + 64);
  std::vector<float> aligned_x(x), state(n);
  const uint64_t ids[3] = {7, 8, 9};
  const randomness good(1, ids), odd(1, reinterpret_cast<const uint64_t*>(reinterpret_cast<const uint8_t*>(ids) + 4));
  const const_tensor_view xv{aligned_x.data(), dtype::f32, shp};
  const tensor_view ev{state.data(), dtype::f32, shp};
  // x, then the state, then the ids off their alignment.
  CHECK(host::ef_encode(s, const_tensor_view{a.at(2), dtype::f32, shp}, ev, p.data(), p.size(), ws.data(), ws.size(),
                        good) == status::misaligned);
  CHECK(host::ef_encode(s, xv, tensor_view{a.at(6), dtype::f32, shp}, p.data(), p.size(), ws.data(), ws.size(), good) ==
        status::misaligned);
  CHECK(host::ef21_encode(s, xv, tensor_view{a.at(1), dtype::f16, shp}, p.data(), p.size(), ws.data(), ws.size(),
                          good) == status::misaligned);
  CHECK(host::ef_encode(s, xv, ev, p.data(), p.size(), ws.data(), ws.size(), odd) == status::misaligned);
  CHECK(host::encode(s, xv, p.data(), p.size(), nullptr, 0, odd) == status::misaligned);
  CHECK(std::all_of(state.begin(), state.end(), [](float v) { return v == 0.0F; }));
  CHECK(a.untouched());
  // A valid step, then EF21's receiver with a misaligned state or output.
  REQUIRE(ok(host::ef21_encode(s, xv, ev, p.data(), p.size(), ws.data(), ws.size(), good)));
  CHECK(host::ef21_decode(s.codec, p.data(), p.size(), tensor_view{a.at(2), dtype::f32, shp}) == status::misaligned);
  CHECK(host::ef21_decode(s.codec, p.data(), p.size(), ev, tensor_view{a.at(1), dtype::bf16, shp}) ==
        status::misaligned);
  CHECK(a.untouched());
  // Keyed RandK reads the ids to copy them into its payload.
  const spec rk = spec_of("randk:k=5,scope=row,rng=sample");
  std::vector<uint8_t> rp(encoded_bytes(rk, shp)), rws(workspace_bytes(rk, shp));
  CHECK(host::encode(rk, xv, rp.data(), rp.size(), rws.data(), rws.size(), odd) == status::misaligned);
}

TEST_CASE("misaligned tensors and ids: AQ-SGD and per-sample EF") {
  host::aqsgd_config c;
  c.cols = 32;
  c.capacity = 8;
  c.codec = spec_of("quant:bits=4,group=row");
  const shape shp(3, 32);
  const auto x = testdata::activations(shp.size(), 5);
  patterned_arena a(shp.size() * 4 + 64);
  const uint64_t idw[4] = {1, 2, 3, 4};
  const uint64_t* ids = idw;
  const auto* odd_ids = reinterpret_cast<const uint64_t*>(reinterpret_cast<const uint8_t*>(idw) + 4);
  host::aqsgd_state tx, rx;
  host::ef_sample_state ef;
  REQUIRE(ok(tx.init(c, 4)));
  REQUIRE(ok(rx.init(c, 4)));
  REQUIRE(ok(ef.init(c, 4)));
  std::vector<uint8_t> msg(tx.message_bytes());
  const const_tensor_view good{x.data(), dtype::f32, shp}, bad{a.at(2), dtype::f32, shp};
  CHECK(tx.encode(ids, bad, false, msg.data(), msg.size()) == status::misaligned);
  CHECK(tx.encode(odd_ids, good, false, msg.data(), msg.size()) == status::misaligned);
  CHECK(ef.encode(ids, bad, msg.data(), msg.size()) == status::misaligned);
  CHECK(ef.encode(odd_ids, good, msg.data(), msg.size()) == status::misaligned);
  CHECK(tx.count() == 0);
  size_t len = 0;
  REQUIRE(ok(tx.encode(ids, good, false, msg.data(), msg.size(), 0, &len)));
  CHECK(rx.decode(msg.data(), len, odd_ids, tensor_view{}) == status::misaligned);
  CHECK(rx.decode(msg.data(), len, ids, tensor_view{a.at(1), dtype::f16, shp}) == status::misaligned);
  CHECK(rx.count() == 0);
  CHECK(a.untouched());
}

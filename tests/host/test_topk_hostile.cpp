// Hostile TopK / RandK payloads: every malformed field gives a specific status and leaves
// the output untouched (dense and accumulating decode alike).
#include <doctest/doctest.h>

#include "../common/print.hpp"
#include "../common/topk_check.hpp"

using namespace pipecodec;

namespace {

const shape kShape(3, 1001);  // n = 3003: the bitmap's last byte is partly padding

std::vector<uint8_t> make(const char* text) {
  spec s;
  REQUIRE(ok(parse_spec(text, s)));
  const auto x = testdata::activations(kShape.size(), 4);
  return testk::encode(s, x.data(), dtype::f32, kShape, 3);
}

detail::topk_payload parsed(const std::vector<uint8_t>& p) {
  detail::topk_payload tp;
  REQUIRE(ok(detail::parse_topk_payload(p.data(), p.size(), tp)));
  return tp;
}

// Decodes `p` both ways into sentinel-filled outputs; both must fail with `want` and
// leave the outputs untouched.
void expect_rejected(const std::vector<uint8_t>& p, status want, size_t len = ~size_t(0)) {
  if (len == ~size_t(0)) len = p.size();
  for (bool acc : {false, true}) {
    std::vector<float> out(kShape.size(), 4.5F);
    const tensor_view v{out.data(), dtype::f32, kShape};
    const status got = acc ? host::decode_accumulate(p.data(), len, v) : host::decode(p.data(), len, v);
    CHECK_MESSAGE(got == want, got);
    CHECK(std::all_of(out.begin(), out.end(), [](float f) { return f == 4.5F; }));
  }
}

}  // namespace

TEST_CASE("index sections: out of range, unsorted, duplicate") {
  for (const char* text : {"topk:k=20,scope=row,index=u32", "topk:k=20,scope=row,index=u16",
                           "topk:k=20,scope=tensor,index=u32"}) {
    CAPTURE_TEXT(text);
    const auto good = make(text);
    const auto tp = parsed(good);
    const bool u32 = tp.desc.index == index_layout::u32;
    auto get = [&](const std::vector<uint8_t>& p, uint64_t e) {
      return u32 ? detail::get_u32(p.data() + tp.layout.index_offset + 4 * e)
                 : detail::get_u16(p.data() + tp.layout.index_offset + 2 * e);
    };
    auto set = [&](std::vector<uint8_t>& p, uint64_t e, uint32_t v) {
      if (u32) detail::put_u32(p.data() + tp.layout.index_offset + 4 * e, v);
      else detail::put_u16(p.data() + tp.layout.index_offset + 2 * e, uint16_t(v));
    };
    auto p = good;
    set(p, tp.layout.kept - 1, uint32_t(tp.layout.unit_len));  // last index one past the unit
    expect_rejected(p, status::corrupt_payload);
    p = good;
    const uint32_t a = get(p, 3), b = get(p, 4);
    set(p, 3, b);
    set(p, 4, a);  // unsorted
    expect_rejected(p, status::corrupt_payload);
    p = good;
    set(p, 4, get(p, 3));  // duplicate
    expect_rejected(p, status::corrupt_payload);
    // Still fine after all that: the good payload decodes.
    CHECK(ok(host::decode(good.data(), good.size(), tensor_view{std::vector<float>(kShape.size()).data(), dtype::f32, kShape})));
  }
}

TEST_CASE("bitmap: popcount per unit must equal k, nothing set beyond n") {
  for (const char* text : {"topk:k=40,scope=row,index=bitmap", "topk:k=100,scope=tensor,index=bitmap"}) {
    CAPTURE_TEXT(text);
    const auto good = make(text);
    const auto tp = parsed(good);
    uint8_t* bm0 = nullptr;
    auto p = good;
    bm0 = p.data() + tp.layout.index_offset;
    // Clear the first set bit: one unit holds k - 1.
    uint64_t first = 0;
    while (!(bm0[first / 8] >> (first % 8) & 1)) ++first;
    bm0[first / 8] = uint8_t(bm0[first / 8] & ~(1u << (first % 8)));
    expect_rejected(p, status::corrupt_payload);
    // Move a bit from unit 0 to another unit: total right, per-unit counts wrong (row scope),
    // or set an extra bit (tensor scope).
    p = good;
    bm0 = p.data() + tp.layout.index_offset;
    uint64_t clear = 0;
    while (!(bm0[clear / 8] >> (clear % 8) & 1)) ++clear;
    uint64_t extra = kShape.size() - 1;
    while (bm0[extra / 8] >> (extra % 8) & 1) --extra;
    bm0[extra / 8] = uint8_t(bm0[extra / 8] | (1u << (extra % 8)));
    if (tp.desc.scope == topk_scope::row) bm0[clear / 8] = uint8_t(bm0[clear / 8] & ~(1u << (clear % 8)));
    expect_rejected(p, status::corrupt_payload);
    // A bit in the padding after element n - 1.
    p = good;
    bm0 = p.data() + tp.layout.index_offset;
    bm0[kShape.size() / 8] = uint8_t(bm0[kShape.size() / 8] | (1u << (kShape.size() % 8)));
    expect_rejected(p, status::corrupt_payload);
  }
}

TEST_CASE("header fields: k, params, counts, sizes, truncation") {
  const auto good = make("topk:k=20,scope=row,index=u32,values=fp16");
  const uint32_t P = 40;  // params offset
  auto with = [&](uint32_t off, uint8_t v) {
    auto p = good;
    p[off] = v;
    return p;
  };
  expect_rejected(with(P + 0, 3), status::invalid_header);  // scope
  expect_rejected(with(P + 1, 4), status::invalid_header);  // index layout
  expect_rejected(with(P + 1, 0), status::invalid_header);  // topk without positions, not shared
  expect_rejected(with(P + 2, 5), status::invalid_header);  // values
  expect_rejected(with(P + 3, 4), status::invalid_header);  // unknown mode bit
  expect_rejected(with(P + 3, 2), status::invalid_header);  // unbiased on topk
  expect_rejected(with(P + 4, 1), status::invalid_header);  // quant word with fp16 values
  expect_rejected(with(P + 16, 1), status::invalid_header); // seed nobody uses
  // k: zero, beyond the row, or another valid k (the sizes then disagree).
  auto setk = [&](uint64_t k) {
    auto p = good;
    detail::put_u64(p.data() + P + 8, k);
    return p;
  };
  expect_rejected(setk(0), status::invalid_header);
  expect_rejected(setk(1002), status::invalid_header);
  expect_rejected(setk(21), status::size_mismatch);
  // k = 19 needs the same 16-byte aligned sections as k = 20: the sizes agree, and the
  // index section (unit 0 then holds the positions meant for 19 + 1) is caught instead.
  expect_rejected(setk(19), status::corrupt_payload);
  // Declared total too large (truncated) or too small (mismatch), and plain truncation.
  auto p = good;
  detail::put_u64(p.data() + 32, good.size() + 16);
  expect_rejected(p, status::truncated);
  detail::put_u64(p.data() + 32, good.size() - 16);
  expect_rejected(p, status::size_mismatch);
  expect_rejected(good, status::truncated, good.size() - 1);
  expect_rejected(good, status::truncated, 63);
  expect_rejected(with(7, 2), status::invalid_header);  // unknown flag
  // Rows changed in the header: the layout no longer matches the declared size.
  p = good;
  detail::put_u64(p.data() + 16, 2);
  expect_rejected(p, status::size_mismatch);
  // A valid payload decoded into an output of another shape.
  std::vector<float> out(kShape.size(), 4.5F);
  CHECK(host::decode(good.data(), good.size(), tensor_view{out.data(), dtype::f32, shape(1001, 3)}) ==
        status::shape_mismatch);
  CHECK(std::all_of(out.begin(), out.end(), [](float f) { return f == 4.5F; }));
}

TEST_CASE("randk and quantized values: header and scale checks") {
  const auto rk = make("randk:k=20,scope=row,seed=9,values=fp32");
  auto p = rk;
  p[40 + 1] = 1;  // randk with an index layout
  expect_rejected(p, status::invalid_header);
  p = rk;
  p[40 + 3] = 1;  // randk marked shared
  expect_rejected(p, status::invalid_header);

  const auto q = make("topk:k=20,scope=row,index=u16,values=quant,bits=4,group=row,scale_dtype=fp32");
  const auto tp = parsed(q);
  p = q;
  detail::put_u32(p.data() + tp.layout.values_offset, 0x7FC00000u);  // NaN scale of group 0
  expect_rejected(p, status::corrupt_payload);
  p = q;
  detail::put_u32(p.data() + 40 + 4, detail::get_u32(q.data() + 44) & ~0xFu);  // 0 bits
  expect_rejected(p, status::invalid_header);
}

TEST_CASE("an optional sample-id section is accepted; random corruption never crashes") {
  auto p = make("topk:k=20,scope=row,index=u16,values=bf16");
  p[7] = flag_sample_ids;
  const uint64_t ids = detail::align16(8 * kShape.rows);
  detail::put_u64(p.data() + 32, p.size() + ids);
  p.resize(p.size() + ids, 0);
  std::vector<float> out(kShape.size());
  CHECK(ok(host::decode(p.data(), p.size(), tensor_view{out.data(), dtype::f32, kShape})));

  uint64_t rng = 1;
  for (const char* text : {"topk:k=20,scope=row,index=bitmap,values=quant,bits=3", "topk:ratio=0.3,index=u32",
                           "randk:k=7,scope=row,values=fp16"}) {
    const auto good = make(text);
    for (int t = 0; t < 300; ++t) {
      auto bad = good;
      for (int f = 0; f < 3; ++f) {
        const uint64_t at = testdata::splitmix(rng) % bad.size();
        bad[at] = uint8_t(bad[at] ^ (1u << (testdata::splitmix(rng) % 8)));
      }
      std::vector<float> o(kShape.size(), 4.5F);
      const status st = host::decode(bad.data(), bad.size(), tensor_view{o.data(), dtype::f32, kShape});
      if (!ok(st)) CHECK(std::all_of(o.begin(), o.end(), [](float f) { return f == 4.5F; }));
    }
  }
}

// Shared-mask TopK: the gradient's values at the positions its forward payload chose.
#include <doctest/doctest.h>

#include "../common/topk_check.hpp"

using namespace pipecodec;

namespace {

struct pair_setup {
  shape shp{6, 500};
  spec fwd, bwd;
  std::vector<float> act, grad;
  std::vector<uint8_t> mask;

  explicit pair_setup(value_kind gv = value_kind::f32) {
    REQUIRE(ok(parse_spec("topk:ratio=0.1,scope=row,values=fp16", fwd)));
    REQUIRE(ok(parse_spec("topk:ratio=0.1,scope=row,mask=shared", bwd)));
    bwd.topk.values = gv;
    act = testdata::activations(shp.size(), 1);
    grad = testdata::uniform(shp.size(), 2);
    mask = testk::encode(fwd, act.data(), dtype::f32, shp);
  }

  // `fill`: what the caller's buffer held before (no payload byte may depend on it).
  status encode_grad(std::vector<uint8_t>& out, const spec& s, const std::vector<uint8_t>& m, shape gs,
                     uint8_t fill = 0) {
    out.assign(encoded_bytes(s, gs), fill);
    auto ws = testk::workspace_for(s, gs);
    size_t written = 0;
    const status st = host::encode_shared(s, const_tensor_view{grad.data(), dtype::f32, gs}, m.data(), m.size(),
                                          out.data(), out.size(), ws.data(), ws.size(), 0,
                                          &written);
    if (ok(st)) REQUIRE(written == out.size());
    return st;
  }
};

}  // namespace

TEST_CASE("shared mask: values only, decoded at the mask's positions") {
  for (auto gv : {value_kind::f32, value_kind::bf16, value_kind::quant}) {
    pair_setup p(gv);
    std::vector<uint8_t> vals;
    REQUIRE(ok(p.encode_grad(vals, p.bwd, p.mask, p.shp)));
    std::vector<uint8_t> over_stale;
    REQUIRE(ok(p.encode_grad(over_stale, p.bwd, p.mask, p.shp, 0xA5)));
    CHECK(over_stale == vals);
    // No index section: header + values only.
    const uint64_t kept = p.shp.rows * 50;
    if (gv == value_kind::f32) CHECK(vals.size() == 64 + detail::align16(4 * kept));
    if (gv == value_kind::bf16) CHECK(vals.size() == 64 + detail::align16(2 * kept));
    const auto pos = testk::positions_of(p.mask);
    std::vector<float> out(p.shp.size(), 9.0F), acc(p.shp.size(), 1.0F);
    REQUIRE(ok(host::decode_shared(vals.data(), vals.size(), p.mask.data(), p.mask.size(),
                                   tensor_view{out.data(), dtype::f32, p.shp})));
    REQUIRE(ok(host::decode_shared_accumulate(vals.data(), vals.size(), p.mask.data(), p.mask.size(),
                                              tensor_view{acc.data(), dtype::f32, p.shp})));
    std::vector<uint8_t> kept_at(p.shp.size(), 0);
    for (uint64_t u = 0; u < p.shp.rows; ++u)
      for (uint64_t i : pos[u]) kept_at[u * p.shp.cols + i] = 1;
    for (size_t i = 0; i < out.size(); ++i) {
      CAPTURE(i);
      if (!kept_at[i]) {
        REQUIRE(testk::same_bits(out[i], 0.0F));
        REQUIRE(acc[i] == 1.0F);
        continue;
      }
      if (gv == value_kind::f32) REQUIRE(out[i] == p.grad[i]);
      if (gv == value_kind::bf16) REQUIRE(out[i] == detail::bf16_to_f32(detail::f32_to_bf16(p.grad[i])));
      if (gv == value_kind::quant) REQUIRE(std::fabs(out[i] - p.grad[i]) <= 2.0F / 255.0F);  // 8-bit, range <= 2
      REQUIRE(testk::same_bits(acc[i], 1.0F + out[i]));
    }
  }
}

TEST_CASE("shared mask: mismatched or unusable masks are refused, outputs untouched") {
  pair_setup p;
  std::vector<uint8_t> vals;
  REQUIRE(ok(p.encode_grad(vals, p.bwd, p.mask, p.shp)));
  std::vector<float> out(p.shp.size(), 9.0F);
  const tensor_view ov{out.data(), dtype::f32, p.shp};
  auto untouched = [&] { return std::all_of(out.begin(), out.end(), [](float v) { return v == 9.0F; }); };

  // A values-only payload cannot be decoded without its mask.
  CHECK(host::decode(vals.data(), vals.size(), ov) == status::invalid_argument);
  // The mask must be a TopK payload with positions: not the values payload, not RandK.
  CHECK(host::decode_shared(vals.data(), vals.size(), vals.data(), vals.size(), ov) == status::invalid_argument);
  spec rk;
  REQUIRE(ok(parse_spec("randk:ratio=0.1,scope=row", rk)));
  const auto rmask = testk::encode(rk, p.act.data(), dtype::f32, p.shp);
  CHECK(host::decode_shared(vals.data(), vals.size(), rmask.data(), rmask.size(), ov) == status::invalid_argument);
  // Same shape but another k.
  spec f2 = p.fwd;
  f2.topk.ratio = 0.2;
  const auto mask2 = testk::encode(f2, p.act.data(), dtype::f32, p.shp);
  CHECK(host::decode_shared(vals.data(), vals.size(), mask2.data(), mask2.size(), ov) == status::invalid_argument);
  std::vector<uint8_t> v2;
  CHECK(p.encode_grad(v2, p.bwd, mask2, p.shp) == status::invalid_argument);
  // Another shape.
  const shape other(5, 600);
  const auto mask3 = testk::encode(p.fwd, p.act.data(), dtype::f32, other);
  CHECK(host::decode_shared(vals.data(), vals.size(), mask3.data(), mask3.size(), ov) == status::shape_mismatch);
  CHECK(p.encode_grad(v2, p.bwd, mask3, p.shp) == status::shape_mismatch);
  // A corrupt mask (index out of range).
  auto bad = p.mask;
  detail::topk_payload tp;
  REQUIRE(ok(detail::parse_topk_payload(bad.data(), bad.size(), tp)));
  REQUIRE(tp.desc.index == index_layout::bitmap);  // 10% of 500 per row: the bitmap is smallest
  bad[tp.layout.index_offset] ^= 1;                 // one unit then holds k +- 1 positions
  CHECK(host::decode_shared(vals.data(), vals.size(), bad.data(), bad.size(), ov) == status::corrupt_payload);
  CHECK(p.encode_grad(v2, p.bwd, bad, p.shp) == status::corrupt_payload);
  // Corrupt positions and another shape: the pairing is checked first, as on the device
  // (tools/fuzz/regressions/device_decode/shared-mask-bad-positions-other-shape).
  auto bad3 = mask3;
  REQUIRE(ok(detail::parse_topk_payload(bad3.data(), bad3.size(), tp)));
  REQUIRE(tp.desc.index == index_layout::bitmap);
  bad3[tp.layout.index_offset] ^= 1;
  CHECK(host::decode_shared(vals.data(), vals.size(), bad3.data(), bad3.size(), ov) == status::shape_mismatch);
  CHECK(p.encode_grad(v2, p.bwd, bad3, p.shp) == status::shape_mismatch);
  // Truncated values payload.
  CHECK(host::decode_shared(vals.data(), vals.size() - 1, p.mask.data(), p.mask.size(), ov) == status::truncated);
  // A plain TopK spec is not a shared-mask spec; a shared-mask spec cannot go through encode().
  CHECK(p.encode_grad(v2, p.fwd, p.mask, p.shp) == status::invalid_spec);
  std::vector<uint8_t> pl(encoded_bytes(p.bwd, p.shp));
  auto ws = testk::workspace_for(p.bwd, p.shp);
  CHECK(host::encode(p.bwd, const_tensor_view{p.grad.data(), dtype::f32, p.shp}, pl.data(), pl.size(),
                     ws.data(), ws.size()) == status::invalid_argument);
  CHECK(untouched());
}

// rng=sample: stochastic rounding (quant, fp8, mx) and RandK positions keyed by each row's
// sample id and the element's column, so a sample's bits do not depend on its batch.
#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>

#include "../common/print.hpp"
#include "../common/topk_check.hpp"

using namespace pipecodec;

namespace {

spec keyed_spec(const char* text) {
  spec s;
  REQUIRE_MESSAGE(ok(parse_spec(text, s)), text);
  return s;
}

// Decoded rows of `x` (rows x cols fp32) encoded as one batch with ids `ids`.
std::vector<float> decode_batch(const spec& s, const std::vector<float>& x, const std::vector<uint64_t>& ids,
                                uint64_t cols, uint64_t seed) {
  const shape shp(ids.size(), cols);
  const auto p = testk::encode(s, x.data(), dtype::f32, shp, randomness(seed, ids.data()));
  std::vector<float> y(shp.size());
  REQUIRE(ok(host::decode(p.data(), p.size(), tensor_view{y.data(), dtype::f32, shp})));
  return y;
}

const char* const keyed_specs[] = {
    "quant:bits=3,group=64,round=stochastic,rng=sample",
    "quant:bits=2,group=row,round=stochastic,rng=sample,scale_dtype=fp16",
    "quant:bits=4,group=row,round=stochastic,rng=sample,rotate=hadamard,rotate_block=32",
    "fp8:format=e5m2,group=row,round=stochastic,rng=sample",
    "fp8:format=e4m3,group=64,round=stochastic,rng=sample",
    "mx:format=fp4_e2m1,round=stochastic,rng=sample",
    "randk:k=9,scope=row,seed=3,rng=sample",
    "randk:ratio=0.25,scope=row,rng=sample,values=bf16",
};

}  // namespace

TEST_CASE("rng=sample: spec text, canonical form and the combinations refused by key") {
  for (const char* text : keyed_specs) {
    CAPTURE_TEXT(text);
    const spec s = keyed_spec(text);
    spec back;
    REQUIRE(ok(parse_spec(to_string(s), back)));
    CHECK(to_string(back) == to_string(s));
    CHECK(to_string(s).find(",rng=sample") != std::string::npos);
  }
  const struct {
    const char* text;
    const char* says;
  } refused[] = {
      {"quant:bits=4,rng=sample", "round=stochastic"},
      {"quant:bits=4,round=stochastic,group=tensor,rng=sample", "group=tensor"},
      {"fp8:round=stochastic,group=tensor,rng=sample", "group=tensor"},
      {"mx:rng=sample", "round=stochastic"},
      {"randk:k=3,rng=sample", "scope=row"},
      {"randk:k=3,scope=row,rng=sample,values=quant", "values=quant"},
      {"topk:k=3,scope=row,rng=sample", "unknown key 'rng'"},
      {"quant:bits=4,round=stochastic,rng=row", "bad value 'row' for key 'rng'"},
  };
  for (const auto& r : refused) {
    CAPTURE_TEXT(r.text);
    spec s;
    std::string err;
    CHECK(parse_spec(r.text, s, &err) == status::invalid_spec);
    CHECK_MESSAGE(err.find(r.says) != std::string::npos, err);
  }
  CHECK(to_string(keyed_spec("quant:bits=4,round=stochastic")).find("rng") == std::string::npos);
}

TEST_CASE("rng=sample: a sample's decoded row is the same in any batch, at any position") {
  const uint64_t cols = 128, rows = 6, seed = 77;
  const auto x = testdata::activations(rows * cols, 5);
  std::vector<uint64_t> ids(rows);
  for (uint64_t r = 0; r < rows; ++r) ids[r] = 1000 + 17 * r;
  for (const char* text : keyed_specs) {
    CAPTURE_TEXT(text);
    const spec s = keyed_spec(text);
    const auto whole = decode_batch(s, x, ids, cols, seed);
    // The same samples reversed, and each sample alone: equal rows, bit for bit.
    std::vector<float> xr(x.size());
    std::vector<uint64_t> idr(ids.rbegin(), ids.rend());
    for (uint64_t r = 0; r < rows; ++r)
      std::copy_n(x.begin() + (rows - 1 - r) * cols, cols, xr.begin() + r * cols);
    const auto rev = decode_batch(s, xr, idr, cols, seed);
    for (uint64_t r = 0; r < rows; ++r) {
      CAPTURE(r);
      CHECK(std::memcmp(&whole[r * cols], &rev[(rows - 1 - r) * cols], 4 * cols) == 0);
      const std::vector<float> one(x.begin() + r * cols, x.begin() + (r + 1) * cols);
      const auto alone = decode_batch(s, one, {ids[r]}, cols, seed);
      CHECK(std::memcmp(&whole[r * cols], alone.data(), 4 * cols) == 0);
    }
    // Another id (or another seed) draws other bits for the same values.
    std::vector<uint64_t> other = ids;
    other[2] += 1;
    const auto moved = decode_batch(s, x, other, cols, seed);
    CHECK(std::memcmp(&whole[2 * cols], &moved[2 * cols], 4 * cols) != 0);
    CHECK(std::memcmp(&whole[3 * cols], &moved[3 * cols], 4 * cols) == 0);
    CHECK(decode_batch(s, x, ids, cols, seed + 1) != whole);
  }
}

TEST_CASE("rng=sample: words straight from Philox under the row's sample key") {
  // RandK row r keeps the k columns with the smallest words of stream_randk_sample under
  // sample_key(seed, id r); the payload carries the ids after its values.
  const shape shp(3, 50);
  const auto x = testdata::uniform(shp.size(), 8);
  const spec s = keyed_spec("randk:k=7,scope=row,seed=4,rng=sample");
  const uint64_t ids[3] = {5, 1u << 31, ~uint64_t(0)};
  const auto p = testk::encode(s, x.data(), dtype::f32, shp, randomness(6, ids));
  CHECK(p.size() == 64 + detail::align16(4 * 21) + detail::align16(24));
  CHECK(p.size() == encoded_bytes(s, shp));
  payload_info info;
  REQUIRE(ok(inspect(p.data(), p.size(), info)));
  CHECK(to_string(info.codec_spec).find(",rng=sample") != std::string::npos);  // info's spec re-encodes it
  std::vector<float> y(shp.size());
  REQUIRE(ok(host::decode(p.data(), p.size(), tensor_view{y.data(), dtype::f32, shp})));
  for (uint64_t r = 0; r < 3; ++r) {
    CHECK(detail::get_u64(p.data() + 64 + detail::align16(4 * 21) + 8 * r) == ids[r]);
    const uint64_t key = detail::sample_key(4 + 6, ids[r]);
    std::vector<uint64_t> idx(shp.cols);
    std::iota(idx.begin(), idx.end(), uint64_t(0));
    auto h = [&](uint64_t i) { return detail::random_block(key, detail::stream_randk_sample, i >> 2).v[i & 3]; };
    std::stable_sort(idx.begin(), idx.end(), [&](uint64_t a, uint64_t b) { return h(a) < h(b); });
    for (uint64_t j = 0; j < shp.cols; ++j) {
      const bool kept = std::find(idx.begin(), idx.begin() + 7, j) != idx.begin() + 7;
      CHECK(y[r * shp.cols + j] == (kept ? x[r * shp.cols + j] : 0.0F));
    }
  }
  // Stochastic rounding: row r's uniforms are words 0.. of stream_rounding_sample under its key.
  const spec q = keyed_spec("quant:bits=3,group=row,round=stochastic,rng=sample");
  const auto pq = testk::encode(q, x.data(), dtype::f32, shp, randomness(6, ids));
  detail::quant_payload qp;
  REQUIRE(ok(detail::parse_quant_payload(pq.data(), pq.size(), qp)));
  REQUIRE(ok(host::decode(pq.data(), pq.size(), tensor_view{y.data(), dtype::f32, shp})));
  const detail::quant_consts c = detail::consts_for(3, q.quant.scale);
  for (uint64_t r = 0; r < 3; ++r) {
    const detail::group_params gp =
        detail::make_params(host::detail::group_statistics<dtype::f32>(x.data(), r * shp.cols, shp.cols), q.quant);
    float scale = 0, offset = 0;
    detail::load_group(qp, r, scale, offset);
    const detail::draw d{detail::sample_key(6, ids[r]), detail::stream_rounding_sample, 0};
    for (uint64_t j = 0; j < shp.cols; ++j) {
      const float u = detail::to_unit_float(detail::draw_word(d, j));
      const uint32_t code = detail::quantize_stochastic(x[r * shp.cols + j], gp, c, u);
      REQUIRE(y[r * shp.cols + j] == detail::dequantize(code, scale, offset, c.zero));
    }
  }
}

TEST_CASE("rng=sample: stochastic rounding stays unbiased over samples") {
  const spec s = keyed_spec("quant:bits=2,group=32,round=stochastic,rng=sample");
  const uint64_t cols = 32, rows = 4000;
  std::vector<float> x(rows * cols);
  for (uint64_t r = 0; r < rows; ++r)
    for (uint64_t j = 0; j < cols; ++j) x[r * cols + j] = float(j) / 31.0F;  // every row equal
  std::vector<uint64_t> ids(rows);
  std::iota(ids.begin(), ids.end(), uint64_t(1) << 40);
  const auto y = decode_batch(s, x, ids, cols, 1);
  for (uint64_t j = 0; j < cols; ++j) {
    double mean = 0;
    for (uint64_t r = 0; r < rows; ++r) mean += y[r * cols + j];
    mean /= double(rows);
    CHECK(std::abs(mean - double(x[j])) < 0.02);  // quantum 1/3, 4000 draws: sd < 0.0037
  }
}

TEST_CASE("rng=sample: ids required, groups must stay inside a row, AQ-SGD refuses keyed RandK") {
  const shape wide(3, 128), shp(3, 96);
  const auto x = testdata::activations(wide.size(), 1);
  const uint64_t ids[3] = {1, 2, 3};
  for (const char* text : keyed_specs) {
    CAPTURE_TEXT(text);
    const spec s = keyed_spec(text);
    std::vector<uint8_t> p(encoded_bytes(s, wide), 0xAB);
    auto ws = testk::workspace_for(s, wide);
    CHECK(host::encode(s, const_tensor_view{x.data(), dtype::f32, wide}, p.data(), p.size(), ws.data(), ws.size(),
                       randomness(1)) == status::invalid_argument);
    CHECK(std::all_of(p.begin(), p.end(), [](uint8_t b) { return b == 0xAB; }));
    CHECK(ok(host::encode(s, const_tensor_view{x.data(), dtype::f32, wide}, p.data(), p.size(), ws.data(), ws.size(),
                          randomness(1, ids))));
  }
  // Groups of 64 over rows of 96 would mix two samples in one scale.
  for (const char* text : {"quant:bits=3,group=64,round=stochastic,rng=sample",
                           "fp8:format=e4m3,group=64,round=stochastic,rng=sample"}) {
    CAPTURE_TEXT(text);
    const spec s = keyed_spec(text);
    std::vector<uint8_t> p(encoded_bytes(s, shp));
    CHECK(host::encode(s, const_tensor_view{x.data(), dtype::f32, shp}, p.data(), p.size(), nullptr, 0,
                       randomness(1, ids)) == status::invalid_shape);
    // One row may be shorter than a group: its groups are still its own.
    std::vector<uint8_t> p1(encoded_bytes(s, shape(1, 96)));
    CHECK(ok(host::encode(s, const_tensor_view{x.data(), dtype::f32, shape(1, 96)}, p1.data(), p1.size(), nullptr, 0,
                          randomness(1, ids))));
  }
  host::aqsgd_config c;
  c.cols = 96;
  c.capacity = 8;
  c.codec = keyed_spec("randk:k=9,scope=row,rng=sample");
  host::aqsgd_state a;
  CHECK(a.init(c, 4) == status::not_supported);
  c.codec = keyed_spec("quant:bits=2,group=row,round=stochastic,rng=sample");
  CHECK(ok(a.init(c, 4)));
}

TEST_CASE("rng=sample: keyed RandK payloads are validated like any other") {
  const shape shp(3, 40);
  const auto x = testdata::uniform(shp.size(), 2);
  const uint64_t ids[3] = {7, 8, 9};
  const spec s = keyed_spec("randk:k=5,scope=row,rng=sample");
  const auto p = testk::encode(s, x.data(), dtype::f32, shp, randomness(0, ids));
  std::vector<float> y(shp.size(), 3.0F);
  const tensor_view out{y.data(), dtype::f32, shp};
  auto rejected = [&](std::vector<uint8_t> q, status want) {
    CHECK(host::decode(q.data(), q.size(), out) == want);
    CHECK(std::all_of(y.begin(), y.end(), [](float v) { return v == 3.0F; }));
  };
  auto flipped = p;
  flipped[detail::off_flags] = 0;  // keyed positions without their ids
  rejected(flipped, status::invalid_header);
  auto tensor_scope = p;
  tensor_scope[detail::off_params + 0] = uint8_t(topk_scope::tensor);
  rejected(tensor_scope, status::invalid_header);
  auto padded = p;
  padded[p.size() - 1] = 1;  // the id section's padding
  rejected(padded, status::corrupt_payload);
  // A topk payload cannot claim keyed positions.
  const spec t = keyed_spec("topk:k=5,scope=row");
  auto tk = testk::encode(t, x.data(), dtype::f32, shp);
  tk[detail::off_params + 3] |= detail::topk_mode_sample;
  rejected(tk, status::invalid_header);
}

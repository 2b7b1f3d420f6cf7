// quant's outlier keeping on the host: the kept set against a reference ranking, exact
// values, the others' scale and element bound, ties and non-finite values, groups shorter
// than N, accumulate, the error it saves on outlier channels, spec text and hostile bytes.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "../common/data.hpp"
#include "../common/print.hpp"
#include "../common/quant_check.hpp"
#include "../common/spec_text.hpp"
#include "pipecodec/pipecodec.hpp"

using namespace pipecodec;

namespace {

constexpr size_t outliers_byte = 40 + 7;  // header params start at 40 (docs/FORMAT.md)

// Activation-like rows with outlier channels: every 37th column 20-100x larger.
std::vector<float> channel_data(shape shp, uint64_t seed) {
  std::vector<float> x = testdata::uniform(shp.size(), seed);
  for (uint64_t i = 0; i < x.size(); ++i)
    if ((i % shp.cols) % 37 == 3) x[i] *= 20.0F + float((i % shp.cols) % 81);
  return x;
}

uint32_t abs_bits(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  return u & 0x7FFFFFFFu;
}

// The ranking key: finite values by magnitude, then NaN and +-Inf.
uint32_t rank_key(float v) { return std::isfinite(v) ? abs_bits(v) + 1 : 0u; }

// Checks one payload of x (already in the encoder's float view) against the definition:
// per group, the kept positions are the first min(N, size) of the ranking, sorted; their
// values and decodes are exact; the others decode within the nearest bound of a scale made
// from their statistics alone. A kept NaN or Inf stores the finite value its code gives.
void check_outliers(const spec& s, const std::vector<float>& x, const std::vector<uint8_t>& p,
                    const std::vector<float>& d) {
  detail::quant_payload qp;
  REQUIRE(ok(detail::parse_quant_payload(p.data(), p.size(), qp)));
  const detail::quant_layout& L = qp.layout;
  REQUIRE(L.outliers == s.quant.outliers);
  for (uint64_t g = 0; g < L.groups; ++g) {
    const uint64_t b = L.group_begin(g), len = L.group_size(g);
    std::vector<uint64_t> order(len);
    for (uint64_t i = 0; i < len; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](uint64_t a, uint64_t c) { return rank_key(x[b + a]) > rank_key(x[b + c]); });
    const uint32_t count = uint32_t(std::min<uint64_t>(len, L.outliers));
    REQUIRE(detail::outlier_count(L, g) == count);
    std::vector<uint64_t> kept(order.begin(), order.begin() + count);
    std::sort(kept.begin(), kept.end());
    std::vector<bool> is_kept(len, false);
    detail::group_stats rest;
    for (uint32_t j = 0; j < L.outliers; ++j) {
      const uint64_t pos = detail::outlier_position(p.data(), L, g, j);
      const float v = detail::outlier_value(p.data(), L, g, j);
      CAPTURE(g);
      CAPTURE(j);
      if (j >= count) {
        CHECK(pos == 0);
        CHECK(abs_bits(v) == 0);
        continue;
      }
      REQUIRE(pos == kept[j]);
      is_kept[pos] = true;
      CHECK(std::memcmp(&d[b + pos], &v, 4) == 0);
      if (std::isfinite(x[b + pos])) CHECK(std::memcmp(&v, &x[b + pos], 4) == 0);
      else CHECK(std::isfinite(v));
    }
    for (uint64_t i = 0; i < len; ++i)
      if (!is_kept[i]) detail::stats_add(rest, x[b + i]);
    float scale, offset;
    detail::load_group(qp, g, scale, offset);
    const detail::group_params want = detail::make_params(rest, s.quant);
    CHECK(scale == want.scale);
    CHECK(offset == want.offset);
    if (s.quant.round != rounding::nearest) continue;
    for (uint64_t i = 0; i < len; ++i)
      if (!is_kept[i] && std::isfinite(x[b + i]))
        CHECK(std::fabs(double(x[b + i]) - d[b + i]) <= detail::nearest_error_bound(scale, offset, x[b + i]));
  }
}

}  // namespace

TEST_CASE("outliers: the kept set, exact values, the others' scale and bound") {
  const std::vector<std::string> specs = {
      "quant:bits=2,group=64,outliers=2",
      "quant:bits=3,group=row,outliers=4,scale=absmax",
      "quant:bits=4,group=tensor,outliers=16,scale_dtype=fp16",
      "quant:bits=2,group=32,outliers=16,round=stochastic",
      "quant:bits=8,group=96,outliers=1",
  };
  const std::vector<shape> shapes = {shape(8, 200), shape(3, 70), shape(1, 5), shape(16, 1024), shape(600, 128)};
  for (const std::string& text : specs)
    for (const shape shp : shapes)
      for (dtype t : {dtype::f32, dtype::f16, dtype::bf16}) {
        CAPTURE(text);
        CAPTURE(shp.rows);
        CAPTURE(shp.cols);
        CAPTURE(t);
        const spec s = testspec::parse(text);
        const std::vector<uint8_t> in = testdata::as_bytes(channel_data(shp, shp.cols + 3), t);
        std::vector<float> x(shp.size());
        for (size_t i = 0; i < x.size(); ++i) x[i] = testdata::element(in, t, i);
        const std::vector<uint8_t> p = testq::encode(s, in, t, shp, 17);
        check_outliers(s, x, p, testq::decode_f32(p, shp));
      }
}

TEST_CASE("outliers: ties keep the lower index; NaN and Inf are not kept while finite values remain") {
  const shape shp(1, 64);
  std::vector<float> x(64, 0.25F);
  x[5] = -3.0F;
  x[9] = 3.0F;
  x[40] = -3.0F;
  x[12] = testdata::from_bits(0x7FC00123u);
  x[30] = -INFINITY;
  x[31] = INFINITY;
  const spec s = testspec::parse("quant:bits=2,group=64,outliers=2");
  std::vector<uint8_t> p = testq::encode(s, testdata::as_bytes(x, dtype::f32), dtype::f32, shp);
  std::vector<float> d = testq::decode_f32(p, shp);
  check_outliers(s, x, p, d);
  detail::quant_payload qp;
  REQUIRE(ok(detail::parse_quant_payload(p.data(), p.size(), qp)));
  CHECK(detail::outlier_position(p.data(), qp.layout, 0, 0) == 5);
  CHECK(detail::outlier_position(p.data(), qp.layout, 0, 1) == 9);
  CHECK(d[5] == -3.0F);
  CHECK(d[9] == 3.0F);
  CHECK(d[40] == -3.0F);  // the others' minimum: the offset, exact
  CHECK(d[12] == -3.0F);  // NaN and -Inf: the lowest code, as without outlier keeping
  CHECK(d[30] == -3.0F);
  CHECK(d[31] >= 0.25F);  // +Inf: the highest code
  CHECK(std::isfinite(d[31]));

  // Fewer finite values than N: the finite one first, then non-finite ones by index, stored as
  // their codes decode (here 0: the others are all non-finite, so the group's range is empty).
  const shape small(1, 32);
  std::vector<float> y(32, std::numeric_limits<float>::quiet_NaN());
  y[1] = 1.0F;
  y[2] = INFINITY;
  y[3] = -INFINITY;
  const spec s3 = testspec::parse("quant:bits=3,group=32,outliers=3");
  p = testq::encode(s3, testdata::as_bytes(y, dtype::f32), dtype::f32, small);
  d = testq::decode_f32(p, small);
  check_outliers(s3, y, p, d);
  REQUIRE(ok(detail::parse_quant_payload(p.data(), p.size(), qp)));
  CHECK(detail::outlier_position(p.data(), qp.layout, 0, 0) == 0);
  CHECK(detail::outlier_position(p.data(), qp.layout, 0, 1) == 1);
  CHECK(detail::outlier_position(p.data(), qp.layout, 0, 2) == 2);
  for (uint64_t i = 0; i < 32; ++i) CHECK(d[i] == (i == 1 ? 1.0F : 0.0F));
}

TEST_CASE("outliers: decode into every dtype and accumulate") {
  const shape shp(4, 160);
  const std::vector<float> x = channel_data(shp, 5);
  const spec s = testspec::parse("quant:bits=3,group=64,outliers=3");
  const std::vector<uint8_t> p = testq::encode(s, testdata::as_bytes(x, dtype::f32), dtype::f32, shp);
  const std::vector<float> d = testq::decode_f32(p, shp);
  std::vector<float> acc(shp.size(), 1.5F);
  REQUIRE(ok(host::decode_accumulate(p.data(), p.size(), tensor_view{acc.data(), dtype::f32, shp})));
  for (size_t i = 0; i < acc.size(); ++i) REQUIRE(acc[i] == 1.5F + d[i]);
  for (dtype t : {dtype::f16, dtype::bf16}) {
    std::vector<uint8_t> out(shp.size() * dtype_bytes(t));
    REQUIRE(ok(host::decode(p.data(), p.size(), tensor_view{out.data(), t, shp})));
    const std::vector<uint8_t> want = testdata::as_bytes(d, t);
    CHECK(out == want);
  }
}

TEST_CASE("outliers: keeping 2-4 per group cuts the error of 2- and 3-bit codes on outlier channels") {
  const shape shp(64, 1024);
  const std::vector<float> x = channel_data(shp, 21);
  for (const char* bits : {"2", "3"}) {
    double err[2] = {0, 0};
    for (int keep = 0; keep < 2; ++keep) {
      const spec s = testspec::parse(std::string("quant:bits=") + bits + ",group=128" + (keep ? ",outliers=4" : ""));
      const std::vector<float> d = testq::decode_f32(testq::encode(s, testdata::as_bytes(x, dtype::f32), dtype::f32, shp), shp);
      for (uint64_t i = 0; i < x.size(); ++i) err[keep] += (x[i] - d[i]) * double(x[i] - d[i]);
    }
    CAPTURE(bits);
    CHECK(err[1] < 0.05 * err[0]);
  }
}

TEST_CASE("outliers: spec text and sizes") {
  CHECK(to_string(testspec::parse("quant:bits=3,outliers=4")) ==
        "quant:bits=3,group=128,scale=minmax,round=nearest,scale_dtype=fp32,outliers=4");
  CHECK(to_string(testspec::parse("quant:bits=3,outliers=0")) == to_string(testspec::parse("quant:bits=3")));
  spec s;
  std::string err;
  for (const char* bad : {"quant:outliers=17", "quant:outliers=-1", "quant:outliers=x",
                          "quant:outliers=2,rotate=hadamard", "topk:values=quant,outliers=2",
                          "fp8:outliers=1", "mx:outliers=1", "plain:outliers=1"}) {
    err.clear();
    CAPTURE(bad);
    CHECK(parse_spec(bad, s, &err) == status::invalid_spec);
    CHECK(err.find("'outliers'") != std::string::npos);
  }
  // Exact sizes: values fp32 plus positions of 1, 2 or 4 bytes by the group length.
  const struct {
    const char* text;
    shape shp;
    uint64_t groups, position_bytes;
  } cases[] = {{"quant:bits=4,group=256,outliers=3", shape(2, 256), 2, 1},
               {"quant:bits=4,group=row,outliers=5", shape(3, 300), 3, 2},
               {"quant:bits=4,group=tensor,outliers=16", shape(7, 10000), 1, 4}};
  for (const auto& c : cases) {
    const spec q = testspec::parse(c.text);
    spec plain_q = q;
    plain_q.quant.outliers = 0;
    const uint64_t extra = c.groups * q.quant.outliers * (4 + c.position_bytes);
    CAPTURE(c.text);
    CHECK(encoded_bytes(q, c.shp) == encoded_bytes(plain_q, c.shp) + ((extra + 15) / 16) * 16);
    CHECK(host::encode_workspace_bytes(q, c.shp) == 0);
  }
}

TEST_CASE("outliers: hostile entries, parameter byte and padding are rejected, output untouched") {
  const spec s = testspec::parse("quant:bits=3,group=64,outliers=3");
  const shape shp(1, 100);  // groups of 64 and 36
  const std::vector<float> x = channel_data(shp, 8);
  const std::vector<uint8_t> p = testq::encode(s, testdata::as_bytes(x, dtype::f32), dtype::f32, shp);
  detail::quant_payload qp;
  REQUIRE(ok(detail::parse_quant_payload(p.data(), p.size(), qp)));
  const detail::quant_layout L = qp.layout;
  std::vector<float> out(shp.size(), 7.0F);
  const auto decode = [&](const std::vector<uint8_t>& h) {
    const status st = host::decode(h.data(), h.size(), tensor_view{out.data(), dtype::f32, shp});
    if (!ok(st))
      for (float o : out) REQUIRE(o == 7.0F);
    std::fill(out.begin(), out.end(), 7.0F);
    return st;
  };
  REQUIRE(ok(decode(p)));
  // Any finite value decodes as sent, a non-finite one is corrupt; positions must stay sorted
  // and inside the group, and unused entries (none here) zero.
  std::vector<uint8_t> h = p;
  h[L.outliers_offset + 1] ^= 0xFF;
  CHECK(ok(decode(h)));
  for (const uint32_t bits : {0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFFFFFFFu}) {
    h = p;
    detail::put_u32(h.data() + L.outliers_offset + 4, bits);
    CHECK(decode(h) == status::corrupt_payload);
  }
  for (uint32_t j = 0; j < 6; ++j) {
    const size_t at = L.positions_offset() + j;
    const uint64_t g = j / 3, k = j % 3;
    const uint64_t lo = k == 0 ? 0 : p[at - 1] + 1u, hi = k == 2 ? L.group_size(g) : p[at + 1];
    for (int v = 0; v < 256; ++v) {
      h = p;
      h[at] = uint8_t(v);
      CAPTURE(j);
      CAPTURE(v);
      CHECK(ok(decode(h)) == (uint64_t(v) >= lo && uint64_t(v) < hi));
    }
  }
  // The parameter byte: another count changes the size or the entries' places; 17 and up
  // are invalid.
  for (int v = 0; v < 256; ++v) {
    h = p;
    h[outliers_byte] = uint8_t(v);
    const status st = decode(h);
    CAPTURE(v);
    if (v == 3) CHECK(ok(st));
    else if (v > int(max_outliers)) CHECK(st == status::invalid_header);
    else CHECK((st == status::size_mismatch || st == status::corrupt_payload));
  }
  // Padding after the entries.
  REQUIRE(L.outliers_end() < L.total);
  h = p;
  h[L.total - 1] = 1;
  CHECK(decode(h) == status::corrupt_payload);

  // A group shorter than N: entries beyond its length must be zero.
  const spec wide = testspec::parse("quant:bits=3,group=32,outliers=8");
  const shape small(1, 36);  // groups of 32 and 4
  const std::vector<uint8_t> q = testq::encode(wide, testdata::as_bytes(channel_data(small, 2), dtype::f32), dtype::f32, small);
  REQUIRE(ok(detail::parse_quant_payload(q.data(), q.size(), qp)));
  CHECK(detail::outlier_count(qp.layout, 1) == 4);
  std::vector<float> o2(small.size());
  for (uint32_t j = 4; j < 8; ++j) {
    for (const bool value : {false, true}) {
      std::vector<uint8_t> b = q;
      if (value) b[qp.layout.outliers_offset + (8 + j) * 4 + 3] = 0x3F;
      else b[qp.layout.positions_offset() + 8 + j] = 1;
      CHECK(host::decode(b.data(), b.size(), tensor_view{o2.data(), dtype::f32, small}) == status::corrupt_payload);
    }
  }
}

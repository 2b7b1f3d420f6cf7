// fp8 and mx codecs on the host: element conversions against a reference written from the
// OCP definitions (double arithmetic, brute-force nearest), the documented error bounds
// element by element, non-finite inputs, spec text, inspection and hostile payloads.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "../common/data.hpp"
#include "../common/print.hpp"
#include "pipecodec/pipecodec.hpp"

using namespace pipecodec;
using detail::decode_element;
using detail::encode_element;

namespace {

struct fmt_ref {
  elem_format f;
  int ebits, mbits, bias;  // int8: ebits 0, value = code * 2^-6
  double max;
};
const fmt_ref formats[] = {
    {elem_format::e4m3, 4, 3, 7, 448},    {elem_format::e5m2, 5, 2, 15, 57344}, {elem_format::e3m2, 3, 2, 3, 28},
    {elem_format::e2m3, 2, 3, 1, 7.5},    {elem_format::e2m1, 2, 1, 1, 6},      {elem_format::int8, 0, 6, 0, 127.0 / 64},
};

int width(const fmt_ref& r) { return r.ebits == 0 ? 8 : 1 + r.ebits + r.mbits; }

// Value of a code from the format's definition; NaN for NaN codes, +-Inf for e5m2's.
double ref_value(const fmt_ref& r, uint32_t code) {
  if (r.ebits == 0) return double(int8_t(uint8_t(code))) / 64;
  const int w = width(r);
  const bool neg = (code >> (w - 1)) & 1u;
  const uint32_t mag = code & ((1u << (w - 1)) - 1u);
  const int e = int(mag >> r.mbits), m = int(mag & ((1u << r.mbits) - 1u));
  double v;
  if (r.f == elem_format::e4m3 && mag == 0x7F) v = NAN;
  else if (r.f == elem_format::e5m2 && e == 31) v = m == 0 ? INFINITY : NAN;
  else if (e == 0) v = std::ldexp(double(m), 1 - r.bias - r.mbits);
  else v = std::ldexp(double(m + (1 << r.mbits)), e - r.bias - r.mbits);
  return neg ? -v : v;
}

// Nearest finite code to y, ties to the even code, saturating; the sign of y kept on zero.
uint32_t ref_nearest(const fmt_ref& r, double y) {
  if (std::fabs(y) > r.max) y = y > 0 ? r.max : -r.max;  // saturating (Inf included)
  const int w = width(r);
  uint32_t best = 0;
  double best_d = INFINITY;
  for (uint32_t c = 0; c < (1u << w); ++c) {
    const double v = ref_value(r, c);
    if (!std::isfinite(v)) continue;
    const double d = std::fabs(v - y);
    const bool tie = d == best_d && std::fabs(v) <= r.max;
    if (d < best_d || (tie && (c & 1u) == 0 && (best & 1u) == 1)) {
      best = c;
      best_d = d;
    }
  }
  if (r.ebits != 0 && ref_value(r, best) == 0) best = std::signbit(y) ? 1u << (w - 1) : 0u;
  return best;
}

std::vector<float> probe_values(const fmt_ref& r) {
  std::vector<float> ys;
  for (uint32_t c = 0; c < (1u << width(r)); ++c) {
    const double v = ref_value(r, c);
    if (!std::isfinite(v)) continue;
    for (double d : {0.0, 0.25, 0.5, 0.75}) {
      const double next = ref_value(r, c + 1);
      const double t = std::isfinite(next) && (c + 1) < (1u << width(r)) ? v + d * (next - v) : v * (1 + d);
      const float f = float(t);
      ys.insert(ys.end(), {f, std::nextafter(f, INFINITY), std::nextafter(f, -INFINITY), -f});
    }
  }
  for (float f : {1e-30F, 1e-40F, 3e-45F, 1e30F, 3.4e38F, INFINITY, -INFINITY}) ys.insert(ys.end(), {f, -f});
  const auto u = testdata::uniform(4000, 7);
  for (size_t i = 0; i < u.size(); ++i) ys.push_back(u[i] * float(r.max) * (i % 2 ? 1.3F : 1.0F));
  return ys;
}

}  // namespace

TEST_CASE("element decode matches the OCP definitions for every code") {
  for (const fmt_ref& r : formats) {
    CAPTURE(int(r.f));
    for (uint32_t c = 0; c < (1u << width(r)); ++c) {
      const double want = ref_value(r, c);
      const float got = decode_element(c, r.f);
      if (std::isnan(want)) CHECK(std::isnan(got));
      else CHECK(double(got) == want);
    }
    CHECK(double(detail::max_finite(r.f)) == r.max);
  }
  // Spot values from the specifications.
  CHECK(decode_element(0x7E, elem_format::e4m3) == 448.0F);
  CHECK(decode_element(0x01, elem_format::e4m3) == std::ldexp(1.0F, -9));
  CHECK(decode_element(0x7B, elem_format::e5m2) == 57344.0F);
  CHECK(std::isinf(decode_element(0x7C, elem_format::e5m2)));
  CHECK(decode_element(0x1F, elem_format::e2m3) == 7.5F);
  CHECK(decode_element(0x1F, elem_format::e3m2) == 28.0F);
  CHECK(decode_element(0x40, elem_format::int8) == 1.0F);
  CHECK(decode_element(0x80, elem_format::int8) == -2.0F);
}

TEST_CASE("element encode rounds to nearest even and saturates, as the reference") {
  for (const fmt_ref& r : formats) {
    CAPTURE(int(r.f));
    for (float y : probe_values(r)) {
      CAPTURE(y);
      uint32_t want = ref_nearest(r, double(y));
      if (r.ebits == 0 && want == 0x80) want = 0x81;  // int8 saturates symmetrically: -2 is never written
      CHECK(encode_element(y, r.f, rounding::nearest, 0) == want);
    }
    const uint32_t nan = encode_element(NAN, r.f, rounding::nearest, 0);
    CHECK(nan == (detail::has_nan(r.f) ? 0x7Fu : 0u));
  }
  CHECK(encode_element(448.0F, elem_format::e4m3, rounding::nearest, 0) == 0x7E);
  CHECK(encode_element(464.0F, elem_format::e4m3, rounding::nearest, 0) == 0x7E);  // would be 480: saturates
  CHECK(encode_element(-INFINITY, elem_format::e5m2, rounding::nearest, 0) == 0xFB);
  CHECK(encode_element(1.0F, elem_format::int8, rounding::nearest, 0) == 0x40);
  CHECK(encode_element(-1.0F, elem_format::int8, rounding::nearest, 0) == 0xC0);
  CHECK(encode_element(5.0F, elem_format::e2m1, rounding::nearest, 0) == 0x6);  // tie 4|6 -> even code 6 (4.0)
}

TEST_CASE("stochastic element rounding picks a neighbour, unbiased") {
  for (const fmt_ref& r : formats) {
    CAPTURE(int(r.f));
    const float y = float(r.max) * 0.3F;
    uint32_t lo = 0;  // positive codes ascend with their values
    while (ref_value(r, lo + 1) <= y) ++lo;
    const uint32_t hi = lo + 1;
    const double vlo = ref_value(r, lo), vhi = ref_value(r, hi);
    REQUIRE((vlo <= y && y <= vhi));
    double sum = 0;
    const int trials = 1 << 16;
    uint64_t s = 99;
    for (int t = 0; t < trials; ++t) {
      const uint32_t c = encode_element(y, r.f, rounding::stochastic, uint32_t(testdata::splitmix(s)));
      CHECK((c == lo || c == hi));
      sum += ref_value(r, c);
    }
    // Mean within 5 standard errors of y.
    const double sd = (vhi - vlo) / 2 / std::sqrt(double(trials));
    CHECK(std::fabs(sum / trials - y) < 5 * sd);
    CHECK(encode_element(y, r.f, rounding::stochastic, 0xFFFFFFFFu) == lo);
    CHECK(encode_element(y, r.f, rounding::stochastic, 0) == (vlo == y ? lo : hi));
  }
}

namespace {

std::vector<spec> float_specs() {
  std::vector<spec> out;
  for (const char* t : {"fp8", "fp8:format=e5m2", "fp8:group=32,scale_dtype=fp16", "fp8:group=row",
                        "fp8:group=tensor,format=e5m2,scale_dtype=fp16", "fp8:round=stochastic",
                        "mx:format=fp8_e4m3", "mx:format=fp8_e5m2", "mx:format=fp6_e3m2", "mx:format=fp6_e2m3",
                        "mx:format=fp4_e2m1", "mx:format=int8", "mx:format=fp4_e2m1,round=stochastic"}) {
    spec s;
    REQUIRE_MESSAGE(ok(parse_spec(t, s)), t);
    out.push_back(s);
  }
  return out;
}

// Activation-like rows with a few outlier channels 20-100x larger than the rest.
std::vector<float> outlier_rows(uint64_t rows, uint64_t cols, uint64_t seed) {
  std::vector<float> x = testdata::uniform(rows * cols, seed);
  for (uint64_t r = 0; r < rows; ++r)
    for (uint64_t c : {uint64_t(3), cols / 2, cols - 5}) x[r * cols + c] *= float(20 + (c % 81));
  return x;
}

// The documented bound (docs/FORMAT.md): |x - decoded| <= 2^-(m+1) |x| + X 2^(emin-m-1) for
// nearest, twice that for stochastic, X the group's decode multiplier; fp8 adds the f32
// rounding of x / X (2^-23 |x|); int8 has no exponent: X 2^-7. mx adds what saturation cuts
// off: OCP's scale maps the block's largest value into [2^emax, 2^(emax+1)), above the
// largest finite value of every element format but int8 and e5m2.
double error_bound(codec_id c, elem_format f, rounding r, double X, double x) {
  const detail::elem_traits t = detail::traits_of(f);
  const double k = r == rounding::nearest ? 1 : 2;
  const double over = std::fabs(x) - X * double(detail::max_finite(f));
  const double sat = c == codec_id::mx && over > 0 ? over : 0;
  if (t.ebits == 0) return k * X * std::ldexp(1.0, -7) + sat;
  const double rel = std::ldexp(1.0, -int(t.mbits) - 1) + (c == codec_id::fp8 ? std::ldexp(1.0, -23) : 0);
  return k * (rel * std::fabs(x) + X * std::ldexp(1.0, t.emin - int(t.mbits) - 1)) + sat;
}

}  // namespace

TEST_CASE("fp8 and mx codecs stay within their error bound, element by element") {
  for (const spec& s : float_specs()) {
    CAPTURE(to_string(s));
    for (shape shp : {shape(7, 160), shape(1, 1000), shape(5, 45)}) {
      CAPTURE(shp.cols);
      const std::vector<float> x = outlier_rows(shp.rows, shp.cols, shp.cols);
      std::vector<uint8_t> p(encoded_bytes(s, shp));
      REQUIRE(p.size() > 0);
      size_t written = 0;
      REQUIRE(ok(host::encode(s, const_tensor_view{x.data(), dtype::f32, shp}, p.data(), p.size(), nullptr, 0, 3,
                              &written)));
      REQUIRE(written == p.size());
      std::vector<float> y(x.size());
      REQUIRE(ok(host::decode(p.data(), p.size(), tensor_view{y.data(), dtype::f32, shp})));
      detail::float_payload fp;
      REQUIRE(ok(detail::parse_float_payload(p.data(), p.size(), fp)));
      for (uint64_t i = 0; i < x.size(); ++i) {
        const double X = detail::load_float_scale(fp, fp.layout.group_of(i)).decode_mul;
        CAPTURE(i);
        CHECK(std::fabs(double(y[i]) - double(x[i])) <= error_bound(s.codec, s.flt.format, s.flt.round, X, x[i]));
      }
      payload_info info;
      REQUIRE(ok(inspect(p.data(), p.size(), info)));
      CHECK(to_string(info.codec_spec) == to_string(s));
    }
  }
}

TEST_CASE("fp8 and mx scales: fp8 covers the group's largest value, mx is OCP's power of two") {
  spec s;
  REQUIRE(ok(parse_spec("fp8:group=32", s)));
  std::vector<float> x(32, 0.5F);
  x[9] = -896.0F;  // scale 2 exactly
  std::vector<uint8_t> p(encoded_bytes(s, shape(32)));
  REQUIRE(ok(host::encode(s, const_tensor_view{x.data(), dtype::f32, shape(32)}, p.data(), p.size())));
  detail::float_payload fp;
  REQUIRE(ok(detail::parse_float_payload(p.data(), p.size(), fp)));
  CHECK(detail::load_float_scale(fp, 0).decode_mul == 2.0F);
  CHECK(p[fp.layout.codes_offset + 9] == 0xFE);  // -448
  REQUIRE(ok(parse_spec("mx:format=fp4_e2m1", s)));
  x.assign(32, 0.0F);
  x[0] = 6.5F;  // floor(log2 6.5) = 2, emax(e2m1) = 2: X = 1, 6.5 saturates to 6
  p.assign(encoded_bytes(s, shape(32)), 0);
  REQUIRE(ok(host::encode(s, const_tensor_view{x.data(), dtype::f32, shape(32)}, p.data(), p.size())));
  REQUIRE(ok(detail::parse_float_payload(p.data(), p.size(), fp)));
  CHECK(p[fp.layout.scales_offset] == 127);
  CHECK((p[fp.layout.codes_offset] & 0xF) == 0x7);
  x.assign(32, 0.0F);  // an all-zero block takes the smallest scale, 2^-127
  REQUIRE(ok(host::encode(s, const_tensor_view{x.data(), dtype::f32, shape(32)}, p.data(), p.size())));
  CHECK(p[fp.layout.scales_offset] == 0);
}

TEST_CASE("non-finite inputs: fp8 keeps NaN and saturates Inf; an mx block with either is NaN") {
  std::vector<float> x = testdata::uniform(64, 5), y(64);
  x[3] = NAN;
  x[40] = INFINITY;
  spec s;
  REQUIRE(ok(parse_spec("fp8:group=32", s)));
  std::vector<uint8_t> p(encoded_bytes(s, shape(64)));
  REQUIRE(ok(host::encode(s, const_tensor_view{x.data(), dtype::f32, shape(64)}, p.data(), p.size())));
  REQUIRE(ok(host::decode(p.data(), p.size(), tensor_view{y.data(), dtype::f32, shape(64)})));
  CHECK(std::isnan(y[3]));
  CHECK(std::isfinite(y[40]));
  detail::float_payload fp;
  REQUIRE(ok(detail::parse_float_payload(p.data(), p.size(), fp)));
  for (int i = 0; i < 64; ++i) {
    const double X = detail::load_float_scale(fp, uint64_t(i) / 32).decode_mul;
    if (i != 3 && i != 40) CHECK(std::fabs(y[i] - x[i]) <= error_bound(s.codec, s.flt.format, s.flt.round, X, x[i]));
  }
  CHECK(y[40] == 448.0F * float(detail::load_float_scale(fp, 1).decode_mul));
  REQUIRE(ok(parse_spec("mx:format=fp6_e2m3", s)));
  p.assign(encoded_bytes(s, shape(64)), 0);
  REQUIRE(ok(host::encode(s, const_tensor_view{x.data(), dtype::f32, shape(64)}, p.data(), p.size())));
  REQUIRE(ok(host::decode(p.data(), p.size(), tensor_view{y.data(), dtype::f32, shape(64)})));
  for (int i = 0; i < 64; ++i) CHECK(std::isnan(y[i]));  // both blocks hold a non-finite value
}

TEST_CASE("fp8 and mx: every input and output dtype, accumulate") {
  const shape shp(3, 70);
  const std::vector<float> x = outlier_rows(3, 70, 1);
  for (const spec& s : float_specs()) {
    CAPTURE(to_string(s));
    for (dtype in_t : {dtype::f32, dtype::f16, dtype::bf16}) {
      const std::vector<uint8_t> in = testdata::as_bytes(x, in_t);
      std::vector<uint8_t> p(encoded_bytes(s, shp));
      REQUIRE(ok(host::encode(s, const_tensor_view{in.data(), in_t, shp}, p.data(), p.size(), nullptr, 0, 9)));
      std::vector<float> ref(x.size());
      REQUIRE(ok(host::decode(p.data(), p.size(), tensor_view{ref.data(), dtype::f32, shp})));
      for (dtype out_t : {dtype::f16, dtype::bf16}) {
        std::vector<uint8_t> out(x.size() * 2);
        REQUIRE(ok(host::decode(p.data(), p.size(), tensor_view{out.data(), out_t, shp})));
        for (size_t i = 0; i < x.size(); ++i)
          CHECK(testdata::element(out, out_t, i) == testdata::element(testdata::as_bytes({ref[i]}, out_t), out_t, 0));
      }
      std::vector<float> acc(x.size(), 1.0F);
      REQUIRE(ok(host::decode_accumulate(p.data(), p.size(), tensor_view{acc.data(), dtype::f32, shp})));
      for (size_t i = 0; i < x.size(); ++i) CHECK(acc[i] == 1.0F + ref[i]);
    }
  }
}

TEST_CASE("fp8 and mx payloads: every corrupted byte is accepted or rejected, output untouched") {
  for (const spec& s : float_specs()) {
    CAPTURE(to_string(s));
    const shape shp(2, 45);  // partial units and a short mx block per row
    const std::vector<float> x = outlier_rows(2, 45, 4);
    std::vector<uint8_t> p(encoded_bytes(s, shp));
    REQUIRE(ok(host::encode(s, const_tensor_view{x.data(), dtype::f32, shp}, p.data(), p.size(), nullptr, 0, 1)));
    int rejected = 0;
    for (size_t b = 0; b < p.size(); ++b) {
      for (uint8_t flip : {uint8_t(0x01), uint8_t(0x80), uint8_t(0xFF)}) {
        std::vector<uint8_t> bad = p;
        bad[b] ^= flip;
        std::vector<float> out(x.size(), 7.0F);
        const status st = host::decode(bad.data(), bad.size(), tensor_view{out.data(), dtype::f32, shp});
        if (!ok(st)) {
          ++rejected;
          for (float v : out) REQUIRE(v == 7.0F);
        }
      }
    }
    CHECK(rejected > 0);
    for (size_t len : {size_t(0), size_t(10), size_t(63), p.size() - 1}) {
      std::vector<float> out(x.size(), 7.0F);
      CHECK(!ok(host::decode(p.data(), len, tensor_view{out.data(), dtype::f32, shp})));
    }
  }
}

TEST_CASE("fp8 and mx payload fields the encoder never writes are rejected") {
  spec s;
  REQUIRE(ok(parse_spec("mx:format=fp8_e4m3", s)));
  const shape shp(64);
  const std::vector<float> x = testdata::uniform(64, 2);
  std::vector<uint8_t> p(encoded_bytes(s, shp));
  REQUIRE(ok(host::encode(s, const_tensor_view{x.data(), dtype::f32, shp}, p.data(), p.size())));
  detail::float_payload fp;
  REQUIRE(ok(detail::parse_float_payload(p.data(), p.size(), fp)));
  std::vector<float> out(64);
  const tensor_view v{out.data(), dtype::f32, shp};
  auto with = [&](size_t at, uint8_t value) {
    std::vector<uint8_t> q = p;
    q[at] = value;
    return host::decode(q.data(), q.size(), v);
  };
  CHECK(with(detail::off_params + 0, 7) == status::invalid_header);       // element format
  CHECK(with(detail::off_params + 1, 4) == status::invalid_header);       // rounding (3: rng=sample)
  CHECK(with(detail::off_params + 2, 1) == status::invalid_header);       // mx has no scale dtype
  CHECK(with(detail::off_params + 8, 64) == status::invalid_header);      // block length
  CHECK(with(detail::off_params + 16, 1) == status::invalid_header);      // seed without stochastic rounding
  CHECK(with(fp.layout.scales_offset, 247) == status::corrupt_payload);   // 448 * 2^120 overflows
  CHECK(with(fp.layout.scales_offset, 0xFF) == status::corrupt_payload);  // NaN block with codes
  CHECK(with(fp.layout.scales_offset + 2, 1) == status::corrupt_payload); // scale padding
  REQUIRE(ok(parse_spec("fp8:group=32", s)));
  p.assign(encoded_bytes(s, shp), 0);
  REQUIRE(ok(host::encode(s, const_tensor_view{x.data(), dtype::f32, shp}, p.data(), p.size())));
  REQUIRE(ok(detail::parse_float_payload(p.data(), p.size(), fp)));
  CHECK(with(fp.layout.scales_offset, 1) == status::corrupt_payload);      // f32 scale beyond 16 bits
  CHECK(with(fp.layout.scales_offset + 3, 0x80) == status::corrupt_payload);  // negative scale
  CHECK(with(fp.layout.scales_offset + 3, 0x7F) == status::corrupt_payload);  // above the cap
  CHECK(with(detail::off_codec, uint8_t(codec_id::mx)) == status::invalid_header);
}

TEST_CASE("fp8 and mx spec text: canonical form, and refusals that name the key") {
  spec s;
  REQUIRE(ok(parse_spec("fp8", s)));
  CHECK(to_string(s) == "fp8:format=e4m3,group=128,scale_dtype=fp32,round=nearest");
  REQUIRE(ok(parse_spec("mx:format=int8,round=stochastic", s)));
  CHECK(to_string(s) == "mx:format=int8,round=stochastic");
  spec back;
  REQUIRE(ok(parse_spec(to_string(s), back)));
  CHECK(to_string(back) == to_string(s));
  struct bad_case {
    const char* text;
    const char* names;
  };
  for (bad_case b : {bad_case{"fp8:format=e2m1", "'format'"}, bad_case{"mx:group=64", "'group'"},
                     bad_case{"mx:scale_dtype=fp16", "'scale_dtype'"}, bad_case{"fp8:bits=4", "'bits'"},
                     bad_case{"mx:format=fp8", "'format'"}, bad_case{"fp8:group=33", "'group'"}}) {
    std::string err;
    CHECK(parse_spec(b.text, s, &err) == status::invalid_spec);
    CHECK_MESSAGE(err.find(b.names) != std::string::npos, b.text, ": ", err);
  }
}

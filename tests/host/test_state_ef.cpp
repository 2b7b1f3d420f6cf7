// Classic error feedback and EF21: bitwise sender/receiver equality, EF telescoping, and
// rejected payloads leaving state untouched.
#include "../common/print.hpp"
#include "../common/state_check.hpp"

using namespace pipecodec;
using namespace tstate;

namespace {

const char* const specs[] = {"quant:bits=4,group=row", "quant:bits=2,round=stochastic,group=64",
                             "quant:bits=8,scale=absmax,scale_dtype=fp16", "plain:dtype=bf16"};

// The receiver's tensor is g: out holds g converted to out's dtype (written while g is
// updated, a tile at a time, for quantization payloads).
void require_out_is_g(const_tensor_view g, const std::vector<uint8_t>& out, dtype out_t) {
  std::vector<uint8_t> want(out.size());
  REQUIRE(ok(host::detail::convert(g.data, g.type, want.data(), out_t, g.shp.size())));
  REQUIRE(want == out);
}

}  // namespace

TEST_CASE("EF21: sender and receiver state stay bit-identical (every storage dtype, random steps)") {
  uint64_t rng = 7;
  for (const char* text : specs) {
    for (dtype st_t : all_dtypes) {
      CAPTURE_TEXT(text);
      CAPTURE_TEXT(storage_name(st_t));
      const spec s = parse(text);
      const shape shp(3 + testdata::splitmix(rng) % 5, 1 + testdata::splitmix(rng) % 300);
      host::ef21_state tx, rx;
      REQUIRE(ok(tx.init(s, shp, st_t)));
      REQUIRE(ok(rx.init(s, shp, st_t)));
      std::vector<uint8_t> payload(tx.payload_bytes());
      std::vector<uint8_t> out(4 * shp.size());
      for (int step = 0; step < 40; ++step) {
        CAPTURE(step);
        const dtype in_t = all_dtypes[testdata::splitmix(rng) % 3], out_t = all_dtypes[step % 3];
        const auto x = make_step(shp.size(), rng + step, in_t);
        size_t len = 0;
        REQUIRE(ok(tx.encode(const_tensor_view{x.bytes.data(), in_t, shp}, payload.data(), payload.size(),
                             step, &len)));
        out.assign(shp.size() * dtype_bytes(out_t), 0xAB);
        REQUIRE(ok(rx.decode(payload.data(), len, tensor_view{out.data(), out_t, shp})));
        REQUIRE(snapshot(tx.state()) == snapshot(rx.state()));
        require_out_is_g(rx.state(), out, out_t);
      }
    }
  }
}

TEST_CASE("EF21: with a fixed input, g converges to x") {
  for (dtype st_t : all_dtypes) {
    CAPTURE_TEXT(storage_name(st_t));
    const shape shp(4, 256);
    host::ef21_state tx;
    REQUIRE(ok(tx.init(parse("quant:bits=2,group=row"), shp, st_t)));
    const auto x = make_step(shp.size(), 11, dtype::f32);
    std::vector<uint8_t> payload(tx.payload_bytes());
    double first = 0, last = 0;
    for (int step = 0; step < 30; ++step) {
      REQUIRE(ok(tx.encode(const_tensor_view{x.bytes.data(), dtype::f32, shp}, payload.data(), payload.size())));
      last = rel_l2(x.f, to_f32(tx.state()));
      if (step == 0) first = last;
    }
    CHECK(first > 0.05);
    CHECK(last < (st_t == dtype::f32 ? 1e-6 : 4 * unit(st_t)));
  }
}

TEST_CASE("EF: sum of decoded payloads + final residual = sum of inputs, within the stated rounding") {
  uint64_t rng = 99;
  for (const char* text : specs) {
    for (dtype st_t : all_dtypes) {
      CAPTURE_TEXT(text);
      CAPTURE_TEXT(storage_name(st_t));
      const spec s = parse(text);
      const shape shp(2, 1 + testdata::splitmix(rng) % 500);
      const uint64_t n = shp.size();
      host::ef_state ef;
      REQUIRE(ok(ef.init(s, shp, st_t)));
      std::vector<uint8_t> payload(ef.payload_bytes());
      std::vector<double> sum_x(n, 0.0), sum_d(n, 0.0), bound(n, 0.0);
      std::vector<float> d(n);
      for (int step = 0; step < 50; ++step) {
        const dtype in_t = all_dtypes[step % 3];
        const auto x = make_step(n, rng + 1000 * step, in_t);
        const auto e_prev = to_f32(ef.residual());
        size_t len = 0;
        REQUIRE(ok(ef.encode(const_tensor_view{x.bytes.data(), in_t, shp}, payload.data(), payload.size(), step,
                             &len)));
        REQUIRE(ok(host::decode(payload.data(), len, tensor_view{d.data(), dtype::f32, shp})));
        const auto e = to_f32(ef.residual());
        for (uint64_t i = 0; i < n; ++i) {
          const float v = x.f[i] + e_prev[i];
          const float e32 = v - d[i];
          sum_x[i] += x.f[i];
          sum_d[i] += d[i];
          bound[i] += 0x1p-24 * std::fabs(v) + (0x1p-24 + unit(st_t)) * std::fmax(std::fabs(e32), std::fabs(e[i])) +
                      floor_abs(st_t);
        }
      }
      const auto e = to_f32(ef.residual());
      for (uint64_t i = 0; i < n; ++i) {
        CAPTURE(i);
        const double gap = std::fabs(sum_x[i] - (sum_d[i] + e[i]));
        REQUIRE(gap <= bound[i] * 1.001 + 1e-12);
      }
    }
  }
}

TEST_CASE("EF and EF21: failed calls leave the state untouched") {
  const spec s = parse("quant:bits=4");
  const shape shp(2, 64);
  const auto x = make_step(shp.size(), 5, dtype::f32);
  const const_tensor_view xv{x.bytes.data(), dtype::f32, shp};
  host::ef_state ef;
  host::ef21_state tx, rx;
  REQUIRE(ok(ef.init(s, shp, dtype::f16)));
  REQUIRE(ok(tx.init(s, shp, dtype::f32)));
  REQUIRE(ok(rx.init(s, shp, dtype::f32)));
  std::vector<uint8_t> payload(tx.payload_bytes());
  size_t len = 0;
  // Prime the states so "untouched" is not just "still zero".
  REQUIRE(ok(ef.encode(xv, payload.data(), payload.size())));
  REQUIRE(ok(tx.encode(xv, payload.data(), payload.size(), 0, &len)));
  REQUIRE(ok(rx.decode(payload.data(), len)));
  const auto ef0 = snapshot(ef.residual()), rx0 = snapshot(rx.state()), tx0 = snapshot(tx.state());

  CHECK(ef.encode(xv, payload.data(), payload.size() - 1) == status::buffer_too_small);
  CHECK(ef.encode(const_tensor_view{x.bytes.data(), dtype::f32, shape(64, 2)}, payload.data(), payload.size()) ==
        status::state_mismatch);
  CHECK(snapshot(ef.residual()) == ef0);
  CHECK(tx.encode(xv, payload.data(), 10) == status::buffer_too_small);
  CHECK(snapshot(tx.state()) == tx0);

  REQUIRE(ok(tx.encode(xv, payload.data(), payload.size(), 1, &len)));
  const auto tx1 = snapshot(tx.state());
  // Every truncation, a wrong codec, a wrong shape and a corrupt scale are rejected.
  for (size_t cut = 0; cut < len; ++cut) REQUIRE(!ok(rx.decode(payload.data(), cut)));
  auto bad = payload;
  bad[detail::off_codec] = uint8_t(codec_id::plain);
  CHECK(!ok(rx.decode(bad.data(), len)));
  std::vector<uint8_t> plain(encoded_bytes(parse("plain"), shp));
  REQUIRE(ok(host::encode(parse("plain"), xv, plain.data(), plain.size())));
  CHECK(rx.decode(plain.data(), plain.size()) == status::state_mismatch);
  std::vector<uint8_t> other(encoded_bytes(s, shape(64, 2)));
  REQUIRE(ok(host::encode(s, const_tensor_view{x.bytes.data(), dtype::f32, shape(64, 2)}, other.data(), other.size())));
  CHECK(rx.decode(other.data(), other.size()) == status::shape_mismatch);
  bad = payload;
  detail::put_u32(bad.data() + header_bytes, 0x7FC00000u);  // NaN scale of group 0
  CHECK(rx.decode(bad.data(), len) == status::corrupt_payload);
  std::vector<float> wrong_out(5);
  CHECK(rx.decode(payload.data(), len, tensor_view{wrong_out.data(), dtype::f32, shape(5)}) ==
        status::shape_mismatch);
  // The same with an output, which the receiver writes while it updates g: neither changes.
  std::vector<float> out(shp.size(), 3.0F);
  const tensor_view ov{out.data(), dtype::f32, shp};
  for (size_t cut = 0; cut < len; ++cut) REQUIRE(!ok(rx.decode(payload.data(), cut, ov)));
  CHECK(rx.decode(plain.data(), plain.size(), ov) == status::state_mismatch);
  CHECK(rx.decode(other.data(), other.size(), ov) == status::shape_mismatch);
  CHECK(rx.decode(bad.data(), len, ov) == status::corrupt_payload);
  CHECK(rx.decode(payload.data(), len, tensor_view{rx.state().data, dtype::f32, shp}) == status::aliasing);
  CHECK(out == std::vector<float>(shp.size(), 3.0F));
  CHECK(snapshot(rx.state()) == rx0);
  // The genuine payload still applies and the two sides agree again.
  REQUIRE(ok(rx.decode(payload.data(), len)));
  CHECK(snapshot(rx.state()) == tx1);
}

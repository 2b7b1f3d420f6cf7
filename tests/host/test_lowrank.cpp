// The lowrank codec on the host: payload bytes against a direct transcription of the
// definition (core/lowrank_format.hpp), low-rank tensors reconstructed, the documented bounds
// element by element, warm starts, non-finite and huge inputs, spec text and hostile bytes.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "../common/data.hpp"
#include "../common/policy_check.hpp"
#include "../common/print.hpp"
#include "../common/spec_text.hpp"
#include "pipecodec/pipecodec.hpp"

using namespace pipecodec;

namespace {

struct lowrank_run {
  std::vector<uint8_t> payload;
  std::vector<float> decoded;
};

std::vector<uint8_t> lowrank_ws(const spec& s, shape shp) { return std::vector<uint8_t>(workspace_bytes(s, shp)); }

lowrank_run lowrank_roundtrip(const spec& s, const std::vector<float>& x, shape shp, uint64_t seed = 5) {
  lowrank_run r;
  r.payload.resize(encoded_bytes(s, shp));
  std::vector<uint8_t> ws = lowrank_ws(s, shp);
  size_t len = 0;
  REQUIRE(host::encode(s, {x.data(), dtype::f32, shp}, r.payload.data(), r.payload.size(), ws.data(), ws.size(), seed,
                       &len) == status::success);
  REQUIRE(len == r.payload.size());
  r.decoded.assign(shp.size(), -1.0F);
  REQUIRE(host::decode(r.payload.data(), len, {r.decoded.data(), dtype::f32, shp}) == status::success);
  return r;
}

// rows x cols of rank `rank`: a product of two Gaussian-like factors, summed in double.
std::vector<float> rank_matrix(shape shp, uint32_t rank, uint64_t seed) {
  const std::vector<float> a = testdata::activations(shp.rows * rank, seed);
  const std::vector<float> b = testdata::activations(rank * shp.cols, seed + 1);
  std::vector<float> x(shp.size());
  for (uint64_t i = 0; i < shp.rows; ++i)
    for (uint64_t j = 0; j < shp.cols; ++j) {
      double t = 0;
      for (uint32_t k = 0; k < rank; ++k) t += double(a[i * rank + k]) * b[k * shp.cols + j];
      x[i * shp.cols + j] = float(t);
    }
  return x;
}

double frobenius(const std::vector<float>& a, const std::vector<float>* b = nullptr) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = double(a[i]) - (b ? double((*b)[i]) : 0.0);
    s += d * d;
  }
  return std::sqrt(s);
}

// The payload by the definition, one sum at a time with canonical_sum (the backend computes
// many at once, blocked): bytes must agree exactly.
std::vector<uint8_t> reference_payload(const spec& s, const std::vector<float>& x, shape shp, const float* warm,
                                       uint64_t seed) {
  using namespace detail;
  lowrank_layout L;
  REQUIRE(make_lowrank_layout(s.lowrank, shp, L));
  const uint32_t R = L.rank;
  std::vector<uint8_t> p(L.total, 0);
  header h;
  h.codec = codec_id::lowrank;
  h.shp = shp;
  h.total_bytes = L.total;
  write_lowrank_params(h.params, s.lowrank, seed);
  write_header(p.data(), h);
  auto m = [&](uint64_t i, uint64_t j) { return std::isfinite(x[i * L.cols + j]) ? x[i * L.cols + j] : 0.0F; };
  std::vector<float> q0(L.cols * R);
  for (uint32_t r = 0; r < R; ++r) {
    bool any = false;
    for (uint64_t j = 0; warm && j < L.cols; ++j) any = any || (std::isfinite(warm[j * R + r]) && warm[j * R + r] != 0);
    for (uint64_t j = 0; j < L.cols; ++j) q0[j * R + r] = any ? finite_or_zero(warm[j * R + r]) : lowrank_random(seed, R, j, r);
  }
  std::vector<float> P(L.rows * R);
  for (uint32_t c = 0; c < R; ++c) {
    std::vector<double> raw(L.rows);
    double mx = 0;
    for (uint64_t i = 0; i < L.rows; ++i) {
      raw[i] = canonical_sum(L.cols, [&](uint64_t j) { return exact_mul(m(i, j), q0[j * R + c]); });
      if (c < L.rows) mx = std::max(mx, std::fabs(raw[i]));  // at most `rows` independent columns
    }
    for (uint64_t i = 0; i < L.rows; ++i) P[i * R + c] = mx == 0 ? 0.0F : float(raw[i] / mx);
    if (mx == 0) continue;
    const double before = canonical_sum(L.rows, [&](uint64_t i) { return exact_mul(P[i * R + c], P[i * R + c]); });
    for (uint32_t k = 0; k < 2 * c; ++k) {
      const uint32_t q = k % c;
      const float d = float(canonical_sum(L.rows, [&](uint64_t i) { return exact_mul(P[i * R + c], P[i * R + q]); }));
      for (uint64_t i = 0; i < L.rows; ++i) P[i * R + c] = float(double(P[i * R + c]) - double(d) * P[i * R + q]);
    }
    const double ss = canonical_sum(L.rows, [&](uint64_t i) { return exact_mul(P[i * R + c], P[i * R + c]); });
    const bool dependent = !(ss > before * std::ldexp(1.0, -24));
    for (uint64_t i = 0; i < L.rows; ++i) P[i * R + c] = dependent ? 0.0F : float(double(P[i * R + c]) / std::sqrt(ss));
  }
  for (uint64_t k = 0; k < L.rows * R; ++k) store_factor(p.data() + L.p_offset, k, P[k]);
  for (uint64_t j = 0; j < L.cols; ++j)
    for (uint32_t r = 0; r < R; ++r) {
      const double q = canonical_sum(L.rows, [&](uint64_t i) { return exact_mul(m(i, j), P[i * R + r]); });
      store_factor(p.data() + L.q_offset, j * R + r, to_float_sat(q));
    }
  return p;
}

}  // namespace

TEST_CASE("lowrank: payload bytes are the definition's, across chunk boundaries and ranks") {
  struct param_case {
    shape shp;
    uint32_t rank;
  };
  for (const param_case& c : {param_case{shape(64, 96), 4}, param_case{shape(1100, 40), 3},
                              param_case{shape(30, 2100), 8}, param_case{shape(300), 1}, param_case{shape(5, 7), 32}}) {
    CAPTURE(c.shp.rows);
    CAPTURE(c.shp.cols);
    CAPTURE(c.rank);
    const spec s = testspec::parse("lowrank:rank=" + std::to_string(c.rank));
    std::vector<float> x = testdata::activations(c.shp.size(), c.shp.rows + c.rank);
    x[3] = std::nanf("");
    x[x.size() / 2] = INFINITY;
    const lowrank_run r = lowrank_roundtrip(s, x, c.shp, 11);
    CHECK(r.payload == reference_payload(s, x, c.shp, nullptr, 11));
  }
}

TEST_CASE("lowrank: a tensor of rank <= R comes back (one power iteration spans its columns)") {
  for (uint32_t rank : {1u, 2u, 4u, 8u}) {
    const shape shp(200, 150);
    const std::vector<float> x = rank_matrix(shp, rank, 40 + rank);
    const lowrank_run r = lowrank_roundtrip(testspec::parse("lowrank:rank=" + std::to_string(rank)), x, shp);
    CAPTURE(rank);
    CHECK(frobenius(x, &r.decoded) <= 1e-5 * frobenius(x));
  }
}

TEST_CASE("lowrank: P has orthonormal columns, each decoded element within its column's norm, error below the input's") {
  const shape shp(257, 130);
  const std::vector<float> x = testdata::activations(shp.size(), 3);
  for (uint32_t rank : {1u, 4u, 16u}) {
    const spec s = testspec::parse("lowrank:rank=" + std::to_string(rank));
    const lowrank_run r = lowrank_roundtrip(s, x, shp);
    detail::lowrank_payload lp;
    REQUIRE(ok(detail::parse_lowrank_payload(r.payload.data(), r.payload.size(), lp)));
    const uint8_t* P = r.payload.data() + lp.layout.p_offset;
    for (uint32_t a = 0; a < rank; ++a)
      for (uint32_t b = 0; b < rank; ++b) {
        double d = 0;
        for (uint64_t i = 0; i < shp.rows; ++i)
          d += double(detail::load_factor(P, i * rank + a)) * detail::load_factor(P, i * rank + b);
        CHECK(std::fabs(d - (a == b ? 1.0 : 0.0)) < 1e-5);
      }
    // x' = P P^T x: each column is a projection of x's column, so |x'_ij| <= ||x_:j||.
    for (uint64_t j = 0; j < shp.cols; ++j) {
      double col = 0;
      for (uint64_t i = 0; i < shp.rows; ++i) col += double(x[i * shp.cols + j]) * x[i * shp.cols + j];
      for (uint64_t i = 0; i < shp.rows; ++i) CHECK(std::fabs(r.decoded[i * shp.cols + j]) <= std::sqrt(col) * (1 + 1e-5));
    }
    CHECK(frobenius(x, &r.decoded) <= frobenius(x));
  }
}

TEST_CASE("lowrank: warm start converges, keeps Q as state, and a zero state is a cold start") {
  const spec s = testspec::parse("lowrank:rank=4");
  const shape shp(96, 64);
  const std::vector<float> x = testdata::activations(shp.size(), 9);
  std::vector<uint8_t> p(encoded_bytes(s, shp)), ws = lowrank_ws(s, shp);
  std::vector<float> q(64 * 4, 0.0F), y(shp.size());
  size_t len = 0;
  double first = 0, last = 0;
  for (int step = 0; step < 8; ++step) {
    REQUIRE(host::lowrank_encode(s, {x.data(), dtype::f32, shp}, {q.data(), dtype::f32, shape(64, 4)}, p.data(),
                                 p.size(), ws.data(), ws.size(), 21, &len) == status::success);
    if (step == 0) CHECK(p == reference_payload(s, x, shp, nullptr, 21));  // zero state: cold
    detail::lowrank_payload lp;
    REQUIRE(ok(detail::parse_lowrank_payload(p.data(), len, lp)));
    CHECK(std::memcmp(q.data(), p.data() + lp.layout.q_offset, q.size() * 4) == 0);
    REQUIRE(host::decode(p.data(), len, {y.data(), dtype::f32, shp}) == status::success);
    (step == 0 ? first : last) = frobenius(x, &y);
  }
  CHECK(last < first * 0.97);
  // A warm Q with one zero column: that column restarts from the seed, the others are kept.
  std::fill(q.begin(), q.end(), 0.0F);
  for (uint64_t j = 0; j < 64; ++j) q[j * 4 + 1] = float(j % 5) - 2.0F;
  const std::vector<float> warm = q;
  REQUIRE(host::lowrank_encode(s, {x.data(), dtype::f32, shp}, {q.data(), dtype::f32, shape(64, 4)}, p.data(), p.size(),
                               ws.data(), ws.size(), 3, &len) == status::success);
  CHECK(p == reference_payload(s, x, shp, warm.data(), 3));
}

TEST_CASE("lowrank: warm-start state checks leave the state untouched") {
  const spec s = testspec::parse("lowrank:rank=2");
  const shape shp(8, 16);
  const std::vector<float> x = testdata::activations(shp.size(), 1);
  std::vector<uint8_t> p(encoded_bytes(s, shp)), ws = lowrank_ws(s, shp);
  std::vector<float> q(16 * 2, 0.5F);
  const std::vector<float> before = q;
  const const_tensor_view in{x.data(), dtype::f32, shp};
  auto run = [&](tensor_view qv, size_t cap) {
    return host::lowrank_encode(s, in, qv, p.data(), cap, ws.data(), ws.size(), 0, nullptr);
  };
  CHECK(run({q.data(), dtype::f32, shape(16, 3)}, p.size()) == status::state_mismatch);
  CHECK(run({q.data(), dtype::f16, shape(16, 2)}, p.size()) == status::state_mismatch);
  CHECK(run({q.data(), dtype::f32, shape(32)}, p.size()) == status::state_mismatch);
  CHECK(run({reinterpret_cast<uint8_t*>(q.data()) + 1, dtype::f32, shape(16, 2)}, p.size()) == status::misaligned);
  CHECK(run({p.data() + 64, dtype::f32, shape(16, 2)}, p.size()) == status::aliasing);
  CHECK(run({q.data(), dtype::f32, shape(16, 2)}, p.size() - 1) == status::buffer_too_small);
  CHECK(q == before);
  CHECK(host::lowrank_encode(testspec::parse("quant:bits=4"), in, {q.data(), dtype::f32, shape(16, 2)}, p.data(),
                             p.size(), ws.data(), ws.size()) == status::invalid_spec);
  CHECK(host::encode(s, in, p.data(), p.size(), ws.data(), ws.size() - 1) == status::workspace_too_small);
  CHECK(host::encode(s, in, p.data(), p.size(), nullptr, ws.size()) == status::invalid_argument);
}

TEST_CASE("lowrank: non-finite inputs count as zero, huge ones saturate, every decode is finite") {
  const spec s = testspec::parse("lowrank:rank=2");
  const shape shp(40, 33);
  std::vector<float> x = testdata::activations(shp.size(), 2);
  std::vector<float> zeroed = x;
  for (size_t i : {size_t(0), size_t(77), size_t(500)}) {
    x[i] = i == 77 ? -INFINITY : std::nanf("");
    zeroed[i] = 0.0F;
  }
  CHECK(lowrank_roundtrip(s, x, shp).payload == lowrank_roundtrip(s, zeroed, shp).payload);
  std::vector<float> huge(shp.size(), 3e38F);
  for (size_t i = 0; i < huge.size(); i += 3) huge[i] = -3e38F;
  for (float v : lowrank_roundtrip(s, huge, shp).decoded) CHECK(std::isfinite(v));
}

TEST_CASE("lowrank: every dtype in and out, accumulate, empty shapes") {
  const spec s = testspec::parse("lowrank:rank=3");
  const shape shp(20, 24);
  const std::vector<float> x = rank_matrix(shp, 3, 8);
  const lowrank_run r = lowrank_roundtrip(s, x, shp);
  // f16 and bf16 tensors: the payload of their float values, decoded then rounded to the type.
  for (dtype t : {dtype::f16, dtype::bf16}) {
    std::vector<uint8_t> in = testdata::as_bytes(x, t), out(shp.size() * 2);
    std::vector<float> widened(x.size());
    for (size_t i = 0; i < x.size(); ++i) widened[i] = testdata::element(in, t, i);
    const lowrank_run f = lowrank_roundtrip(s, widened, shp);
    std::vector<uint8_t> p(encoded_bytes(s, shp)), ws = lowrank_ws(s, shp);
    REQUIRE(host::encode(s, {in.data(), t, shp}, p.data(), p.size(), ws.data(), ws.size(), 5) == status::success);
    CHECK(std::equal(p.begin() + 9, p.end(), f.payload.begin() + 9));  // all but the dtype byte
    REQUIRE(host::decode(p.data(), p.size(), {out.data(), t, shp}) == status::success);
    CHECK(out == testdata::as_bytes(f.decoded, t));
  }
  std::vector<float> acc(shp.size(), 1.5F);
  REQUIRE(host::decode_accumulate(r.payload.data(), r.payload.size(), {acc.data(), dtype::f32, shp}) == status::success);
  for (size_t i = 0; i < acc.size(); ++i) CHECK(acc[i] == 1.5F + r.decoded[i]);
  for (shape e : {shape(0, 5), shape(6, 0), shape(0)}) {
    std::vector<uint8_t> p(encoded_bytes(s, e)), ws = lowrank_ws(s, e);
    float dummy = 0;
    REQUIRE(host::encode(s, {&dummy, dtype::f32, e}, p.data(), p.size(), ws.data(), ws.size()) == status::success);
    CHECK(host::decode(p.data(), p.size(), {&dummy, dtype::f32, e}) == status::success);
  }
}

TEST_CASE("lowrank: spec text and inspect") {
  CHECK(to_string(testspec::parse("lowrank")) == "lowrank:rank=4");
  CHECK(to_string(testspec::parse("lowrank:rank=32")) == "lowrank:rank=32");
  for (const char* bad : {"lowrank:rank=0", "lowrank:rank=33", "lowrank:rank=x", "lowrank:bits=4"}) {
    spec s;
    std::string err;
    CHECK(parse_spec(bad, s, &err) == status::invalid_spec);
    CHECK(err.find(std::string(bad).find("bits") != std::string::npos ? "bits" : "rank") != std::string::npos);
  }
  const shape shp(10, 12);
  const lowrank_run r = lowrank_roundtrip(testspec::parse("lowrank:rank=5"), testdata::activations(shp.size(), 4), shp);
  payload_info info;
  REQUIRE(inspect(r.payload.data(), r.payload.size(), info) == status::success);
  CHECK(to_string(info.codec_spec) == "lowrank:rank=5");
  CHECK(encoded_bytes(testspec::parse("lowrank:rank=5"), shp) == 64 + 208 + 240);
}

TEST_CASE("lowrank: hostile payloads are rejected and leave the output untouched") {
  const spec s = testspec::parse("lowrank:rank=2");
  const shape shp(5, 6);  // P: 40 bytes + 8 padding, Q: 48 bytes
  const lowrank_run r = lowrank_roundtrip(s, testdata::activations(shp.size(), 6), shp);
  auto decode_bad = [&](std::vector<uint8_t> p) {
    std::vector<float> out(shp.size(), 7.0F);
    const status st = host::decode(p.data(), p.size(), {out.data(), dtype::f32, shp});
    for (float v : out) CHECK(v == 7.0F);
    return st;
  };
  std::vector<uint8_t> p = r.payload;
  p[40] = 0;
  CHECK(decode_bad(p) == status::invalid_header);  // rank 0
  p[40] = 33;
  CHECK(decode_bad(p) == status::invalid_header);
  p = r.payload;
  p[41] = 1;
  CHECK(decode_bad(p) == status::invalid_header);  // a parameter byte that must be zero
  p = r.payload;
  p[40] = 3;
  CHECK(decode_bad(p) == status::size_mismatch);  // rank 3 needs another size
  p = r.payload;
  const float nan = std::nanf("");
  std::memcpy(p.data() + 64 + 4, &nan, 4);
  CHECK(decode_bad(p) == status::corrupt_payload);  // a non-finite factor
  p = r.payload;
  std::memcpy(p.data() + 112 + 44, &nan, 4);
  CHECK(decode_bad(p) == status::corrupt_payload);
  p = r.payload;
  p[64 + 41] = 1;
  CHECK(decode_bad(p) == status::corrupt_payload);  // P's padding
  p = r.payload;
  p.resize(p.size() - 1);
  CHECK(decode_bad(p) == status::truncated);
}

TEST_CASE("lowrank under EF: the owner keeps Q beside the residual, checkpointed as lowrank_q") {
  const spec s = testspec::parse("lowrank:rank=3");
  const shape shp(30, 40);
  host::ef_state st;
  REQUIRE(st.init(s, shp, dtype::f32) == status::success);
  REQUIRE(st.lowrank_q().shp == shape(40, 3));
  std::vector<float> e(shp.size(), 0.0F), q(40 * 3, 0.0F), v(shp.size()), d(shp.size());
  std::vector<uint8_t> got(st.payload_bytes()), want(got.size()), ws = lowrank_ws(s, shp);
  for (uint64_t step = 0; step < 4; ++step) {
    CAPTURE(step);
    const std::vector<float> x = testdata::activations(shp.size(), 60 + step);
    REQUIRE(st.encode({x.data(), dtype::f32, shp}, got.data(), got.size(), step) == status::success);
    // v = x + e, payload = C(v) warm-started from q, e = v - D(payload)
    for (size_t i = 0; i < v.size(); ++i) v[i] = x[i] + e[i];
    REQUIRE(host::lowrank_encode(s, {v.data(), dtype::f32, shp}, {q.data(), dtype::f32, shape(40, 3)}, want.data(),
                                 want.size(), ws.data(), ws.size(), step) == status::success);
    REQUIRE(host::decode(want.data(), want.size(), {d.data(), dtype::f32, shp}) == status::success);
    for (size_t i = 0; i < v.size(); ++i) e[i] = v[i] - d[i];
    CHECK(got == want);
    CHECK(std::memcmp(st.lowrank_q().data, q.data(), q.size() * 4) == 0);
    CHECK(std::memcmp(st.residual().data, e.data(), e.size() * 4) == 0);
  }
  std::vector<uint8_t> ck(host::checkpoint_bytes(st.lowrank_q()));
  host::memory_sink sink{ck.data(), ck.size()};
  REQUIRE(host::save_checkpoint(checkpoint_kind::lowrank_q, st.lowrank_q(), sink) == status::success);
  host::ef_state back;
  REQUIRE(back.init(s, shp, dtype::f32) == status::success);
  CHECK(host::restore_checkpoint(ck.data(), ck.size(), checkpoint_kind::ef_residual, back.lowrank_q()) ==
        status::state_mismatch);
  REQUIRE(host::restore_checkpoint(ck.data(), ck.size(), checkpoint_kind::lowrank_q, back.lowrank_q()) ==
          status::success);
  CHECK(std::memcmp(back.lowrank_q().data, q.data(), q.size() * 4) == 0);
  host::ef_state other;
  REQUIRE(other.init(testspec::parse("quant:bits=4"), shp, dtype::f32) == status::success);
  CHECK(other.lowrank_q().data == nullptr);
}

TEST_CASE("lowrank endpoints: training steps warm-start from the sender's Q, inference leaves it alone") {
  const shape shp(16, 48);
  const policy p = tpolicy::policy_of("fwd=lowrank:rank=2");
  host::endpoint_options o;
  o.max_shape = shp;
  host::sender_endpoint tx;
  host::receiver_endpoint rx;
  REQUIRE(tx.init(p, 0, direction::fwd, o) == status::success);
  REQUIRE(rx.init(p, 0, direction::fwd, o) == status::success);
  const spec s = testspec::parse("lowrank:rank=2");
  std::vector<uint8_t> got(tx.encoded_bytes()), want(got.size()), ws = lowrank_ws(s, shp);
  std::vector<float> q(48 * 2), y(shp.size()), d(shp.size());
  for (uint64_t k = 0; k < 5; ++k) {
    CAPTURE(k);
    const bool training = k != 2;
    const std::vector<float> x = testdata::activations(shp.size(), 80 + k);
    step_info at;
    at.step = k;
    at.training = training;
    at.seed = k;
    size_t len = 0;
    REQUIRE(tx.encode({x.data(), dtype::f32, shp}, at, got.data(), got.size(), &len) == status::success);
    REQUIRE(rx.decode(got.data(), len, {y.data(), dtype::f32, shp}, at) == status::success);
    REQUIRE(host::decode(got.data(), len, {d.data(), dtype::f32, shp}) == status::success);
    CHECK(y == d);
    detail::lowrank_payload lp;
    REQUIRE(ok(detail::parse_lowrank_payload(got.data(), len, lp)));
    if (k == 0) {  // a cold start from the endpoint's seed: Q becomes the state
      std::memcpy(q.data(), got.data() + lp.layout.q_offset, q.size() * 4);
      continue;
    }
    std::vector<float> warm = q;  // inference encodes cold and must not move the state
    const uint64_t seed = detail::get_u64(got.data() + 40 + 16);  // the endpoint's, as recorded
    REQUIRE(host::lowrank_encode(s, {x.data(), dtype::f32, shp}, {warm.data(), dtype::f32, shape(48, 2)}, want.data(),
                                 want.size(), ws.data(), ws.size(), seed) == status::success);
    CHECK((got == want) == training);
    if (training) q = warm;
  }
}

// The EF, EF21 and AQ-SGD sender steps run quantization a tile of groups at a time
// (host/quant.hpp, encode_quant_tiled), and the EF21 and AQ-SGD receivers apply a quantized
// payload a tile at a time (decode_quant with a tile hook). Payloads, state and
// the EF21 receiver's output must be exactly those of the steps written out with the
// stateless calls: v = fp32(x + e) (EF), fp32(x - g) (EF21) or fp32(a - m) (AQ-SGD delta
// rows), payload = encode(v), then e = T(fp32(v - decode(payload))) or g, m = T(fp32(g +
// decode(payload))). Shapes span many tiles, single groups larger than a tile, short last
// groups, tiles that cross rows, and inputs holding NaN, infinities and subnormals.
#include <algorithm>

#include "../common/state_check.hpp"

using namespace pipecodec;
using namespace tstate;

namespace {

const char* const tiled_specs[] = {
    "quant:bits=4,group=128",
    "quant:bits=2,group=32,round=stochastic",
    "quant:bits=8,group=row",
    "quant:bits=3,group=96,scale=absmax,scale_dtype=fp16",
    "quant:bits=1,group=4096",
    "quant:bits=5,group=tensor",
    "quant:bits=3,group=64,outliers=3",
    "quant:bits=3,group=row,round=stochastic,rng=sample",
    "quant:bits=4,group=64,rotate=hadamard,rotate_block=64",  // not tiled: the passes
    "topk:ratio=0.05",                                        // not tiled: the passes
};

const shape tiled_shapes[] = {shape(1, 1), shape(3, 1000), shape(2, 5000), shape(37, 333), shape(8, 8192 + 5),
                        shape(1, 70001), shape(0, 5), shape(3, 0)};  // and empty tensors

// Input x of n elements as dtype t: activations, and every seventh step extreme values
// (NaN, infinities, subnormals) as well.
std::vector<uint8_t> tiled_input(uint64_t n, uint64_t seed, dtype t) {
  return testdata::as_bytes(seed % 7 == 3 ? testdata::extreme(n, seed) : testdata::activations(n, seed), t);
}

struct tiled_run {
  spec s;
  shape shp;
  dtype x_type, state_type;
  std::vector<uint64_t> ids;  // one per row, for rng=sample

  randomness rnd(uint64_t step) const { return randomness(step + 1, ids.data()); }
};

std::vector<uint8_t> tiled_encode_ref(const tiled_run& r, const std::vector<float>& v, uint64_t step) {
  std::vector<uint8_t> p(encoded_bytes(r.s, r.shp));
  std::vector<uint8_t> ws(workspace_bytes(r.s, r.shp) + 64);
  size_t len = 0;
  REQUIRE(ok(host::encode(r.s, const_tensor_view{v.data(), dtype::f32, r.shp}, p.data(), p.size(), ws.data(),
                          ws.size(), r.rnd(step), &len)));
  p.resize(len);
  return p;
}

// v rounded once to dtype t, as a float.
float rounded(dtype t, float v) {
  uint32_t bits = 0;
  float out = 0;
  (void)detail::dispatch_dtype(t, [&](auto tc) {
    detail::store<decltype(tc)::value>(&bits, 0, v);
    out = detail::load<decltype(tc)::value>(&bits, 0);
    return status::success;
  });
  return out;
}

// The codec input of a step: fp32(x + s) (EF: v = x + e) or fp32(x - s) (EF21: x - g), with
// x of r.x_type and the reference state s of r.state_type.
std::vector<float> step_input(const tiled_run& r, const std::vector<uint8_t>& x, const std::vector<uint8_t>& s,
                              bool subtract) {
  std::vector<float> v(r.shp.size());
  (void)detail::dispatch_dtype(r.state_type, [&](auto tc) {
    for (uint64_t i = 0; i < v.size(); ++i) {
      const float a = testdata::element(x, r.x_type, i), b = detail::load<decltype(tc)::value>(s.data(), i);
      v[i] = subtract ? detail::sub_rn(a, b) : detail::add_rn(a, b);
    }
    return status::success;
  });
  return v;
}

// The sender's step on x writes exactly the payload `want`.
template <class Sender>
void require_payload(Sender& tx, const tiled_run& r, const std::vector<uint8_t>& x, uint64_t step,
                     const std::vector<uint8_t>& want) {
  std::vector<uint8_t> payload(tx.payload_bytes());
  size_t len = 0;
  REQUIRE(ok(tx.encode(const_tensor_view{x.data(), r.x_type, r.shp}, payload.data(), payload.size(), r.rnd(step),
                       &len)));
  REQUIRE(len == want.size());
  REQUIRE(std::equal(want.begin(), want.end(), payload.begin()));
}

template <class Check>
void for_each_tiled_run(Check&& check) {
  uint64_t seed = 11;
  for (const char* text : tiled_specs)
    for (const shape& shp : tiled_shapes)
      for (dtype st : all_dtypes) {
        tiled_run r{parse(text), shp, all_dtypes[testdata::splitmix(seed) % 3], st, {}};
        if (r.s.codec == codec_id::topk && shp.size() > 20000) continue;  // the passes, checked smaller
        for (uint64_t row = 0; row < shp.rows; ++row) r.ids.push_back(testdata::splitmix(seed));
        CAPTURE_TEXT(text);
        CAPTURE(shp.rows);
        CAPTURE(shp.cols);
        CAPTURE_TEXT(storage_name(st));
        CAPTURE_TEXT(storage_name(r.x_type));
        check(r, seed);
      }
}

void check_ef(const tiled_run& r, uint64_t seed) {
  const uint64_t n = r.shp.size();
  host::ef_state ef;
  REQUIRE(ok(ef.init(r.s, r.shp, r.state_type)));
  std::vector<uint8_t> e_ref(n * dtype_bytes(r.state_type), 0);
  for (uint64_t step = 0; step < 3; ++step) {
    CAPTURE(step);
    const auto x = tiled_input(n, seed + step, r.x_type);
    const auto v = step_input(r, x, e_ref, false);
    std::vector<float> d(n);
    const auto want = tiled_encode_ref(r, v, step);
    REQUIRE(ok(host::decode(want.data(), want.size(), tensor_view{d.data(), dtype::f32, r.shp})));
    (void)detail::dispatch_dtype(r.state_type, [&](auto tc) {
      for (uint64_t i = 0; i < n; ++i)
        detail::store<decltype(tc)::value>(e_ref.data(), i, detail::sub_rn(v[i], d[i]));
      return status::success;
    });
    require_payload(ef, r, x, step, want);
    REQUIRE(snapshot(ef.residual()) == e_ref);
  }
}

// The receiver also updates g and writes its output a tile at a time (quantization, with an
// output of the input's dtype): both must be decode_accumulate's g and g converted.
void check_ef21(const tiled_run& r, uint64_t seed) {
  const uint64_t n = r.shp.size();
  host::ef21_state ef, rx;
  REQUIRE(ok(ef.init(r.s, r.shp, r.state_type)));
  REQUIRE(ok(rx.init(r.s, r.shp, r.state_type)));
  std::vector<uint8_t> g_ref(n * dtype_bytes(r.state_type), 0);
  std::vector<uint8_t> out(n * dtype_bytes(r.x_type)), out_ref(out.size());
  for (uint64_t step = 0; step < 3; ++step) {
    CAPTURE(step);
    const auto x = tiled_input(n, seed + step, r.x_type);
    const auto want = tiled_encode_ref(r, step_input(r, x, g_ref, true), step);
    REQUIRE(ok(host::decode_accumulate(want.data(), want.size(), tensor_view{g_ref.data(), r.state_type, r.shp})));
    require_payload(ef, r, x, step, want);
    REQUIRE(snapshot(ef.state()) == g_ref);
    REQUIRE(ok(rx.decode(want.data(), want.size(), tensor_view{out.data(), r.x_type, r.shp})));
    REQUIRE(snapshot(rx.state()) == g_ref);
    REQUIRE(ok(host::detail::convert(g_ref.data(), r.state_type, out_ref.data(), r.x_type, n)));
    REQUIRE(out == out_ref);
  }
}

// `steps` AQ-SGD steps of batches of distinct ids from a pool of `pool` (rows: 2 .. max_rows,
// or max_rows each with `full`), the tiled delta part against encode of a - m.
void check_aqsgd(const char* codec, uint64_t cols, dtype st_t, uint64_t max_rows, uint64_t pool, uint64_t steps,
                 bool full, uint64_t& rng) {
  CAPTURE_TEXT(codec);
  CAPTURE_TEXT(storage_name(st_t));
  const auto c = store_config(codec, cols, st_t, pool);
  host::aqsgd_state tx, rx;
  REQUIRE(ok(tx.init(c, max_rows)));
  REQUIRE(ok(rx.init(c, max_rows)));
  std::vector<uint8_t> msg(tx.message_bytes());
  for (uint64_t step = 0; step < steps; ++step) {
    CAPTURE(step);
    std::vector<uint64_t> ids;
    while (ids.size() < (full ? max_rows : 2 + step % (max_rows - 1))) {
      const uint64_t id = 100 + (full ? ids.size() : testdata::splitmix(rng) % pool);
      if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
    }
    const uint64_t rows = ids.size();
    const dtype in_t = all_dtypes[testdata::splitmix(rng) % 3];
    const auto a = tiled_input(rows * cols, rng + step, in_t);
    const bool warmup = step == 0;
    // The delta part as encode gives it: rows of seen samples, a - m, ids in batch order.
    std::vector<float> delta;
    std::vector<uint64_t> delta_ids;
    const auto m = to_f32(rx.store().rows);
    for (uint64_t r = 0; r < rows && !warmup; ++r) {
      const uint64_t slot = rx.store().table.find(ids[r]);
      if (slot == aqsgd_table::npos) continue;
      delta_ids.push_back(ids[r]);
      for (uint64_t j = 0; j < cols; ++j)
        delta.push_back(detail::sub_rn(testdata::element(a, in_t, r * cols + j), m[slot * cols + j]));
    }
    size_t len = 0;
    REQUIRE(ok(tx.encode(ids.data(), const_tensor_view{a.data(), in_t, shape(rows, cols)}, warmup, msg.data(),
                         msg.size(), step, &len)));
    aqsgd_frame f;
    REQUIRE(ok(detail::parse_aqsgd_frame(msg.data(), len, f)));
    REQUIRE(f.rows - f.warm_rows == delta_ids.size());
    if (!delta_ids.empty()) {
      const shape dshp(delta_ids.size(), cols);
      std::vector<uint8_t> want(aqsgd_part_bytes(c.codec, dshp.rows, cols));
      std::vector<uint8_t> ws(workspace_bytes(c.codec, dshp) + 64);
      size_t wlen = 0;
      REQUIRE(ok(host::encode(c.codec, const_tensor_view{delta.data(), dtype::f32, dshp}, want.data(),
                              want.size(), ws.data(), ws.size(), randomness(step, delta_ids.data()), &wlen)));
      uint64_t total = 0;
      REQUIRE(ok(detail::append_sample_ids(want.data(), want.size(), delta_ids.data(), &total)));
      REQUIRE(f.delta_bytes == total);
      REQUIRE(std::equal(want.begin(), want.begin() + total, msg.begin() + f.delta_offset()));
      REQUIRE(ok(host::decode(want.data(), total, tensor_view{delta.data(), dtype::f32, dshp})));
    }
    REQUIRE(ok(rx.decode(msg.data(), len, ids.data())));
    REQUIRE(snapshot(tx) == snapshot(rx));
    // Each delta row's m is T(fp32(m + D(payload))), D of the reference payload (one
    // assertion per row: the 2^21-element case would make millions under the sanitizers).
    const auto m_now = to_f32(rx.store().rows);
    for (uint64_t k = 0; k < delta_ids.size(); ++k) {
      const uint64_t slot = rx.store().table.find(delta_ids[k]);
      uint64_t differ = 0;
      for (uint64_t j = 0; j < cols; ++j)
        differ += detail::bit_cast<uint32_t>(m_now[slot * cols + j]) !=
                  detail::bit_cast<uint32_t>(rounded(st_t, detail::add_rn(m[slot * cols + j], delta[k * cols + j])));
      CAPTURE(k);
      REQUIRE(differ == 0);
    }
  }
}

}  // namespace

TEST_CASE("EF sender: tiled payload and residual equal encode, decode and the residual update written out") {
  for_each_tiled_run(check_ef);
}

TEST_CASE("EF21 sender and receiver: tiled payload, g and output equal encode and decode_accumulate "
          "written out") {
  for_each_tiled_run(check_ef21);
}

TEST_CASE("AQ-SGD sender: the tiled delta part equals encode of a - m, and both stores stay equal") {
  const char* const codecs[] = {"quant:bits=4,group=128", "quant:bits=3,group=row,round=stochastic,rng=sample",
                                "quant:bits=2,group=64,outliers=2",
                                "quant:bits=4,group=64,rotate=hadamard,rotate_block=64"};  // receiver: whole
  const uint64_t cols_of[] = {2500, 5000, 777, 640};
  uint64_t rng = 5;
  for (int ci = 0; ci < 4; ++ci)
    for (dtype st_t : all_dtypes) check_aqsgd(codecs[ci], cols_of[ci], st_t, 7, 12, 8, false, rng);
}

// From line_prefetcher::min_elements on, each tile requests the next tile's inputs while it
// is encoded (host/prefetch.hpp), and the AQ-SGD receiver the next tile's store rows while it
// decodes: the reads callbacks walk the same pieces as the fills and the store updates, here
// also rows shorter than a tile (more pieces than the prefetcher takes) and a last tile.
TEST_CASE("Tiled senders at the size where they request the next tile: the same payloads and states") {
  const uint64_t n = host::detail::line_prefetcher::min_elements;
  uint64_t seed = 3;
  for (const char* text : {"quant:bits=4,group=128", "quant:bits=3,group=row,round=stochastic"}) {
    for (const shape shp : {shape(n / 4096, 4096), shape(n / 200 + 1, 200)}) {
      CAPTURE_TEXT(text);
      CAPTURE(shp.cols);
      tiled_run r{parse(text), shp, dtype::f32, dtype::f16, {}};
      check_ef(r, seed);
      check_ef21(r, seed);
      check_aqsgd(text, shp.cols, dtype::f16, shp.rows, shp.rows, 2, true, seed);
    }
  }
}

// AQ-SGD per-sample store: bitwise sender/receiver equality over random batches mixing seen
// and unseen samples, convergence of m to fixed activations, capacity, and hostile messages.
#include <algorithm>
#include <cstring>

#include "../common/print.hpp"
#include "../common/state_check.hpp"

using namespace pipecodec;
using namespace tstate;

namespace {

// `rows` distinct ids drawn from [0, pool).
std::vector<uint64_t> draw_ids(uint64_t rows, uint64_t pool, uint64_t& rng) {
  std::vector<uint64_t> ids;
  while (ids.size() < rows) {
    const uint64_t id = 1000003 * (testdata::splitmix(rng) % pool) + 17;  // spread-out 64-bit ids
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  }
  return ids;
}

struct pair_of_sides {
  host::aqsgd_state tx, rx;
  std::vector<uint8_t> msg;
  explicit pair_of_sides(const host::aqsgd_config& c, uint64_t max_rows) {
    REQUIRE(ok(tx.init(c, max_rows)));
    REQUIRE(ok(rx.init(c, max_rows)));
    msg.resize(tx.message_bytes());
  }
};

}  // namespace

TEST_CASE("AQ-SGD: sender and receiver stores stay bit-identical (mixed batches, every storage dtype)") {
  const char* const codecs[] = {"quant:bits=4,group=row", "quant:bits=2,round=stochastic,group=32",
                                "plain:dtype=bf16"};
  const char* const warms[] = {"plain", "quant:bits=8,group=row", "plain:dtype=fp16"};
  uint64_t rng = 3;
  for (int ci = 0; ci < 3; ++ci) {
    for (dtype st_t : all_dtypes) {
      CAPTURE(codecs[ci]);
      CAPTURE_TEXT(storage_name(st_t));
      const uint64_t cols = 1 + testdata::splitmix(rng) % 200, max_rows = 9;
      const auto c = store_config(codecs[ci], cols, st_t, 48, warms[ci]);
      pair_of_sides p(c, max_rows);
      uint64_t mixed = 0;
      for (int step = 0; step < 60; ++step) {
        CAPTURE(step);
        const uint64_t rows = testdata::splitmix(rng) % (max_rows + 1);
        const auto ids = draw_ids(rows, 40, rng);
        const dtype in_t = all_dtypes[testdata::splitmix(rng) % 3];
        const auto a = make_step(rows * cols, rng, in_t);
        const bool warmup = step < 3 || step % 17 == 0;
        size_t len = 0;
        REQUIRE(ok(p.tx.encode(ids.data(), const_tensor_view{a.bytes.data(), in_t, shape(rows, cols)}, warmup,
                               p.msg.data(), p.msg.size(), step, &len)));
        aqsgd_frame f;
        REQUIRE(ok(detail::parse_aqsgd_frame(p.msg.data(), len, f)));
        mixed += f.warm_rows > 0 && f.warm_rows < rows;
        std::vector<float> out(rows * cols);
        REQUIRE(ok(p.rx.decode(p.msg.data(), len, step % 2 ? ids.data() : nullptr,
                               tensor_view{out.data(), dtype::f32, shape(rows, cols)})));
        REQUIRE(p.tx.count() == p.rx.count());
        REQUIRE(snapshot(p.tx) == snapshot(p.rx));
        // The receiver's tensor is m of the batch's samples.
        for (uint64_t r = 0; r < rows; ++r) {
          const uint64_t slot = p.rx.store().table.find(ids[r]);
          REQUIRE(slot != aqsgd_table::npos);
          for (uint64_t j = 0; j < cols; ++j)
            REQUIRE(out[r * cols + j] == to_f32(p.rx.store().rows)[slot * cols + j]);
        }
      }
      CHECK(mixed > 5);  // the run did exercise batches mixing seen and unseen samples
      CHECK(p.tx.count() <= 40);
    }
  }
}

// A TopK delta part changes m at its kept elements only. Reference: the update written out with
// the stateless calls, m = T(fp32(m) + D(payload)) with D added at the kept elements only
// (decode_accumulate), so T(fp32(m)) elsewhere: -0 stays -0 and a NaN becomes its quiet NaN.
// The stores get NaNs with other payloads (as a restored checkpoint may hold) and inputs with
// NaN, infinities and subnormals.
TEST_CASE("AQ-SGD with TopK: m changes at the kept elements only, as decode_accumulate and T() give") {
  const char* const codecs[] = {"topk:ratio=0.1,scope=row", "topk:ratio=0.05,index=bitmap",
                                "topk:k=21,scope=row,index=u16,values=quant,bits=4", "topk:ratio=0.3,index=u32,values=fp16",
                                "topk:k=21,scope=tensor,index=bitmap,values=bf16"};
  uint64_t rng = 11;
  for (const char* codec : codecs) {
    for (dtype st_t : all_dtypes) {
      CAPTURE_TEXT(codec);
      CAPTURE_TEXT(storage_name(st_t));
      const uint64_t cols = 1 + testdata::splitmix(rng) % 300, max_rows = 9, width = dtype_bytes(st_t);
      const auto c = store_config(codec, cols, st_t, 24);
      pair_of_sides p(c, max_rows);
      uint64_t delta_rows_seen = 0, odd_nans = 0;
      for (uint64_t step = 0; step < 25; ++step) {
        CAPTURE(step);
        const uint64_t rows = 1 + testdata::splitmix(rng) % max_rows;
        const auto ids = draw_ids(rows, 20, rng);
        const dtype in_t = all_dtypes[testdata::splitmix(rng) % 3];
        const auto x = step % 5 == 3 ? testdata::extreme(rows * cols, step) : testdata::activations(rows * cols, step);
        const auto a = testdata::as_bytes(x, in_t);
        if (step % 6 == 4) {  // NaNs with payloads no update writes, in both stores alike
          const uint8_t nan16[2][2] = {{0x01, 0x7C}, {0x55, 0xFD}}, nanbf[2][2] = {{0x81, 0x7F}, {0x85, 0xFF}};
          const uint8_t nan32[4] = {0x01, 0x00, 0x80, 0x7F};
          for (host::aqsgd_state* side : {&p.tx, &p.rx})
            for (uint64_t e = step; e < side->count() * cols; e += 7) {
              const uint8_t* v = st_t == dtype::f32 ? nan32 : st_t == dtype::f16 ? nan16[e % 2] : nanbf[e % 2];
              std::memcpy(static_cast<uint8_t*>(side->store().rows.data) + e * width, v, width);
            }
          odd_nans += p.tx.count() > 0;
        }
        const auto before = snapshot(p.tx.store().rows);
        size_t len = 0;
        REQUIRE(ok(p.tx.encode(ids.data(), const_tensor_view{a.data(), in_t, shape(rows, cols)}, step == 0,
                               p.msg.data(), p.msg.size(), step, &len)));
        REQUIRE(ok(p.rx.decode(p.msg.data(), len, ids.data())));
        REQUIRE(snapshot(p.tx) == snapshot(p.rx));
        aqsgd_frame f;
        REQUIRE(ok(detail::parse_aqsgd_frame(p.msg.data(), len, f)));
        const uint8_t* kinds = p.msg.data() + f.kinds_offset();
        // Each delta row (part order = batch order) before the step, as fp32, plus D(payload).
        std::vector<uint64_t> slots;
        for (uint64_t r = 0; r < rows; ++r)
          if (kinds[r] == aqsgd_row_delta) slots.push_back(p.tx.store().table.find(ids[r]));
        const uint64_t drows = slots.size();
        delta_rows_seen += drows;
        if (drows == 0) continue;
        const status checked = detail::dispatch_dtype(st_t, [&](auto tc) {
          constexpr dtype T = decltype(tc)::value;
          std::vector<float> ref(drows * cols);
          for (uint64_t k = 0; k < drows; ++k)
            for (uint64_t j = 0; j < cols; ++j) ref[k * cols + j] = detail::load<T>(before.data(), slots[k] * cols + j);
          REQUIRE(ok(host::decode_accumulate(p.msg.data() + f.delta_offset(), f.delta_bytes,
                                             tensor_view{ref.data(), dtype::f32, shape(drows, cols)})));
          std::vector<uint8_t> want(width);
          for (uint64_t k = 0; k < drows; ++k)
            for (uint64_t j = 0; j < cols; ++j) {
              detail::store<T>(want.data(), 0, ref[k * cols + j]);
              const uint8_t* got = static_cast<const uint8_t*>(p.tx.store().rows.data) + (slots[k] * cols + j) * width;
              REQUIRE(std::memcmp(got, want.data(), width) == 0);
            }
          return status::success;
        });
        REQUIRE(ok(checked));
      }
      CHECK(delta_rows_seen > 50);
      CHECK(odd_nans >= 3);
    }
  }
}

TEST_CASE("AQ-SGD: with fixed activations m(xi) converges to a(xi)") {
  for (dtype st_t : all_dtypes) {
    CAPTURE_TEXT(storage_name(st_t));
    const uint64_t cols = 256, samples = 12;
    const auto c = store_config("quant:bits=2,group=row", cols, st_t, 16, "quant:bits=4,group=row");
    pair_of_sides p(c, samples);
    const auto a = make_step(samples * cols, 21, dtype::f32);
    std::vector<uint64_t> ids(samples);
    for (uint64_t i = 0; i < samples; ++i) ids[i] = 0xABCDEF00000000ull + i;
    std::vector<float> out(samples * cols);
    std::vector<double> err;
    for (int step = 0; step < 25; ++step) {
      // Alternate halves of the samples in different orders so rows move between batches.
      std::vector<uint64_t> order(ids);
      std::reverse(order.begin() + (step % 3), order.end());
      std::vector<float> batch(samples * cols);
      for (uint64_t r = 0; r < samples; ++r) {
        const uint64_t i = order[r] - ids[0];
        std::copy(a.f.begin() + i * cols, a.f.begin() + (i + 1) * cols, batch.begin() + r * cols);
      }
      size_t len = 0;
      REQUIRE(ok(p.tx.encode(order.data(), const_tensor_view{batch.data(), dtype::f32, shape(samples, cols)}, false,
                             p.msg.data(), p.msg.size(), step, &len)));
      REQUIRE(ok(p.rx.decode(p.msg.data(), len, order.data(), tensor_view{out.data(), dtype::f32, shape(samples, cols)})));
      err.push_back(rel_l2(batch, out));
    }
    CHECK(snapshot(p.tx) == snapshot(p.rx));
    CHECK(err.front() > 0.01);  // the 4-bit warm-up is lossy
    CHECK(err.back() < (st_t == dtype::f32 ? 1e-6 : st_t == dtype::f16 ? 1e-3 : 8e-3));
    CHECK(err.back() < err.front() / 10);
  }
}

TEST_CASE("AQ-SGD: capacity is enforced and memory reported; duplicates rejected") {
  const uint64_t cols = 64;
  const auto c = store_config("quant:bits=4", cols, dtype::f16, 4);
  pair_of_sides p(c, 8);
  const auto mem = p.tx.memory();
  CHECK(mem.total_bytes == aqsgd_table_bytes(4) + 4 * cols * 2);
  CHECK(mem.bytes_per_sample * 4 >= mem.total_bytes);
  CHECK(mem.used_bytes == 0);
  const auto a = make_step(8 * cols, 1, dtype::f32);
  std::vector<uint64_t> ids = {1, 2, 3};
  size_t len = 0;
  REQUIRE(ok(p.tx.encode(ids.data(), const_tensor_view{a.bytes.data(), dtype::f32, shape(3, cols)}, false,
                         p.msg.data(), p.msg.size(), 0, &len)));
  REQUIRE(ok(p.rx.decode(p.msg.data(), len, ids.data())));
  CHECK(p.tx.memory().used_bytes == 3 * mem.bytes_per_sample);
  const auto before = snapshot(p.tx);
  ids = {1, 4, 5};  // two unseen, one free slot
  CHECK(p.tx.encode(ids.data(), const_tensor_view{a.bytes.data(), dtype::f32, shape(3, cols)}, false, p.msg.data(),
                    p.msg.size(), 0, &len) == status::capacity_exceeded);
  ids = {1, 4, 1};
  CHECK(p.tx.encode(ids.data(), const_tensor_view{a.bytes.data(), dtype::f32, shape(3, cols)}, false, p.msg.data(),
                    p.msg.size(), 0, &len) == status::invalid_argument);
  CHECK(p.tx.encode(ids.data(), const_tensor_view{a.bytes.data(), dtype::f32, shape(3, cols)}, false, p.msg.data(),
                    100, 0, &len) != status::success);
  CHECK(snapshot(p.tx) == before);
  ids = {4, 3, 2, 1};  // exactly fills the store
  REQUIRE(ok(p.tx.encode(ids.data(), const_tensor_view{a.bytes.data(), dtype::f32, shape(4, cols)}, false,
                         p.msg.data(), p.msg.size(), 0, &len)));
  REQUIRE(ok(p.rx.decode(p.msg.data(), len, ids.data())));
  CHECK(p.tx.count() == 4);
  CHECK(snapshot(p.tx) == snapshot(p.rx));
}

TEST_CASE("AQ-SGD: hostile messages are rejected without touching the store") {
  const uint64_t cols = 40;
  const auto c = store_config("quant:bits=4,group=row", cols, dtype::bf16, 16);
  pair_of_sides p(c, 6);
  const auto a = make_step(6 * cols, 2, dtype::f32);
  std::vector<uint64_t> ids = {10, 11, 12, 13};
  size_t len = 0;
  const auto send = [&](const std::vector<uint64_t>& v, uint64_t rows) {
    REQUIRE(ok(p.tx.encode(v.data(), const_tensor_view{a.bytes.data(), dtype::f32, shape(rows, cols)}, false,
                           p.msg.data(), p.msg.size(), 0, &len)));
  };
  send(ids, 4);
  REQUIRE(ok(p.rx.decode(p.msg.data(), len, ids.data())));
  ids = {12, 99, 10, 98, 11};  // mixed: seen and unseen
  send(ids, 5);
  const std::vector<uint8_t> msg(p.msg.begin(), p.msg.begin() + len);
  const auto rx0 = snapshot(p.rx);
  const auto rejected = [&](std::vector<uint8_t> m, const uint64_t* expect, status want) {
    const status st = p.rx.decode(m.data(), m.size(), expect);
    CHECK(st == want);
    CHECK(snapshot(p.rx) == rx0);
  };
  // Wrong expected ids, every truncation, flipped header and kind bytes.
  std::vector<uint64_t> wrong = ids;
  wrong[3] = 97;
  rejected(msg, wrong.data(), status::id_mismatch);
  for (size_t cut = 0; cut < msg.size(); ++cut) {
    const status st = p.rx.decode(msg.data(), cut, ids.data());
    REQUIRE(!ok(st));
  }
  CHECK(snapshot(p.rx) == rx0);
  auto m = msg;
  m[64 + 1] ^= 1;  // a delta row marked warm: counts disagree
  rejected(m, ids.data(), status::corrupt_payload);
  m = msg;
  detail::put_u64(m.data() + 24, cols + 1);  // wrong cols
  CHECK(!ok(p.rx.decode(m.data(), m.size(), ids.data())));
  CHECK(snapshot(p.rx) == rx0);
  // Tampered sample id in the delta part's id section.
  aqsgd_frame f;
  REQUIRE(ok(detail::parse_aqsgd_frame(msg.data(), msg.size(), f)));
  header hd;
  REQUIRE(ok(read_header(msg.data() + f.delta_offset(), f.delta_bytes, hd)));
  const size_t id_off = f.delta_offset() + hd.total_bytes - ids_section_bytes(hd);
  m = msg;
  detail::put_u64(m.data() + id_off, 55);
  rejected(m, ids.data(), status::id_mismatch);
  rejected(m, nullptr, status::id_mismatch);  // 55 is not in the receiver's store
  m = msg;
  detail::put_u64(m.data() + id_off, 10);  // duplicate of another row's id
  rejected(m, nullptr, status::id_mismatch);
  // A corrupt scale inside the delta payload is found before the warm rows are stored.
  m = msg;
  detail::put_u32(m.data() + f.delta_offset() + header_bytes, 0xFF800000u);
  rejected(m, ids.data(), status::corrupt_payload);
  // A receiver configured for another codec or width.
  host::aqsgd_state other;
  REQUIRE(ok(other.init(store_config("plain", cols, dtype::bf16, 16), 6)));
  CHECK(other.decode(msg.data(), msg.size(), ids.data()) == status::state_mismatch);
  REQUIRE(ok(other.init(store_config("quant:bits=4,group=row", cols + 1, dtype::bf16, 16), 6)));
  CHECK(other.decode(msg.data(), msg.size(), ids.data()) == status::shape_mismatch);
  // A sender of the same codec with other parameters (2 bits: smaller parts), same batches.
  host::aqsgd_state narrow;
  REQUIRE(ok(narrow.init(store_config("quant:bits=2,group=row", cols, dtype::bf16, 16), 6)));
  std::vector<uint8_t> nm(narrow.message_bytes());
  size_t nl = 0;
  for (const auto& v : {std::vector<uint64_t>{10, 11, 12, 13}, ids})
    REQUIRE(ok(narrow.encode(v.data(), const_tensor_view{a.bytes.data(), dtype::f32, shape(v.size(), cols)}, false,
                             nm.data(), nm.size(), 0, &nl)));
  rejected(std::vector<uint8_t>(nm.begin(), nm.begin() + long(nl)), ids.data(), status::state_mismatch);
  // A fresh receiver does not know the seen samples: the delta rows are refused.
  host::aqsgd_state fresh;
  REQUIRE(ok(fresh.init(c, 6)));
  const auto fresh0 = snapshot(fresh);
  CHECK(fresh.decode(msg.data(), msg.size(), ids.data()) == status::id_mismatch);
  CHECK(snapshot(fresh) == fresh0);
  // Random byte flips: any rejection leaves the store untouched.
  // A fresh sender's first message brings a fresh receiver to the state msg applies to.
  host::aqsgd_state tx2;
  REQUIRE(ok(tx2.init(c, 6)));
  std::vector<uint64_t> first = {10, 11, 12, 13};
  std::vector<uint8_t> prime(tx2.message_bytes());
  size_t prime_len = 0;
  REQUIRE(ok(tx2.encode(first.data(), const_tensor_view{a.bytes.data(), dtype::f32, shape(4, cols)}, true,
                        prime.data(), prime.size(), 0, &prime_len)));
  uint64_t rng = 77;
  for (int t = 0; t < 300; ++t) {
    host::aqsgd_state r2;
    REQUIRE(ok(r2.init(c, 6)));
    REQUIRE(ok(r2.decode(prime.data(), prime_len, nullptr)));
    REQUIRE(snapshot(r2) == rx0);
    const auto r20 = snapshot(r2);
    m = msg;
    m[testdata::splitmix(rng) % m.size()] ^= uint8_t(1u << (testdata::splitmix(rng) % 8));
    if (!ok(r2.decode(m.data(), m.size(), nullptr))) REQUIRE(snapshot(r2) == r20);
  }
  // The genuine message still applies and both sides agree.
  REQUIRE(ok(p.rx.decode(msg.data(), msg.size(), ids.data())));
  CHECK(snapshot(p.rx) == snapshot(p.tx));
}

TEST_CASE("sample-id section: appended to quant and plain payloads, decoders unaffected") {
  const shape shp(5, 70);
  const auto x = make_step(shp.size(), 8, dtype::f32);
  const uint64_t ids[5] = {1, ~uint64_t(0), 0, 42, 0x0123456789ABCDEFull};
  for (const char* text : {"quant:bits=3,group=row", "plain:dtype=fp16"}) {
    CAPTURE_TEXT(text);
    const spec s = parse(text);
    const size_t base = encoded_bytes(s, shp);
    std::vector<uint8_t> p(base + 48, 0xEE);
    size_t len = 0;
    REQUIRE(ok(host::encode(s, const_tensor_view{x.bytes.data(), dtype::f32, shp}, p.data(), p.size(), nullptr, 0, 0,
                            &len)));
    std::vector<float> plain_out(shp.size()), ids_out(shp.size());
    REQUIRE(ok(host::decode(p.data(), len, tensor_view{plain_out.data(), dtype::f32, shp})));
    CHECK(detail::append_sample_ids(p.data(), base + 40, ids, nullptr) == status::buffer_too_small);
    uint64_t total = 0;
    REQUIRE(ok(detail::append_sample_ids(p.data(), p.size(), ids, &total)));
    CHECK(total == base + 48);  // 40 bytes of ids, padded to 48
    CHECK(detail::append_sample_ids(p.data(), p.size(), ids, &total) == status::invalid_argument);  // twice
    header h;
    REQUIRE(ok(read_header(p.data(), total, h)));
    const uint8_t* sec = detail::sample_ids_section(p.data(), h);
    REQUIRE(sec != nullptr);
    for (int r = 0; r < 5; ++r) CHECK(detail::sample_id(sec, r) == ids[r]);
    CHECK(detail::sample_ids_padding_zero(sec, h));
    REQUIRE(ok(host::decode(p.data(), total, tensor_view{ids_out.data(), dtype::f32, shp})));
    CHECK(ids_out == plain_out);
    CHECK(host::decode(p.data(), total - 1, tensor_view{ids_out.data(), dtype::f32, shp}) == status::truncated);
  }
}

TEST_CASE("AQ-SGD table: inserts, lookups, and rebuilding from ids reproduces the memory") {
  const uint64_t cap = 1000;
  std::vector<uint64_t> mem(aqsgd_table_bytes(cap) / 8), copy(mem.size());
  aqsgd_table t, u;
  REQUIRE(ok(init_aqsgd_table(mem.data(), mem.size() * 8, cap, t)));
  CHECK(init_aqsgd_table(copy.data(), copy.size() * 8 - 8, cap, u) == status::buffer_too_small);
  CHECK(aqsgd_table_bytes(0) == 0);
  REQUIRE(ok(init_aqsgd_table(copy.data(), copy.size() * 8, cap, u)));
  uint64_t rng = 5;
  std::vector<uint64_t> ids;
  while (ids.size() < cap) {
    // Clustered ids (consecutive and strided) stress the probing.
    const uint64_t id = ids.size() % 3 ? ids.size() : testdata::splitmix(rng);
    if (t.find(id) != aqsgd_table::npos) continue;
    CHECK(t.insert_new(id) == ids.size());
    ids.push_back(id);
  }
  CHECK(t.count() == cap);
  for (uint64_t i = 0; i < cap; ++i) REQUIRE(t.find(ids[i]) == i);
  CHECK(t.find(0xFFFFFFFFFFFFull) == aqsgd_table::npos);
  REQUIRE(u.rebuild_buckets(reinterpret_cast<const uint8_t*>(ids.data()), cap));
  u.assign_ids(reinterpret_cast<const uint8_t*>(ids.data()), cap);
  CHECK(copy == mem);
  ids[7] = ids[3];
  CHECK(!u.rebuild_buckets(reinterpret_cast<const uint8_t*>(ids.data()), cap));
}

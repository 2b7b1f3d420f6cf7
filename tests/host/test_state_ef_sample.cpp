// Per-sample classic EF (host/ef_sample.hpp): per-sample telescoping across shuffled batches,
// agreement with the per-row residual when rows keep their samples, capacity and argument
// errors leaving the store untouched, and save/restore of the store.
#include <algorithm>
#include <map>

#include "../common/print.hpp"
#include "../common/state_check.hpp"
#include "pipecodec/host/checkpoint.hpp"
#include "pipecodec/host/ef_sample.hpp"

using namespace pipecodec;
using namespace tstate;

namespace {

// e(id) as fp32, zeros for a sample the store has not seen.
std::vector<float> residual_of(const host::ef_sample_state& s, uint64_t id) {
  const uint64_t cols = s.config().cols, slot = s.store().table.find(id);
  std::vector<float> e(cols, 0.0f);
  if (slot == aqsgd_table::npos) return e;
  const auto all = to_f32(s.store().rows);
  std::copy(all.begin() + slot * cols, all.begin() + (slot + 1) * cols, e.begin());
  return e;
}

}  // namespace

TEST_CASE("per-sample EF: for every sample, sum of decoded rows + final e = sum of its inputs") {
  const char* const specs[] = {"topk:ratio=0.25,scope=row", "quant:bits=4,group=row",
                               "quant:bits=2,round=stochastic,group=32", "plain:dtype=bf16"};
  uint64_t rng = 41;
  for (const char* text : specs) {
    for (dtype st_t : all_dtypes) {
      CAPTURE_TEXT(text);
      CAPTURE_TEXT(storage_name(st_t));
      const uint64_t cols = 1 + testdata::splitmix(rng) % 150, pool = 10, max_rows = 6;
      host::ef_sample_state ef;
      REQUIRE(ok(ef.init(store_config(text, cols, st_t, pool), max_rows)));
      std::vector<uint8_t> payload(ef.payload_bytes());
      struct sums {
        std::vector<double> x, d, bound;
      };
      std::map<uint64_t, sums> per_id;
      for (int step = 0; step < 60; ++step) {
        CAPTURE(step);
        // A shuffled batch: distinct ids from the pool in random order, random size.
        std::vector<uint64_t> ids;
        const uint64_t rows = 1 + testdata::splitmix(rng) % max_rows;
        while (ids.size() < rows) {
          const uint64_t id = 0x9E3779B97F4A7C15ull * (testdata::splitmix(rng) % pool + 1);
          if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
        }
        const shape shp(rows, cols);
        const dtype in_t = all_dtypes[step % 3];
        const auto x = make_step(shp.size(), rng + 7 * step, in_t);
        std::vector<std::vector<float>> e_prev;
        for (uint64_t id : ids) e_prev.push_back(residual_of(ef, id));
        size_t len = 0;
        REQUIRE(ok(ef.encode(ids.data(), const_tensor_view{x.bytes.data(), in_t, shp}, payload.data(),
                             payload.size(), step, &len)));
        std::vector<float> d(shp.size());
        REQUIRE(ok(host::decode(payload.data(), len, tensor_view{d.data(), dtype::f32, shp})));  // a plain payload
        for (uint64_t r = 0; r < rows; ++r) {
          sums& s = per_id[ids[r]];
          s.x.resize(cols);
          s.d.resize(cols);
          s.bound.resize(cols);
          const auto e = residual_of(ef, ids[r]);
          for (uint64_t j = 0; j < cols; ++j) {
            const float v = x.f[r * cols + j] + e_prev[r][j];
            const float e32 = v - d[r * cols + j];
            s.x[j] += x.f[r * cols + j];
            s.d[j] += d[r * cols + j];
            s.bound[j] += 0x1p-24 * std::fabs(v) +
                          (0x1p-24 + unit(st_t)) * std::fmax(std::fabs(e32), std::fabs(e[j])) + floor_abs(st_t);
          }
        }
      }
      REQUIRE(ef.count() == per_id.size());
      for (const auto& kv : per_id) {
        const auto e = residual_of(ef, kv.first);
        for (uint64_t j = 0; j < cols; ++j) {
          CAPTURE(j);
          const double gap = std::fabs(kv.second.x[j] - (kv.second.d[j] + e[j]));
          REQUIRE(gap <= kv.second.bound[j] * 1.001 + 1e-12);
        }
      }
    }
  }
}

TEST_CASE("per-sample EF equals the per-row residual when every row keeps its sample") {
  for (dtype st_t : all_dtypes) {
    CAPTURE_TEXT(storage_name(st_t));
    const shape shp(5, 96);
    const char* text = "topk:ratio=0.1,scope=row";
    host::ef_state row;
    host::ef_sample_state per;
    REQUIRE(ok(row.init(parse(text), shp, st_t)));
    REQUIRE(ok(per.init(store_config(text, shp.cols, st_t, 8), shp.rows)));
    const uint64_t ids[5] = {40, 7, 1ull << 60, 3, 99};
    std::vector<uint8_t> a(row.payload_bytes()), b(per.payload_bytes());
    for (int step = 0; step < 12; ++step) {
      const auto x = make_step(shp.size(), 300 + step, dtype::f32);
      const const_tensor_view xv{x.bytes.data(), dtype::f32, shp};
      size_t la = 0, lb = 0;
      REQUIRE(ok(row.encode(xv, a.data(), a.size(), step, &la)));
      REQUIRE(ok(per.encode(ids, xv, b.data(), b.size(), step, &lb)));
      REQUIRE(la == lb);
      REQUIRE(std::equal(a.begin(), a.begin() + la, b.begin()));
    }
    // Slots were handed out in row order, so the store's first rows are the residual tensor.
    const auto r = tstate::snapshot(row.residual());
    const auto s = tstate::snapshot(per.store().rows);
    CHECK(std::equal(r.begin(), r.end(), s.begin()));
  }
}

TEST_CASE("per-sample EF: capacity, duplicates and bad arguments are rejected, store untouched") {
  const auto c = store_config("quant:bits=4", 32, dtype::f16, 4);
  host::ef_sample_state ef;
  REQUIRE(ok(ef.init(c, 3)));
  std::vector<uint8_t> payload(ef.payload_bytes());
  const auto x = make_step(3 * 32, 5, dtype::f32);
  const const_tensor_view x3{x.bytes.data(), dtype::f32, shape(3, 32)}, x2{x.bytes.data(), dtype::f32, shape(2, 32)};
  const uint64_t first[3] = {10, 11, 12};
  REQUIRE(ok(ef.encode(first, x3, payload.data(), payload.size())));
  REQUIRE(ef.count() == 3);
  const auto before = snapshot(ef);

  const uint64_t two_new[3] = {11, 20, 21};  // one free slot, two unseen ids
  CHECK(ef.encode(two_new, x3, payload.data(), payload.size()) == status::capacity_exceeded);
  const uint64_t dup[3] = {10, 30, 10};
  CHECK(ef.encode(dup, x3, payload.data(), payload.size()) == status::invalid_argument);
  CHECK(ef.encode(first, x3, payload.data(), payload.size() - 1) == status::buffer_too_small);
  CHECK(ef.encode(nullptr, x3, payload.data(), payload.size()) == status::invalid_argument);
  CHECK(ef.encode(first, const_tensor_view{x.bytes.data(), dtype::f32, shape(2, 48)}, payload.data(),
                  payload.size()) == status::shape_mismatch);
  CHECK(ef.encode(first, const_tensor_view{x.bytes.data(), dtype::f32, shape(4, 32)}, payload.data(),
                  payload.size()) == status::workspace_too_small);  // more rows than the workspace holds
  CHECK(snapshot(ef) == before);

  // Seen samples in a smaller batch, then the last free slot.
  const uint64_t seen[2] = {12, 10}, last[2] = {11, 13};
  REQUIRE(ok(ef.encode(seen, x2, payload.data(), payload.size())));
  REQUIRE(ok(ef.encode(last, x2, payload.data(), payload.size())));
  CHECK(ef.count() == 4);
  const uint64_t full[2] = {10, 14};
  CHECK(ef.encode(full, x2, payload.data(), payload.size()) == status::capacity_exceeded);
}

TEST_CASE("per-sample EF: the store saves and restores (its own checkpoint kind)") {
  const auto c = store_config("topk:ratio=0.2,scope=row", 40, dtype::bf16, 16);
  host::ef_sample_state a, b;
  REQUIRE(ok(a.init(c, 4)));
  REQUIRE(ok(b.init(c, 4)));
  std::vector<uint8_t> pa(a.payload_bytes()), pb(b.payload_bytes());
  uint64_t ids[4] = {5, 6, 7, 8};
  for (int step = 0; step < 3; ++step) {
    const auto x = make_step(4 * 40, 50 + step, dtype::f32);
    ids[step] += 100;  // some new samples every step
    REQUIRE(ok(a.encode(ids, const_tensor_view{x.bytes.data(), dtype::f32, shape(4, 40)}, pa.data(), pa.size())));
  }
  std::vector<uint8_t> ck(host::checkpoint_bytes(a.config(), a.store()));
  host::memory_sink sink{ck.data(), ck.size()};
  REQUIRE(ok(host::save_checkpoint(checkpoint_kind::ef_sample_store, a.config(), a.store(), sink)));
  REQUIRE(sink.used == ck.size());
  const auto empty = snapshot(b);
  CHECK(host::restore_checkpoint(ck.data(), ck.size(), b.config(), b.store()) == status::state_mismatch);  // AQ-SGD kind
  CHECK(snapshot(b) == empty);
  REQUIRE(ok(host::restore_checkpoint(ck.data(), ck.size(), checkpoint_kind::ef_sample_store, b.config(), b.store())));
  CHECK(snapshot(b) == snapshot(a));
  // Both continue identically.
  const auto x = make_step(4 * 40, 99, dtype::f32);
  size_t la = 0, lb = 0;
  const uint64_t next[4] = {7, 200, 105, 6};
  REQUIRE(ok(a.encode(next, const_tensor_view{x.bytes.data(), dtype::f32, shape(4, 40)}, pa.data(), pa.size(), 1, &la)));
  REQUIRE(ok(b.encode(next, const_tensor_view{x.bytes.data(), dtype::f32, shape(4, 40)}, pb.data(), pb.size(), 1, &lb)));
  CHECK(la == lb);
  CHECK(pa == pb);
  CHECK(snapshot(b) == snapshot(a));
}

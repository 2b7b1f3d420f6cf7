// CUDA per-sample EF (cuda/ef_sample.cuh, cuda::ef_sample_state) against host::ef_sample_encode:
// every codec of the state tests, every residual dtype, device and pinned stores (with
// prefetch), batches of repeated and new ids in several input dtypes: payloads byte-equal,
// and table + residual rows byte-equal after every step. A copy of the device store saves
// the host's checkpoint bytes, which restore into a host owner that continues identically.
// Host-checkable errors give the host's status and leave the store untouched.
#include "../common/print.hpp"
#include "pipecodec/cuda/state_owners.cuh"
#include "pipecodec/host/checkpoint.hpp"
#include "store_side.hpp"

using namespace tgs;
using tstate::make_step;
using tstate::snapshot;

namespace {

// A CUDA per-sample EF sender with caller-owned memory: a device store, or a pinned one with
// its staging buffer.
struct cuda_ef_side : cuda_store_side {
  cuda_ef_side(const host::aqsgd_config& cfg, uint64_t max_rows, bool pinned)
      : cuda_store_side(cfg, max_rows, pinned, pipecodec::cuda::ef_sample_workspace_bytes(cfg, max_rows)) {}
  status encode(const uint64_t* ids, const_tensor_view x, dmem& payload, uint64_t seed, size_t* len) {
    return pipecodec::cuda::ef_sample_encode(c, store, ids, x, payload.p, payload.n, plan.p, plan.n, ws.p, ws.n, seed,
                                             nullptr, len);
  }
};

// Sets element i of a tensor of dtype t to -0: x + 0 gives +0, so an unseen sample's v must
// be computed as the host does (add_rn(x, 0), not x) for the payload and residual to match.
void put_negative_zero(std::vector<uint8_t>& bytes, dtype t, uint64_t i) {
  const uint32_t w = dtype_bytes(t);
  std::fill(bytes.begin() + i * w, bytes.begin() + (i + 1) * w, uint8_t(0));
  bytes[(i + 1) * w - 1] = 0x80;
}

void check_ef_sample(const char* text, dtype t, bool pinned, uint64_t steps) {
  CAPTURE_TEXT(text);
  CAPTURE_TEXT(to_string(t));
  CAPTURE(pinned);
  const uint64_t cols = 96, max_rows = 10;  // 96: groups of 128 span rows
  const host::aqsgd_config c = tstate::store_config(text, cols, t, 36);
  host::ef_sample_state h;
  REQUIRE(ok(h.init(c, max_rows)));
  cuda_ef_side d(c, max_rows, pinned);
  dmem pay(h.payload_bytes()), x(max_rows * cols * 4);
  std::vector<uint8_t> hp(h.payload_bytes());
  for (uint64_t step = 0; step < steps; ++step) {
    CAPTURE(step);
    const uint64_t rows = 1 + step * 3 % max_rows;
    const auto ids = batch_ids(rows, step, 30);
    const dtype xt = dtypes[step % 3];
    const shape shp(rows, cols);
    auto in = make_step(shp.size(), 70 + step, xt);
    for (uint64_t r = 0; r < rows; ++r) put_negative_zero(in.bytes, xt, r * cols + step % cols);
    x.put(in.bytes.data(), in.bytes.size());
    if (pinned && step % 2 == 1) REQUIRE(ok(pipecodec::cuda::aqsgd_prefetch(d.store, ids.data(), rows, nullptr)));
    size_t hl = 0, dl = 0;
    REQUIRE(ok(h.encode(ids.data(), const_tensor_view(in.bytes.data(), xt, shp), hp.data(), hp.size(), step, &hl)));
    REQUIRE(ok(d.encode(ids.data(), const_tensor_view(x.p, xt, shp), pay, step, &dl)));
    REQUIRE(dl == hl);
    CHECK(pay.get(dl) == std::vector<uint8_t>(hp.begin(), hp.begin() + hl));
    CHECK(d.snapshot() == snapshot(h));
  }
}

}  // namespace

TEST_CASE("CUDA per-sample EF: payloads, table and residuals equal the host's (device and pinned stores)") {
  for (const char* text : state_specs)
    for (dtype t : dtypes)
      for (bool pinned : {false, true}) check_ef_sample(text, t, pinned, testg::thin() ? 3 : testg::quick() ? 4 : 12);
}

TEST_CASE("CUDA per-sample EF: every bit width and rounding, resident and tiled groups, outlier keeping") {
  for (const std::string& text : fused_quant_sweep()) check_ef_sample(text.c_str(), dtype::bf16, false, 3);
}

TEST_CASE("CUDA per-sample EF owner: a copy of its store is the host's checkpoint and continues on the host") {
  const host::aqsgd_config c = tstate::store_config("quant:bits=3,group=row", 64, dtype::bf16, 24);
  const uint64_t rows = 5;
  const shape shp(rows, 64);
  cudaStream_t stream = nullptr;
  for (bool pinned : {false, true}) {
    CAPTURE(pinned);
    host::ef_sample_state h;
    pipecodec::cuda::ef_sample_state d;
    REQUIRE(ok(h.init(c, rows)));
    REQUIRE(ok(d.init(c, rows, pinned, stream)));
    REQUIRE(d.payload_bytes() == h.payload_bytes());
    CHECK(d.pinned() == pinned);
    dmem x(shp.size() * 4), pay(d.payload_bytes());
    std::vector<uint8_t> hp(h.payload_bytes());
    auto step_both = [&](uint64_t step, host::ef_sample_state& host_side) {
      const auto ids = batch_ids(rows, step, 12);
      const auto in = make_step(shp.size(), 20 + step, dtype::f32);
      x.put(in.bytes.data(), in.bytes.size());
      size_t hl = 0, dl = 0;
      REQUIRE(ok(host_side.encode(ids.data(), const_tensor_view(in.bytes.data(), dtype::f32, shp), hp.data(),
                                  hp.size(), step, &hl)));
      REQUIRE(ok(d.encode(ids.data(), const_tensor_view(x.p, dtype::f32, shp), pay.p, pay.n, step, stream, &dl)));
      REQUIRE(dl == hl);
      CHECK(pay.get(dl) == std::vector<uint8_t>(hp.begin(), hp.begin() + hl));
    };
    for (uint64_t step = 0; step < 4; ++step) step_both(step, h);
    CHECK(d.count() == h.count());
    // The device store, copied to host memory, is a host store: same checkpoint bytes.
    std::vector<uint8_t> rows_copy(host::aqsgd_rows_bytes(c));
    testg::check_cuda(cudaMemcpy(rows_copy.data(), d.store().rows.data, rows_copy.size(), cudaMemcpyDefault), "get");
    const host::aqsgd_store view{d.store().table, tensor_view{rows_copy.data(), c.state_type, shape(c.capacity, 64)}};
    std::vector<uint8_t> ck_dev(host::checkpoint_bytes(c, view)), ck_host(host::checkpoint_bytes(c, h.store()));
    host::memory_sink sd{ck_dev.data(), ck_dev.size()}, sh{ck_host.data(), ck_host.size()};
    REQUIRE(ok(host::save_checkpoint(checkpoint_kind::ef_sample_store, c, view, sd)));
    REQUIRE(ok(host::save_checkpoint(checkpoint_kind::ef_sample_store, c, h.store(), sh)));
    CHECK(ck_dev == ck_host);
    // Restored into a fresh host owner, it continues as the device does.
    host::ef_sample_state restored;
    REQUIRE(ok(restored.init(c, rows)));
    REQUIRE(ok(host::restore_checkpoint(ck_dev.data(), ck_dev.size(), checkpoint_kind::ef_sample_store, c,
                                        restored.store())));
    for (uint64_t step = 4; step < 7; ++step) step_both(step, restored);
  }
}

TEST_CASE("CUDA per-sample EF: host-checkable errors give the host's status and leave the store untouched") {
  const host::aqsgd_config c = tstate::store_config("topk:ratio=0.25,scope=row", 32, dtype::f32, 6);
  const uint64_t rows = 4;
  const shape shp(rows, 32);
  host::ef_sample_state h;
  REQUIRE(ok(h.init(c, rows)));
  cuda_ef_side d(c, rows, false);
  dmem x(shp.size() * 4), pay(h.payload_bytes());
  std::vector<uint8_t> hp(h.payload_bytes());
  const auto in = make_step(shp.size(), 3, dtype::f32);
  x.put(in.bytes.data(), in.bytes.size());
  const uint64_t first[4] = {1, 2, 3, 4};
  REQUIRE(ok(h.encode(first, const_tensor_view(in.bytes.data(), dtype::f32, shp), hp.data(), hp.size())));
  REQUIRE(ok(d.encode(first, const_tensor_view(x.p, dtype::f32, shp), pay, 0, nullptr)));
  const auto before = d.snapshot();
  REQUIRE(before == snapshot(h));
  struct bad_batch {
    const char* what;
    uint64_t ids[4];
    status want;
  };
  const bad_batch cases[] = {{"duplicate ids", {1, 9, 9, 2}, status::invalid_argument},
                             {"more new ids than the free capacity", {1, 7, 8, 9}, status::capacity_exceeded}};
  for (const bad_batch& b : cases) {
    CAPTURE_TEXT(b.what);
    CHECK(h.encode(b.ids, const_tensor_view(in.bytes.data(), dtype::f32, shp), hp.data(), hp.size()) == b.want);
    CHECK(d.encode(b.ids, const_tensor_view(x.p, dtype::f32, shp), pay, 0, nullptr) == b.want);
    CHECK(d.snapshot() == before);
  }
  const uint64_t next[4] = {4, 3, 5, 6};
  CHECK(d.encode(next, const_tensor_view(x.p, dtype::f32, shape(rows, 31)), pay, 0, nullptr) == status::shape_mismatch);
  CHECK(d.encode(nullptr, const_tensor_view(x.p, dtype::f32, shp), pay, 0, nullptr) == status::invalid_argument);
  CHECK(pipecodec::cuda::ef_sample_encode(c, d.store, next, const_tensor_view(x.p, dtype::f32, shp), pay.p, pay.n,
                                          d.plan.p, d.plan.n, d.ws.p, d.ws.n - 1, 0, nullptr) ==
        status::workspace_too_small);
  CHECK(pipecodec::cuda::ef_sample_encode(c, d.store, next, const_tensor_view(x.p, dtype::f32, shp), pay.p, pay.n,
                                          d.plan.p, 16, d.ws.p, d.ws.n, 0, nullptr) == status::buffer_too_small);
  CHECK(pipecodec::cuda::ef_sample_encode(c, d.store, next, const_tensor_view(x.p, dtype::f32, shp), x.p, x.n,
                                          d.plan.p, d.plan.n, d.ws.p, d.ws.n, 0, nullptr) == status::aliasing);
  CHECK(d.snapshot() == before);
  // A valid batch afterwards still matches the host.
  size_t hl = 0, dl = 0;
  REQUIRE(ok(h.encode(next, const_tensor_view(in.bytes.data(), dtype::f32, shp), hp.data(), hp.size(), 0, &hl)));
  REQUIRE(ok(d.encode(next, const_tensor_view(x.p, dtype::f32, shp), pay, 0, &dl)));
  CHECK(pay.get(dl) == std::vector<uint8_t>(hp.begin(), hp.begin() + hl));
  CHECK(d.snapshot() == snapshot(h));
}

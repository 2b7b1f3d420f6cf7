// CUDA stateful schemes against the host oracle: EF (CUDA vs host sender), EF21 and AQ-SGD
// in both pairings (host sender + CUDA receiver, CUDA sender + host receiver), every state
// dtype, device and pinned AQ-SGD stores. After every step the payloads must be byte-equal
// and the states bit-equal; rejected payloads must leave the device state untouched and
// report the host's status.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "../common/state_check.hpp"
#include "gpu_backend.hpp"
#include "pipecodec/cuda/aqsgd.cuh"
#include "pipecodec/cuda/ef21.cuh"

using namespace pipecodec;
using tstate::make_step;
using tstate::parse;

namespace {

struct dmem {  // device (or pinned host) bytes, freed at scope end
  void* p = nullptr;
  size_t n = 0;
  bool pinned = false;
  explicit dmem(size_t bytes, bool host_pinned = false) : n(bytes), pinned(host_pinned) {
    testg::check_cuda(host_pinned ? cudaMallocHost(&p, bytes ? bytes : 1) : cudaMalloc(&p, bytes ? bytes : 1),
                      "alloc");
    if (!host_pinned) testg::check_cuda(cudaMemset(p, 0, n), "memset");
    else memset(p, 0, n);
  }
  ~dmem() { pinned ? (void)cudaFreeHost(p) : (void)cudaFree(p); }
  dmem(const dmem&) = delete;
  dmem& operator=(const dmem&) = delete;
  void put(const void* src, size_t bytes) {
    testg::check_cuda(cudaMemcpy(p, src, bytes, cudaMemcpyDefault), "put");
  }
  std::vector<uint8_t> get(size_t bytes) const {
    std::vector<uint8_t> out(bytes);
    testg::check_cuda(cudaDeviceSynchronize(), "sync");
    testg::check_cuda(cudaMemcpy(out.data(), p, bytes, cudaMemcpyDefault), "get");
    return out;
  }
};

// One corruption of a payload: byte `at` set to `value` (value 0: a NaN fp32 at `at`).
struct variant {
  const char* what;
  size_t at;
  uint8_t value;
  size_t len;
  void apply(std::vector<uint8_t>& b) const {
    if (value != 0) {
      b[at] = value;
      return;
    }
    b[at + 2] = 0xC0;
    b[at + 3] = 0x7F;
  }
};

const dtype dtypes[] = {dtype::f32, dtype::f16, dtype::bf16};

// Codecs the state tests run with: fused (quant, resident and tiled groups) and not (others).
const char* state_specs[] = {"quant:bits=4", "quant:bits=3,group=row,scale=absmax,round=stochastic,scale_dtype=fp16",
                             "quant:bits=8,group=tensor", "topk:ratio=0.1,scope=row", "plain:dtype=bf16"};

status device_verdict(const void* ws) {
  status* pinned = nullptr;
  testg::check_cuda(cudaMallocHost(&pinned, sizeof(status)), "pinned status");
  REQUIRE(ok(pipecodec::cuda::read_status(ws, pinned, nullptr)));
  testg::check_cuda(cudaDeviceSynchronize(), "sync");
  const status st = *pinned;
  (void)cudaFreeHost(pinned);
  return st;
}

}  // namespace

TEST_CASE("CUDA EF: payloads and residuals equal the host's, step after step") {
  const shape shp(6, 300);
  const uint64_t n = shp.size();
  for (const char* text : state_specs)
    for (dtype xt : dtypes)
      for (dtype et : dtypes) {
        CAPTURE(text);
        CAPTURE(to_string(xt));
        CAPTURE(to_string(et));
        const spec s = parse(text);
        host::ef_state h;
        REQUIRE(ok(h.init(s, shp, et)));
        const size_t cap = encoded_bytes(s, shp), wsb = pipecodec::cuda::ef_workspace_bytes(s, shp);
        dmem x(n * 4), e(n * dtype_bytes(et)), pay(cap), ws(wsb);
        std::vector<uint8_t> hp(cap);
        for (uint64_t step = 0; step < (testg::quick() ? 2u : 4u); ++step) {
          const auto xs = make_step(n, 100 + step, xt);
          x.put(xs.bytes.data(), xs.bytes.size());
          size_t hl = 0, dl = 0;
          REQUIRE(ok(h.encode(const_tensor_view(xs.bytes.data(), xt, shp), hp.data(), cap, step, &hl)));
          REQUIRE(ok(pipecodec::cuda::ef_encode(s, const_tensor_view(x.p, xt, shp), tensor_view{e.p, et, shp}, pay.p,
                                                cap, ws.p, wsb, step, nullptr, &dl)));
          REQUIRE(hl == dl);
          CHECK(pay.get(dl) == std::vector<uint8_t>(hp.begin(), hp.begin() + hl));
          CHECK(e.get(e.n) == tstate::snapshot(h.residual()));
        }
      }
}

TEST_CASE("CUDA EF21: host and CUDA sides stay bit-equal in both pairings") {
  const shape shp(5, 200);
  const uint64_t n = shp.size();
  for (const char* text : state_specs)
    for (dtype gt : dtypes) {
      CAPTURE(text);
      CAPTURE(to_string(gt));
      const spec s = parse(text);
      const dtype xt = gt == dtype::f32 ? dtype::bf16 : dtype::f32;
      host::ef21_state hs, hr;  // host sender (pairs with the CUDA receiver), host receiver
      REQUIRE(ok(hs.init(s, shp, gt)));
      REQUIRE(ok(hr.init(s, shp, gt)));
      const size_t cap = encoded_bytes(s, shp), wsb = pipecodec::cuda::ef21_workspace_bytes(s, shp);
      const size_t gb = n * dtype_bytes(gt);
      dmem x(n * 4), gs(gb), gr(gb), pay(cap), ws(wsb), out(n * 4);
      std::vector<uint8_t> hp(cap);
      for (uint64_t step = 0; step < (testg::quick() ? 2u : 5u); ++step) {
        CAPTURE(step);
        const auto xs = make_step(n, 7 * step + 1, xt);
        x.put(xs.bytes.data(), xs.bytes.size());
        // CUDA sender -> host receiver.
        size_t dl = 0, hl = 0;
        REQUIRE(ok(pipecodec::cuda::ef21_encode(s, const_tensor_view(x.p, xt, shp), tensor_view{gs.p, gt, shp},
                                                pay.p, cap, ws.p, wsb, step, nullptr, &dl)));
        const auto dev_payload = pay.get(dl);
        REQUIRE(ok(hr.decode(dev_payload.data(), dl)));
        // Host sender -> CUDA receiver (same input: same payload expected).
        REQUIRE(ok(hs.encode(const_tensor_view(xs.bytes.data(), xt, shp), hp.data(), cap, step, &hl)));
        REQUIRE(hl == dl);
        CHECK(dev_payload == std::vector<uint8_t>(hp.begin(), hp.begin() + hl));
        pay.put(hp.data(), hl);
        REQUIRE(ok(pipecodec::cuda::ef21_decode(s.codec, pay.p, hl, tensor_view{gr.p, gt, shp},
                                                tensor_view{out.p, dtype::f32, shp}, ws.p, wsb, nullptr)));
        REQUIRE(device_verdict(ws.p) == status::success);
        const auto want = tstate::snapshot(hs.state());
        CHECK(gs.get(gb) == want);
        CHECK(gr.get(gb) == want);
        CHECK(tstate::snapshot(hr.state()) == want);
        const auto o = out.get(n * 4);
        const auto ref = tstate::to_f32(hs.state());
        CHECK(memcmp(o.data(), ref.data(), n * 4) == 0);
      }
    }
}

TEST_CASE("CUDA EF21 receiver: rejected payloads leave g untouched, with the host's status") {
  const shape shp(4, 250);  // the last chunk has padded lanes
  const spec s = parse("quant:bits=4");
  host::ef21_state hs, hr;
  REQUIRE(ok(hs.init(s, shp, dtype::f16)));
  REQUIRE(ok(hr.init(s, shp, dtype::f16)));
  const size_t cap = encoded_bytes(s, shp), wsb = workspace_bytes(s, shp), gb = shp.size() * 2;
  std::vector<uint8_t> p(cap);
  const auto xs = make_step(shp.size(), 3, dtype::f32);
  REQUIRE(ok(hs.encode(const_tensor_view(xs.bytes.data(), dtype::f32, shp), p.data(), cap)));
  dmem g(gb), pay(cap), ws(wsb);
  const std::vector<uint8_t> before = g.get(gb);
  const variant cases[] = {{"bad magic", 0, 'X', cap}, {"truncated", 0, 'P', cap - 16},
                           {"another codec", detail::off_codec, uint8_t(codec_id::plain), cap},
                           {"NaN scale", 64, 0, cap}, {"padded lane", cap - 1, 1, cap}};
  for (const variant& v : cases) {
    CAPTURE(v.what);
    std::vector<uint8_t> bad = p;
    v.apply(bad);
    const status want = hr.decode(bad.data(), v.len);
    REQUIRE(!ok(want));
    pay.put(bad.data(), cap);
    const status host_side = pipecodec::cuda::ef21_decode(s.codec, pay.p, v.len, tensor_view{g.p, dtype::f16, shp},
                                                          {}, ws.p, wsb, nullptr);
    REQUIRE(ok(host_side));
    CHECK(device_verdict(ws.p) == want);
    CHECK(g.get(gb) == before);
  }
}

namespace {

// One side of AQ-SGD on the device: a device store, or a pinned store with its staging.
struct cuda_aqsgd_side {
  host::aqsgd_config c;
  std::vector<uint64_t> table_mem;
  dmem rows, staging, ws, plan;
  pipecodec::cuda::aqsgd_device_store store;
  cuda_aqsgd_side(const host::aqsgd_config& cfg, uint64_t max_rows, bool pinned)
      : c(cfg),
        table_mem(aqsgd_table_bytes(cfg.capacity) / 8),
        rows(host::aqsgd_rows_bytes(cfg), pinned),
        staging(pinned ? max_rows * cfg.cols * dtype_bytes(cfg.state_type) : 0),
        ws(pipecodec::cuda::aqsgd_workspace_bytes(cfg, max_rows)),
        plan(pipecodec::cuda::aqsgd_plan_bytes(max_rows), true) {
    REQUIRE(ok(init_aqsgd_table(table_mem.data(), table_mem.size() * 8, cfg.capacity, store.table)));
    store.rows = tensor_view{rows.p, cfg.state_type, shape(cfg.capacity, cfg.cols)};
    if (pinned) store.staging = tensor_view{staging.p, cfg.state_type, shape(max_rows, cfg.cols)};
  }
  std::vector<uint8_t> snapshot() const {
    auto out = tstate::bytes_of(store.table.words, aqsgd_table_bytes(c.capacity));
    const auto r = rows.get(host::aqsgd_rows_bytes(c));
    out.insert(out.end(), r.begin(), r.end());
    return out;
  }
};

// Random batch ids: a mix of samples seen before and new ones, no duplicates in a batch.
std::vector<uint64_t> batch_ids(uint64_t rows, uint64_t step, uint64_t pool) {
  std::vector<uint64_t> ids;
  uint64_t s = step * 0x9E3779B97F4A7C15ull + 1;
  while (ids.size() < rows) {
    const uint64_t id = 1000 + testdata::splitmix(s) % pool;
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  }
  return ids;
}

}  // namespace

TEST_CASE("CUDA AQ-SGD: host and CUDA sides stay bit-equal (device and pinned stores)") {
  const uint64_t cols = 160, max_rows = 12;
  const char* codecs[] = {"quant:bits=4,group=row", "quant:bits=2,group=32,round=stochastic",
                          "topk:ratio=0.25,scope=row"};
  for (const char* text : codecs)
    for (dtype t : dtypes)
      for (bool pinned : {false, true}) {
        CAPTURE(text);
        CAPTURE(to_string(t));
        CAPTURE(pinned);
        host::aqsgd_config c;
        c.codec = parse(text);
        c.cols = cols;
        c.state_type = t;
        c.capacity = 40;
        host::aqsgd_state hs, hr;  // host sender (-> CUDA receiver), host receiver (<- CUDA sender)
        REQUIRE(ok(hs.init(c, max_rows)));
        REQUIRE(ok(hr.init(c, max_rows)));
        cuda_aqsgd_side ds(c, max_rows, pinned), dr(c, max_rows, pinned);
        const size_t cap = host::aqsgd_message_bytes(c, max_rows);
        dmem msg(cap), batch(max_rows * cols * 4), out(max_rows * cols * 4);
        std::vector<uint8_t> hm(cap);
        for (uint64_t step = 0; step < (testg::quick() ? 4u : 14u); ++step) {
          CAPTURE(step);
          const uint64_t rows = 3 + step % (max_rows - 2);
          const auto ids = batch_ids(rows, step, 30);
          const bool warm = step == 2;
          const shape shp(rows, cols);
          const auto a = make_step(rows * cols, 50 + step, dtype::f32);
          batch.put(a.bytes.data(), a.bytes.size());
          if (pinned && step % 2 == 1)
            REQUIRE(ok(pipecodec::cuda::aqsgd_prefetch(dr.store, ids.data(), rows, nullptr)));
          size_t dl = 0, hl = 0;
          REQUIRE(ok(pipecodec::cuda::aqsgd_encode(c, ds.store, ids.data(), const_tensor_view(batch.p, dtype::f32, shp),
                                                   warm, msg.p, cap, ds.plan.p, ds.plan.n, ds.ws.p, ds.ws.n, step,
                                                   nullptr, &dl)));
          const auto dev_msg = msg.get(dl);
          REQUIRE(ok(hr.decode(dev_msg.data(), dl, ids.data())));
          REQUIRE(ok(hs.encode(ids.data(), const_tensor_view(a.bytes.data(), dtype::f32, shp), warm, hm.data(), cap,
                               step, &hl)));
          REQUIRE(hl == dl);
          CHECK(dev_msg == std::vector<uint8_t>(hm.begin(), hm.begin() + hl));
          msg.put(hm.data(), hl);
          REQUIRE(ok(pipecodec::cuda::aqsgd_decode(c, dr.store, ids.data(), rows, warm, msg.p, hl,
                                                   tensor_view{out.p, dtype::f32, shp}, dr.plan.p, dr.plan.n, dr.ws.p,
                                                   dr.ws.n, nullptr)));
          REQUIRE(device_verdict(dr.ws.p) == status::success);
          REQUIRE(ok(pipecodec::cuda::aqsgd_commit(dr.store, dr.plan.p)));
          const auto want = tstate::snapshot(hs);
          CHECK(ds.snapshot() == want);
          CHECK(dr.snapshot() == want);
          CHECK(tstate::snapshot(hr) == want);
        }
      }
}

TEST_CASE("CUDA AQ-SGD receiver: rejected messages leave the store untouched") {
  const uint64_t cols = 64, rows = 6;
  host::aqsgd_config c;
  c.codec = parse("quant:bits=4,group=row");
  c.cols = cols;
  c.state_type = dtype::bf16;
  c.capacity = 16;
  for (bool pinned : {false, true}) {
    CAPTURE(pinned);
    host::aqsgd_state hs, hr;
    REQUIRE(ok(hs.init(c, rows)));
    REQUIRE(ok(hr.init(c, rows)));
    cuda_aqsgd_side dr(c, rows, pinned);
    const size_t cap = host::aqsgd_message_bytes(c, rows);
    dmem msg(cap);
    std::vector<uint8_t> hm(cap);
    std::vector<uint64_t> ids = {5, 6, 7, 8, 9, 10};
    const shape shp(rows, cols);
    for (uint64_t step = 0; step < 2; ++step) {  // warm rows, then delta rows
      const auto a = make_step(rows * cols, 9 + step, dtype::f32);
      size_t hl = 0;
      REQUIRE(ok(hs.encode(ids.data(), const_tensor_view(a.bytes.data(), dtype::f32, shp), false, hm.data(), cap,
                           step, &hl)));
      if (step == 0) {
        REQUIRE(ok(hr.decode(hm.data(), hl, ids.data())));
        msg.put(hm.data(), hl);
        REQUIRE(ok(pipecodec::cuda::aqsgd_decode(c, dr.store, ids.data(), rows, false, msg.p, hl, {}, dr.plan.p,
                                                 dr.plan.n, dr.ws.p, dr.ws.n, nullptr)));
        REQUIRE(device_verdict(dr.ws.p) == status::success);
        REQUIRE(ok(pipecodec::cuda::aqsgd_commit(dr.store, dr.plan.p)));
        continue;
      }
      const auto before = dr.snapshot();
      REQUIRE(before == tstate::snapshot(hr));
      const uint64_t delta_off = 64 + 16;  // every row is a delta row: the delta part follows the kinds
      const variant cases[] = {{"bad magic", 0, 'X', hl}, {"truncated", 0, 'P', hl - 16},
                               {"row kind", 64 + 1, 7, hl}, {"sample id", hl - 48 + 8, 0x55, hl},
                               {"delta scale", delta_off + 64, 0, hl}};
      for (const variant& v : cases) {
        CAPTURE(v.what);
        std::vector<uint8_t> bad(hm.begin(), hm.begin() + hl);
        v.apply(bad);
        const status want = hr.decode(bad.data(), v.len, ids.data());
        REQUIRE(!ok(want));
        msg.put(bad.data(), hl);
        REQUIRE(ok(pipecodec::cuda::aqsgd_decode(c, dr.store, ids.data(), rows, false, msg.p, v.len, {}, dr.plan.p,
                                                 dr.plan.n, dr.ws.p, dr.ws.n, nullptr)));
        CHECK(device_verdict(dr.ws.p) == want);
        CHECK(dr.snapshot() == before);
      }
      // Expected ids that differ from the message's: id_mismatch, nothing written.
      std::vector<uint64_t> other = ids;
      other[2] = 99;
      msg.put(hm.data(), hl);
      REQUIRE(ok(pipecodec::cuda::aqsgd_decode(c, dr.store, other.data(), rows, false, msg.p, hl, {}, dr.plan.p,
                                               dr.plan.n, dr.ws.p, dr.ws.n, nullptr)));
      CHECK(device_verdict(dr.ws.p) == status::id_mismatch);
      CHECK(dr.snapshot() == before);
    }
  }
}

TEST_CASE("CUDA AQ-SGD memory report") {
  host::aqsgd_config c;
  c.codec = parse("quant:bits=4,group=row");
  c.cols = 1024;
  c.state_type = dtype::f16;
  c.capacity = 1000;
  const auto dev = pipecodec::cuda::aqsgd_memory(c, 32, false);
  const auto pin = pipecodec::cuda::aqsgd_memory(c, 32, true);
  CHECK(dev.rows_bytes == 1000 * 1024 * 2);
  CHECK(dev.staging_bytes == 0);
  CHECK(pin.staging_bytes == 32 * 1024 * 2);
  CHECK(dev.bytes_per_sample == host::aqsgd_memory_use(c, 0).bytes_per_sample);
  CHECK(dev.bytes_per_sample >= 1024 * 2 + 8);
}

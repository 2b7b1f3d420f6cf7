// CUDA AQ-SGD against the host oracle in both pairings, device and pinned stores (with
// prefetch), every state dtype, random batches of repeated and new ids and a warm-up step:
// messages byte-equal, table and rows byte-equal after every step; rejected messages leave
// the store untouched with the host's status; the memory report.
#include "../common/print.hpp"
#include "store_side.hpp"

using namespace tgs;
using tstate::make_step;
using tstate::parse;

namespace {

// One side of AQ-SGD on the device: a device store, or a pinned store with its staging.
struct cuda_aqsgd_side : cuda_store_side {
  cuda_aqsgd_side(const host::aqsgd_config& cfg, uint64_t max_rows, bool pinned)
      : cuda_store_side(cfg, max_rows, pinned, pipecodec::cuda::aqsgd_workspace_bytes(cfg, max_rows)) {}
};

void check_aqsgd(const char* text, dtype t, bool pinned, uint64_t steps) {
  CAPTURE_TEXT(text);
  CAPTURE_TEXT(to_string(t));
  CAPTURE(pinned);
  const uint64_t cols = 160, max_rows = 12;
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
  for (uint64_t step = 0; step < steps; ++step) {
    CAPTURE(step);
    const uint64_t rows = 3 + step % (max_rows - 2);
    const auto ids = batch_ids(rows, step, 30);
    const bool warm = step == 2;
    const shape shp(rows, cols);
    const auto a = make_step(rows * cols, 50 + step, dtype::f32);
    batch.put(a.bytes.data(), a.bytes.size());
    if (pinned && step % 2 == 1) REQUIRE(ok(pipecodec::cuda::aqsgd_prefetch(dr.store, ids.data(), rows, nullptr)));
    size_t dl = 0, hl = 0;
    REQUIRE(ok(pipecodec::cuda::aqsgd_encode(c, ds.store, ids.data(), const_tensor_view(batch.p, dtype::f32, shp), warm,
                                             msg.p, cap, ds.plan.p, ds.plan.n, ds.ws.p, ds.ws.n, step, nullptr, &dl)));
    const auto dev_msg = msg.get(dl);
    REQUIRE(ok(hr.decode(dev_msg.data(), dl, ids.data())));
    REQUIRE(ok(hs.encode(ids.data(), const_tensor_view(a.bytes.data(), dtype::f32, shp), warm, hm.data(), cap, step,
                         &hl)));
    REQUIRE(hl == dl);
    CHECK(dev_msg == std::vector<uint8_t>(hm.begin(), hm.begin() + hl));
    msg.put(hm.data(), hl);
    REQUIRE(ok(pipecodec::cuda::aqsgd_decode(c, dr.store, ids.data(), rows, warm, msg.p, hl,
                                             tensor_view{out.p, dtype::f32, shp}, dr.plan.p, dr.plan.n, dr.ws.p, dr.ws.n,
                                             nullptr)));
    REQUIRE(device_verdict(dr.ws.p) == status::success);
    REQUIRE(ok(pipecodec::cuda::aqsgd_commit(dr.store, dr.plan.p)));
    const auto want = tstate::snapshot(hs);
    CHECK(ds.snapshot() == want);
    CHECK(dr.snapshot() == want);
    CHECK(tstate::snapshot(hr) == want);
  }
}

}  // namespace

TEST_CASE("CUDA AQ-SGD: host and CUDA sides stay bit-equal (device and pinned stores)") {
  // resident groups, stochastic rounding, tiled whole-part groups, a non-fused codec
  const char* codecs[] = {"quant:bits=4,group=row", "quant:bits=2,group=32,round=stochastic",
                          "quant:bits=8,group=tensor", "topk:ratio=0.25,scope=row", "mx:format=fp6_e2m3",
                          "quant:bits=3,group=row,rotate=hadamard,rotate_block=32",
                          "quant:bits=2,group=row,outliers=3,round=stochastic"};
  for (const char* text : codecs)
    for (dtype t : dtypes)
      for (bool pinned : {false, true}) check_aqsgd(text, t, pinned, testg::thin() ? 3 : testg::quick() ? 4 : 14);
}

TEST_CASE("CUDA AQ-SGD: every bit width and rounding, resident and tiled groups, outlier keeping") {
  // Three steps: the first sends whole rows, the third is a warm-up step, the others deltas.
  for (const std::string& text : fused_quant_sweep()) check_aqsgd(text.c_str(), dtype::f16, false, 4);
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
    host::aqsgd_state hs, hr, narrow;  // narrow: a sender with other parameters (2 bits)
    host::aqsgd_config c2 = c;
    c2.codec = parse("quant:bits=2,group=row");
    REQUIRE(ok(hs.init(c, rows)));
    REQUIRE(ok(hr.init(c, rows)));
    REQUIRE(ok(narrow.init(c2, rows)));
    cuda_aqsgd_side dr(c, rows, pinned);
    const size_t cap = host::aqsgd_message_bytes(c, rows);
    dmem msg(cap);
    std::vector<uint8_t> hm(cap), nm(cap);
    std::vector<uint64_t> ids = {5, 6, 7, 8, 9, 10};
    const shape shp(rows, cols);
    for (uint64_t step = 0; step < 2; ++step) {  // warm rows, then delta rows
      const auto a = make_step(rows * cols, 9 + step, dtype::f32);
      size_t hl = 0, nl = 0;
      REQUIRE(ok(hs.encode(ids.data(), const_tensor_view(a.bytes.data(), dtype::f32, shp), false, hm.data(), cap,
                           step, &hl)));
      REQUIRE(ok(narrow.encode(ids.data(), const_tensor_view(a.bytes.data(), dtype::f32, shp), false, nm.data(), cap,
                               step, &nl)));
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
        CAPTURE_TEXT(v.what);
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
      // The narrow sender's message: the parts are not the sizes the plan predicts.
      REQUIRE(hr.decode(nm.data(), nl, ids.data()) == status::state_mismatch);
      msg.put(nm.data(), nl);
      REQUIRE(ok(pipecodec::cuda::aqsgd_decode(c, dr.store, ids.data(), rows, false, msg.p, nl, {}, dr.plan.p,
                                               dr.plan.n, dr.ws.p, dr.ws.n, nullptr)));
      CHECK(device_verdict(dr.ws.p) == status::state_mismatch);
      CHECK(dr.snapshot() == before);
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

// CUDA endpoints (policy/cuda_endpoint.cuh) and state owners (cuda/state_owners.cuh) against
// the host ones: the same policy and steps (warm-up, compressed, inference) give equal payload
// bytes and equal receiver outputs in both pairings (host sender -> CUDA receiver, CUDA
// sender -> host receiver), the shared-mask backward pair included; a hostile payload gives
// the host's status through last_status() and leaves the output and the state untouched.
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "../common/print.hpp"
#include "pipecodec/policy/cuda_endpoint.cuh"
#include "../common/policy_check.hpp"
#include "state_common.hpp"

using namespace tgs;
using tstate::make_step;

using tpolicy::policy_of;

// Like the host ones, the CUDA endpoints and owners can be moved (e.g. kept in a vector).
static_assert(std::is_move_constructible_v<pipecodec::cuda::sender_endpoint> &&
              std::is_move_constructible_v<pipecodec::cuda::receiver_endpoint>);

namespace {

// The host endpoints keep per-sample stores on the host whatever the CUDA side's store.
policy host_twin(policy p) {
  p.all.fwd.state.aqsgd.store = store_location::host;
  p.all.fwd.state.ef.store = store_location::host;
  return p;
}

struct stream_owner {
  cudaStream_t s = nullptr;
  stream_owner() { testg::check_cuda(cudaStreamCreate(&s), "stream"); }  // blocking: orders with cudaMemcpy
  ~stream_owner() { (void)cudaStreamDestroy(s); }
};

// Both backends' sender and receiver of boundary 0, fwd, for batches of `shp`.
struct twin_link {
  shape shp;
  stream_owner str;
  host::sender_endpoint htx;
  host::receiver_endpoint hrx;
  pipecodec::cuda::sender_endpoint dtx;
  pipecodec::cuda::receiver_endpoint drx;
  size_t cap = 0;
  dmem in, wire, out;

  twin_link(const char* text, shape s) : shp(s), in(s.size() * 4), wire(1 << 20), out(s.size() * 4) {
    const policy p = policy_of(text);
    host::endpoint_options ho;
    ho.max_shape = s;
    pipecodec::cuda::endpoint_options co;
    co.max_shape = s;
    co.stream = str.s;
    REQUIRE(ok(htx.init(host_twin(p), 0, direction::fwd, ho)));
    REQUIRE(ok(hrx.init(host_twin(p), 0, direction::fwd, ho)));
    REQUIRE(ok(dtx.init(p, 0, direction::fwd, co)));
    REQUIRE(ok(drx.init(p, 0, direction::fwd, co)));
    cap = htx.encoded_bytes();
    REQUIRE(dtx.encoded_bytes() == cap);
    REQUIRE(drx.encoded_bytes() == cap);
    REQUIRE(cap <= wire.n);
  }
  // CUDA receiver on `bytes`: the host-side status, else the device's verdict; output bytes.
  status cuda_receive(const std::vector<uint8_t>& bytes, size_t len, const step_info& at, std::vector<uint8_t>& y) {
    wire.put(bytes.data(), bytes.size());
    status st = drx.decode(wire.p, len, tensor_view{out.p, dtype::f32, shp}, at, str.s);
    if (ok(st)) st = drx.last_status();
    y = out.get(shp.size() * 4);
    return st;
  }
};

step_info step_at(uint64_t step, bool training, const uint64_t* ids) {
  step_info at;
  at.step = step;
  at.training = training;
  at.sample_ids = ids;
  at.seed = 7 * step + 1;
  return at;
}

// Batch ids of `rows` distinct samples that overlap with the previous step's.
std::vector<uint64_t> ids_of(uint64_t step, uint64_t rows) {
  std::vector<uint64_t> ids(rows);
  for (uint64_t r = 0; r < rows; ++r) ids[r] = 1 + (3 * step + r) % 24;
  return ids;
}

}  // namespace

TEST_CASE("CUDA endpoints: payloads and outputs equal the host endpoints' in both pairings") {
  const shape shp(8, 96);
  const char* policies[] = {
      "fwd=quant:bits=4,round=stochastic; warmup=2",
      "fwd=topk:ratio=0.1,scope=row; warmup=1; infer=plain",
      "fwd=quant:bits=2+ef21; warmup=2",
      "fwd=quant:bits=4+ef(dtype=fp16); warmup=1",
      "fwd=quant:bits=3,group=row+aqsgd(store=device,capacity=32,dtype=bf16); warmup=1",
      "fwd=topk:ratio=0.25,scope=row+aqsgd(store=host,capacity=32); warmup=1",
      "fwd=quant:bits=2,group=row+ef(scope=sample,store=device,dtype=fp16,capacity=32); warmup=1",
      "fwd=topk:ratio=0.2,scope=row+ef(scope=sample,capacity=32)",
      "fwd=lowrank:rank=3; warmup=1",  // the sender's warm Q; inference encodes cold
      "fwd=lowrank:rank=2+ef(dtype=bf16)",
      // rng=sample: the CUDA sender hands the step's ids to the kernels from pinned memory
      "fwd=quant:bits=3,group=row,round=stochastic,rng=sample; warmup=1",
      "fwd=randk:k=9,scope=row,rng=sample+ef(dtype=fp16)",
      "fwd=mx:format=fp4_e2m1,round=stochastic,rng=sample+ef21",
      "fwd=quant:bits=2,group=32,round=stochastic,rng=sample+aqsgd(store=device,capacity=32); warmup=1",
      "fwd=fp8:group=row,round=stochastic,rng=sample+ef(scope=sample,capacity=32)",
  };
  for (const char* text : policies) {
    CAPTURE_TEXT(text);
    twin_link L(text, shp);
    for (uint64_t step = 0; step < 7; ++step) {
      CAPTURE(step);
      const bool training = step < 5;  // then two inference steps
      const auto ids = ids_of(step, shp.rows);
      const step_info at = step_at(step, training, ids.data());
      const auto x = make_step(shp.size(), 100 + step, dtype::f32);
      // host sender
      std::vector<uint8_t> hp(L.cap);
      size_t hl = 0;
      REQUIRE(ok(L.htx.encode(const_tensor_view(x.bytes.data(), dtype::f32, shp), at, hp.data(), hp.size(), &hl)));
      // CUDA sender
      L.in.put(x.bytes.data(), x.bytes.size());
      size_t dl = 0;
      REQUIRE(ok(L.dtx.encode(const_tensor_view(L.in.p, dtype::f32, shp), at, L.wire.p, L.cap, L.str.s, &dl)));
      REQUIRE(dl == hl);
      const auto dp = L.wire.get(dl);
      CHECK(dp == std::vector<uint8_t>(hp.begin(), hp.begin() + hl));
      // CUDA sender -> host receiver
      std::vector<uint8_t> hy(shp.size() * 4);
      REQUIRE(ok(L.hrx.decode(dp.data(), dl, tensor_view{hy.data(), dtype::f32, shp}, at)));
      // host sender -> CUDA receiver
      std::vector<uint8_t> dy;
      REQUIRE(L.cuda_receive(hp, hl, at, dy) == status::success);
      CHECK(dy == hy);
    }
    CHECK(L.dtx.counters().calls == 7);
    CHECK(L.drx.counters().calls == 7);
    CHECK(L.drx.counters().bytes_in == L.hrx.counters().bytes_in);
    CHECK(L.dtx.counters().bytes_out == L.htx.counters().bytes_out);
  }
}

TEST_CASE("CUDA receiver endpoint: a hostile payload gives the host's status, output and state untouched") {
  const shape shp(4, 64);
  const char* policies[] = {"fwd=quant:bits=4", "fwd=quant:bits=4+ef21",
                            "fwd=quant:bits=4,group=row+aqsgd(store=device,capacity=16)"};
  for (const char* text : policies) {
    CAPTURE_TEXT(text);
    twin_link L(text, shp);
    for (uint64_t step = 0; step < 3; ++step) {
      CAPTURE(step);
      const std::vector<uint64_t> ids = {11, 12, 13, 14};
      const step_info at = step_at(step, true, ids.data());
      const auto x = make_step(shp.size(), 40 + step, dtype::f32);
      std::vector<uint8_t> hp(L.cap);
      size_t hl = 0;
      REQUIRE(ok(L.htx.encode(const_tensor_view(x.bytes.data(), dtype::f32, shp), at, hp.data(), hp.size(), &hl)));
      if (step == 1) {  // corrupt copies first: rejected by both receivers, nothing changes
        const variant cases[] = {{"bad magic", 0, 'X', hl}, {"truncated", 0, 'P', hl - 16}};
        for (const variant& v : cases) {
          CAPTURE_TEXT(v.what);
          std::vector<uint8_t> bad(hp.begin(), hp.begin() + hl), junk(shp.size() * 4, 0x5A), hy = junk;
          v.apply(bad);
          const status want = L.hrx.decode(bad.data(), v.len, tensor_view{hy.data(), dtype::f32, shp}, at);
          REQUIRE(!ok(want));
          L.out.put(junk.data(), junk.size());
          std::vector<uint8_t> dy;
          CHECK(L.cuda_receive(bad, v.len, at, dy) == want);
          CHECK(dy == junk);
        }
      }
      std::vector<uint8_t> hy(shp.size() * 4), dy;
      REQUIRE(ok(L.hrx.decode(hp.data(), hl, tensor_view{hy.data(), dtype::f32, shp}, at)));
      REQUIRE(L.cuda_receive(hp, hl, at, dy) == status::success);
      CHECK(dy == hy);  // the state was untouched by the rejected payloads
    }
  }
}

namespace {
void check_shared_mask_pair(const shape& shp);
}

// Above about 82K elements the decode used to ask for more workspace than workspace_bytes()
// of a shared-mask spec gives.
TEST_CASE("CUDA endpoints: shared-mask backward equals the host's, the forward payload as mask") {
  for (const shape& shp : {shape(8, 96), shape(8, testg::sized(16384, 12288)), shape(1, 100000)}) {
    CAPTURE(shp.rows);
    CAPTURE(shp.cols);
    check_shared_mask_pair(shp);
  }
}

namespace {
void check_shared_mask_pair(const shape& shp) {
  const policy p = policy_of("fwd=topk:ratio=0.1,scope=row; bwd=topk:ratio=0.1,scope=row,mask=shared; warmup=1");
  stream_owner str;
  host::endpoint_options ho;
  ho.max_shape = shp;
  pipecodec::cuda::endpoint_options co;
  co.max_shape = shp;
  co.stream = str.s;
  host::sender_endpoint hf, hb;
  host::receiver_endpoint hbr;
  pipecodec::cuda::sender_endpoint db;
  pipecodec::cuda::receiver_endpoint dbr;
  REQUIRE(ok(hf.init(p, 0, direction::fwd, ho)));
  REQUIRE(ok(hb.init(p, 0, direction::bwd, ho)));
  REQUIRE(ok(hbr.init(p, 0, direction::bwd, ho)));
  REQUIRE(ok(db.init(p, 0, direction::bwd, co)));
  REQUIRE(ok(dbr.init(p, 0, direction::bwd, co)));
  CHECK(db.needs_mask());
  dmem mask(hf.encoded_bytes()), g(shp.size() * 4), wire(hb.encoded_bytes()), out(shp.size() * 4);
  for (uint64_t step = 0; step < 3; ++step) {  // step 0: warm-up, plain both ways
    CAPTURE(step);
    const step_info at = step_at(step, true, nullptr);
    const auto a = make_step(shp.size(), 200 + step, dtype::f32), grad = make_step(shp.size(), 300 + step, dtype::f32);
    std::vector<uint8_t> fp(hf.encoded_bytes()), hp(hb.encoded_bytes()), hy(shp.size() * 4);
    size_t fl = 0, hl = 0, dl = 0;
    REQUIRE(ok(hf.encode(const_tensor_view(a.bytes.data(), dtype::f32, shp), at, fp.data(), fp.size(), &fl)));
    mask.put(fp.data(), fl);
    REQUIRE(ok(hb.encode(const_tensor_view(grad.bytes.data(), dtype::f32, shp), at, hp.data(), hp.size(), &hl,
                         {fp.data(), fl})));
    REQUIRE(ok(hbr.decode(hp.data(), hl, tensor_view{hy.data(), dtype::f32, shp}, at, {fp.data(), fl})));
    g.put(grad.bytes.data(), grad.bytes.size());
    REQUIRE(ok(db.encode(const_tensor_view(g.p, dtype::f32, shp), at, wire.p, wire.n, str.s, &dl, {mask.p, fl})));
    REQUIRE(dl == hl);
    CHECK(wire.get(dl) == std::vector<uint8_t>(hp.begin(), hp.begin() + hl));
    wire.put(hp.data(), hl);
    REQUIRE(ok(dbr.decode(wire.p, hl, tensor_view{out.p, dtype::f32, shp}, at, str.s, {mask.p, fl})));
    REQUIRE(dbr.last_status() == status::success);
    CHECK(out.get(shp.size() * 4) == hy);
  }
  CHECK(db.encode(const_tensor_view(g.p, dtype::f32, shp), step_at(2, true, nullptr), wire.p, wire.n, str.s) ==
        status::invalid_argument);
}
}  // namespace

TEST_CASE("CUDA state owners: EF residual (and lowrank's Q) and AQ-SGD store equal the host owners'") {
  const shape shp(6, 128);
  stream_owner str;
  for (const char* text : {"quant:bits=3,group=row", "lowrank:rank=2"}) {
  CAPTURE_TEXT(text);
  const spec s = tstate::parse(text);
  host::ef_state he;
  pipecodec::cuda::ef_state de;
  REQUIRE(ok(he.init(s, shp, dtype::bf16)));
  REQUIRE(ok(de.init(s, shp, dtype::bf16, str.s)));
  dmem in(shp.size() * 4), pay(he.payload_bytes());
  std::vector<uint8_t> hp(he.payload_bytes());
  for (uint64_t step = 0; step < 3; ++step) {
    const auto x = make_step(shp.size(), 7 + step, dtype::f32);
    size_t hl = 0, dl = 0;
    REQUIRE(ok(he.encode(const_tensor_view(x.bytes.data(), dtype::f32, shp), hp.data(), hp.size(), step, &hl)));
    in.put(x.bytes.data(), x.bytes.size());
    REQUIRE(ok(de.encode(const_tensor_view(in.p, dtype::f32, shp), pay.p, pay.n, step, str.s, &dl)));
    REQUIRE(dl == hl);
    CHECK(pay.get(dl) == hp);
    std::vector<uint8_t> residual(shp.size() * 2);
    testg::check_cuda(cudaMemcpy(residual.data(), de.residual().data, residual.size(), cudaMemcpyDefault), "get");
    CHECK(residual == tstate::snapshot(he.residual()));
    std::vector<uint8_t> q(size_t(lowrank_state_shape(s, shp).size()) * 4);
    CHECK(de.lowrank_q().shp == he.lowrank_q().shp);
    if (q.empty()) continue;
    testg::check_cuda(cudaMemcpy(q.data(), de.lowrank_q().data, q.size(), cudaMemcpyDefault), "get q");
    CHECK(q == tstate::snapshot(he.lowrank_q()));
  }
  }
  host::aqsgd_config c = tstate::store_config("quant:bits=4,group=row", 128, dtype::f16, 20);
  for (bool pinned : {false, true}) {
    pipecodec::cuda::aqsgd_state da;
    REQUIRE(ok(da.init(c, 6, pinned, str.s)));
    const auto m = da.memory();
    CHECK(m.rows_bytes == 20 * 128 * 2);
    CHECK(m.staging_bytes == (pinned ? 6 * 128 * 2 : 0));
    CHECK(m.plan_bytes == 2 * pipecodec::cuda::aqsgd_plan_bytes(6));
    CHECK(da.pinned() == pinned);
    CHECK(da.count() == 0);
  }
}

// The device arithmetic check (policy/arithmetic_check.cuh) and the endpoints' init that runs
// it: success where the device computes as the host does; device_math_mismatch where it
// flushes subnormals, which the emulated GPU does with PIPECODEC_EMU_FTZ=1 (the effect of
// --use_fast_math or -ftz=true; meson test 'device arithmetic check (emulated, subnormals
// flushed)' runs these two cases so).
namespace {

status expected_arithmetic() {
  const char* ftz = std::getenv("PIPECODEC_EMU_FTZ");
  return ftz != nullptr && std::strcmp(ftz, "1") == 0 ? status::device_math_mismatch : status::success;
}

}  // namespace

TEST_CASE("device arithmetic check: the device's payloads and values against the host's") {
  const size_t need = pipecodec::cuda::arithmetic_check_bytes();
  dmem scratch(need + 16);
  cudaStream_t s = nullptr;
  testg::check_cuda(cudaStreamCreate(&s), "stream");
  CHECK(pipecodec::cuda::check_device_arithmetic(scratch.p, need, s) == expected_arithmetic());
  // The legacy default stream, and more scratch than needed.
  CHECK(pipecodec::cuda::check_device_arithmetic(scratch.p, need + 16, nullptr) == expected_arithmetic());
  CHECK(pipecodec::cuda::check_device_arithmetic(nullptr, need, s) == status::invalid_argument);
  CHECK(pipecodec::cuda::check_device_arithmetic(scratch.p, need - 1, s) == status::invalid_argument);
  CHECK(pipecodec::cuda::check_device_arithmetic(static_cast<uint8_t*>(scratch.p) + 8, need, s) == status::misaligned);
  testg::check_cuda(cudaStreamDestroy(s), "stream");
}

TEST_CASE("device arithmetic check: CUDA endpoints' init runs it") {
  const policy p = policy_of("fwd=quant:bits=4,group=64; bwd=topk:ratio=0.1");
  pipecodec::cuda::endpoint_options o;
  o.max_shape = shape(4, 128);
  for (direction d : {direction::fwd, direction::bwd}) {
    pipecodec::cuda::sender_endpoint tx;
    pipecodec::cuda::receiver_endpoint rx;
    CHECK(tx.init(p, 0, d, o) == expected_arithmetic());
    CHECK(rx.init(p, 0, d, o) == expected_arithmetic());
  }
}

// CUDA EF21 against the host oracle in both pairings (host sender + CUDA receiver, CUDA
// sender + host receiver): payloads byte-equal, g bit-equal on all four sides after every
// step, every state dtype; rejected payloads leave g untouched with the host's status.
#include "../common/print.hpp"
#include "pipecodec/cuda/ef21.cuh"
#include "state_common.hpp"

using namespace tgs;
using tstate::make_step;
using tstate::parse;

namespace {

void check_ef21(const char* text, dtype gt, uint64_t steps) {
  CAPTURE_TEXT(text);
  CAPTURE_TEXT(to_string(gt));
  const shape shp(5, 200);
  const uint64_t n = shp.size();
  const spec s = parse(text);
  const dtype xt = gt == dtype::f32 ? dtype::bf16 : dtype::f32;
  host::ef21_state hs, hr;  // host sender (pairs with the CUDA receiver), host receiver
  REQUIRE(ok(hs.init(s, shp, gt)));
  REQUIRE(ok(hr.init(s, shp, gt)));
  const size_t cap = encoded_bytes(s, shp), wsb = pipecodec::cuda::ef21_workspace_bytes(s, shp);
  const size_t gb = n * dtype_bytes(gt);
  dmem x(n * 4), gs(gb), gr(gb), pay(cap), ws(wsb), out(n * 4);
  std::vector<uint8_t> hp(cap);
  for (uint64_t step = 0; step < steps; ++step) {
    CAPTURE(step);
    const auto xs = make_step(n, 7 * step + 1, xt);
    x.put(xs.bytes.data(), xs.bytes.size());
    // CUDA sender -> host receiver.
    size_t dl = 0, hl = 0;
    REQUIRE(ok(pipecodec::cuda::ef21_encode(s, const_tensor_view(x.p, xt, shp), tensor_view{gs.p, gt, shp}, pay.p,
                                            cap, ws.p, wsb, step, nullptr, &dl)));
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

}  // namespace

TEST_CASE("CUDA EF21: host and CUDA sides stay bit-equal in both pairings") {
  for (const char* text : state_specs)
    for (dtype gt : dtypes) check_ef21(text, gt, testg::quick() ? 2 : 5);
}

TEST_CASE("CUDA EF21: every bit width and rounding, resident and tiled groups, outlier keeping") {
  for (const std::string& text : fused_quant_sweep()) check_ef21(text.c_str(), dtype::f16, 2);
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
    CAPTURE_TEXT(v.what);
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


// Buffers a step writes may not overlap any other of its buffers, on either backend: x and
// the workspace scratch (EF, EF21 senders), g or out and the workspace (EF21 receiver).
TEST_CASE("CUDA EF and EF21 reject overlapping buffers as the host does") {
  const shape shp(4, 256);
  const uint64_t n = shp.size();
  const spec s = tstate::parse("topk:ratio=0.25,scope=row");  // non-fused: uses the fp32 scratch
  const size_t cap = encoded_bytes(s, shp), wsb = pipecodec::cuda::ef_workspace_bytes(s, shp);
  const size_t cap16 = detail::align16(cap), ws16 = detail::align16(wsb);
  dmem dev(4 * n + cap16 + ws16 + 4 * n);  // one allocation the cases carve overlapping views from
  std::vector<float> host(dev.n / 4);
  for (bool on_device : {false, true}) {
    CAPTURE(on_device);
    uint8_t* base = on_device ? static_cast<uint8_t*>(dev.p) : reinterpret_cast<uint8_t*>(host.data());
    uint8_t* state = base;                  // n fp32
    uint8_t* payload = state + 4 * n;       // cap
    uint8_t* ws = payload + cap16;          // wsb
    uint8_t* other = ws + ws16;             // n fp32
    const tensor_view g{state, dtype::f32, shp};
    // x inside the workspace: read back after the scratch is written.
    const const_tensor_view x_in_ws(ws, dtype::f32, shp), x(other, dtype::f32, shp);
    auto ef = [&](const_tensor_view in) {
      return on_device ? pipecodec::cuda::ef_encode(s, in, g, payload, cap, ws, wsb, 0, nullptr)
                       : host::ef_encode(s, in, g, payload, cap, ws, wsb, 0);
    };
    auto ef21 = [&](const_tensor_view in) {
      return on_device ? pipecodec::cuda::ef21_encode(s, in, g, payload, cap, ws, wsb, 0, nullptr)
                       : host::ef21_encode(s, in, g, payload, cap, ws, wsb, 0);
    };
    CHECK(ef(x_in_ws) == status::aliasing);
    CHECK(ef21(x_in_ws) == status::aliasing);
    CHECK(ok(ef(x)));
    // Receiver: out or g inside the workspace, out on g.
    auto recv = [&](tensor_view gv, tensor_view out) {
      return on_device ? pipecodec::cuda::ef21_decode(s.codec, payload, cap, gv, out, ws, wsb, nullptr)
                       : host::ef21_decode(s.codec, payload, cap, gv, out, ws, wsb);
    };
    CHECK(recv(g, tensor_view{ws, dtype::f32, shp}) == status::aliasing);
    CHECK(recv(tensor_view{ws, dtype::f32, shp}, {}) == status::aliasing);
    CHECK(recv(g, tensor_view{state + 4, dtype::f32, shp}) == status::aliasing);
  }
  testg::check_cuda(cudaDeviceSynchronize(), "sync");
}

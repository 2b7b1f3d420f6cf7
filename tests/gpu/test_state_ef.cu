// CUDA classic EF against the host oracle: payload bytes and residual bytes equal after
// every step, for fused (quantization) and non-fused (TopK, plain) codecs, every input and
// residual dtype.
#include "../common/print.hpp"
#include "pipecodec/cuda/ef.cuh"
#include "state_common.hpp"

using namespace tgs;
using tstate::make_step;
using tstate::parse;

namespace {

void check_ef(const char* text, dtype xt, dtype et, uint64_t steps) {
  CAPTURE_TEXT(text);
  CAPTURE_TEXT(to_string(xt));
  CAPTURE_TEXT(to_string(et));
  const shape shp(6, 300);
  const uint64_t n = shp.size();
  const spec s = parse(text);
  host::ef_state h;
  REQUIRE(ok(h.init(s, shp, et)));
  const size_t cap = encoded_bytes(s, shp), wsb = pipecodec::cuda::ef_workspace_bytes(s, shp);
  dmem x(n * 4), e(n * dtype_bytes(et)), pay(cap), ws(wsb);
  std::vector<uint8_t> hp(cap);
  for (uint64_t step = 0; step < steps; ++step) {
    const auto xs = make_step(n, 100 + step, xt);
    x.put(xs.bytes.data(), xs.bytes.size());
    size_t hl = 0, dl = 0;
    REQUIRE(ok(h.encode(const_tensor_view(xs.bytes.data(), xt, shp), hp.data(), cap, step, &hl)));
    REQUIRE(ok(pipecodec::cuda::ef_encode(s, const_tensor_view(x.p, xt, shp), tensor_view{e.p, et, shp}, pay.p, cap,
                                          ws.p, wsb, step, nullptr, &dl)));
    REQUIRE(hl == dl);
    CHECK(pay.get(dl) == std::vector<uint8_t>(hp.begin(), hp.begin() + hl));
    CHECK(e.get(e.n) == tstate::snapshot(h.residual()));
  }
}

}  // namespace

TEST_CASE("CUDA EF: payloads and residuals equal the host's, step after step") {
  for (const char* text : state_specs)
    for (dtype xt : dtypes)
      for (dtype et : dtypes) check_ef(text, xt, et, testg::quick() ? 2 : 4);
}

TEST_CASE("CUDA EF: every bit width and rounding, resident and tiled groups, outlier keeping") {
  for (const std::string& text : fused_quant_sweep()) check_ef(text.c_str(), dtype::bf16, dtype::f32, 2);
}

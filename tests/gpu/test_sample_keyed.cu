// rng=sample on the GPU: stochastic rounding keyed by each row's sample id (quant, fp8, mx,
// EF's fused quantization) and RandK positions keyed the same way, byte-identical to the host
// on every path (block and whole-grid RandK selection and re-selection, every launch mode,
// unaligned payloads), with the host's statuses for missing ids, straddling groups and
// hostile keyed payloads.
#include <doctest/doctest.h>

#include "../common/backend_checks.hpp"
#include "../common/spec_text.hpp"
#include "pipecodec/cuda/ef.cuh"
#include "state_common.hpp"

using namespace pipecodec;
using testg::quick;
using testg::sized;

namespace {

const char* const keyed_specs[] = {
    "quant:bits=3,group=row,round=stochastic,rng=sample",
    "quant:bits=5,group=32,round=stochastic,rng=sample,scale_dtype=fp16",
    "quant:bits=2,group=row,round=stochastic,rng=sample,rotate=hadamard,rotate_block=32",
    "quant:bits=4,group=row,round=stochastic,rng=sample,outliers=2",
    "fp8:format=e5m2,group=row,round=stochastic,rng=sample",
    "fp8:format=e4m3,group=32,round=stochastic,rng=sample",
    "mx:format=fp4_e2m1,round=stochastic,rng=sample",
    "mx:format=int8,round=stochastic,rng=sample",
    "randk:k=5,scope=row,rng=sample",
    "randk:ratio=0.3,scope=row,seed=9,rng=sample,unbiased=1,values=fp16",
};

// testb's backend interface over gpu_backend, decoding RandK payloads with decode_topk (naming
// randk, so a few long rows re-select on the whole grid) and the others with decode.
struct keyed_backend {
  testg::gpu_backend& g;
  bool sparse;
  keyed_backend(testg::gpu_backend& b, const spec& s) : g(b), sparse(s.codec == codec_id::randk) {
    g.decode_codec = sparse ? codec_id::randk : codec_id{};
  }
  status encode(const spec& s, const std::vector<uint8_t>& x, dtype t, shape shp, randomness rnd,
                std::vector<uint8_t>& bytes) {
    return g.encode(s, x, t, shp, rnd, bytes);
  }
  status decode(const std::vector<uint8_t>& bytes, size_t len, dtype t, shape shp, std::vector<uint8_t>& y,
                bool accumulate) {
    if (!sparse) return g.decode(bytes, len, t, shp, y, accumulate);
    const std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + long(len));
    return g.decode_topk(cut, nullptr, t, shp, y, accumulate);
  }
};

void check_keyed(testg::gpu_backend& g, const spec& s, const std::vector<uint8_t>& in, dtype t, shape shp,
                 randomness rnd, std::initializer_list<dtype> outs) {
  keyed_backend b(g, s);
  testb::check_matches_host(b, s, in, t, shp, rnd, outs);
}

std::vector<uint64_t> ids_for(uint64_t rows, uint64_t salt) {
  std::vector<uint64_t> ids(rows);
  for (uint64_t r = 0; r < rows; ++r) ids[r] = (salt << 32) + 977 * r + 5;
  return ids;
}

}  // namespace

TEST_CASE("rng=sample: GPU payloads and decodes equal the host's (sweep)") {
  testg::gpu_backend b;
  uint64_t pick = 0;
  for (const char* text : keyed_specs)
    for (dtype in_t : {dtype::f32, dtype::f16, dtype::bf16})
      for (const shape& shp : {shape(1), shape(7), shape(3, 45), shape(4, 96), shape(2, 1001), shape(5, 128)}) {
        if (quick() && ++pick % 3 != 0) continue;
        CAPTURE(text);
        CAPTURE(int(in_t));
        CAPTURE(shp.rows);
        CAPTURE(shp.cols);
        const spec s = testspec::parse(text);
        const auto ids = ids_for(shp.rows, shp.cols);
        const auto in = testdata::as_bytes(testdata::activations(shp.size(), shp.cols), in_t);
        std::vector<uint8_t> want, got;
        const status hs = testb::host_encode(s, in, in_t, shp, randomness(3, ids.data()), want);
        if (hs == status::invalid_shape) {  // groups of 32 over rows of 45 or 1001: refused on both
          CHECK(b.encode(s, in, in_t, shp, randomness(3, ids.data()), got) == status::invalid_shape);
          continue;
        }
        check_keyed(b, s, in, in_t, shp, randomness(3, ids.data()), {dtype::f32, dtype::bf16});
      }
}

TEST_CASE("rng=sample: RandK rows long enough for the whole-grid select and re-select") {
  testg::gpu_backend b;
  const shape shp(3, sized((1u << 18) + 5, (1u << 16) + 5));
  const auto ids = ids_for(shp.rows, 1);
  for (const char* text : {"randk:ratio=0.01,scope=row,rng=sample", "randk:k=1000,scope=row,rng=sample,values=bf16"}) {
    CAPTURE(text);
    const auto in = testdata::as_bytes(testdata::activations(shp.size(), 4), dtype::f32);
    check_keyed(b, testspec::parse(text), in, dtype::f32, shp, randomness(4, ids.data()), {dtype::f32});
  }
}

TEST_CASE("rng=sample: default stream, CUDA graph capture, unaligned payload and workspace") {
  const shape shp(3, 333);
  const auto ids = ids_for(shp.rows, 2);
  for (testg::launch_mode mode : {testg::launch_mode::stream, testg::launch_mode::default_stream,
                                  testg::launch_mode::graph})
    for (size_t off : {size_t(0), size_t(3)}) {
      testg::gpu_backend b;
      b.mode = mode;
      b.payload_offset = off;
      b.workspace_offset = off;
      CAPTURE(int(mode));
      CAPTURE(off);
      for (const char* text : {"quant:bits=3,group=row,round=stochastic,rng=sample", "randk:k=7,scope=row,rng=sample",
                               "fp8:group=row,round=stochastic,rng=sample"})
        check_keyed(b, testspec::parse(text), testdata::as_bytes(testdata::activations(shp.size(), 5), dtype::bf16),
                    dtype::bf16, shp, randomness(5, ids.data()), {dtype::f32});
    }
}

TEST_CASE("rng=sample: missing ids and straddling groups give the host's status; hostile keyed RandK payloads") {
  testg::gpu_backend b;
  const shape shp(3, 96);
  const auto in = testdata::as_bytes(testdata::activations(shp.size(), 1), dtype::f32);
  const auto ids = ids_for(shp.rows, 3);
  std::vector<uint8_t> want, got;
  for (const char* text : keyed_specs) {
    CAPTURE(text);
    const spec s = testspec::parse(text);
    CHECK(testb::host_encode(s, in, dtype::f32, shp, randomness(1), want) == status::invalid_argument);
    CHECK(b.encode(s, in, dtype::f32, shp, randomness(1), got) == status::invalid_argument);
  }
  const spec straddle = testspec::parse("quant:bits=3,group=64,round=stochastic,rng=sample");
  CHECK(testb::host_encode(straddle, in, dtype::f32, shp, randomness(1, ids.data()), want) == status::invalid_shape);
  CHECK(b.encode(straddle, in, dtype::f32, shp, randomness(1, ids.data()), got) == status::invalid_shape);

  const spec rk = testspec::parse("randk:k=6,scope=row,rng=sample");
  REQUIRE(ok(testb::host_encode(rk, in, dtype::f32, shp, randomness(2, ids.data()), want)));
  keyed_backend kb(b, rk);
  auto flag_cleared = want;
  flag_cleared[detail::off_flags] = 0;
  testb::check_rejects_like_host(kb, flag_cleared, flag_cleared.size(), dtype::f32, shp);
  auto id_padding = want;
  id_padding[want.size() - 1] = 1;
  testb::check_rejects_like_host(kb, id_padding, id_padding.size(), dtype::f32, shp);
  auto tensor_scope = want;
  tensor_scope[detail::off_params] = uint8_t(topk_scope::tensor);
  testb::check_rejects_like_host(kb, tensor_scope, tensor_scope.size(), dtype::f32, shp);
}

TEST_CASE("rng=sample: CUDA EF (fused quantization and RandK) equals the host's, step after step") {
  const shape shp(4, 128);
  const uint64_t n = shp.size();
  for (const char* text : {"quant:bits=2,group=row,round=stochastic,rng=sample", "randk:k=17,scope=row,rng=sample"}) {
    CAPTURE(text);
    const spec s = testspec::parse(text);
    host::ef_state h;
    REQUIRE(ok(h.init(s, shp, dtype::f32)));
    const size_t cap = encoded_bytes(s, shp), wsb = pipecodec::cuda::ef_workspace_bytes(s, shp);
    tgs::dmem x(n * 4), e(n * 4), pay(cap), ws(wsb), did(8 * shp.rows);
    std::vector<uint8_t> hp(cap);
    for (uint64_t step = 0; step < 3; ++step) {
      const auto ids = ids_for(shp.rows, step);
      did.put(ids.data(), 8 * shp.rows);
      const auto xs = tstate::make_step(n, 50 + step, dtype::f32);
      x.put(xs.bytes.data(), xs.bytes.size());
      size_t hl = 0, dl = 0;
      REQUIRE(ok(h.encode(const_tensor_view(xs.bytes.data(), dtype::f32, shp), hp.data(), cap,
                          randomness(step, ids.data()), &hl)));
      REQUIRE(ok(pipecodec::cuda::ef_encode(s, const_tensor_view(x.p, dtype::f32, shp), tensor_view{e.p, dtype::f32, shp},
                                            pay.p, cap, ws.p, wsb,
                                            randomness(step, static_cast<const uint64_t*>(did.p)), nullptr, &dl)));
      REQUIRE(hl == dl);
      CHECK(pay.get(dl) == std::vector<uint8_t>(hp.begin(), hp.begin() + hl));
      CHECK(e.get(e.n) == tstate::snapshot(h.residual()));
    }
  }
}

TEST_CASE("RandK with 2^40 empty rows decodes at once on the GPU too (no loop over units that keep nothing)") {
  testg::gpu_backend b;
  const spec s = testspec::parse("randk:k=3,scope=row");
  std::vector<uint8_t> p;
  REQUIRE(ok(testb::host_encode(s, {}, dtype::f32, shape(2, 0), randomness(1), p)));
  detail::put_u64(p.data() + detail::off_rows, uint64_t(1) << 40);
  std::vector<uint8_t> y;
  CHECK(b.decode_topk(p, nullptr, dtype::f32, shape(uint64_t(1) << 40, 0), y, false) == status::success);
}


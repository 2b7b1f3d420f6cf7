// GPU suite: the CUDA TopK / RandK encoder is byte-identical to host::encode across dtypes,
// scopes, index layouts, k and adversarial distributions (all equal, few distinct values,
// zeros, denormals, NaN/Inf). Needs the gpu suite's main (exits 77 without a device).
#include <doctest/doctest.h>

#include <cuda_runtime.h>

#include <vector>

#include "../common/data.hpp"
#include "pipecodec/cuda/topk.cuh"
#include "pipecodec/pipecodec.hpp"

using namespace pipecodec;

namespace {

struct device_buffer {
  void* p = nullptr;
  explicit device_buffer(size_t n) { REQUIRE(cudaMalloc(&p, n ? n : 1) == cudaSuccess); }
  ~device_buffer() { cudaFree(p); }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
};

std::vector<float> adversarial(int kind, uint64_t n, uint64_t seed) {
  std::vector<float> v = testdata::activations(n, seed);
  uint64_t r = seed + 99;
  for (auto& x : v) {
    const uint64_t z = testdata::splitmix(r);
    const uint32_t sign = uint32_t(z >> 63) << 31;
    if (kind == 1) x = testdata::from_bits(sign | 0x3FC00000u);                          // all equal
    if (kind == 2) x = testdata::from_bits(sign | (0x3F800000u + uint32_t(z % 3) * 0x00800000u));
    if (kind == 3) x = testdata::from_bits(sign | uint32_t(z >> 20) % 256u);             // denormals
    if (kind == 4 && z % 8 == 0) x = testdata::from_bits(z % 16 ? 0x7FC00000u : sign | 0x7F800000u);
  }
  return v;
}

}  // namespace

TEST_CASE("cuda topk/randk encode is byte-identical to the host") {
  const char* specs[] = {"topk:ratio=0.1,scope=row", "topk:ratio=0.01,scope=row,index=u32,values=fp16",
                         "topk:k=7,scope=row,index=bitmap,values=bf16", "topk:ratio=0.3,scope=tensor",
                         "topk:ratio=0.001,scope=tensor,index=u32", "randk:ratio=0.1,scope=row,seed=3",
                         "randk:k=33,scope=tensor,unbiased=1,values=fp16"};
  const shape shapes[] = {shape(7, 3000), shape(3, 70001), shape(1, 5), shape(200000), shape(64, 16384)};
  for (const char* text : specs)
    for (const shape& shp : shapes)
      for (int kind = 0; kind < 5; ++kind)
        for (dtype t : {dtype::f32, dtype::f16, dtype::bf16}) {
          CAPTURE(text);
          CAPTURE(shp.rows);
          CAPTURE(shp.cols);
          CAPTURE(kind);
          CAPTURE(int(t));
          spec s;
          REQUIRE(ok(parse_spec(text, s)));
          const size_t cap = encoded_bytes(s, shp), wsb = workspace_bytes(s, shp);
          if (cap == 0) continue;  // e.g. u16 indices for a long row
          const auto in = testdata::as_bytes(adversarial(kind, shp.size(), 17), t);
          std::vector<uint8_t> want(cap), hws(wsb), got(cap);
          REQUIRE(ok(host::encode(s, const_tensor_view{in.data(), t, shp}, want.data(), cap, hws.data(), wsb, 5)));
          device_buffer din(in.size()), dpay(cap), dws(wsb);
          REQUIRE(cudaMemcpy(din.p, in.data(), in.size(), cudaMemcpyHostToDevice) == cudaSuccess);
          size_t written = 0;
          REQUIRE(ok(pipecodec::cuda::detail::encode_topk(s, const_tensor_view{din.p, t, shp}, dpay.p, cap, dws.p, wsb, 5, 0,
                                               &written)));
          REQUIRE(cudaMemcpy(got.data(), dpay.p, cap, cudaMemcpyDeviceToHost) == cudaSuccess);
          REQUIRE(written == cap);
          REQUIRE(got == want);
        }
}

TEST_CASE("cuda topk/randk decode matches the host, rejects corrupt payloads untouched") {
  const char* specs[] = {"topk:ratio=0.1,scope=row", "topk:ratio=0.01,scope=row,index=u32,values=fp16",
                         "topk:k=7,scope=row,index=bitmap,values=bf16", "randk:ratio=0.1,scope=row,seed=3",
                         "randk:k=33,scope=tensor,unbiased=1"};
  const shape shp(9, 5000);
  for (const char* text : specs)
    for (bool acc : {false, true}) {
      CAPTURE(text);
      CAPTURE(acc);
      spec s;
      REQUIRE(ok(parse_spec(text, s)));
      const auto x = testdata::activations(shp.size(), 3);
      const size_t cap = encoded_bytes(s, shp), wsb = workspace_bytes(s, shp);
      std::vector<uint8_t> pl(cap), hws(wsb);
      REQUIRE(ok(host::encode(s, const_tensor_view{x.data(), dtype::f32, shp}, pl.data(), cap, hws.data(), wsb)));
      for (bool corrupt : {false, true}) {
        auto bytes = pl;
        if (corrupt) bytes[40] = 7;  // scope byte
        std::vector<float> init(shp.size(), 0.5F), want = init, got(shp.size());
        const tensor_view hv{want.data(), dtype::f32, shp};
        const status hs = acc ? host::decode_accumulate(bytes.data(), cap, hv) : host::decode(bytes.data(), cap, hv);
        device_buffer dp(cap), dout(shp.size() * 4), dws(wsb);
        REQUIRE(cudaMemcpy(dp.p, bytes.data(), cap, cudaMemcpyHostToDevice) == cudaSuccess);
        REQUIRE(cudaMemcpy(dout.p, init.data(), shp.size() * 4, cudaMemcpyHostToDevice) == cudaSuccess);
        const tensor_view dv{dout.p, dtype::f32, shp};
        REQUIRE(ok(acc ? pipecodec::cuda::detail::decode_topk<true>(dp.p, cap, dv, dws.p, wsb, 0)
                       : pipecodec::cuda::detail::decode_topk<false>(dp.p, cap, dv, dws.p, wsb, 0)));
        status ds = status::success;
        const uintptr_t a = reinterpret_cast<uintptr_t>(dws.p);
        REQUIRE(cudaMemcpy(&ds, static_cast<uint8_t*>(dws.p) + (16 - a % 16) % 16, sizeof ds,
                           cudaMemcpyDeviceToHost) == cudaSuccess);
        REQUIRE(cudaMemcpy(got.data(), dout.p, shp.size() * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
        CHECK(ds == hs);
        CHECK(got == want);
      }
    }
}

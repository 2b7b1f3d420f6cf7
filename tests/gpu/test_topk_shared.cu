// GPU suite: shared-mask TopK on the device. The values of a second tensor (the gradient)
// at the positions of a forward TopK payload: the CUDA encoder's payload is byte-identical
// to host::encode_shared, decode_shared (dense and accumulate) matches the host bit for
// bit, and a bad mask (corrupt, another k, another shape, not a positions payload) gets the
// host's status in encode and decode, leaving the output untouched.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "../common/backend_checks.hpp"
#include "../common/print.hpp"
#include "gpu_backend.hpp"
#include "topk_inputs.hpp"

using namespace pipecodec;

namespace {

status host_decode_shared(const std::vector<uint8_t>& vals, const std::vector<uint8_t>& mask, dtype t, shape shp,
                          std::vector<uint8_t>& y, bool acc) {
  const tensor_view v{y.data(), t, shp};
  return acc ? host::decode_shared_accumulate(vals.data(), vals.size(), mask.data(), mask.size(), v)
             : host::decode_shared(vals.data(), vals.size(), mask.data(), mask.size(), v);
}

spec parsed(const std::string& text) {
  spec s;
  REQUIRE(ok(parse_spec(text, s)));
  return s;
}

// encode_shared and decode_shared with `mask` give the host's statuses (accepted exactly
// when `good`), the host's payload when accepted, and an output untouched when rejected.
void check_mask_verdict(testg::gpu_backend& b, const spec& vs, const std::vector<uint8_t>& x,
                        const std::vector<uint8_t>& vals, const std::vector<uint8_t>& mask, shape shp, bool good) {
  const dtype t = dtype::f32;
  std::vector<uint8_t> want, got;
  const status hs = testk_gpu::host_encode(vs, x, t, shp, 0, want, &mask);
  CHECK(ok(hs) == good);
  CHECK(b.encode_shared(vs, x, t, shp, 0, mask, got) == hs);
  if (good) CHECK(testb::first_difference(got, want) == -1);
  for (bool acc : {false, true}) {
    std::vector<uint8_t> hy = testb::accumulator(t, shp.size(), 6), dy = hy;
    const status hd = host_decode_shared(vals, mask, t, shp, hy, acc);
    CHECK(ok(hd) == good);
    CHECK(b.decode_topk(vals, &mask, t, shp, dy, acc) == hd);
    CHECK(testb::first_difference(dy, hy) == -1);
  }
}

}  // namespace

TEST_CASE("cuda topk shared mask: payloads and decodes equal the host") {
  testg::gpu_backend b;
  struct pairing {
    const char* mask;
    const char* values;
  };
  const pairing pairs[] = {
      {"topk:ratio=0.1,scope=row", "topk:ratio=0.1,scope=row,mask=shared"},
      {"topk:ratio=0.1,scope=row,index=bitmap", "topk:ratio=0.1,scope=row,mask=shared,values=bf16"},
      {"topk:k=9,scope=row,index=u32", "topk:k=9,scope=row,mask=shared,values=quant,bits=8"},
      {"topk:ratio=0.05,scope=tensor", "topk:ratio=0.05,scope=tensor,mask=shared,values=fp16"},
      {"topk:ratio=0.3,scope=tensor,index=bitmap",
       "topk:ratio=0.3,scope=tensor,mask=shared,values=quant,bits=4,round=stochastic"},
  };
  for (const pairing& pr : pairs)
    for (const shape& shp : {shape(6, 3000), shape(100000), shape(2, 70001)})
      for (dtype t : {dtype::f32, shp.rows == 6 ? dtype::f16 : dtype::bf16}) {  // each input dtype somewhere
        if (testg::quick() && (t != dtype::f32 || shp.size() > 20000)) continue;
        CAPTURE_TEXT(pr.values);
        CAPTURE(shp.rows);
        CAPTURE(shp.cols);
        CAPTURE(int(t));
        const spec ms = parsed(pr.mask), vs = parsed(pr.values);
        if (encoded_bytes(ms, shp) == 0) continue;
        const auto fwd = testdata::as_bytes(testk_gpu::adversarial(5, shp.size(), 1), t);
        const auto grad = testdata::as_bytes(testk_gpu::adversarial(0, shp.size(), 2), t);
        std::vector<uint8_t> mask, want, got;
        REQUIRE(ok(testk_gpu::host_encode(ms, fwd, t, shp, 0, mask)));
        REQUIRE(ok(testk_gpu::host_encode(vs, grad, t, shp, 7, want, &mask)));
        const status st = b.encode_shared(vs, grad, t, shp, 7, mask, got);
        REQUIRE_MESSAGE(ok(st), st);
        REQUIRE(testb::first_difference(got, want) == -1);
        for (bool acc : {false, true}) {
          std::vector<uint8_t> hy = testb::accumulator(t, shp.size(), 3), dy = hy;
          REQUIRE(ok(host_decode_shared(want, mask, t, shp, hy, acc)));
          const status ds = b.decode_topk(got, &mask, t, shp, dy, acc);
          REQUIRE_MESSAGE(ok(ds), ds);
          REQUIRE(testb::first_difference(dy, hy) == -1);
        }
      }
}

TEST_CASE("cuda topk shared mask: bad masks get the host's status") {
  testg::gpu_backend b;
  const shape shp(8, 4000);
  const dtype t = dtype::f32;
  const spec vs = parsed("topk:ratio=0.1,scope=row,mask=shared");
  const auto x = testdata::as_bytes(testdata::activations(shp.size(), 5), t);
  std::vector<uint8_t> good, vals;
  REQUIRE(ok(testk_gpu::host_encode(parsed("topk:ratio=0.1,scope=row,index=u32"), x, t, shp, 0, good)));
  REQUIRE(ok(testk_gpu::host_encode(vs, x, t, shp, 0, vals, &good)));
  struct bad {
    const char* what;
    std::vector<uint8_t> mask;
  };
  std::vector<bad> masks;
  masks.push_back({"index out of range", good});
  testk_gpu::corrupt(masks.back().mask, "index out of range");
  masks.push_back({"scope byte", good});
  testk_gpu::corrupt(masks.back().mask, "scope byte");
  masks.push_back({"another k", {}});
  REQUIRE(ok(testk_gpu::host_encode(parsed("topk:ratio=0.2,scope=row"), x, t, shp, 0, masks.back().mask)));
  masks.push_back({"another shape", {}});
  const auto x2 = testdata::as_bytes(testdata::activations(4 * 8000, 5), t);
  REQUIRE(ok(testk_gpu::host_encode(parsed("topk:ratio=0.1,scope=row"), x2, t, shape(4, 8000), 0,
                                    masks.back().mask)));
  masks.push_back({"a values-only payload", vals});
  masks.push_back({"a randk payload", {}});
  REQUIRE(ok(testk_gpu::host_encode(parsed("randk:ratio=0.1,scope=row"), x, t, shp, 0, masks.back().mask)));
  for (const bad& m : masks) {
    CAPTURE_TEXT(m.what);
    check_mask_verdict(b, vs, x, vals, m.mask, shp, false);
  }
}

// A large tensor-scope mask is checked by the whole grid (as in test_topk.cu): faults in its
// last chunk as well as its first, in encode and decode.
TEST_CASE("cuda topk shared mask: a large mask is validated by the whole grid, faults in any chunk") {
  testg::gpu_backend b;
  const shape shp(testg::sized(uint64_t(1) << 21, 70001) + 5);
  const dtype t = dtype::f32;
  const auto x = testdata::as_bytes(testdata::activations(shp.size(), 7), t);
  struct bad {
    const char* mask_spec;
    const char* what;
  };
  for (const bad& m : {bad{"topk:ratio=0.02,scope=tensor,index=u32", "index out of range"},
                       bad{"topk:ratio=0.02,scope=tensor,index=u32", "last index out of range"},
                       bad{"topk:ratio=0.02,scope=tensor,index=u32", "last index repeated"},
                       bad{"topk:ratio=0.02,scope=tensor,index=bitmap", "extra bitmap bit"},
                       bad{"topk:ratio=0.02,scope=tensor,index=bitmap", "last bitmap bit cleared"},
                       bad{"topk:ratio=0.02,scope=tensor,index=bitmap", "last bitmap bit added"},
                       bad{"topk:ratio=0.02,scope=tensor,index=bitmap", "bitmap bit past n"},
                       bad{"topk:ratio=0.02,scope=tensor,index=bitmap", "none"}}) {
    CAPTURE_TEXT(m.mask_spec);
    CAPTURE_TEXT(m.what);
    const spec vs = parsed("topk:ratio=0.02,scope=tensor,mask=shared,values=bf16");
    std::vector<uint8_t> mask, vals;
    REQUIRE(ok(testk_gpu::host_encode(parsed(m.mask_spec), x, t, shp, 0, mask)));
    REQUIRE(ok(testk_gpu::host_encode(vs, x, t, shp, 0, vals, &mask)));
    testk_gpu::corrupt(mask, m.what);
    check_mask_verdict(b, vs, x, vals, mask, shp, std::string(m.what) == "none");
  }
}

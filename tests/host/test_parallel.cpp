// encode_parallel / decode_parallel: for every spec, part count and executor (in run_order,
// reversed, concurrent threads), the payload equals host::encode's byte for byte and the
// decoded tensor host::decode's; each part runs exactly once; a damaged payload gives
// decode's status and leaves the output untouched.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "../common/data.hpp"
#include "../common/print.hpp"
#include "pipecodec/host/parallel.hpp"
#include "pipecodec/policy/spec_string.hpp"

using namespace pipecodec;

namespace {

enum class run_order { forward, reverse, threads };

// run(parts, task) as an executor of the given kind; counts the tasks it ran.
struct test_executor {
  run_order how;
  std::atomic<size_t>* ran;
  void operator()(size_t parts, const host::task_ref& task) const {
    if (how == run_order::threads) {
      std::vector<std::thread> pool;
      for (size_t k = 1; k < parts; ++k) pool.emplace_back([&, k] { task(k); ++*ran; });
      task(0);
      ++*ran;
      for (auto& t : pool) t.join();
      return;
    }
    for (size_t i = 0; i < parts; ++i) {
      task(how == run_order::forward ? i : parts - 1 - i);
      ++*ran;
    }
  }
};

const char* const parallel_specs[] = {
    "quant:bits=4,group=128", "quant:bits=2,group=32,round=stochastic", "quant:bits=8,group=row",
    "quant:bits=3,group=96,scale=absmax,scale_dtype=fp16", "quant:bits=5,group=tensor",
    "quant:bits=3,group=64,outliers=3", "quant:bits=3,group=row,round=stochastic,rng=sample",
    "quant:bits=4,group=64,rotate=hadamard,rotate_block=64",  // calling thread
    "topk:ratio=0.05",                                        // calling thread
};

}  // namespace

TEST_CASE("encode_parallel and decode_parallel give encode's payload and decode's tensor") {
  uint64_t seed = 3;
  const shape shapes[] = {shape(1, 1), shape(3, 1000), shape(37, 333), shape(16, 4096 + 64)};
  for (const char* text : parallel_specs)
    for (const shape& shp : shapes)
      for (dtype t : {dtype::f32, dtype::f16, dtype::bf16}) {
        spec s;
        REQUIRE(ok(parse_spec(text, s)));
        CAPTURE_TEXT(text);
        CAPTURE(shp.rows);
        CAPTURE(shp.cols);
        const uint64_t n = shp.size();
        const auto x = testdata::as_bytes(testdata::extreme(n, testdata::splitmix(seed)), t);
        std::vector<uint64_t> ids(shp.rows);
        for (auto& id : ids) id = testdata::splitmix(seed);
        const randomness rnd(7, ids.data());
        std::vector<uint8_t> ws(workspace_bytes(s, shp) + 64), want(encoded_bytes(s, shp));
        size_t want_len = 0;
        REQUIRE(ok(host::encode(s, const_tensor_view{x.data(), t, shp}, want.data(), want.size(), ws.data(),
                                ws.size(), rnd, &want_len)));
        std::vector<float> want_out(n);
        REQUIRE(ok(host::decode(want.data(), want_len, tensor_view{want_out.data(), dtype::f32, shp}, ws.data(),
                                ws.size())));
        for (size_t parts : {size_t(1), size_t(2), size_t(3), size_t(7)})
          for (run_order how : {run_order::forward, run_order::reverse, run_order::threads}) {
            CAPTURE(parts);
            CAPTURE(int(how));
            std::atomic<size_t> ran{0};
            std::vector<uint8_t> got(want.size(), 0xA5);
            size_t len = 0;
            REQUIRE(ok(host::encode_parallel(s, const_tensor_view{x.data(), t, shp}, got.data(), got.size(),
                                             ws.data(), ws.size(), rnd, &len, parts, test_executor{how, &ran})));
            REQUIRE(len == want_len);
            REQUIRE(std::equal(want.begin(), want.begin() + long(len), got.begin()));
            // Split specs run one part per batch of 16 groups at most; the others none.
            detail::quant_layout L;
            const bool split = s.codec == codec_id::quant && s.quant.rotate == rotation::none &&
                               detail::make_quant_layout(s.quant, shp, L);
            CHECK(ran.load() == (split ? std::min<size_t>(parts, (L.groups + 15) / 16) : 0));
            ran = 0;
            std::vector<float> out(n, -1.0F);
            REQUIRE(ok(host::decode_parallel(got.data(), len, tensor_view{out.data(), dtype::f32, shp}, ws.data(),
                                             ws.size(), parts, test_executor{how, &ran})));
            REQUIRE(std::equal(want_out.begin(), want_out.end(), out.begin(), [](float a, float b) {
              return detail::bit_cast<uint32_t>(a) == detail::bit_cast<uint32_t>(b);
            }));
            CHECK(ran.load() == (split ? std::min<size_t>(parts, (L.groups + 15) / 16) : 0));
          }
      }
}

TEST_CASE("decode_parallel: a damaged payload gives decode's status and leaves the output untouched") {
  spec s;
  REQUIRE(ok(parse_spec("quant:bits=4,group=128", s)));
  const shape shp(8, 1000);
  const auto x = testdata::activations(shp.size(), 5);
  std::vector<uint8_t> p(encoded_bytes(s, shp));
  size_t len = 0;
  REQUIRE(ok(host::encode(s, const_tensor_view{x.data(), dtype::f32, shp}, p.data(), p.size(), nullptr, 0, {}, &len)));
  uint64_t seed = 9;
  std::atomic<size_t> ran{0};
  for (int trial = 0; trial < 300; ++trial) {
    auto bad = p;
    for (int k = 0; k < 1 + trial % 3; ++k) bad[testdata::splitmix(seed) % len] ^= uint8_t(1u << (seed % 8));
    std::vector<float> a(shp.size(), 3.0F), b(shp.size(), 3.0F);
    const status want = host::decode(bad.data(), len, tensor_view{a.data(), dtype::f32, shp});
    const status got = host::decode_parallel(bad.data(), len, tensor_view{b.data(), dtype::f32, shp}, nullptr, 0, 4,
                                             test_executor{run_order::threads, &ran});
    CAPTURE(trial);
    REQUIRE(got == want);
    if (!ok(got)) REQUIRE(std::all_of(b.begin(), b.end(), [](float v) { return v == 3.0F; }));
    else REQUIRE(a == b);
  }
}

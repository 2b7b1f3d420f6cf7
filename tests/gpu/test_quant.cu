// k-bit quantization on the GPU against the host backend: payload bytes, decoded and
// accumulated tensors, over dtypes x bits x groups x scaling x rounding x shapes.
// PIPECODEC_GPU_QUICK=1 (compute-sanitizer runs) samples a small subset and skips 2^24+7.
#include <doctest/doctest.h>

#include <cfloat>
#include <cstdlib>
#include <limits>

#include "../common/backend_checks.hpp"
#include "../common/quant_check.hpp"
#include "gpu_backend.hpp"

using namespace pipecodec;

namespace {

using testg::quick;
using testq::quant_spec;

struct group_choice {
  group_kind kind;
  uint32_t size;
};
// 32..256: one warp per group in registers; 288, 2048: tiled, one tile per group;
// 4096: tiled, two tiles per group; rows and whole tensors: tiled when long.
const group_choice groups[] = {{group_kind::elements, 32},   {group_kind::elements, 128},
                               {group_kind::elements, 256},  {group_kind::elements, 288},
                               {group_kind::elements, 2048}, {group_kind::elements, 4096},
                               {group_kind::row, 0},         {group_kind::tensor, 0}};

// Tails off every multiple of 4, 32 and the group sizes above; rows not a multiple of 4.
const shape quant_shapes[] = {shape(0),       shape(1),       shape(31),       shape(33),      shape(129),
                        shape(1000),    shape(4101),    shape(9000),     shape(3, 33),   shape(5, 257),
                        shape(2, 4099), shape(7, 1),    shape(4, 3000),  shape(1, 8191), shape(65, 130)};
constexpr size_t shape_count = sizeof(quant_shapes) / sizeof(quant_shapes[0]);

}  // namespace

TEST_CASE("quant: GPU payloads and decodes equal the host backend (sweep)") {
  testg::gpu_backend b;
  uint64_t pick = 0, cases = 0;
  for (dtype in_t : {dtype::f32, dtype::f16, dtype::bf16})
    for (uint32_t bits = 1; bits <= 8; ++bits)
      for (const group_choice& gc : groups)
        for (scale_mode sm : {scale_mode::minmax, scale_mode::absmax})
          for (rounding r : {rounding::nearest, rounding::stochastic})
            for (dtype sd : {dtype::f32, dtype::f16}) {
              // Three shapes per combination (emulated: one), rotating through the list; quick
              // mode keeps 1 in 32.
              for (int k = 0; k < (testg::emulated ? 1 : 3); ++k) {
                const shape shp = quant_shapes[pick++ % shape_count];
                uint64_t h = pick;
                if (quick() && testdata::splitmix(h) % 32 != 0) continue;
                CAPTURE(int(in_t));
                CAPTURE(bits);
                CAPTURE(int(gc.kind));
                CAPTURE(gc.size);
                CAPTURE(int(sm));
                CAPTURE(int(r));
                CAPTURE(int(sd));
                CAPTURE(shp.rows);
                CAPTURE(shp.cols);
                const spec s = quant_spec(bits, gc.kind, gc.size, sm, r, sd);
                const dtype other = in_t == dtype::f32 ? dtype::bf16 : dtype::f32;
                testb::check_matches_host(b, s, in_t, shp, 1000 + pick, {in_t, other});
                ++cases;
              }
            }
  MESSAGE(cases << " cases");
  CHECK(cases > 0);
}

TEST_CASE("quant: every shape for the benchmark specs, all three dtypes") {
  testg::gpu_backend b;
  uint64_t pick = 0;
  for (const shape& shp : quant_shapes)
    for (dtype in_t : {dtype::f32, dtype::f16, dtype::bf16})
      for (uint32_t bits : {2u, 4u, 8u})
        for (rounding r : {rounding::nearest, rounding::stochastic}) {
          if (quick() && ++pick % 8 != 0) continue;
          CAPTURE(shp.rows);
          CAPTURE(shp.cols);
          CAPTURE(int(in_t));
          CAPTURE(bits);
          CAPTURE(int(r));
          const spec s = quant_spec(bits, group_kind::elements, 128, scale_mode::minmax, r, dtype::f32);
          testb::check_matches_host(b, s, in_t, shp, 5, {in_t});
        }
}

TEST_CASE("quant: large n (2^24 + 7 on a GPU, 2^17 + 7 emulated): many groups, tiles and grid-stride rounds") {
  if (quick()) return;
  testg::gpu_backend b;
  const uint64_t n = testg::sized(uint64_t(1) << 24 | 7, uint64_t(1) << 17 | 7);
  const shape big(n);
  testb::check_matches_host(b, quant_spec(4, group_kind::elements, 128, scale_mode::minmax, rounding::nearest, dtype::f32),
                            dtype::f32, big, 1, {dtype::f32});
  testb::check_matches_host(b, quant_spec(3, group_kind::tensor, 0, scale_mode::absmax, rounding::stochastic, dtype::f16),
                            dtype::bf16, big, 2, {dtype::bf16});
  testb::check_matches_host(b, quant_spec(8, group_kind::row, 0, scale_mode::minmax, rounding::stochastic, dtype::f32),
                            dtype::f16, shape(3, n / 3), 3, {dtype::f32});
}

TEST_CASE("quant: default stream, CUDA graph capture, and unaligned payload/workspace pointers") {
  const spec specs[] = {
      quant_spec(4, group_kind::elements, 128, scale_mode::minmax, rounding::stochastic, dtype::f32),
      quant_spec(3, group_kind::row, 0, scale_mode::absmax, rounding::nearest, dtype::f16),
      quant_spec(5, group_kind::elements, 4096, scale_mode::minmax, rounding::stochastic, dtype::f16)};
  for (testg::launch_mode mode : {testg::launch_mode::stream, testg::launch_mode::default_stream,
                                  testg::launch_mode::graph}) {
    for (size_t off : {size_t(0), size_t(1), size_t(3), size_t(8)}) {
      if (quick() && off > 1) continue;
      testg::gpu_backend b;
      b.mode = mode;
      b.payload_offset = off;
      b.workspace_offset = off == 8 ? 1 : off;
      CAPTURE(int(mode));
      CAPTURE(off);
      for (const spec& s : specs)
        for (const shape& shp : {shape(1000), shape(3, 5001)})
          testb::check_matches_host(b, s, dtype::bf16, shp, 77, {dtype::f32, dtype::bf16});
    }
  }
}

TEST_CASE("quant: non-finite, huge, subnormal and constant inputs equal the host backend") {
  testg::gpu_backend b;
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> x;
  for (int i = 0; i < 32; ++i) x.push_back(i % 2 ? FLT_MAX * (0.5F + float(i) / 64.0F) : -FLT_MAX * 0.99F);
  for (int i = 0; i < 40; ++i) x.push_back(testdata::from_bits(uint32_t(i * 0x1357u) | (i % 3 ? 0x80000000u : 0u)));
  for (int i = 0; i < 70; ++i) x.push_back(-3.25F);
  for (float v : {nan, inf, -inf, 1.0F, -0.0F, 0.0F, 65520.0F, -70000.0F, 1e-40F, nan}) x.push_back(v);
  for (int i = 0; i < 40; ++i) x.push_back(nan);
  for (int i = 0; i < 33; ++i) x.push_back(i % 2 ? -0.0F : 0.0F);
  uint64_t pick = 0;
  for (dtype in_t : {dtype::f32, dtype::f16, dtype::bf16}) {
    const auto in = testdata::as_bytes(x, in_t);
    for (uint32_t bits : {1u, 2u, 5u, 8u})
      for (const group_choice& gc : {group_choice{group_kind::elements, 32}, group_choice{group_kind::elements, 64},
                                     group_choice{group_kind::elements, 288},
                                     group_choice{group_kind::tensor, 0}})
        for (scale_mode sm : {scale_mode::minmax, scale_mode::absmax})
          for (rounding r : {rounding::nearest, rounding::stochastic})
            for (dtype sd : {dtype::f32, dtype::f16}) {
              if (quick() && ++pick % 8 != 0) continue;
              CAPTURE(int(in_t));
              CAPTURE(bits);
              CAPTURE(int(gc.kind));
              CAPTURE(int(sm));
              CAPTURE(int(r));
              CAPTURE(int(sd));
              testb::check_matches_host(b, quant_spec(bits, gc.kind, gc.size, sm, r, sd), in, in_t,
                                        shape(x.size()), 9, {dtype::f32, dtype::f16});
            }
  }
}

TEST_CASE("quant: tiled large groups, smoke test for the sanitizers") {
  testg::gpu_backend b;
  testb::check_matches_host(b, quant_spec(5, group_kind::elements, 4096, scale_mode::minmax, rounding::stochastic,
                                          dtype::f16),
                            dtype::bf16, shape(3, 5001), 21, {dtype::f32});
  testb::check_matches_host(b, quant_spec(2, group_kind::tensor, 0, scale_mode::absmax, rounding::nearest, dtype::f32),
                            dtype::f32, shape(20011), 22, {dtype::f16});
}

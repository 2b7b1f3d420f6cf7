// quant with outlier keeping on the GPU against the host backend: payload bytes, decoded and
// accumulated tensors, for resident and tiled groups, every group kind, groups shorter than
// N, ties, non-finite inputs, and the launch modes.
#include <doctest/doctest.h>

#include <limits>

#include "../common/spec_text.hpp"
#include "launch_checks.hpp"

using namespace pipecodec;

namespace {

const char* const specs[] = {
    "quant:bits=2,group=128,outliers=4",
    "quant:bits=3,group=32,scale=absmax,round=stochastic,outliers=16",
    "quant:bits=4,group=row,scale_dtype=fp16,outliers=2",
    "quant:bits=8,group=tensor,round=stochastic,outliers=5",
    "quant:bits=5,group=4096,outliers=1",  // tiled groups
};

const shape outlier_shapes[] = {shape(0), shape(1), shape(10), shape(1000), shape(4, 512), shape(5, 77), shape(2, 8200)};

// Outlier channels (every 37th column 20-100x larger), with ties: equal magnitudes repeat.
std::vector<float> channel_data(shape shp, uint64_t seed) {
  std::vector<float> x = testdata::uniform(shp.size(), seed);
  for (uint64_t i = 0; i < x.size(); ++i)
    if ((i % shp.cols) % 37 == 3) x[i] = (i % 2 ? -1.0F : 1.0F) * (20.0F + float((i / shp.cols) % 3));
  return x;
}

}  // namespace

TEST_CASE("outliers: GPU payloads and decodes equal the host backend") {
  testg::gpu_backend b;
  uint64_t seed = 70, pair = 0;
  for (const char* text : specs)
    for (const shape& shp : outlier_shapes) {
      ++pair;
      for (dtype in_t : {dtype::f32, dtype::bf16}) {
        // Thinned: one input dtype per spec and shape (alternating), rows over 4096 only for
        // the tiled groups.
        if (testg::thin() && ((in_t == dtype::bf16) != (pair % 2 == 1) || (shp.size() > 4096 && text != specs[4])))
          continue;
        CAPTURE(text);
        CAPTURE(shp.rows);
        CAPTURE(shp.cols);
        CAPTURE(int(in_t));
        testb::check_matches_host(b, testspec::parse(text), in_t, shp, ++seed, {dtype::f32, dtype::f16});
        const std::vector<uint8_t> in = testdata::as_bytes(channel_data(shp, seed), in_t);
        testb::check_matches_host(b, testspec::parse(text), in, in_t, shp, seed, {dtype::f32});
      }
    }
}

TEST_CASE("outliers: non-finite inputs, default stream, graph capture and unaligned pointers") {
  const spec s = testspec::parse("quant:bits=4,group=64,outliers=3");
  testg::check_matches_host_every_mode(s, dtype::f16, shape(3, 300), 7, {dtype::bf16});
  testg::gpu_backend b;
  std::vector<float> x(4 * 128, 0.5F);
  x[3] = std::numeric_limits<float>::infinity();
  x[5] = -std::numeric_limits<float>::infinity();
  x[200] = std::numeric_limits<float>::quiet_NaN();
  x[201] = -std::numeric_limits<float>::quiet_NaN();
  x[300] = -std::numeric_limits<float>::infinity();
  testb::check_matches_host(b, s, testdata::as_bytes(x, dtype::f32), dtype::f32, shape(4, 128), 9, {dtype::f32});
  testb::check_matches_host(b, s, testdata::as_bytes(testdata::extreme(4 * 128, 3), dtype::f32), dtype::f32,
                            shape(4, 128), 9, {dtype::f32});
}

// quant with Hadamard rotation on the GPU against the host backend: payload bytes, decoded
// and accumulated tensors, for block sizes 32..4096, rows with and without tails, 1-D
// tensors, every rounding and group kind, non-finite inputs, and the launch modes.
#include <doctest/doctest.h>

#include <limits>

#include "../common/spec_text.hpp"
#include "launch_checks.hpp"

using namespace pipecodec;

namespace {

const char* const specs[] = {
    "quant:bits=2,group=128,rotate=hadamard",
    "quant:bits=3,group=64,scale=absmax,round=stochastic,rotate=hadamard,rotate_block=32",
    "quant:bits=4,group=row,scale_dtype=fp16,rotate=hadamard,rotate_block=256",
    "quant:bits=8,group=tensor,round=stochastic,rotate=hadamard,rotate_block=64",
    "quant:bits=5,group=4096,rotate=hadamard,rotate_block=4096",  // tiled groups, the largest block
};

// Tails after the blocks, rows shorter than a block, 1-D tensors, one row of 8192.
const shape rotation_shapes[] = {shape(0), shape(1), shape(1000), shape(4, 512), shape(3, 200), shape(5, 77), shape(2, 8200),
                        shape(1, 8192)};

}  // namespace

TEST_CASE("rotation: GPU payloads and decodes equal the host backend") {
  testg::gpu_backend b;
  uint64_t seed = 40, pair = 0;
  for (const char* text : specs)
    for (const shape& shp : rotation_shapes) {
      ++pair;
      for (dtype in_t : {dtype::f32, dtype::bf16}) {
        // The reduced suite: every spec and shape still, in one input dtype (alternating).
        if (testg::quick() && (in_t == dtype::bf16) != (pair % 2 == 1)) continue;
        // Thinned: rows over 4096 only for 2-bit groups of 128 and the 4096 block (tiled
        // encoders).
        if (testg::thin() && shp.size() > 4096 && text != specs[0] && text != specs[4]) continue;
        CAPTURE(text);
        CAPTURE(shp.rows);
        CAPTURE(shp.cols);
        CAPTURE(int(in_t));
        testb::check_matches_host(b, testspec::parse(text), in_t, shp, ++seed, {dtype::f32, dtype::f16});
      }
    }
}

TEST_CASE("rotation: non-finite inputs, default stream, graph capture and unaligned pointers") {
  const spec s = testspec::parse("quant:bits=4,group=64,rotate=hadamard,rotate_block=64");
  testg::check_matches_host_every_mode(s, dtype::f16, shape(3, 300), 7, {dtype::bf16});
  testg::gpu_backend b;
  std::vector<float> x(4 * 128, 0.5F);
  x[3] = std::numeric_limits<float>::infinity();
  x[200] = std::numeric_limits<float>::quiet_NaN();
  x[300] = -std::numeric_limits<float>::infinity();
  testb::check_matches_host(b, s, testdata::as_bytes(x, dtype::f32), dtype::f32, shape(4, 128), 9, {dtype::f32});
}

// The golden payload cases: spec text x input dtype x shape x data x seed. Case <name> is
// pinned by tests/golden/<name>.bin (the exact payload) and a line of
// tests/golden/manifest.txt (hashes of its decoded tensors). To add a codec, add its lines
// here and regenerate: PIPECODEC_REGEN_GOLDEN=1 meson test -C build 'golden (default flags)'.
// The hostile-input test and the fuzz seeds reuse this table, so a new line is covered there too.
#pragma once

#include <string>
#include <vector>

#include "data.hpp"
#include "pipecodec/pipecodec.hpp"

namespace golden {

enum class data_kind { activations, uniform, extreme };

struct gcase {
  const char* name;
  const char* spec;        // parse_spec text
  pipecodec::dtype in;     // input dtype
  pipecodec::shape shp;
  data_kind data;
  uint64_t seed;           // seeds the input data and the encode (stochastic rounding)
};

inline const std::vector<gcase>& cases() {
  using pipecodec::dtype;
  using pipecodec::shape;
  using dk = data_kind;
  static const std::vector<gcase> all = {
      // quant: every bit width, tails not a multiple of 32 or of the group, 2-D row groups
      {"q4_g128_minmax_near_s32_f32_1000", "quant:bits=4,group=128", dtype::f32, shape(1000), dk::activations, 1},
      {"q3_row_absmax_near_s16_bf16_5x77", "quant:bits=3,group=row,scale=absmax,scale_dtype=fp16", dtype::bf16, shape(5, 77), dk::activations, 2},
      {"q8_tensor_minmax_stoch_s32_f16_333", "quant:bits=8,group=tensor,round=stochastic", dtype::f16, shape(333), dk::activations, 3},
      {"q1_g32_absmax_stoch_s32_f32_3x45", "quant:bits=1,group=32,scale=absmax,round=stochastic", dtype::f32, shape(3, 45), dk::uniform, 4},
      {"q2_g64_minmax_near_s16_f16_4x50", "quant:bits=2,group=64,scale_dtype=fp16", dtype::f16, shape(4, 50), dk::activations, 5},
      {"q5_row_minmax_stoch_s16_bf16_6x100", "quant:bits=5,group=row,round=stochastic,scale_dtype=fp16", dtype::bf16, shape(6, 100), dk::activations, 6},
      {"q6_g96_absmax_near_s32_f32_517", "quant:bits=6,group=96,scale=absmax", dtype::f32, shape(517), dk::uniform, 7},
      {"q7_g32_minmax_near_s16_f32_2x31", "quant:bits=7,group=32,scale_dtype=fp16", dtype::f32, shape(2, 31), dk::activations, 8},
      {"q8_row_absmax_stoch_s16_f32_7x64", "quant:bits=8,group=row,scale=absmax,round=stochastic,scale_dtype=fp16", dtype::f32, shape(7, 64), dk::uniform, 9},
      {"q2_g32_minmax_near_s32_f32_1", "quant:bits=2,group=32", dtype::f32, shape(1), dk::uniform, 10},
      {"q4_g128_minmax_near_s32_f32_0", "quant:bits=4", dtype::f32, shape(0), dk::uniform, 11},
      {"q4_row_minmax_near_s16_f16_3x0", "quant:bits=4,group=row,scale_dtype=fp16", dtype::f16, shape(3, 0), dk::uniform, 12},
      // quant: NaN, Inf, +-FLT_MAX, subnormals (the documented non-finite behaviour)
      {"q4_g128_minmax_near_s32_f32_extreme", "quant:bits=4,group=128", dtype::f32, shape(300), dk::extreme, 13},
      {"q4_g32_absmax_near_s16_f32_extreme", "quant:bits=4,group=32,scale=absmax,scale_dtype=fp16", dtype::f32, shape(200), dk::extreme, 14},
      {"q2_g32_minmax_stoch_s32_bf16_extreme", "quant:bits=2,group=32,round=stochastic", dtype::bf16, shape(4, 40), dk::extreme, 15},
      {"q8_g64_minmax_near_s16_f32_extreme", "quant:bits=8,group=64,scale_dtype=fp16", dtype::f32, shape(250), dk::extreme, 16},
      // quant with Hadamard rotation: row tails, rows of several blocks, stochastic rounding
      {"q3_g64_rot64_near_s32_f32_5x150", "quant:bits=3,group=64,rotate=hadamard,rotate_block=64", dtype::f32,
       shape(5, 150), dk::activations, 17},
      {"q2_row_rot32_stoch_s16_bf16_3x96", "quant:bits=2,group=row,round=stochastic,scale_dtype=fp16,rotate=hadamard,rotate_block=32",
       dtype::bf16, shape(3, 96), dk::activations, 18},
      // quant with outlier keeping: u8 positions, a group shorter than N, non-finite values kept;
      // u16 positions with stochastic rounding
      {"q2_g64_out3_near_s32_f32_extreme", "quant:bits=2,group=64,outliers=3", dtype::f32, shape(2, 70), dk::extreme, 24},
      {"q3_row_out5_stoch_s16_bf16_3x300", "quant:bits=3,group=row,round=stochastic,scale_dtype=fp16,outliers=5",
       dtype::bf16, shape(3, 300), dk::activations, 25},
      // plain: every wire dtype, conversions on the wire
      {"plain_f32_from_f32_3x50", "plain:dtype=fp32", dtype::f32, shape(3, 50), dk::activations, 20},
      {"plain_f16_from_f32_extreme", "plain:dtype=fp16", dtype::f32, shape(101), dk::extreme, 21},
      {"plain_bf16_from_f16_77", "plain:dtype=bf16", dtype::f16, shape(77), dk::activations, 22},
      {"plain_f32_from_bf16_5x9", "plain:dtype=fp32", dtype::bf16, shape(5, 9), dk::uniform, 23},
      // fp8 and mx: both fp8 formats and scale dtypes, every mx element format, short mx
      // blocks at row ends, partial units, stochastic rounding, non-finite inputs
      {"fp8_e4m3_g128_s32_near_f32_1000", "fp8:format=e4m3", dtype::f32, shape(1000), dk::activations, 30},
      {"fp8_e5m2_row_s16_stoch_bf16_5x77", "fp8:format=e5m2,group=row,scale_dtype=fp16,round=stochastic", dtype::bf16,
       shape(5, 77), dk::activations, 31},
      {"fp8_e4m3_g32_s16_near_f32_extreme", "fp8:group=32,scale_dtype=fp16", dtype::f32, shape(250), dk::extreme, 32},
      {"mx_fp8_e4m3_near_f16_3x45", "mx:format=fp8_e4m3", dtype::f16, shape(3, 45), dk::activations, 33},
      {"mx_fp6_e3m2_near_f32_4x50", "mx:format=fp6_e3m2", dtype::f32, shape(4, 50), dk::uniform, 34},
      {"mx_fp6_e2m3_stoch_f32_333", "mx:format=fp6_e2m3,round=stochastic", dtype::f32, shape(333), dk::activations, 35},
      {"mx_fp4_e2m1_near_bf16_7x64", "mx:format=fp4_e2m1", dtype::bf16, shape(7, 64), dk::activations, 36},
      {"mx_int8_near_f32_extreme", "mx:format=int8", dtype::f32, shape(300), dk::extreme, 37},
      {"mx_fp8_e5m2_stoch_f32_2x31", "mx:format=fp8_e5m2,round=stochastic", dtype::f32, shape(2, 31), dk::uniform, 38},
      // lowrank: rows and columns across a 1024-term chunk of the canonical sums, rank 1 of a
      // vector, non-finite and huge inputs (zero and saturation), a rank above both dimensions
      {"lowrank_r4_f32_1030x6", "lowrank:rank=4", dtype::f32, shape(1030, 6), dk::activations, 40},
      {"lowrank_r2_bf16_3x1100", "lowrank:rank=2", dtype::bf16, shape(3, 1100), dk::activations, 41},
      {"lowrank_r1_f16_300", "lowrank:rank=1", dtype::f16, shape(300), dk::uniform, 42},
      {"lowrank_r3_f32_extreme", "lowrank:rank=3", dtype::f32, shape(12, 25), dk::extreme, 43},
      {"lowrank_r8_f32_5x6", "lowrank:rank=8", dtype::f32, shape(5, 6), dk::activations, 44},
      // rng=sample: stochastic rounding keyed by the rows' sample ids (sample_ids below).
      {"q3_g64_stoch_sample_s32_f32_4x128", "quant:bits=3,group=64,round=stochastic,rng=sample", dtype::f32, shape(4, 128), dk::activations, 45},
      {"q4_row_stoch_sample_s16_f16_5x77", "quant:bits=4,group=row,round=stochastic,rng=sample,scale_dtype=fp16", dtype::f16, shape(5, 77), dk::activations, 46},
      {"fp8_e5m2_row_stoch_sample_f32_3x45", "fp8:format=e5m2,group=row,round=stochastic,rng=sample", dtype::f32, shape(3, 45), dk::activations, 47},
      {"mx_fp4_e2m1_stoch_sample_bf16_3x45", "mx:format=fp4_e2m1,round=stochastic,rng=sample", dtype::bf16, shape(3, 45), dk::activations, 48},
  };
  return all;
}

inline std::vector<float> input_values(const gcase& c) {
  const uint64_t n = c.shp.size();
  switch (c.data) {
    case data_kind::activations: return testdata::activations(n, c.seed);
    case data_kind::uniform: return testdata::uniform(n, c.seed);
    case data_kind::extreme: return testdata::extreme(n, c.seed);
  }
  return {};
}

// The input tensor's bytes in the case's dtype.
inline std::vector<uint8_t> input_bytes(const gcase& c) { return testdata::as_bytes(input_values(c), c.in); }

inline pipecodec::spec spec_of(const gcase& c) {
  pipecodec::spec s;
  if (!pipecodec::ok(pipecodec::parse_spec(c.spec, s))) s.codec = pipecodec::codec_id(0);
  return s;
}

// The rows' sample ids of an rng=sample case (empty for the others).
inline std::vector<uint64_t> sample_ids(const gcase& c) {
  if (!pipecodec::keyed_by_sample(spec_of(c))) return {};
  std::vector<uint64_t> ids(c.shp.rows);
  for (uint64_t r = 0; r < c.shp.rows; ++r) ids[r] = 1000 * c.seed + 3 * r + 1;
  return ids;
}

// The encode's randomness: the case's seed, and its sample ids (which `ids` keeps alive).
inline pipecodec::randomness randomness_of(const gcase& c, std::vector<uint64_t>& ids) {
  ids = sample_ids(c);
  return pipecodec::randomness(c.seed, ids.empty() ? nullptr : ids.data());
}

// Encodes the case; an empty vector on failure.
inline std::vector<uint8_t> encode(const gcase& c) {
  const pipecodec::spec s = spec_of(c);
  std::vector<uint8_t> payload(pipecodec::encoded_bytes(s, c.shp));
  const std::vector<uint8_t> in = input_bytes(c);
  std::vector<uint8_t> ws(pipecodec::workspace_bytes(s, c.shp));
  size_t written = 0;
  std::vector<uint64_t> ids;
  const pipecodec::status st = pipecodec::host::encode(
      s, pipecodec::const_tensor_view{in.data(), c.in, c.shp}, payload.data(), payload.size(),
      ws.data(), ws.size(), randomness_of(c, ids), &written);
  if (!pipecodec::ok(st) || payload.empty()) return {};
  payload.resize(written);
  return payload;
}

// The case called `name`; nullptr if there is none.
inline const gcase* find(const std::string& name) {
  for (const auto& c : cases())
    if (name == c.name) return &c;
  return nullptr;
}

}  // namespace golden

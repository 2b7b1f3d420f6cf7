// What to do to a tensor: the codec and its parameters. A plain aggregate, so it can be
// passed by value to a kernel. parse_spec() (policy/spec_string.hpp) builds one from text.
#pragma once

#include "dtype.hpp"
#include "status.hpp"

namespace pipecodec {

enum class codec_id : uint8_t { plain = 1, quant = 2, topk = 3, randk = 4, fp8 = 5, mx = 6, lowrank = 7 };

// The codec's name as spec text spells it ("quant", "topk", ...).
inline const char* to_string(codec_id c) {
  switch (c) {
    case codec_id::plain: return "plain";
    case codec_id::quant: return "quant";
    case codec_id::topk: return "topk";
    case codec_id::randk: return "randk";
    case codec_id::fp8: return "fp8";
    case codec_id::mx: return "mx";
    case codec_id::lowrank: return "lowrank";
  }
  return "unknown";
}
enum class scale_mode : uint8_t { minmax = 1, absmax = 2 };
enum class rounding : uint8_t { nearest = 1, stochastic = 2 };
enum class group_kind : uint8_t { elements = 1, row = 2, tensor = 3 };
enum class rotation : uint8_t { none = 0, hadamard = 1 };
// What a random draw is keyed by: the element's flat position in the tensor, or (spec text
// `rng=sample`) the row's sample id and the element's column, so a sample's bits do not
// depend on where it sits in the batch (recompute and re-batching give the same bits).
enum class rng_key : uint8_t { position = 0, sample = 1 };

// The randomness of one encode call: the seed and, for specs with rng=sample, one sample id
// per row (host memory for the host backend, device memory for the CUDA backend). Built
// implicitly from a seed, so calls without sample ids pass the seed alone.
struct randomness {
  uint64_t seed = 0;
  const uint64_t* sample_ids = nullptr;
  PIPECODEC_HD randomness(uint64_t s = 0, const uint64_t* ids = nullptr) : seed(s), sample_ids(ids) {}
};

struct quant_params {
  uint8_t bits = 8;                        // 1..8
  group_kind group = group_kind::elements;
  uint32_t group_size = 128;               // group_kind::elements: a multiple of 32, >= 32
  scale_mode scale = scale_mode::minmax;
  rounding round = rounding::nearest;
  dtype scale_dtype = dtype::f32;          // f32 or f16
  rotation rotate = rotation::none;        // hadamard: rotate blocks of each row first (core/hadamard.hpp)
  uint8_t rotate_log2 = 0;                 // hadamard: log2 of the block, 5..12; none: 0
  uint8_t outliers = 0;                    // largest-magnitude values per group sent exactly, 0..16
  rng_key rng = rng_key::position;         // sample: stochastic rounding keyed by sample id
};

// Outliers per group at most; with rotation none (core/outliers.hpp says why).
constexpr uint32_t max_outliers = 16;

enum class topk_scope : uint8_t { tensor = 1, row = 2 };
enum class index_layout : uint8_t { automatic = 0, u32 = 1, u16 = 2, bitmap = 3 };
enum class value_kind : uint8_t { f32 = 1, f16 = 2, bf16 = 3, quant = 4 };

struct topk_params {
  double ratio = 0.1;             // fraction kept, used when k == 0
  uint64_t k = 0;                 // absolute count (per row in row scope); 0: use ratio
  topk_scope scope = topk_scope::tensor;
  index_layout index = index_layout::automatic;
  value_kind values = value_kind::f32;
  quant_params vquant{};          // value quantization when values == quant
  bool shared_mask = false;       // values only; positions from a paired payload
  bool unbiased = false;          // randk: scale kept values by n/k
  uint64_t seed = 0;              // randk: positions derive from this seed
  rng_key rng = rng_key::position;  // randk, scope=row: positions keyed by the row's sample id
};

struct plain_params {
  dtype wire = dtype::f32;        // element type on the wire
};

// Element formats of the fp8 and mx codecs (core/minifloat.hpp).
enum class elem_format : uint8_t { e4m3 = 1, e5m2 = 2, e3m2 = 3, e2m3 = 4, e2m1 = 5, int8 = 6 };

// fp8: elements in e4m3 or e5m2 times a scale per group, groups as quant_params has them.
// mx:  OCP Microscaling blocks of 32 elements along each row sharing a power-of-two (E8M0)
//      scale; group and scale_dtype do not apply.
struct float_params {
  elem_format format = elem_format::e4m3;
  group_kind group = group_kind::elements;  // fp8 only
  uint32_t group_size = 128;                // fp8, group_kind::elements: a multiple of 32, >= 32
  dtype scale_dtype = dtype::f32;           // fp8 only: f32 or f16
  rounding round = rounding::nearest;
  rng_key rng = rng_key::position;          // sample: stochastic rounding keyed by sample id
};

// lowrank: a rows x cols tensor (1-D: one row) sent as factors P (rows x rank) and Q
// (cols x rank) after one power iteration (core/lowrank_format.hpp).
constexpr uint32_t max_lowrank_rank = 32;

struct lowrank_params {
  uint32_t rank = 4;  // 1..max_lowrank_rank
};

PIPECODEC_HD constexpr bool valid_lowrank_params(const lowrank_params& l) {
  return l.rank >= 1 && l.rank <= max_lowrank_rank;
}

PIPECODEC_HD constexpr bool is_float_codec(codec_id c) { return c == codec_id::fp8 || c == codec_id::mx; }

struct spec {
  codec_id codec = codec_id::quant;
  quant_params quant{};
  topk_params topk{};
  plain_params plain{};
  float_params flt{};  // fp8 and mx
  lowrank_params lowrank{};
};

// Draws keyed by sample id (rng=sample): the encode needs one id per row.
PIPECODEC_HD constexpr bool keyed_by_sample(const spec& s) {
  switch (s.codec) {
    case codec_id::quant: return s.quant.rng == rng_key::sample;
    case codec_id::fp8:
    case codec_id::mx: return s.flt.rng == rng_key::sample;
    case codec_id::randk: return s.topk.rng == rng_key::sample;
    default: return false;
  }
}

// Groups and scales as quant and fp8 share them: a known kind, fixed sizes a multiple of 32,
// scales stored as f32 or f16.
PIPECODEC_HD constexpr bool valid_grouping(group_kind g, uint32_t size, dtype scale_dtype) {
  if (g != group_kind::elements && g != group_kind::row && g != group_kind::tensor) return false;
  if (g == group_kind::elements && (size < 32 || size % 32 != 0)) return false;
  return scale_dtype == dtype::f32 || scale_dtype == dtype::f16;
}

PIPECODEC_HD constexpr bool valid_rounding(rounding r) { return r == rounding::nearest || r == rounding::stochastic; }

// rng=sample keys stochastic rounding, within groups that stay inside a row (a scale of the
// whole tensor mixes the samples' bits anyway).
PIPECODEC_HD constexpr bool valid_rounding_key(rounding r, rng_key k, group_kind g) {
  return k == rng_key::position || (k == rng_key::sample && r == rounding::stochastic && g != group_kind::tensor);
}

PIPECODEC_HD constexpr bool valid_rotation(rotation r, uint8_t log2) {
  if (r == rotation::none) return log2 == 0;
  return r == rotation::hadamard && log2 >= 5 && log2 <= 12;
}

PIPECODEC_HD constexpr bool valid_quant_params(const quant_params& q) {
  if (q.bits < 1 || q.bits > 8 || !valid_rotation(q.rotate, q.rotate_log2)) return false;
  if (q.outliers > max_outliers || (q.outliers != 0 && q.rotate != rotation::none)) return false;
  if (q.scale != scale_mode::minmax && q.scale != scale_mode::absmax) return false;
  return valid_rounding(q.round) && valid_rounding_key(q.round, q.rng, q.group) &&
         valid_grouping(q.group, q.group_size, q.scale_dtype);
}

PIPECODEC_HD constexpr bool valid_float_params(codec_id c, const float_params& f) {
  if (!valid_rounding(f.round) || !valid_rounding_key(f.round, f.rng, c == codec_id::mx ? group_kind::row : f.group))
    return false;
  if (c == codec_id::mx) return uint8_t(f.format) >= 1 && uint8_t(f.format) <= 6;
  if (c != codec_id::fp8 || (f.format != elem_format::e4m3 && f.format != elem_format::e5m2)) return false;
  return valid_grouping(f.group, f.group_size, f.scale_dtype);
}

}  // namespace pipecodec

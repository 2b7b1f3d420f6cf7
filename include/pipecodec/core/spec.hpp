// What to do to a tensor: the codec and its parameters. A plain aggregate, so it can be
// passed by value to a kernel. parse_spec() (policy/spec_string.hpp) builds one from text.
#pragma once

#include "dtype.hpp"
#include "status.hpp"

namespace pipecodec {

enum class codec_id : uint8_t { plain = 1, quant = 2, topk = 3, randk = 4 };

// The codec's name as spec text spells it ("quant", "topk", ...).
inline const char* to_string(codec_id c) {
  switch (c) {
    case codec_id::plain: return "plain";
    case codec_id::quant: return "quant";
    case codec_id::topk: return "topk";
    case codec_id::randk: return "randk";
  }
  return "unknown";
}
enum class scale_mode : uint8_t { minmax = 1, absmax = 2 };
enum class rounding : uint8_t { nearest = 1, stochastic = 2 };
enum class group_kind : uint8_t { elements = 1, row = 2, tensor = 3 };

struct quant_params {
  uint8_t bits = 8;                        // 1..8
  group_kind group = group_kind::elements;
  uint32_t group_size = 128;               // group_kind::elements: a multiple of 32, >= 32
  scale_mode scale = scale_mode::minmax;
  rounding round = rounding::nearest;
  dtype scale_dtype = dtype::f32;          // f32 or f16
};

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
};

struct plain_params {
  dtype wire = dtype::f32;        // element type on the wire
};

struct spec {
  codec_id codec = codec_id::quant;
  quant_params quant{};
  topk_params topk{};
  plain_params plain{};
};

PIPECODEC_HD constexpr bool valid_quant_params(const quant_params& q) {
  if (q.bits < 1 || q.bits > 8) return false;
  if (q.group != group_kind::elements && q.group != group_kind::row && q.group != group_kind::tensor)
    return false;
  if (q.group == group_kind::elements && (q.group_size < 32 || q.group_size % 32 != 0)) return false;
  if (q.scale != scale_mode::minmax && q.scale != scale_mode::absmax) return false;
  if (q.round != rounding::nearest && q.round != rounding::stochastic) return false;
  return q.scale_dtype == dtype::f32 || q.scale_dtype == dtype::f16;
}

}  // namespace pipecodec

// Host backend of the fp8 and mx codecs: one pass per group for its scale, one to convert
// and pack its elements.
#pragma once

#include "../core/dispatch.hpp"
#include "../core/float_format.hpp"
#include "buffer_checks.hpp"

namespace pipecodec::host::detail {

using namespace pipecodec::detail;

template <dtype In, elem_format F>
inline void encode_float_groups(codec_id c, const float_params& spec, const float_layout& L, const void* x,
                                uint64_t seed, uint8_t* p) {
  float_params f = spec;
  f.format = F;  // a constant from here on
  constexpr uint32_t width = traits_of(F).width;
  uint8_t* codes = p + L.codes_offset;
  for (uint64_t g = 0; g < L.groups; ++g) {
    const uint64_t begin = L.group_begin(g), end = begin + L.group_size(g);
    uint32_t w = 0;
    for (uint64_t i = begin; i < end; ++i) {
      const uint32_t a = amax_word(load<In>(x, i), c);
      w = a > w ? a : w;
    }
    const float_scale s = group_scale(w, c, f);
    store_float_scale(p, L, g, s);
    // Groups need not start on a unit of 4 codes (mx rows of any length): codes are OR-ed
    // into the zeroed section.
    for (uint64_t i = begin; i < end; ++i) {
      const uint32_t rnd = f.round == rounding::stochastic ? rounding_word(seed, i) : 0u;
      const uint32_t code = encode_value(load<In>(x, i), s, c, f, rnd);
      if constexpr (width == 8) codes[i] = uint8_t(code);
      else or_code(codes, i, width, code);
    }
  }
}

inline status encode_float(codec_id c, const float_params& f, const_tensor_view in, void* payload, size_t capacity,
                           uint64_t seed, size_t* written) {
  if (!valid_float_params(c, f)) return status::invalid_spec;
  float_layout L;
  if (!make_float_layout(c, f, in.shp, L)) return status::size_overflow;
  const status bad = check_encode_buffers(in, L.n, payload, capacity, L.total);
  if (!ok(bad)) return bad;
  uint8_t* p = static_cast<uint8_t*>(payload);
  write_payload_header(p, c, in, L.total, [&](uint8_t* params) { write_float_params(params, c, f, L.group_len, seed); });
  memset(p + L.scales_offset, 0, L.total - L.scales_offset);
  const status st = dispatch_dtype(in.type, [&](auto tc) {
    return dispatch_format(f.format, [&](auto fc) {
      encode_float_groups<decltype(tc)::value, decltype(fc)::value>(c, f, L, in.data, seed, p);
      return status::success;
    });
  });
  if (ok(st) && written) *written = size_t(L.total);
  return st;
}

// Validates the whole payload before writing any output, so a rejected payload leaves
// `out` untouched.
template <bool Accumulate>
inline status decode_float(const void* payload, size_t len, tensor_view out) {
  float_payload fp;
  status st = parse_float_payload(payload, len, fp);
  if (!ok(st)) return st;
  st = check_decode_output(fp.hdr, fp.layout.n, out, payload);
  if (!ok(st)) return st;
  if (!float_padding_zero(fp)) return status::corrupt_payload;
  for (uint64_t g = 0; g < fp.layout.groups; ++g)
    if (!valid_float_group(fp, g)) return status::corrupt_payload;
  const float_layout& L = fp.layout;
  const uint8_t* codes = fp.bytes + L.codes_offset;
  float value[256];  // every code's element value, exactly as decode_element gives it
  for (uint32_t code = 0; code < (1u << L.width); ++code) value[code] = decode_element(code, fp.f.format);
  return dispatch_dtype(out.type, [&](auto oc) {
    constexpr dtype O = decltype(oc)::value;
    for (uint64_t g = 0; g < L.groups; ++g) {
      const float_scale s = load_float_scale(fp, g);
      const uint64_t begin = L.group_begin(g), end = begin + L.group_size(g);
      for (uint64_t i = begin; i < end; ++i) {
        const uint32_t code = L.width == 8 ? codes[i] : get_code(codes, i, L.width);
        const float v = scale_element(value[code], s);
        store<O>(out.data, i, Accumulate ? accumulate_value(load<O>(out.data, i), v) : v);
      }
    }
    return status::success;
  });
}

}  // namespace pipecodec::host::detail

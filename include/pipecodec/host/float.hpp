// Host backend of the fp8 and mx codecs: one pass per group for its scale, one to convert
// and pack its elements.
#pragma once

#include "../core/dispatch.hpp"
#include "../core/float_format.hpp"
#include "buffer_checks.hpp"

namespace pipecodec::host::detail {

using namespace pipecodec::detail;

template <dtype In, elem_format F, rounding R>
inline void encode_float_groups(codec_id c, const float_params& spec, const float_layout& L, const void* x,
                                const randomness& rnd, uint64_t cols, uint8_t* p) {
  float_params f = spec;
  f.format = F;  // constants from here on: the conversion's branches fold away
  f.round = R;
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
    // Codes of 64 elements at a time into a buffer (a loop compilers vectorize), then packed:
    // whole units of 4 codes are stored, codes of a unit the group shares with its neighbour
    // (mx rows of any length) are OR-ed into the zeroed section.
    for (uint64_t i0 = begin; i0 < end; i0 += 64) {
      const uint32_t cnt = uint32_t(end - i0 < 64 ? end - i0 : 64);
      uint8_t code[64];
      uint32_t words[68] = {};  // rounding words w0 & ~3 .. of the run's draws: one Philox block per 4
      uint64_t w0 = 0;
      if constexpr (R == rounding::stochastic) {
        const draw d = rounding_draw(rnd, f.rng, cols, i0);  // the group, so the run, lies in one row
        w0 = d.first;
        for (uint64_t b = w0 >> 2; b <= (w0 + cnt - 1) >> 2; ++b) {
          const philox_out r = random_block(d.key, d.stream, b);
          for (uint32_t k = 0; k < 4; ++k) words[4 * (b - (w0 >> 2)) + k] = r.v[k];
        }
      }
      for (uint32_t j = 0; j < cnt; ++j)
        code[j] = uint8_t(encode_value(load<In>(x, i0 + j), s, c, f, words[(w0 & 3u) + j]));
      uint32_t j = 0;
      if constexpr (width == 8) {
        memcpy(codes + i0, code, cnt);
        j = cnt;
      } else if ((i0 & 3u) == 0) {
        for (; j + 4 <= cnt; j += 4) {
          const uint32_t unit[4] = {code[j], code[j + 1], code[j + 2], code[j + 3]};
          put_unit(codes, (i0 + j) >> 2, unit, width);
        }
      }
      for (; j < cnt; ++j) or_code(codes, i0 + j, width, code[j]);
    }
  }
}

inline status encode_float(codec_id c, const float_params& f, const_tensor_view in, void* payload, size_t capacity,
                           const randomness& rnd, size_t* written) {
  if (!valid_float_params(c, f)) return status::invalid_spec;
  float_layout L;
  if (!make_float_layout(c, f, in.shp, L)) return status::size_overflow;
  status bad = check_encode_buffers(in, L.n, payload, capacity, L.total);
  if (ok(bad)) bad = check_float_sample_keyed(c, f, rnd, in.shp, L);
  if (!ok(bad)) return bad;
  uint8_t* p = static_cast<uint8_t*>(payload);
  write_payload_header(p, c, in, L.total,
                       [&](uint8_t* params) { write_float_params(params, c, f, L.group_len, rnd.seed); });
  memset(p + L.scales_offset, 0, L.total - L.scales_offset);
  const status st = dispatch_dtype(in.type, [&](auto tc) {
    return dispatch_format(f.format, [&](auto fc) {
      constexpr dtype T = decltype(tc)::value;
      constexpr elem_format F = decltype(fc)::value;
      if (f.round == rounding::nearest)
        encode_float_groups<T, F, rounding::nearest>(c, f, L, in.data, rnd, in.shp.cols, p);
      else
        encode_float_groups<T, F, rounding::stochastic>(c, f, L, in.data, rnd, in.shp.cols, p);
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

// The payload of the fp8 and mx codecs: parameters, layout, group scales, validation.
//
// Parameters (24 bytes):
//   0 element format | 1 rounding | 2 scale dtype (fp8: f32 or f16; mx: 0, E8M0) |
//   3 group kind (fp8; mx: 0) | 4..7 zero | 8..15 group length (u64) | 16..23 seed (stochastic rounding, else 0)
// Sections:
//   header (64) | scales[groups] (f32, f16 or one E8M0 byte each), padded to 16 |
//   codes: ceil(n / 4) units of 4 codes, a unit being `width` / 2 bytes, padded to 16
// Code i sits at bit (i mod 4) * width of its unit, the unit read as a little-endian integer;
// a last unit's unused codes are zero.
// Groups: fp8 as quant (flat runs of group_len elements); mx: blocks of 32 elements along each
// row (the last block of a row is shorter when cols is not a multiple of 32).
#pragma once

#include <type_traits>

#include "draw.hpp"
#include "minifloat.hpp"
#include "philox.hpp"
#include "quant_layout.hpp"
#include "quant_math.hpp"
#include "sample_ids.hpp"

namespace pipecodec::detail {

constexpr uint64_t mx_block = 32;
constexpr uint8_t e8m0_nan = 0xFF;

struct float_layout {
  uint64_t n = 0;
  uint64_t row_len = 0;         // elements per row of groups (fp8: the whole tensor)
  uint64_t group_len = 0;       // elements per group (the last of a row may be shorter)
  uint64_t groups_per_row = 0;
  uint64_t groups = 0;
  uint32_t width = 0;           // bits per code
  uint32_t scale_bytes = 0;     // 4, 2 or 1 (E8M0)
  uint64_t scales_offset = 0;
  uint64_t codes_offset = 0;
  uint64_t units = 0;           // units of 4 codes
  uint64_t total = 0;

  PIPECODEC_HD uint64_t group_begin(uint64_t g) const {
    return (g / groups_per_row) * row_len + (g % groups_per_row) * group_len;
  }
  PIPECODEC_HD uint64_t group_size(uint64_t g) const {
    const uint64_t b = (g % groups_per_row) * group_len;
    return row_len - b < group_len ? row_len - b : group_len;
  }
  PIPECODEC_HD uint64_t group_of(uint64_t i) const {
    return (i / row_len) * groups_per_row + (i % row_len) / group_len;
  }
  PIPECODEC_HD uint32_t unit_bytes() const { return width / 2; }
};

PIPECODEC_HD uint64_t float_group_len(codec_id c, const float_params& f, const shape& s) {
  return c == codec_id::mx ? mx_block : group_len_of(f.group, f.group_size, s);
}

// False when the parameters are invalid or the shape too large.
PIPECODEC_HD bool make_float_layout(codec_id c, const float_params& f, const shape& s, float_layout& L) {
  uint64_t n = 0;
  if (!valid_float_params(c, f) || !s.count(n) || n > max_elements) return false;
  L = float_layout{};
  L.n = n;
  L.width = traits_of(f.format).width;
  L.scale_bytes = c == codec_id::mx ? 1u : f.scale_dtype == dtype::f32 ? 4u : 2u;
  L.row_len = c == codec_id::mx ? s.cols : n;
  L.group_len = float_group_len(c, f, s);
  if (n > 0 && L.group_len > 0) {
    L.groups_per_row = ceil_div(L.row_len, L.group_len);
    L.groups = (n / L.row_len) * L.groups_per_row;
  }
  L.units = ceil_div(n, 4);
  L.scales_offset = header_bytes;
  L.codes_offset = L.scales_offset + align16(L.groups * L.scale_bytes);
  L.total = L.codes_offset + align16(L.units * L.unit_bytes());
  return true;
}

// rng=sample's checks on an fp8/mx encode (core/draw.hpp): mx blocks never leave their row,
// fp8 groups are checked as quantization's.
PIPECODEC_HD status check_float_sample_keyed(codec_id c, const float_params& f, const randomness& r, const shape& s,
                                             const float_layout& L) {
  return check_sample_keyed(f.rng, r, s, c == codec_id::mx ? s.cols : L.group_len);
}

PIPECODEC_HD void write_float_params(uint8_t* p, codec_id c, const float_params& f, uint64_t group_len,
                                     uint64_t seed) {
  for (uint32_t i = 0; i < header_param_bytes; ++i) p[i] = 0;
  p[0] = uint8_t(f.format);
  p[1] = rounding_byte(f.round, f.rng);
  if (c == codec_id::fp8) {
    p[2] = uint8_t(f.scale_dtype);
    p[3] = uint8_t(f.group);
  }
  put_u64(p + 8, group_len);
  put_u64(p + 16, f.round == rounding::stochastic ? seed : 0);
}

// The parameters back, checked against the shape: invalid_header for anything an encoder
// could not have written.
PIPECODEC_HD status read_float_params(const uint8_t* p, codec_id c, const shape& s, float_params& f) {
  for (uint32_t i = 4; i < 8; ++i)
    if (p[i] != 0) return status::invalid_header;
  f = float_params{};
  f.format = elem_format(p[0]);
  read_rounding_byte(p[1], f.round, f.rng);
  const uint64_t group_len = get_u64(p + 8);
  if (c == codec_id::mx) {
    if (p[2] != 0 || p[3] != 0) return status::invalid_header;
  } else {
    f.scale_dtype = dtype(p[2]);
    f.group = group_kind(p[3]);
    if (f.group == group_kind::elements) f.group_size = group_len <= 0xFFFFFFFFu ? uint32_t(group_len) : 0u;
  }
  if (!valid_float_params(c, f)) return status::invalid_header;
  if (f.round == rounding::nearest && get_u64(p + 16) != 0) return status::invalid_header;
  return group_len == float_group_len(c, f, s) ? status::success : status::invalid_header;
}

struct float_payload {
  header hdr;
  float_params f;
  float_layout layout;
  const uint8_t* bytes;
};

PIPECODEC_HD status parse_float_payload(const void* payload, uint64_t len, float_payload& out) {
  const uint8_t* p = static_cast<const uint8_t*>(payload);
  status st = read_header(p, len, out.hdr);
  if (!ok(st)) return st;
  if (!is_float_codec(out.hdr.codec)) return status::unknown_codec;
  if (!valid_flags(out.hdr.flags)) return status::invalid_header;
  st = read_float_params(out.hdr.params, out.hdr.codec, out.hdr.shp, out.f);
  if (!ok(st)) return st;
  if (!make_float_layout(out.hdr.codec, out.f, out.hdr.shp, out.layout)) return status::invalid_header;
  if (out.hdr.total_bytes != out.layout.total + ids_section_bytes(out.hdr)) return status::size_mismatch;
  out.bytes = p;
  return status::success;
}

// ---- group scales ----

// A group's statistic as one word, so both backends reduce it with an unsigned max in any
// order: the magnitude bits of its largest finite element; mx marks a non-finite element with
// 0x7F800000, above every finite magnitude (its block then becomes NaN, as OCP MX does for
// element formats without NaN).
PIPECODEC_HD uint32_t amax_word(float x, codec_id c) {
  const uint32_t a = bit_cast<uint32_t>(x) & 0x7FFFFFFFu;
  if (a < 0x7F800000u) return a;
  return c == codec_id::mx ? 0x7F800000u : 0u;
}

// What encoding and decoding a group need: the stored scale field, the multiplier that
// decodes an element, and for mx the power of two that encodes one.
struct float_scale {
  uint32_t stored = 0;   // f32 bits, f16 bits or the E8M0 byte
  float decode_mul = 0;  // fp8: the scale; mx: 2^shared_exp
  float encode_mul = 0;  // mx: 2^-shared_exp (fp8 divides by decode_mul)
  bool nan_block = false;
};

// Largest fp8 scale: every code times it stays finite.
PIPECODEC_HD float fp8_scale_cap(const float_params& f) {
  return round_scale(ddiv_rn(double(flt_max), double(max_finite(f.format))), f.scale_dtype, false);
}

PIPECODEC_HD float_scale fp8_scale_from_value(float s, const float_params& f) {
  float_scale r;
  r.decode_mul = s;
  r.stored = f.scale_dtype == dtype::f32 ? bit_cast<uint32_t>(s) : f32_to_f16(s);
  return r;
}

PIPECODEC_HD float_scale mx_scale_from_byte(uint32_t b) {
  float_scale r;
  r.stored = b;
  r.nan_block = b == e8m0_nan;
  if (!r.nan_block) {
    r.decode_mul = pow2f(int32_t(b) - 127);
    r.encode_mul = pow2f(127 - int32_t(b));
  }
  return r;
}

// floor(log2(a)) of a positive finite float's bits.
PIPECODEC_HD int32_t floor_log2_bits(uint32_t a) {
  if (a >= 0x00800000u) return int32_t(a >> 23) - 127;
  int32_t top = 22;
  while (((a >> top) & 1u) == 0) --top;
  return top - 149;
}

// The scale of a group whose amax_word() reduction is w.
// fp8: amax / largest finite rounded up to the scale dtype (16 significant bits for f32, so
// that code * scale is exact), capped so that every code decodes finite.
// mx:  2^(floor(log2(amax)) - emax_elem), at least 2^-127 (OCP MX v1.0, section 6.3).
PIPECODEC_HD float_scale group_scale(uint32_t w, codec_id c, const float_params& f) {
  if (c == codec_id::mx) {
    if (w >= 0x7F800000u) return mx_scale_from_byte(e8m0_nan);
    if (w == 0) return mx_scale_from_byte(0);
    const int32_t e = floor_log2_bits(w) - traits_of(f.format).emax;
    return mx_scale_from_byte(uint32_t((e > -127 ? e : -127) + 127));
  }
  const double want = ddiv_rn(double(bit_cast<float>(w)), double(max_finite(f.format)));
  const float s = round_scale(want, f.scale_dtype, true);
  const float cap = fp8_scale_cap(f);
  return fp8_scale_from_value(s < cap ? s : cap, f);
}

// The stored scale of group g, read back.
PIPECODEC_HD float_scale load_float_scale(const float_payload& fp, uint64_t g) {
  const uint8_t* sec = fp.bytes + fp.layout.scales_offset;
  if (fp.hdr.codec == codec_id::mx) return mx_scale_from_byte(sec[g]);
  if (fp.layout.scale_bytes == 4) return fp8_scale_from_value(bit_cast<float>(get_u32(sec + 4 * g)), fp.f);
  return fp8_scale_from_value(f16_to_f32(get_u16(sec + 2 * g)), fp.f);
}

PIPECODEC_HD void store_float_scale(uint8_t* payload, const float_layout& L, uint64_t g, const float_scale& s) {
  uint8_t* sec = payload + L.scales_offset;
  if (L.scale_bytes == 4) put_u32(sec + 4 * g, s.stored);
  else if (L.scale_bytes == 2) put_u16(sec + 2 * g, uint16_t(s.stored));
  else sec[g] = uint8_t(s.stored);
}

// ---- elements ----

// The code of value x in a group of scale s; rnd: the element's rounding word (word i mod 4 of
// Philox block i / 4 of the rounding stream, as quant draws them), for stochastic rounding.
PIPECODEC_FOLD uint32_t encode_value(float x, const float_scale& s, codec_id c, const float_params& f, uint32_t rnd) {
  if (s.nan_block) return 0;
  float y = x;
  if (is_finite(x)) {
    if (c == codec_id::mx) y = mul_rn(x, s.encode_mul);
    else y = s.decode_mul > 0 ? div_rn(x, s.decode_mul) : mul_rn(x, 0.0F);
  }
  return encode_element(y, f.format, f.round, rnd);
}

// The decoded value: exact (code * scale is exact for both codecs). A NaN block decodes to
// NaN; a non-finite code to its value.
PIPECODEC_HD float scale_element(float v, const float_scale& s) {
  if (s.nan_block) return bit_cast<float>(0x7FC00000u);
  return is_finite(v) ? mul_rn(v, s.decode_mul) : v;
}

PIPECODEC_HD float decode_value(uint32_t code, const float_scale& s, elem_format f) {
  return scale_element(decode_element(code, f), s);
}

// The one place where the element format becomes a template argument (host loops, so the
// format's constants fold into the conversion).
template <class F>
status dispatch_format(elem_format f, F&& fn) {
  switch (f) {
    case elem_format::e4m3: return fn(std::integral_constant<elem_format, elem_format::e4m3>{});
    case elem_format::e5m2: return fn(std::integral_constant<elem_format, elem_format::e5m2>{});
    case elem_format::e3m2: return fn(std::integral_constant<elem_format, elem_format::e3m2>{});
    case elem_format::e2m3: return fn(std::integral_constant<elem_format, elem_format::e2m3>{});
    case elem_format::e2m1: return fn(std::integral_constant<elem_format, elem_format::e2m1>{});
    case elem_format::int8: return fn(std::integral_constant<elem_format, elem_format::int8>{});
  }
  return status::not_supported;
}

// decode_accumulate's update: a non-finite decoded value replaces the element, so no
// arithmetic ever makes a NaN (whose bits differ between CPUs and GPUs).
PIPECODEC_HD float accumulate_value(float old, float v) { return is_finite(v) ? add_rn(old, v) : v; }

PIPECODEC_HD uint32_t get_code(const uint8_t* codes, uint64_t i, uint32_t width) {
  const uint8_t* u = codes + (i >> 2) * (width / 2);
  uint32_t w = 0;
  for (uint32_t b = 0; b < width / 2; ++b) w |= uint32_t(u[b]) << (8 * b);
  return (w >> ((i & 3u) * width)) & ((1u << width) - 1u);
}

// Sets the bits of code i in a zeroed section (host encoders, whose groups need not start on
// a unit).
PIPECODEC_HD void or_code(uint8_t* codes, uint64_t i, uint32_t width, uint32_t code) {
  const uint32_t w = code << ((i & 3u) * width);
  uint8_t* u = codes + (i >> 2) * (width / 2);
  for (uint32_t b = 0; b < width / 2; ++b) u[b] = uint8_t(u[b] | (w >> (8 * b)));
}

// Writes the unit of 4 codes c[0..3] (unused ones zero).
PIPECODEC_HD void put_unit(uint8_t* codes, uint64_t unit, const uint32_t (&c)[4], uint32_t width) {
  const uint32_t w = c[0] | (c[1] << width) | (c[2] << (2 * width)) | (c[3] << (3 * width));
  uint8_t* u = codes + unit * (width / 2);
  for (uint32_t b = 0; b < width / 2; ++b) u[b] = uint8_t(w >> (8 * b));
}

// ---- validation ----

// A stored scale the encoder can write: fp8 a storable, non-negative, finite scale up to the
// cap; mx any E8M0 byte whose codes all decode finite (shared exponent <= 127 - emax_elem),
// or NaN with every code of the block zero.
PIPECODEC_HD bool valid_float_group(const float_payload& fp, uint64_t g) {
  const float_layout& L = fp.layout;
  const uint8_t* sec = fp.bytes + L.scales_offset;
  if (fp.hdr.codec == codec_id::mx) {
    const uint32_t b = sec[g];
    if (b != e8m0_nan) return b <= uint32_t(254 - traits_of(fp.f.format).emax);
    const uint8_t* codes = fp.bytes + L.codes_offset;
    const uint64_t begin = L.group_begin(g), end = begin + L.group_size(g);
    for (uint64_t i = begin; i < end; ++i)
      if (get_code(codes, i, L.width) != 0) return false;
    return true;
  }
  if (L.scale_bytes == 2) {
    const uint16_t h = get_u16(sec + 2 * g);
    if (h >= 0x7C00u) return false;  // negative, Inf or NaN
  }
  const float s = load_float_scale(fp, g).decode_mul;
  return valid_scale(s, fp.f.scale_dtype) && s <= fp8_scale_cap(fp.f);
}

// Section paddings, the last unit's unused codes and the sample-id padding are zero.
PIPECODEC_HD bool float_padding_zero(const float_payload& fp) {
  const float_layout& L = fp.layout;
  const uint64_t scales_end = L.scales_offset + L.groups * L.scale_bytes;
  const uint64_t codes_end = L.codes_offset + L.units * L.unit_bytes();
  if (!all_zero(fp.bytes + scales_end, L.codes_offset - scales_end)) return false;
  if (!all_zero(fp.bytes + codes_end, L.total - codes_end)) return false;
  for (uint64_t i = L.n; i < L.units * 4; ++i)
    if (get_code(fp.bytes + L.codes_offset, i, L.width) != 0) return false;
  return ids_padding_zero(fp.bytes, fp.hdr);
}

}  // namespace pipecodec::detail

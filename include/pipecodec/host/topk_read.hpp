// Reading a TopK / RandK payload on the host: validating and walking its index section,
// and reading its kept values in order (raw or k-bit quantized).
#pragma once

#include "../core/bitplane.hpp"
#include "../core/dispatch.hpp"
#include "../core/topk_format.hpp"

namespace pipecodec::host::detail {

using namespace pipecodec::detail;

// Set bits of a bitmap in [begin, end), read as little-endian u64 words. The caller
// guarantees the words touched lie inside the (16-byte padded) section.
inline uint64_t bitmap_word(const uint8_t* bm, uint64_t w) {
  uint64_t v;
  memcpy(&v, bm + 8 * w, 8);
  return v;
}

inline uint64_t range_mask(uint64_t w, uint64_t begin, uint64_t end) {
  uint64_t m = ~uint64_t(0);
  if (w * 64 < begin) m &= ~uint64_t(0) << (begin - w * 64);
  if (end < w * 64 + 64) m &= (uint64_t(1) << (end - w * 64)) - 1;
  return m;
}

// Calls f(pos) for each set bit in [begin, end), ascending.
template <class F>
inline void for_each_set_bit(const uint8_t* bm, uint64_t begin, uint64_t end, F&& f) {
  if (begin >= end) return;
  for (uint64_t w = begin / 64; w <= (end - 1) / 64; ++w) {
    uint64_t v = bitmap_word(bm, w) & range_mask(w, begin, end);
    while (v) {
      f(w * 64 + uint64_t(__builtin_ctzll(v)));
      v &= v - 1;
    }
  }
}

inline uint64_t popcount_range(const uint8_t* bm, uint64_t begin, uint64_t end) {
  uint64_t c = 0;
  if (begin >= end) return 0;
  for (uint64_t w = begin / 64; w <= (end - 1) / 64; ++w)
    c += uint64_t(__builtin_popcountll(bitmap_word(bm, w) & range_mask(w, begin, end)));
  return c;
}

inline uint64_t index_at(const topk_payload& tp, uint64_t e) {
  const uint8_t* sec = tp.bytes + tp.layout.index_offset;
  return tp.desc.index == index_layout::u32 ? get_u32(sec + 4 * e) : get_u16(sec + 2 * e);
}

// Checks the index section: every unit holds exactly k positions, inside the unit,
// strictly ascending (so no duplicates); a bitmap has no bit set beyond n.
inline status validate_positions(const topk_payload& tp) {
  const topk_layout& L = tp.layout;
  if (tp.desc.index == index_layout::bitmap) {
    const uint8_t* bm = tp.bytes + L.index_offset;
    const uint64_t section_bits = 8 * index_section_bytes(index_layout::bitmap, L.kept, L.n);
    if (popcount_range(bm, L.n, section_bits) != 0) return status::corrupt_payload;
    for (uint64_t u = 0; u < L.units; ++u)
      if (popcount_range(bm, u * L.unit_len, (u + 1) * L.unit_len) != L.k) return status::corrupt_payload;
    return status::success;
  }
  for (uint64_t u = 0; u < L.units; ++u) {
    uint64_t prev = 0;
    for (uint64_t j = 0; j < L.k; ++j) {
      const uint64_t i = index_at(tp, u * L.k + j);
      if (i >= L.unit_len || (j > 0 && i <= prev)) return status::corrupt_payload;
      prev = i;
    }
  }
  return status::success;
}

// Calls f(u, j, i) for every kept position of a validated payload with an index section:
// unit u, rank j inside the unit, position i inside the unit, in payload order.
template <class F>
inline void for_each_position(const topk_payload& tp, F&& f) {
  const topk_layout& L = tp.layout;
  if (tp.desc.index == index_layout::bitmap) {
    const uint8_t* bm = tp.bytes + L.index_offset;
    for (uint64_t u = 0; u < L.units; ++u) {
      const uint64_t base = u * L.unit_len;
      uint64_t j = 0;
      for_each_set_bit(bm, base, base + L.unit_len, [&](uint64_t pos) { f(u, j++, pos - base); });
    }
    return;
  }
  for (uint64_t u = 0; u < L.units; ++u)
    for (uint64_t j = 0; j < L.k; ++j) f(u, j, index_at(tp, u * L.k + j));
}

// Kept value e (0 <= e < kept) of a raw values section.
template <dtype W>
struct raw_values {
  const uint8_t* sec;
  float at(uint64_t e) const {
    if constexpr (W == dtype::f32) {
      return bit_cast<float>(get_u32(sec + 4 * e));
    } else if constexpr (W == dtype::f16) {
      return f16_to_f32(get_u16(sec + 2 * e));
    } else {
      return bf16_to_f32(get_u16(sec + 2 * e));
    }
  }
};

// Kept values of a quantized values section, read in ascending order: a chunk of 32 is
// unpacked and dequantized when first touched.
template <uint32_t Bits>
struct quant_values {
  quant_payload qp;
  float zero = 0;
  uint64_t chunk = ~uint64_t(0);
  float v[32] = {};

  float at(uint64_t e) {
    const quant_layout& L = qp.layout;
    const uint64_t g = e / L.group_len, off = e - g * L.group_len;
    const uint64_t c = L.group_chunk(g) + off / 32;
    if (c != chunk) {
      chunk = c;
      float scale, offset;
      load_group(qp, g, scale, offset);
      uint32_t planes[Bits];
      memcpy(planes, qp.bytes + L.codes_offset + c * Bits * 4, sizeof(planes));
      uint8_t codes[32];
      unpack_planes<Bits>(planes, codes);
      for (uint32_t l = 0; l < 32; ++l) v[l] = dequantize(codes[l], scale, offset, zero);
    }
    return v[off % 32];
  }
};

// Scale fields of quantized values are checked like a quantization payload's.
inline status validate_values(const topk_payload& tp) {
  if (tp.desc.values != value_kind::quant) return status::success;
  const quant_payload qp = values_as_quant(tp);
  for (uint64_t g = 0; g < qp.layout.groups; ++g)
    if (!valid_stored_group(qp, g)) return status::corrupt_payload;
  return status::success;
}

// Calls f(reader) with the reader for the payload's values section.
template <class F>
inline status with_values(const topk_payload& tp, F&& f) {
  const uint8_t* sec = tp.bytes + tp.layout.values_offset;
  switch (tp.desc.values) {
    case value_kind::f32: return f(raw_values<dtype::f32>{sec});
    case value_kind::f16: return f(raw_values<dtype::f16>{sec});
    case value_kind::bf16: return f(raw_values<dtype::bf16>{sec});
    case value_kind::quant:
      return dispatch_bits(tp.desc.vquant.bits, [&](auto bc) {
        constexpr uint32_t B = decltype(bc)::value;
        quant_values<B> r;
        r.qp = values_as_quant(tp);
        r.zero = consts_for(B, tp.desc.vquant.scale).zero;
        return f(r);
      });
  }
  return status::not_supported;
}

}  // namespace pipecodec::host::detail

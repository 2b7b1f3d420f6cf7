// Host backend of TopK / RandK: select (host/topk_select.hpp), write the positions and the
// kept values; decode to dense or accumulate. Shared-mask payloads take their positions
// from a paired TopK payload.
#pragma once

#include "buffer_checks.hpp"
#include "compress_block.hpp"
#include "expand_bitmap.hpp"
#include "quant.hpp"
#include "topk_read.hpp"
#include "topk_band.hpp"

namespace pipecodec::host::detail {

template <dtype T>
struct magnitude_keys {
  const void* x;
  uint64_t base;
  uint32_t operator()(uint64_t i) const { return magnitude_key(load<T>(x, base + i)); }
};

// Philox gives four words per call; sequential scans reuse them.
struct randk_keys {
  draw d;
  mutable uint64_t block = ~uint64_t(0);
  mutable philox_out words{};
  uint32_t operator()(uint64_t i) const {
    const uint64_t w = d.first + i;
    if ((w >> 2) != block) {
      block = w >> 2;
      words = random_block(d.key, d.stream, block);
    }
    return randk_key_from_word(words.v[w & 3u]);
  }
};

// A short unit is selected from the cache in several passes (host/topk_band.hpp), which leave
// no stream for the hardware prefetcher to follow into the next unit: its first lines are
// requested into L2 while this one is selected, and the prefetcher follows on from them.
// The whole next unit requested at once stalled on the miss queue (a first 512 B or 1 KiB
// measured alike); a streaming selection reads its unit once, in order, and needs none.
constexpr uint64_t prefetch_unit_lead = 1024;  // bytes
inline void prefetch_next_unit(const topk_layout& L, const void* x, uint64_t u, uint64_t elem_bytes) {
  if (streams_unit(L.unit_len, L.k) || u + 1 >= L.units) return;
  const uint64_t bytes = L.unit_len * elem_bytes;
  const uint8_t* next = static_cast<const uint8_t*>(x) + (u + 1) * bytes;
  for (uint64_t b = 0; b < bytes && b < prefetch_unit_lead; b += 64) __builtin_prefetch(next + b, 0, 2);
}

// Calls block(u, j, i, bits) for the kept positions of each unit selected by magnitude
// (TopK) or by seed (RandK; `ids`: the payload's sample-id section when rng=sample), a block
// of positions at a time (compact_blocks).
template <dtype T, class Block>
inline void for_each_selected_block(const topk_desc& d, const topk_layout& L, const void* x, const uint8_t* ids,
                                    uint32_t* cand, uint64_t cap, Block&& block) {
  if (L.kept == 0) return;  // e.g. many empty rows: nothing to select
  unit_selector sel;
  for (uint64_t u = 0; u < L.units; ++u) {
    // Folded into the compaction's loop, with the caller's block: a call per block of 32 cost
    // 9 % of a row of 1024's encode at 10 % (in cache).
    auto unit_block = [&](uint64_t j, uint64_t i, uint32_t bits) PIPECODEC_HOST_FOLD_LAMBDA { block(u, j, i, bits); };
    if (d.codec == codec_id::randk) {
      const randk_keys key{randk_draw(d, ids, u, L.unit_len)};
      compact_blocks(key, L.unit_len, sel.select(key, L.unit_len, L.k, cand, cap), unit_block);
    } else {
      const magnitude_keys<T> key{x, u * L.unit_len};
      prefetch_next_unit(L, x, u, dtype_bytes(T));
      compact_blocks(key, L.unit_len, sel.select(key, L.unit_len, L.k, cand, cap), unit_block);
    }
  }
}

// Calls f(u, j, i) for every kept position of an encode: selected (above), or read from a
// validated mask payload (shared mask).
template <dtype T, class F>
inline void for_each_selected(const topk_desc& d, const topk_layout& L, const void* x, const uint8_t* ids,
                              const topk_payload* mask, uint32_t* cand, uint64_t cap, F&& f) {
  if (mask != nullptr) return for_each_position(*mask, f);
  for_each_selected_block<T>(d, L, x, ids, cand, cap, [&](uint64_t u, uint64_t j, uint64_t i, uint32_t bits) {
    for (; bits != 0; bits &= bits - 1) f(u, j++, i + uint32_t(__builtin_ctz(bits)));
  });
}

// Writes the kept positions and values of an encode: entry e = u * k + j of unit u, at
// position i of the unit.
template <dtype T>
struct sparse_writer {
  const topk_layout& L;
  index_layout index;
  value_kind values;
  bool unbiased;
  float scale;
  const void* x;
  uint8_t* idx;
  uint8_t* vals;
  float* gathered;  // value_kind::quant: the values, quantized after the selection

  void position(uint64_t e, uint64_t i, uint64_t pos) const {
    switch (index) {
      case index_layout::u32: put_u32(idx + 4 * e, uint32_t(i)); break;
      case index_layout::u16: put_u16(idx + 2 * e, uint16_t(i)); break;
      case index_layout::bitmap: idx[pos / 8] = uint8_t(idx[pos / 8] | (1u << (pos % 8))); break;
      default: break;
    }
  }
  template <value_kind V>
  void put_value(uint64_t e, uint64_t pos) const {
    float v = load<T>(x, pos);
    if (unbiased) v = mul_rn(v, scale);
    switch (V) {
      case value_kind::f32: put_u32(vals + 4 * e, bit_cast<uint32_t>(v)); break;
      case value_kind::f16: put_u16(vals + 2 * e, f32_to_f16(v)); break;
      case value_kind::bf16: put_u16(vals + 2 * e, f32_to_bf16(v)); break;
      case value_kind::quant: gathered[e] = v; break;
    }
  }
  // Entries e, e + 1, ... for the set bits l of `bits`, at positions pos0 + l.
  template <value_kind V>
  void put_values(uint64_t e, uint64_t pos0, uint32_t bits) const {
    const sparse_writer w = *this;  // in registers: the payload stores cannot change it
    for (; bits != 0; bits &= bits - 1) w.put_value<V>(e++, pos0 + uint32_t(__builtin_ctz(bits)));
  }
  void values_at(uint64_t e, uint64_t pos0, uint32_t bits) const {
    switch (values) {
      case value_kind::f32: return put_values<value_kind::f32>(e, pos0, bits);
      case value_kind::f16: return put_values<value_kind::f16>(e, pos0, bits);
      case value_kind::bf16: return put_values<value_kind::bf16>(e, pos0, bits);
      case value_kind::quant: return put_values<value_kind::quant>(e, pos0, bits);
    }
  }
  void operator()(uint64_t u, uint64_t j, uint64_t i) const {
    const uint64_t e = u * L.k + j, pos = u * L.unit_len + i;
    position(e, i, pos);
    values_at(e, pos, 1);
  }
  // The kept positions i + l for the set bits l of `bits`, the first of them entry j.
  PIPECODEC_HOST_FOLD void block(uint64_t u, uint64_t j, uint64_t i, uint32_t bits) const {
    const uint64_t e0 = u * L.k + j, pos0 = u * L.unit_len + i;
    if (index == index_layout::bitmap) {  // the bits themselves, at the bitmap's bit pos0
      if (pos0 % 8 == 0 && pos0 + 32 <= L.n) {
        // Bytes of positions pos0 .. pos0 + 31 only, all inside the bitmap, which later blocks
        // have not written yet. Near the end the store could reach past the bitmap's last byte
        // into the values section (when ceil(n / 8) is within 3 bytes of a multiple of 16).
        put_u32(idx + pos0 / 8, bits);
      } else {
        for (uint64_t v = uint64_t(bits) << (pos0 % 8), b = pos0 / 8; v != 0; v >>= 8, ++b)
          idx[b] = uint8_t(idx[b] | uint8_t(v));
      }
    } else if (index == index_layout::u32) {
      compress_positions<true>(uint32_t(i), bits, idx + 4 * e0);
    } else if (index == index_layout::u16) {
      compress_positions<false>(uint32_t(i), bits, idx + 2 * e0);
    }
    if (T == dtype::f32 && values == value_kind::f32 && !unbiased)  // the input's words as they are
      return compress_u32(static_cast<const uint8_t*>(x) + 4 * pos0, bits, vals + 4 * e0);
    values_at(e0, pos0, bits);
  }
};

inline float unbiased_scale(const topk_layout& L) {
  return L.k ? float(ddiv_rn(double(L.unit_len), double(L.k))) : 1.0F;
}

// The index section (a bitmap's bits are or-ed in; u16/u32 indices leave a padding) and every
// padding start at zero; raw values are written whole, so their section is not cleared first
// (most of a payload: 4 of about 5.3 bytes per kept value with a bitmap at 10 %).
inline void zero_unwritten(const topk_desc& d, const topk_layout& L, uint8_t* p) {
  uint64_t values_end = L.values_offset;
  if (d.values != value_kind::quant) values_end += L.kept * raw_value_bytes(d.values);
  memset(p + header_bytes, 0, L.values_offset - header_bytes);
  memset(p + values_end, 0, L.total - values_end);
}

// `ids`: the rows' sample ids of an rng=sample RandK encode (the payload carries them).
inline status encode_sparse(const topk_desc& d, const_tensor_view in, const uint64_t* ids, const topk_payload* mask,
                            void* payload, size_t capacity, void* ws, size_t ws_size, size_t* written) {
  topk_layout L;
  if (!make_topk_layout(d, in.shp, L)) return status::invalid_spec;
  const topk_workspace W = make_topk_workspace(d, L);
  const uint64_t total = topk_payload_bytes(d, L, in.shp.rows);
  status bad = check_encode_buffers(in, L.n, payload, capacity, total);
  if (ok(bad) && d.sample_keyed) bad = check_sample_ids(ids, in.shp.rows);
  if (!ok(bad)) return bad;
  if (ws_size < workspace_request(W.total)) return status::workspace_too_small;
  if (ws == nullptr) return status::invalid_argument;
  if (overlaps(ws, ws_size, payload, total) || overlaps(ws, ws_size, in.data, L.n * dtype_bytes(in.type)))
    return status::aliasing;

  uint8_t* p = static_cast<uint8_t*>(payload);
  write_payload_header(p, d.codec, in, L.total, [&](uint8_t* params) { write_topk_params(params, d); });
  zero_unwritten(d, L, p);
  if (d.sample_keyed) (void)append_sample_ids(p, total, ids, nullptr);  // fits: checked above

  uint8_t* wsb = align16_ptr(ws);
  uint32_t* cand = reinterpret_cast<uint32_t*>(wsb + W.cand_offset);
  float* gathered = reinterpret_cast<float*>(wsb + W.values_offset);
  uint8_t* idx = p + L.index_offset;
  uint8_t* vals = p + L.values_offset;
  const float scale = d.unbiased ? unbiased_scale(L) : 1.0F;
  const status st = dispatch_dtype(in.type, [&](auto tc) {
    constexpr dtype T = decltype(tc)::value;
    const sparse_writer<T> w{L, d.index, d.values, d.unbiased, scale, in.data, idx, vals, gathered};
    const auto write_block = [&](uint64_t u, uint64_t j, uint64_t i, uint32_t bits) PIPECODEC_HOST_FOLD_LAMBDA {
      w.block(u, j, i, bits);
    };
    if (mask != nullptr)
      for_each_position(*mask, w);
    else
      for_each_selected_block<T>(d, L, in.data, d.sample_keyed ? p + L.total : nullptr, cand,
                                 select_cand_cap(L.unit_len), write_block);
    return status::success;
  });
  if (!ok(st)) return st;
  if (d.values == value_kind::quant) {
    // The gathered values are quantized exactly as a quantization payload of them would be.
    const quant_layout& Q = L.vq;
    uint8_t* base = p + quant_base(L);
    const status qs = dispatch_bits(d.vquant.bits, [&](auto bc) {
      constexpr uint32_t B = decltype(bc)::value;
      encode_groups<dtype::f32, B>(gathered, 0, d.vquant, Q, 0, Q.groups, d.seed, base);
      return status::success;
    });
    if (!ok(qs)) return qs;
  }
  if (written) *written = size_t(total);
  return status::success;
}

inline status encode_topk(const spec& s, const_tensor_view in, void* payload, size_t capacity,
                          void* ws, size_t ws_size, const randomness& rnd, size_t* written) {
  topk_desc d;
  const status st = resolve_topk(s, in.shp, rnd.seed, d);
  if (!ok(st)) return st;
  if (d.shared_mask) return status::invalid_argument;  // needs its mask: encode_shared
  return encode_sparse(d, in, rnd.sample_ids, nullptr, payload, capacity, ws, ws_size, written);
}

// A TopK payload whose positions a shared-mask payload may use: its header, index section and
// padding (its positions: validate_positions, after the pairing and output checks).
inline status parse_mask(const void* mask, size_t mask_len, topk_payload& mp) {
  status st = parse_topk_payload(mask, mask_len, mp);
  if (!ok(st)) return st;
  if (!has_index_section(mp.desc)) return status::invalid_argument;
  return topk_padding_zero(mp) ? status::success : status::corrupt_payload;
}

// The mask must describe the same shape, scope and k as the values payload. Its positions
// are validated after this and the output checks, as the CUDA backend's grid does.
inline status check_pairing(const topk_desc& d, const shape& shp, const topk_payload& mp) {
  if (mp.hdr.shp != shp) return status::shape_mismatch;
  if (mp.desc.scope != d.scope || mp.desc.k != d.k) return status::invalid_argument;
  return status::success;
}

inline status encode_shared(const spec& s, const_tensor_view in, const void* mask, size_t mask_len,
                            void* payload, size_t capacity, void* ws, size_t ws_size, uint64_t seed,
                            size_t* written) {
  topk_desc d;
  status st = resolve_topk(s, in.shp, seed, d);
  if (!ok(st)) return st;
  if (!d.shared_mask) return status::invalid_spec;
  topk_payload mp;
  if (!ok(st = parse_mask(mask, mask_len, mp))) return st;
  if (!ok(st = check_pairing(d, in.shp, mp))) return st;
  if (!ok(st = validate_positions(mp))) return st;
  if (overlaps(mask, mask_len, payload, capacity)) return status::aliasing;
  return encode_sparse(d, in, nullptr, &mp, payload, capacity, ws, ws_size, written);
}

// Writes a validated payload into out (dense: zeros elsewhere; or accumulated at the kept
// positions only). Positions come from `mask` when given, else from the payload itself.
template <bool Accumulate>
inline status scatter(const topk_payload& tp, const topk_payload* mask, tensor_view out, void* ws,
                      size_t ws_size) {
  const topk_layout& L = tp.layout;
#if defined(PIPECODEC_HOST_AVX512)
  const topk_payload& at = mask ? *mask : tp;
  if (has_index_section(at.desc) && at.desc.index == index_layout::bitmap && tp.desc.values == value_kind::f32 &&
      out.type == dtype::f32) {
    expand_bitmap_f32<Accumulate>(at.bytes + at.layout.index_offset, tp.bytes + L.values_offset, L.n,
                                  static_cast<float*>(out.data));
    return status::success;
  }
#endif
  if (!Accumulate && L.n > 0) memset(out.data, 0, L.n * dtype_bytes(out.type));
  // A full-size workspace lends its candidate region; without one the selection re-reads keys.
  const topk_workspace W = make_topk_workspace(tp.desc, L);
  const bool lent = ws != nullptr && ws_size >= workspace_request(W.used);
  uint32_t* cand = lent ? reinterpret_cast<uint32_t*>(align16_ptr(ws) + W.cand_offset) : nullptr;
  const uint64_t cap = lent ? select_cand_cap(L.unit_len) : 0;
  return dispatch_dtype(out.type, [&](auto oc) {
    constexpr dtype O = decltype(oc)::value;
    return with_values(tp, [&](auto reader) {
      auto put = [&](uint64_t u, uint64_t j, uint64_t i) {
        const uint64_t pos = u * L.unit_len + i;
        const float v = reader.at(u * L.k + j);
        store<O>(out.data, pos, Accumulate ? add_rn(load<O>(out.data, pos), v) : v);
      };
      if (mask != nullptr || has_index_section(tp.desc))
        for_each_position(mask ? *mask : tp, put);
      else  // RandK: the decoder re-derives the positions from the seed
        for_each_selected<dtype::f32>(tp.desc, L, nullptr, sample_ids_section(tp.bytes, tp.hdr), nullptr, cand, cap,
                                      put);
      return status::success;
    });
  });
}

inline status check_output(const topk_payload& tp, const void* payload, tensor_view out, const void* ws,
                           size_t ws_size) {
  const status st = check_decode_output(tp.hdr, tp.layout.n, out, payload);
  if (!ok(st)) return st;
  return overlaps(out.data, tp.layout.n * dtype_bytes(out.type), ws, ws_size) ? status::aliasing : status::success;
}

// Validates the whole payload before writing, so a rejected payload leaves `out` untouched.
// `ws` is optional: RandK uses it to buffer selection candidates.
template <bool Accumulate>
inline status decode_topk(const void* payload, size_t len, tensor_view out, void* ws, size_t ws_size) {
  topk_payload tp;
  status st = parse_topk_payload(payload, len, tp);
  if (!ok(st)) return st;
  if (tp.desc.shared_mask) return status::invalid_argument;  // needs its mask: decode_shared
  if (!ok(st = check_output(tp, payload, out, ws, ws_size))) return st;
  if (!topk_padding_zero(tp)) return status::corrupt_payload;
  if (has_index_section(tp.desc) && !ok(st = validate_positions(tp))) return st;
  if (!ok(st = validate_values(tp))) return st;
  return scatter<Accumulate>(tp, nullptr, out, ws, ws_size);
}

template <bool Accumulate>
inline status decode_shared(const void* values, size_t len, const void* mask, size_t mask_len,
                            tensor_view out) {
  topk_payload tp, mp;
  status st = parse_topk_payload(values, len, tp);
  if (!ok(st)) return st;
  if (!tp.desc.shared_mask) return status::invalid_argument;
  if (!ok(st = parse_mask(mask, mask_len, mp))) return st;
  if (!ok(st = check_pairing(tp.desc, tp.hdr.shp, mp))) return st;
  if (!ok(st = check_output(tp, values, out, nullptr, 0))) return st;
  if (overlaps(out.data, tp.layout.n * dtype_bytes(out.type), mask, mask_len)) return status::aliasing;
  if (!topk_padding_zero(tp)) return status::corrupt_payload;
  if (!ok(st = validate_positions(mp))) return st;
  if (!ok(st = validate_values(tp))) return st;
  return scatter<Accumulate>(tp, &mp, out, nullptr, 0);
}

}  // namespace pipecodec::host::detail

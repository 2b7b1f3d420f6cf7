// Host backend of the plain codec: elements converted to the wire dtype and back.
#pragma once

#include "../core/dispatch.hpp"
#include "../core/plain_format.hpp"
#include "buffer_checks.hpp"

namespace pipecodec::host::detail {

using namespace pipecodec::detail;

inline status encode_plain(const plain_params& pp, const_tensor_view in, void* payload,
                           size_t capacity, size_t* written) {
  plain_layout L;
  if (!valid_dtype(uint8_t(pp.wire))) return status::invalid_spec;
  if (!make_plain_layout(pp, in.shp, L)) return status::size_overflow;
  const status bad = check_encode_buffers(in, L.n, payload, capacity, L.total);
  if (!ok(bad)) return bad;
  uint8_t* p = static_cast<uint8_t*>(payload);
  write_payload_header(p, codec_id::plain, in, L.total, [&](uint8_t* params) { write_plain_params(params, pp); });
  memset(p + L.data_offset, 0, L.total - L.data_offset);
  const status st = dispatch_dtype(in.type, [&](auto ic) {
    return dispatch_dtype(pp.wire, [&](auto wc) {
      constexpr dtype I = decltype(ic)::value, W = decltype(wc)::value;
      if constexpr (I == W) {
        // memcpy with a null pointer is undefined even for 0 bytes, and n = 0 allows null.
        if (L.n > 0) memcpy(p + L.data_offset, in.data, L.n * dtype_bytes(I));
      } else {
        for (uint64_t i = 0; i < L.n; ++i) store<W>(p + L.data_offset, i, load<I>(in.data, i));
      }
      return status::success;
    });
  });
  if (ok(st) && written) *written = size_t(L.total);
  return st;
}

template <bool Accumulate>
inline status decode_plain(const void* payload, size_t len, tensor_view out) {
  plain_payload pl;
  status st = parse_plain_payload(payload, len, pl);
  if (!ok(st)) return st;
  st = check_decode_output(pl.hdr, pl.layout.n, out, payload);
  if (!ok(st)) return st;
  if (!plain_padding_zero(pl)) return status::corrupt_payload;
  // The wire section may sit at any address: go through a properly aligned copy per element.
  const uint8_t* src = pl.bytes + pl.layout.data_offset;
  return dispatch_dtype(pl.pp.wire, [&](auto wc) {
    return dispatch_dtype(out.type, [&](auto oc) {
      constexpr dtype W = decltype(wc)::value, O = decltype(oc)::value;
      if constexpr (W == O && !Accumulate) {
        if (pl.layout.n > 0) memcpy(out.data, src, pl.layout.n * dtype_bytes(O));
      } else {
        for (uint64_t i = 0; i < pl.layout.n; ++i) {
          float v;
          if constexpr (W == dtype::f32) {
            memcpy(&v, src + 4 * i, 4);
          } else {
            uint16_t b;
            memcpy(&b, src + 2 * i, 2);
            v = W == dtype::f16 ? f16_to_f32(b) : bf16_to_f32(b);
          }
          store<O>(out.data, i, Accumulate ? add_rn(load<O>(out.data, i), v) : v);
        }
      }
      return status::success;
    });
  });
}

}  // namespace pipecodec::host::detail

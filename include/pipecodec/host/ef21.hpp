// EF21 / delta state, both sides of a boundary hold g (zero at the start):
//   sender:   payload = C(x - g);  g += D(payload)
//   receiver: g += D(payload);     the receiver's tensor is g
// with x - g computed in fp32 and g updated as T(fp32(g + D(payload))) for g stored as T, the
// update host::decode_accumulate performs, so both copies of g stay equal bit for bit.
#pragma once

#include "../core/allocator.hpp"
#include "state_common.hpp"

namespace pipecodec::host {

inline size_t ef21_workspace_bytes(const spec& s, const shape& shp) {
  return detail::f32_scratch_bytes(shp.size()) + workspace_bytes(s, shp);
}

// Sender step. On any error g is left untouched.
inline status ef21_encode(const spec& s, const_tensor_view x, tensor_view g, void* payload,
                          size_t capacity, void* workspace, size_t workspace_size, randomness rnd = {},
                          size_t* written = nullptr) {
  using namespace detail;
  uint64_t n = 0;
  state_workspace ws;
  status st = check_tensor_step(s, x, g, payload, capacity, workspace, workspace_size, n, ws);
  if (!ok(st)) return st;
  size_t len = 0;
  st = dispatch_dtype(x.type, [&](auto xc) {
    return dispatch_dtype(g.type, [&](auto gc) {
      constexpr dtype X = decltype(xc)::value, G = decltype(gc)::value;
      // x - g for elements first .. first + count - 1, into v[0 .. count).
      const auto fill = [&](uint64_t first, uint64_t count, float* v) {
        sub_span<X, G>(x.data, first, g.data, first, count, v);
      };
      if (tiled(s)) {
        // g += d, with d = D(payload) of the same elements.
        const auto update = [&](uint64_t first, uint64_t count, const float* d) {
          accumulate_span<G>(g.data, first, d, count);
        };
        const auto reads = [&](uint64_t first, uint64_t count, line_prefetcher& pf) {
          add_elements(pf, x.data, X, first, count);
          add_elements(pf, g.data, G, first, count);
        };
        return encode_quant_tiled(s.quant, x.shp, ws.f32, fill, update, reads, payload, capacity, rnd, &len);
      }
      fill(0, n, ws.f32);
      const status step = encode(s, const_tensor_view(ws.f32, dtype::f32, x.shp), payload, capacity, ws.codec,
                                 ws.codec_bytes, rnd, &len);
      return ok(step) ? decode_accumulate(payload, len, g, ws.codec, ws.codec_bytes) : step;
    });
  });
  if (ok(st) && written) *written = len;
  return st;
}

// Receiver step: validates the payload fully (codec `expected`, g's shape), then g += D(payload).
// If `out` has data, it receives g converted to out's dtype (shape must equal g's). On any
// error g and out are left untouched.
inline status ef21_decode(codec_id expected, const void* payload, size_t len, tensor_view g,
                          tensor_view out = {}, void* workspace = nullptr, size_t workspace_size = 0) {
  using namespace detail;
  status st = check_codec(payload, len, expected);
  if (!ok(st)) return st;
  if (out.data != nullptr && out.shp != g.shp) return status::shape_mismatch;
  if (!element_aligned(g.data, g.type) || (out.data != nullptr && !element_aligned(out.data, out.type)))
    return status::misaligned;
  const uint64_t n = g.shp.size();
  if (any_written_overlap({{payload, len, false},
                           {g.data, n * dtype_bytes(g.type), true},
                           {out.data, n * dtype_bytes(out.type), true},
                           {workspace, workspace_size, true}}))
    return status::aliasing;
  if (out.data != nullptr && expected == codec_id::quant) {  // out written while g's tile is in cache
    const size_t gb = dtype_bytes(g.type), ob = dtype_bytes(out.type);
    return decode_quant<true>(payload, len, g, [&](uint64_t first, uint64_t count) {
      (void)convert(static_cast<const uint8_t*>(g.data) + first * gb, g.type,
                    static_cast<uint8_t*>(out.data) + first * ob, out.type, count);
    });
  }
  st = decode_accumulate(payload, len, g, workspace, workspace_size);
  if (ok(st) && out.data != nullptr) st = convert(g.data, g.type, out.data, out.type, g.shp.size());
  return st;
}

// Owner of one side's g and workspace; the same object type serves as sender or receiver.
class ef21_state {
 public:
  [[nodiscard]] status init(const spec& s, const shape& shp, dtype state_type,
                            const allocator& a = malloc_allocator()) {
    if (!valid_dtype(uint8_t(state_type))) return status::invalid_argument;
    if (encoded_bytes(s, shp) == 0) return status::invalid_spec;
    status st = state_.allocate(size_t(shp.size()) * dtype_bytes(state_type), a);
    if (ok(st)) st = ws_.allocate(ef21_workspace_bytes(s, shp), a);
    if (!ok(st)) return st;
    memset(state_.data(), 0, state_.size());
    spec_ = s;
    shp_ = shp;
    type_ = state_type;
    return status::success;
  }
  [[nodiscard]] status encode(const_tensor_view x, void* payload, size_t capacity, randomness rnd = {},
                              size_t* written = nullptr) {
    return ef21_encode(spec_, x, state(), payload, capacity, ws_.data(), ws_.size(), rnd, written);
  }
  [[nodiscard]] status decode(const void* payload, size_t len, tensor_view out = {}) {
    const auto ws = detail::f32_scratch_bytes(shp_.size());
    return ef21_decode(spec_.codec, payload, len, state(), out, static_cast<uint8_t*>(ws_.data()) + ws,
                       ws_.size() - ws);
  }
  size_t payload_bytes() const { return encoded_bytes(spec_, shp_); }
  tensor_view state() const { return tensor_view{state_.data(), type_, shp_}; }
  const spec& codec() const { return spec_; }

 private:
  spec spec_{};
  shape shp_{};
  dtype type_ = dtype::f32;
  owned_bytes state_, ws_;
};

}  // namespace pipecodec::host

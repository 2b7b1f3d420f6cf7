// Classic error feedback, sender side only (the receiver decodes payloads as usual):
//   v = x + e;  payload = C(v);  e = v - D(payload)
// with v = fp32(x + e) and e = T(fp32(v - D(payload))) for a residual stored as T (fp32, fp16
// or bf16). The payload describes an fp32 tensor of x's shape. docs/STATE.md has the details.
#pragma once

#include "../core/allocator.hpp"
#include "state_common.hpp"

namespace pipecodec::host {

// Workspace ef_encode needs: an fp32 copy of v plus the codec's own workspace.
inline size_t ef_workspace_bytes(const spec& s, const shape& shp) {
  return detail::f32_scratch_bytes(shp.size()) + workspace_bytes(s, shp);
}

// Encodes x with error feedback; `residual` (x's shape, any dtype, zero at the start) is
// read and updated; with lowrank, `lowrank_q` (lowrank_state_shape, fp32, zero at the start)
// is the warm-start state PowerSGD keeps beside the residual (an empty view: cold starts).
// On any error the residual is left untouched.
inline status ef_encode(const spec& s, const_tensor_view x, tensor_view residual, tensor_view lowrank_q,
                        void* payload, size_t capacity, void* workspace, size_t workspace_size, randomness rnd = {},
                        size_t* written = nullptr) {
  using namespace detail;
  uint64_t n = 0;
  state_workspace ws;
  status st = check_tensor_step(s, x, residual, payload, capacity, workspace, workspace_size, n, ws);
  if (!ok(st)) return st;
  size_t len = 0;
  st = dispatch_dtype(x.type, [&](auto xc) {
    return dispatch_dtype(residual.type, [&](auto ec) {
      constexpr dtype X = decltype(xc)::value, E = decltype(ec)::value;
      // v = x + e for elements first .. first + count - 1, into v[0 .. count).
      const auto fill = [&](uint64_t first, uint64_t count, float* v) {
        zip_spans<X, E>(x.data, first, residual.data, first, count,
                        [&](uint64_t j, const float* xv, const float* e, uint64_t len) {
                          for (uint64_t k = 0; k < len; ++k) v[j + k] = add_rn(xv[k], e[k]);
                        });
      };
      // e = v - D(payload), with d = D(payload) of the same elements; v is recomputed (same
      // operands, same rounding) so one buffer suffices.
      const auto update = [&](uint64_t first, uint64_t count, const float* d) {
        zip_spans<X, E>(x.data, first, residual.data, first, count,
                        [&](uint64_t j, const float* xv, const float* e, uint64_t len) {
                          float tmp[span_chunk];
                          float* r = span_out<E>(residual.data, first + j, tmp);
                          for (uint64_t k = 0; k < len; ++k) r[k] = sub_rn(add_rn(xv[k], e[k]), d[j + k]);
                          store_span<E>(r, len, residual.data, first + j);
                        });
      };
      const auto reads = [&](uint64_t first, uint64_t count, line_prefetcher& pf) {
        add_elements(pf, x.data, X, first, count);
        add_elements(pf, residual.data, E, first, count);
      };
      if (tiled(s))
        return encode_quant_tiled(s.quant, x.shp, ws.f32, fill, update, reads, payload, capacity, rnd, &len);
      fill(0, n, ws.f32);
      status step = encode_warm(s, const_tensor_view(ws.f32, dtype::f32, x.shp), lowrank_q, payload, capacity,
                                ws.codec, ws.codec_bytes, rnd, &len);
      if (ok(step)) step = decode(payload, len, tensor_view{ws.f32, dtype::f32, x.shp}, ws.codec, ws.codec_bytes);
      if (ok(step)) update(0, n, ws.f32);
      return step;
    });
  });
  if (ok(st) && written) *written = len;
  return st;
}

inline status ef_encode(const spec& s, const_tensor_view x, tensor_view residual, void* payload, size_t capacity,
                        void* workspace, size_t workspace_size, randomness rnd = {}, size_t* written = nullptr) {
  return ef_encode(s, x, residual, tensor_view{}, payload, capacity, workspace, workspace_size, rnd, written);
}

// Owner of an EF residual, lowrank's warm Q with a lowrank codec, and their workspace (memory
// from a pluggable allocator).
class ef_state {
 public:
  // Allocates a zero residual of `shp` stored as `state_type`, for codec `s`.
  [[nodiscard]] status init(const spec& s, const shape& shp, dtype state_type,
                            const allocator& a = malloc_allocator()) {
    if (!valid_dtype(uint8_t(state_type))) return status::invalid_argument;
    if (encoded_bytes(s, shp) == 0) return status::invalid_spec;
    status st = state_.allocate(size_t(shp.size()) * dtype_bytes(state_type), a);
    if (ok(st)) st = ws_.allocate(ef_workspace_bytes(s, shp), a);
    q_.reset();
    if (ok(st) && s.codec == codec_id::lowrank) st = q_.allocate(size_t(lowrank_state_shape(s, shp).size()) * 4, a);
    if (!ok(st)) return st;
    memset(state_.data(), 0, state_.size());
    if (q_.size() > 0) memset(q_.data(), 0, q_.size());
    spec_ = s;
    shp_ = shp;
    type_ = state_type;
    return status::success;
  }
  [[nodiscard]] status encode(const_tensor_view x, void* payload, size_t capacity, randomness rnd = {},
                              size_t* written = nullptr) {
    return ef_encode(spec_, x, residual(), lowrank_q(), payload, capacity, ws_.data(), ws_.size(), rnd, written);
  }
  size_t payload_bytes() const { return encoded_bytes(spec_, shp_); }
  tensor_view residual() const { return tensor_view{state_.data(), type_, shp_}; }
  // lowrank: the warm-start Q (checkpoint kind lowrank_q); an empty view for other codecs.
  tensor_view lowrank_q() const {
    return q_.size() > 0 ? tensor_view{q_.data(), dtype::f32, lowrank_state_shape(spec_, shp_)} : tensor_view{};
  }
  const spec& codec() const { return spec_; }

 private:
  spec spec_{};
  shape shp_{};
  dtype type_ = dtype::f32;
  owned_bytes state_, ws_, q_;
};

}  // namespace pipecodec::host

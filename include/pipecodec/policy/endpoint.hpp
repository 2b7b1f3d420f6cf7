// Host-backend endpoints: what a pipeline runtime holds for one direction of one boundary.
// The sender turns a tensor into a payload, the receiver a payload back into a tensor, each
// following the policy (codec, state scheme, schedule) and owning its state and workspace,
// allocated once by init() through the runtime's allocator. Calls never allocate.
//
//   pc::host::sender_endpoint tx;   pc::host::receiver_endpoint rx;
//   tx.init(pol, boundary, pc::direction::fwd, opts);  rx.init(pol, boundary, pc::direction::fwd, opts);
//   std::vector<uint8_t> buf(tx.encoded_bytes());  size_t len = 0;
//   tx.encode(activations, step, buf.data(), buf.size(), &len);    // ... send len bytes ...
//   rx.decode(buf.data(), len, out, step);                         // same step_info both sides
//
// Per call the mode follows mode_for(schedule, step) (policy.hpp): warm-up steps travel
// plain (EF21 sets g = x on both sides, AQ-SGD stores every row as m, EF leaves its residual
// alone); training steps use the codec with the state scheme (AQ-SGD and EF with
// scope=sample need step_info::sample_ids, as do codecs with rng=sample); at inference the codec is applied on its own
// (or the tensor travels plain) and no state is read or written.
//
// Shared mask (`bwd=topk:...,mask=shared`, as GPT-2 in the source paper): the gradient's
// values travel at the positions the forward TopK payload of the same boundary and step
// chose. Both backward endpoints take that forward payload as `mask` (the stage that sent the
// activations keeps what it sent, the one that received them keeps what it received). The
// backward gradient then is exactly the gradient of the compressed forward pass: TopK's
// derivative is zero at the positions it dropped.
#pragma once

#include <chrono>

#include "../core/allocator.hpp"
#include "../host/aqsgd.hpp"
#include "../host/ef.hpp"
#include "../host/ef21.hpp"
#include "../host/ef_sample.hpp"
#include "endpoint_common.hpp"

namespace pipecodec::host {

struct endpoint_options {
  shape max_shape{};        // largest tensor per call: rows (batch) x cols (features)
  dtype type = dtype::f32;  // dtype of the tensors handed to encode / decode
  uint64_t samples = 0;     // per-sample store capacity (AQ-SGD, EF scope=sample) when the
                            // policy leaves it at 0
  allocator alloc = malloc_allocator();
};

using endpoint_counters = pipecodec::endpoint_counters;

namespace detail {

// Everything both endpoint kinds hold; the scheme decides which buffers are used.
class endpoint_base : public pipecodec::detail::endpoint_core {
 protected:
  // `sender`: classic EF state lives on the sender only; the receiver decodes as usual.
  [[nodiscard]] status setup(const pipecodec::policy& p, uint32_t boundary, direction d, const endpoint_options& o,
                             bool sender) {
    status st = configure(p, boundary, d, o.max_shape, o.type);
    if (!ok(st)) return st;
    const shape& m = o.max_shape;
    switch (dp_.state.scheme) {  // the state owners allocate their state and workspace
      case state_scheme::none:
        break;
      case state_scheme::ef: {
        const ef_options& e = dp_.state.ef;
        if (!sender) break;
        if (e.scope == ef_scope::batch) {
          st = ef_.init(dp_.codec, m, e.storage, o.alloc);
          break;
        }
        if (e.store != store_location::host) return status::not_supported;  // host backend
        st = efs_.init(store_config(e.storage, e.capacity, o.samples), m.rows, o.alloc);
        if (ok(st)) widen_capacity(efs_.payload_bytes());
        break;
      }
      case state_scheme::ef21:
        st = ef21_.init(dp_.codec, m, dtype::f32, o.alloc);
        break;
      case state_scheme::aqsgd: {
        const aqsgd_options& a = dp_.state.aqsgd;
        if (a.store != store_location::host) return status::not_supported;  // host backend
        st = aq_.init(store_config(a.storage, a.capacity, o.samples), m.rows, o.alloc);
        if (ok(st)) widen_capacity(aq_.message_bytes());
        break;
      }
    }
    if (ok(st)) st = ws_.allocate(std::max<size_t>(workspace_bytes(dp_.codec, m), 16), o.alloc);
    lowrank_q_.reset();
    if (ok(st) && codec_state_bytes(sender) > 0) {
      st = lowrank_q_.allocate(codec_state_bytes(sender), o.alloc);
      if (ok(st)) memset(lowrank_q_.data(), 0, lowrank_q_.size());
    }
    return st;
  }

  // EF21's warm-up: g = x (x decoded exactly from a plain payload on the receiver's side).
  static status set_state(tensor_view g, const_tensor_view x) {
    if (x.shp != g.shp) return status::state_mismatch;
    return detail::convert(x.data, x.type, g.data, g.type, x.shp.size());
  }

  // Runs f() and records one call of `elements` elements, `in` bytes in and `out` bytes out.
  template <class F>
  status timed(uint64_t elements, uint64_t in, const size_t* out, F&& f) {
    const auto t0 = std::chrono::steady_clock::now();
    const status st = f();
    counters_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (ok(st)) count(elements, in, *out);
    return st;
  }

  owned_bytes ws_;  // the codec's workspace for stateless calls
  owned_bytes lowrank_q_;  // lowrank's warm Q on the sender, for codec calls
  ef_state ef_;
  ef_sample_state efs_;
  ef21_state ef21_;
  aqsgd_state aq_;
};

}  // namespace detail

class sender_endpoint : public detail::endpoint_base {
 public:
  // Sets up the sender of direction `d` at `boundary` (stage boundary -> boundary+1).
  [[nodiscard]] status init(const policy& p, uint32_t boundary, direction d, const endpoint_options& o) {
    return setup(p, boundary, d, o, true);
  }

  // Encodes `in` for the step `at` into payload (capacity >= encoded_bytes()). `mask`: the
  // forward payload of this boundary and step, when needs_mask().
  [[nodiscard]] status encode(const_tensor_view in, const step_info& at, void* payload, size_t capacity,
                              size_t* written = nullptr, payload_ref mask = {}) {
    status st = check(in.shp, in.type);
    if (!ok(st)) return st;
    const uint64_t n = in.shp.size();
    size_t len = 0;
    st = timed(n, n * dtype_bytes(in.type), &len, [&] { return run(in, at, mask, payload, capacity, len); });
    if (ok(st) && written) *written = len;
    return st;
  }

 private:
  status run(const_tensor_view in, const step_info& at, payload_ref mask, void* payload, size_t cap, size_t& len) {
    const action a = sender_action_for(at);
    switch (a) {
      case action::codec:
        return host::detail::encode_warm(dp_.codec, in, codec_state(lowrank_q_.data(), at), payload, cap, ws_.data(),
                                         ws_.size(), draws(at), &len);
      case action::codec_mask:
        if (mask.data == nullptr) return status::invalid_argument;
        return host::encode_shared(dp_.codec, in, mask.data, mask.size, payload, cap, ws_.data(), ws_.size(),
                                   seed(at), &len);
      case action::aqsgd:
      case action::aqsgd_warm:
        return aq_.encode(at.sample_ids, in, a == action::aqsgd_warm, payload, cap, seed(at), &len);
      case action::ef_sample:
        return efs_.encode(at.sample_ids, in, payload, cap, seed(at), &len);
      case action::ef:
        return ef_.encode(in, payload, cap, draws(at), &len);
      case action::ef21:
        return ef21_.encode(in, payload, cap, draws(at), &len);
      case action::plain:
      case action::plain_ef21:
        break;
    }
    status st = host::encode(plain_, in, payload, cap, nullptr, 0, 0, &len);
    if (ok(st) && a == action::plain_ef21)  // g = x, as the receiver does
      st = set_state(ef21_.state(), in);
    return st;
  }
};

class receiver_endpoint : public detail::endpoint_base {
 public:
  [[nodiscard]] status init(const policy& p, uint32_t boundary, direction d, const endpoint_options& o) {
    return setup(p, boundary, d, o, false);
  }

  // Decodes a payload made by the peer sender for the same step `at` into `out`. `mask`:
  // the forward payload of this boundary and step, when needs_mask().
  [[nodiscard]] status decode(const void* payload, size_t len, tensor_view out, const step_info& at,
                              payload_ref mask = {}) {
    status st = check(out.shp, out.type);
    if (!ok(st)) return st;
    const uint64_t n = out.shp.size();
    const size_t out_bytes = size_t(n) * dtype_bytes(out.type);
    return timed(n, len, &out_bytes, [&] { return run(payload, len, out, at, mask); });
  }

 private:
  status run(const void* payload, size_t len, tensor_view out, const step_info& at, payload_ref mask) {
    const action a = receiver_action_for(at);
    if (a == action::aqsgd || a == action::aqsgd_warm) return aq_.decode(payload, len, at.sample_ids, out);
    if (a == action::ef21) return ef21_.decode(payload, len, out);
    if (a == action::codec_mask && mask.data == nullptr) return status::invalid_argument;
    // Both sides derive the action from the same step, so the payload's codec is known.
    status st = detail::check_codec(payload, len, expected_codec(a));
    if (ok(st) && a == action::codec_mask) return host::decode_shared(payload, len, mask.data, mask.size, out);
    if (ok(st)) st = host::decode(payload, len, out, ws_.data(), ws_.size());
    if (ok(st) && a == action::plain_ef21)  // g = x
      st = set_state(ef21_.state(), out);
    return st;
  }
};

}  // namespace pipecodec::host

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
// scope=sample need step_info::sample_ids); at inference the codec is applied on its own
// (or the tensor travels plain) and no state is read or written.
//
// Shared mask (`bwd=topk:...,mask=shared`, as GPT-2 in the source paper): the gradient's
// values travel at the positions the forward TopK payload of the same boundary and step
// chose. Both backward endpoints take that forward payload as `mask` (the stage that sent the
// activations keeps what it sent, the one that received them keeps what it received). The
// backward gradient then is exactly the gradient of the compressed forward pass: TopK's
// derivative is zero at the positions it dropped.
#pragma once

#include <algorithm>
#include <chrono>

#include "../core/allocator.hpp"
#include "../host/aqsgd.hpp"
#include "../host/ef.hpp"
#include "../host/ef21.hpp"
#include "../host/ef_sample.hpp"
#include "policy.hpp"

namespace pipecodec::host {

struct endpoint_options {
  shape max_shape{};              // largest tensor per call: rows (batch) x cols (features)
  dtype type = dtype::f32;        // dtype of the tensors handed to encode / decode
  uint64_t samples = 0;           // per-sample store capacity (AQ-SGD, EF scope=sample) when the
                                  // policy leaves it at 0
  allocator alloc = malloc_allocator();
};

// Totals since init() or reset_counters(). Sender: in = tensor bytes, out = payload bytes;
// receiver the other way round.
struct endpoint_counters {
  uint64_t calls = 0;
  uint64_t elements = 0;
  uint64_t bytes_in = 0;
  uint64_t bytes_out = 0;
  double seconds = 0;  // wall time inside encode / decode
};

namespace detail {

// Everything both endpoint kinds hold; the scheme decides which buffers are used.
class endpoint_base {
 public:
  // Largest payload of any mode for a tensor of max_shape.
  size_t encoded_bytes() const { return capacity_; }
  const endpoint_counters& counters() const { return counters_; }
  void reset_counters() { counters_ = endpoint_counters{}; }
  // Switches what inference calls do, e.g. to measure a model with and without compression.
  void set_inference(inference_mode m) { sched_.infer = m; }
  const direction_policy& settings() const { return dp_; }
  // Whether compressed and inference calls need the forward payload as their mask.
  bool needs_mask() const { return dp_.codec.codec == codec_id::topk && dp_.codec.topk.shared_mask; }

 protected:
  // `sender`: classic EF state lives on the sender only; the receiver decodes as usual.
  [[nodiscard]] status setup(const pipecodec::policy& p, uint32_t boundary, direction d,
                             const endpoint_options& o, bool sender) {
    const boundary_policy& b = p.at(boundary);
    dp_ = b[d];
    sched_ = b.sched;
    opts_ = o;
    salt_ = (uint64_t(boundary) << 1 | uint64_t(d)) * 0x9E3779B97F4A7C15ull;
    plain_.codec = codec_id::plain;
    plain_.plain.wire = o.type;
    const shape& m = o.max_shape;
    uint64_t n = 0;
    if (m.ndim != 2 || m.cols == 0 || !m.count(n) || n > max_elements) return status::invalid_shape;
    const size_t codec_bytes = pipecodec::encoded_bytes(dp_.codec, m);
    if (codec_bytes == 0) return status::invalid_spec;
    if (needs_mask()) {
      const status ms = check_mask_pairing(b, d);
      if (!ok(ms)) return ms;
    }
    capacity_ = std::max(codec_bytes, pipecodec::encoded_bytes(plain_, m));
    status st = status::success;
    switch (dp_.state.scheme) {  // the state owners allocate their state and workspace
      case state_scheme::none: break;
      case state_scheme::ef: {
        const ef_options& e = dp_.state.ef;
        if (!sender) break;
        if (e.scope == ef_scope::batch) {
          st = ef_.init(dp_.codec, m, e.storage, o.alloc);
          break;
        }
        aqsgd_config c;
        c.codec = dp_.codec;
        c.cols = m.cols;
        c.state_type = e.storage;
        c.capacity = e.capacity ? e.capacity : o.samples;
        st = efs_.init(c, m.rows, o.alloc);
        if (ok(st)) capacity_ = std::max(capacity_, efs_.payload_bytes());
        break;
      }
      case state_scheme::ef21: st = ef21_.init(dp_.codec, m, dtype::f32, o.alloc); break;
      case state_scheme::aqsgd: {
        const aqsgd_options& a = dp_.state.aqsgd;
        if (a.store != store_location::host) return status::not_supported;  // host backend
        aqsgd_config c;
        c.codec = dp_.codec;
        c.cols = m.cols;
        c.state_type = a.storage;
        c.capacity = a.capacity ? a.capacity : o.samples;
        st = aq_.init(c, m.rows, o.alloc);
        if (ok(st)) capacity_ = std::max(capacity_, aq_.message_bytes());
        break;
      }
    }
    if (ok(st)) st = ws_.allocate(std::max<size_t>(workspace_bytes(dp_.codec, m), 16), o.alloc);
    return st;
  }

  // A shared-mask direction is the backward one of a boundary whose forward direction sends
  // TopK payloads (with positions) of the same scope and k. Its own state is none: EF or
  // EF21 would send values at positions the mask did not choose. A forward AQ-SGD message is
  // not a TopK payload, so it cannot be the mask.
  static status check_mask_pairing(const boundary_policy& b, direction d) {
    const topk_params& f = b.fwd.codec.topk;
    const topk_params& g = b.bwd.codec.topk;
    if (d != direction::bwd || b.fwd.codec.codec != codec_id::topk || f.shared_mask) return status::invalid_spec;
    if (f.scope != g.scope || f.k != g.k || (f.k == 0 && f.ratio != g.ratio)) return status::invalid_spec;
    if (b.bwd.state.scheme != state_scheme::none || b.fwd.state.scheme == state_scheme::aqsgd)
      return status::not_supported;
    return status::success;
  }

  // A call's tensor: the endpoint's dtype, max_shape's columns, at most its rows. EF21 and EF
  // with scope=batch keep one state tensor of max_shape, so their training calls need
  // exactly max_shape.
  status check(const shape& s, dtype t) const {
    if (t != opts_.type) return status::shape_mismatch;
    if (s.cols != opts_.max_shape.cols || s.rows > opts_.max_shape.rows) return status::shape_mismatch;
    return status::success;
  }
  uint64_t seed(const step_info& at) const { return at.seed ^ salt_; }
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
    if (ok(st)) {
      ++counters_.calls;
      counters_.elements += elements;
      counters_.bytes_in += in;
      counters_.bytes_out += *out;
    }
    return st;
  }

  direction_policy dp_{};
  schedule sched_{};
  endpoint_options opts_{};
  spec plain_{};
  uint64_t salt_ = 0;
  size_t capacity_ = 0;
  owned_bytes ws_;  // the codec's workspace for stateless calls
  ef_state ef_;
  ef_sample_state efs_;
  ef21_state ef21_;
  aqsgd_state aq_;
  endpoint_counters counters_{};
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
    const step_mode mode = mode_for(sched_, at);
    const state_scheme sc = dp_.state.scheme;
    if (needs_mask() && (mode == step_mode::compressed || mode == step_mode::stateless)) {
      if (mask.data == nullptr) return status::invalid_argument;
      return host::encode_shared(dp_.codec, in, mask.data, mask.size, payload, cap, ws_.data(), ws_.size(),
                                 seed(at), &len);
    }
    if (mode == step_mode::stateless || (mode == step_mode::compressed && sc == state_scheme::none))
      return host::encode(dp_.codec, in, payload, cap, ws_.data(), ws_.size(), seed(at), &len);
    if (sc == state_scheme::aqsgd && mode != step_mode::passthrough)
      return aq_.encode(at.sample_ids, in, mode == step_mode::plain, payload, cap, seed(at), &len);
    if (mode == step_mode::compressed && sc == state_scheme::ef)
      return dp_.state.ef.scope == ef_scope::sample ? efs_.encode(at.sample_ids, in, payload, cap, seed(at), &len)
                                                   : ef_.encode(in, payload, cap, seed(at), &len);
    if (mode == step_mode::compressed && sc == state_scheme::ef21)
      return ef21_.encode(in, payload, cap, seed(at), &len);
    // plain or passthrough
    status st = host::encode(plain_, in, payload, cap, nullptr, 0, 0, &len);
    if (ok(st) && mode == step_mode::plain && sc == state_scheme::ef21)  // g = x, as the receiver does
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
    const step_mode mode = mode_for(sched_, at);
    const state_scheme sc = dp_.state.scheme;
    if (needs_mask() && (mode == step_mode::compressed || mode == step_mode::stateless)) {
      if (mask.data == nullptr) return status::invalid_argument;
      const status st = detail::check_codec(payload, len, codec_id::topk);
      return ok(st) ? host::decode_shared(payload, len, mask.data, mask.size, out) : st;
    }
    if (sc == state_scheme::aqsgd && mode != step_mode::stateless && mode != step_mode::passthrough)
      return aq_.decode(payload, len, at.sample_ids, out);
    if (mode == step_mode::compressed && sc == state_scheme::ef21) return ef21_.decode(payload, len, out);
    // Both sides derive the mode from the same step, so the payload's codec is known.
    const bool coded = mode == step_mode::compressed || mode == step_mode::stateless;
    status st = detail::check_codec(payload, len, coded ? dp_.codec.codec : codec_id::plain);
    if (ok(st)) st = host::decode(payload, len, out, ws_.data(), ws_.size());
    if (ok(st) && mode == step_mode::plain && sc == state_scheme::ef21)  // g = x
      st = set_state(ef21_.state(), out);
    return st;
  }
};

}  // namespace pipecodec::host

// What the host endpoints (endpoint.hpp) and the CUDA endpoints (cuda_endpoint.cuh) share,
// so both backends read a policy the same way: the direction policy and schedule of one
// boundary, the largest payload of any mode, what a call does for its step (endpoint_action),
// the argument check, the per-boundary seed and the counters. Only the calls that carry an
// action out (and the memory behind them) differ between the backends.
#pragma once

#include <algorithm>

#include "../core/sizes.hpp"
#include "../core/sample_store.hpp"  // aqsgd_config: the per-sample store of both backends
#include "policy.hpp"

namespace pipecodec {

// Totals since init() or reset_counters(). Sender: in = tensor bytes, out = payload bytes;
// receiver the other way round.
struct endpoint_counters {
  uint64_t calls = 0;
  uint64_t elements = 0;
  uint64_t bytes_in = 0;
  uint64_t bytes_out = 0;
  double seconds = 0;  // host: wall time inside encode / decode; CUDA: not measured (0)
};

namespace detail {

// What one call does, decided by the state scheme and the step's mode alone. Both sides of
// a boundary derive it from the same step_info, so a receiver knows how its payload was made.
enum class endpoint_action : uint8_t {
  codec,       // the codec alone, no state
  codec_mask,  // the codec alone at the positions of the forward payload (mask=shared)
  plain,       // plain payload, no state
  plain_ef21,  // plain payload, then g = x on both sides (EF21 warm-up)
  ef,          // sender: classic EF over one residual tensor (scope=batch)
  ef_sample,   // sender: classic EF with a residual per sample (scope=sample)
  ef21,        // EF21 step
  aqsgd,       // AQ-SGD step: known samples as deltas, unseen ones warm
  aqsgd_warm   // AQ-SGD step with every row warm (warm-up: m = x)
};

inline endpoint_action sender_action(const state_spec& s, step_mode mode) {
  const state_scheme sc = s.scheme;
  if (mode == step_mode::stateless || (mode == step_mode::compressed && sc == state_scheme::none))
    return endpoint_action::codec;
  if (sc == state_scheme::aqsgd && mode != step_mode::passthrough)
    return mode == step_mode::plain ? endpoint_action::aqsgd_warm : endpoint_action::aqsgd;
  if (mode == step_mode::compressed && sc == state_scheme::ef)
    return s.ef.scope == ef_scope::sample ? endpoint_action::ef_sample : endpoint_action::ef;
  if (mode == step_mode::compressed && sc == state_scheme::ef21) return endpoint_action::ef21;
  // plain or passthrough
  return mode == step_mode::plain && sc == state_scheme::ef21 ? endpoint_action::plain_ef21 : endpoint_action::plain;
}

// Classic EF lives on the sender only: its receiver decodes the codec as usual.
inline endpoint_action receiver_action(const state_spec& s, step_mode mode) {
  const state_scheme sc = s.scheme;
  if (sc == state_scheme::aqsgd && (mode == step_mode::plain || mode == step_mode::compressed))
    return mode == step_mode::plain ? endpoint_action::aqsgd_warm : endpoint_action::aqsgd;
  if (mode == step_mode::compressed && sc == state_scheme::ef21) return endpoint_action::ef21;
  if (mode == step_mode::compressed || mode == step_mode::stateless) return endpoint_action::codec;
  return mode == step_mode::plain && sc == state_scheme::ef21 ? endpoint_action::plain_ef21 : endpoint_action::plain;
}

// The backend-independent state of an endpoint; the backends add their owners and memory.
class endpoint_core {
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
  using action = endpoint_action;

  // Reads the policy of `boundary` and `d`, checks max_shape and sizes the largest payload
  // of the codec and plain modes (stateful schemes widen it with widen_capacity).
  [[nodiscard]] status configure(const pipecodec::policy& p, uint32_t boundary, direction d, const shape& max_shape,
                                 dtype type) {
    const boundary_policy& b = p.at(boundary);
    dp_ = b[d];
    sched_ = b.sched;
    max_shape_ = max_shape;
    type_ = type;
    salt_ = (uint64_t(boundary) << 1 | uint64_t(d)) * 0x9E3779B97F4A7C15ull;
    plain_.codec = codec_id::plain;
    plain_.plain.wire = type;
    const shape& m = max_shape;
    uint64_t n = 0;
    if (m.ndim != 2 || m.cols == 0 || !m.count(n) || n > max_elements) return status::invalid_shape;
    const size_t codec_bytes = pipecodec::encoded_bytes(dp_.codec, m);
    if (codec_bytes == 0) return status::invalid_spec;
    if (needs_mask()) {
      const status ms = check_mask_pairing(b, d);
      if (!ok(ms)) return ms;
    }
    capacity_ = std::max(codec_bytes, pipecodec::encoded_bytes(plain_, m));
    return status::success;
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
  void widen_capacity(size_t bytes) { capacity_ = std::max(capacity_, bytes); }

  // A per-sample store (AQ-SGD, EF scope=sample) for the direction's codec: the policy's
  // capacity, or the runtime's `samples` when the policy leaves it at 0.
  aqsgd_config store_config(dtype storage, uint64_t capacity, uint64_t samples) const {
    aqsgd_config c;
    c.codec = dp_.codec;
    c.cols = max_shape_.cols;
    c.state_type = storage;
    c.capacity = capacity ? capacity : samples;
    return c;
  }

  // A call's tensor: the endpoint's dtype, max_shape's columns, at most its rows. EF21 and EF
  // with scope=batch keep one state tensor of max_shape, so their training calls need
  // exactly max_shape (their state calls check it).
  status check(const shape& s, dtype t) const {
    if (t != type_) return status::shape_mismatch;
    if (s.cols != max_shape_.cols || s.rows > max_shape_.rows) return status::shape_mismatch;
    return status::success;
  }
  uint64_t seed(const step_info& at) const { return at.seed ^ salt_; }
  // A codec call's randomness: the step's seed and its sample ids (codecs with rng=sample).
  randomness draws(const step_info& at) const { return randomness(seed(at), at.sample_ids); }
  // lowrank's warm Q, which a sender without a state scheme keeps for its codec calls (EF keeps
  // its own; the other schemes call the codec only at inference): its bytes (0 otherwise), and
  // its view for a training step (an empty view at inference, which touches no state).
  size_t codec_state_bytes(bool sender) const {
    if (!sender || dp_.state.scheme != state_scheme::none) return 0;
    return size_t(lowrank_state_shape(dp_.codec, max_shape_).size()) * 4;
  }
  tensor_view codec_state(void* lowrank_q, const step_info& at) const {
    if (!at.training || lowrank_q == nullptr) return tensor_view{};
    return tensor_view{lowrank_q, dtype::f32, lowrank_state_shape(dp_.codec, max_shape_)};
  }
  endpoint_action sender_action_for(const step_info& at) const {
    return with_mask(sender_action(dp_.state, mode_for(sched_, at)));
  }
  endpoint_action receiver_action_for(const step_info& at) const {
    return with_mask(receiver_action(dp_.state, mode_for(sched_, at)));
  }
  // A shared-mask direction has no state, so only its codec calls change.
  endpoint_action with_mask(endpoint_action a) const {
    return a == endpoint_action::codec && needs_mask() ? endpoint_action::codec_mask : a;
  }
  // The codec a receiver's payload must carry for `a` (codec or plain actions).
  codec_id expected_codec(endpoint_action a) const {
    return a == endpoint_action::codec || a == endpoint_action::codec_mask ? dp_.codec.codec : codec_id::plain;
  }
  // Records one successful call.
  void count(uint64_t elements, uint64_t in, uint64_t out) {
    ++counters_.calls;
    counters_.elements += elements;
    counters_.bytes_in += in;
    counters_.bytes_out += out;
  }

  direction_policy dp_{};
  schedule sched_{};
  shape max_shape_{};
  dtype type_ = dtype::f32;
  spec plain_{};
  uint64_t salt_ = 0;
  size_t capacity_ = 0;
  endpoint_counters counters_{};
};

}  // namespace detail
}  // namespace pipecodec

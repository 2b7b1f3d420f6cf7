// What a pipeline runtime compresses, where and when: for every boundary between stage i and
// stage i+1 and each direction (activations forward, gradients backward) a codec spec and a
// state scheme, plus a schedule (warm-up uncompressed; inference compressed or plain).
// Plain values; policy_parse.hpp reads and writes the text form, endpoint.hpp builds the
// sender and receiver that carry it out.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "spec_string.hpp"

namespace pipecodec {

enum class direction : uint8_t { fwd = 0, bwd = 1 };

// none: C(x).  ef: the sender keeps the residual e and sends C(x + e); e is one tensor of the
// batch's shape (scope=batch: row r inherits what row r of the previous call did not send)
// or one row per training sample, keyed by sample id (scope=sample).
// ef21: both sides keep g and the sender sends C(x - g); both do g += D(...).
// aqsgd: both sides keep m(xi) per training sample xi (keyed by sample id) and the sender
// sends C(x - m(xi)); both do m(xi) += D(...). A sample not seen yet travels uncompressed.
enum class state_scheme : uint8_t { none = 0, ef = 1, ef21 = 2, aqsgd = 3 };
enum class store_location : uint8_t { host = 0, device = 1 };

struct aqsgd_options {
  store_location store = store_location::host;  // where m(xi) lives (device: CUDA backend)
  dtype storage = dtype::f32;                   // element type of m(xi)
  uint64_t capacity = 0;                        // samples the store holds; 0: the runtime's choice
};

enum class ef_scope : uint8_t { batch = 0, sample = 1 };

struct ef_options {
  ef_scope scope = ef_scope::batch;
  dtype storage = dtype::f32;  // element type of e
  uint64_t capacity = 0;       // scope=sample: samples the store holds; 0: the runtime's choice
  store_location store = store_location::host;  // scope=sample: where e(xi) lives (device: CUDA backend)
};

struct state_spec {
  state_scheme scheme = state_scheme::none;
  aqsgd_options aqsgd{};
  ef_options ef{};
};

// One direction of one boundary. The default sends the tensor as it is (plain, fp32).
struct direction_policy {
  spec codec = plain_spec();
  state_spec state{};

  static spec plain_spec() {
    spec s;
    s.codec = codec_id::plain;
    return s;
  }
};

enum class warmup_unit : uint8_t { steps = 0, epochs = 1 };
enum class inference_mode : uint8_t { compress = 0, plain = 1 };

// Warm-up: the first `warmup` steps (or epochs) of training travel plain; stateful schemes
// use them to initialise their state. At inference (no state is touched) the codec is
// applied on its own (compress) or the tensor is sent as it is (plain).
struct schedule {
  uint64_t warmup = 0;
  warmup_unit unit = warmup_unit::steps;
  inference_mode infer = inference_mode::compress;
};

struct boundary_policy {
  direction_policy fwd{};
  direction_policy bwd{};
  schedule sched{};

  const direction_policy& operator[](direction d) const { return d == direction::fwd ? fwd : bwd; }
  direction_policy& operator[](direction d) { return d == direction::fwd ? fwd : bwd; }
};

// Every boundary follows `all` except those listed in `overrides` (boundary index, policy),
// kept sorted by boundary index with at most one entry each.
struct policy {
  boundary_policy all{};
  std::vector<std::pair<uint32_t, boundary_policy>> overrides{};

  const boundary_policy& at(uint32_t boundary) const {
    for (const auto& o : overrides)
      if (o.first == boundary) return o.second;
    return all;
  }
  // The override for `boundary`, created as a copy of `all` when it does not exist yet.
  boundary_policy& override_at(uint32_t boundary) {
    auto it = overrides.begin();
    while (it != overrides.end() && it->first < boundary) ++it;
    if (it == overrides.end() || it->first != boundary) it = overrides.insert(it, {boundary, all});
    return it->second;
  }
};

// Where a step stands, as both sides of a boundary see it. Both endpoints of a boundary
// must be given the same values: they decide, each on its own, how the payload was made.
struct step_info {
  uint64_t step = 0;                   // training step, counted from 0
  uint64_t epoch = 0;                  // training epoch, counted from 0
  bool training = true;                // false: inference, no state is read or written
  const uint64_t* sample_ids = nullptr;  // one per row (host memory); needed by aqsgd and EF with
                                         // scope=sample during training, and by codecs with rng=sample
  uint64_t seed = 0;                   // stochastic rounding / randk seed for this call
};

// An earlier payload a call depends on: for a shared-mask backward call, the forward TopK
// payload of the same boundary and step. Endpoint calls that need none ignore it.
struct payload_ref {
  const void* data = nullptr;
  size_t size = 0;
};

// How one call is carried out.
enum class step_mode : uint8_t {
  plain = 0,       // sent as it is; stateful schemes (re)initialise their state from it
  compressed = 1,  // the codec with the state scheme
  stateless = 2,   // the codec alone (inference with infer=compress)
  passthrough = 3  // sent as it is, no state touched (inference with infer=plain)
};

inline step_mode mode_for(const schedule& s, const step_info& at) {
  if (!at.training) return s.infer == inference_mode::compress ? step_mode::stateless : step_mode::passthrough;
  const uint64_t t = s.unit == warmup_unit::epochs ? at.epoch : at.step;
  return t < s.warmup ? step_mode::plain : step_mode::compressed;
}

namespace detail {
inline bool same_spec(const spec& a, const spec& b) { return to_string(a) == to_string(b); }
}  // namespace detail

inline bool operator==(const aqsgd_options& a, const aqsgd_options& b) {
  return a.store == b.store && a.storage == b.storage && a.capacity == b.capacity;
}
inline bool operator==(const ef_options& a, const ef_options& b) {
  return a.scope == b.scope && a.storage == b.storage && a.capacity == b.capacity && a.store == b.store;
}
// A scheme's options only matter when it is the scheme in use.
inline bool operator==(const state_spec& a, const state_spec& b) {
  return a.scheme == b.scheme && (a.scheme != state_scheme::aqsgd || a.aqsgd == b.aqsgd) &&
         (a.scheme != state_scheme::ef || a.ef == b.ef);
}
inline bool operator==(const direction_policy& a, const direction_policy& b) {
  return detail::same_spec(a.codec, b.codec) && a.state == b.state;
}
inline bool operator==(const schedule& a, const schedule& b) {
  return a.warmup == b.warmup && (a.warmup == 0 || a.unit == b.unit) && a.infer == b.infer;
}
inline bool operator==(const boundary_policy& a, const boundary_policy& b) {
  return a.fwd == b.fwd && a.bwd == b.bwd && a.sched == b.sched;
}
inline bool operator==(const policy& a, const policy& b) {
  return a.all == b.all && a.overrides == b.overrides;
}
inline bool operator!=(const policy& a, const policy& b) { return !(a == b); }

}  // namespace pipecodec

// The pipecodec endpoints of one stage, for the host stage (stage.hpp) and the CUDA stage
// (stage_cuda.cuh): boundary s-1 (receive activations, send gradients) and boundary s (send
// activations, receive gradients). A direction whose state is one tensor of the micro-batch's
// shape (EF21; EF with scope=batch, a residual per row) gets an endpoint per micro-batch slot
// of a step, so micro-batch m's rows keep their own state, as rows m*r .. m*r + r-1 of an
// unpipelined batch would: the micro-batches of a step in flight together never share it.
// Stateless directions and per-sample state (AQ-SGD, EF with scope=sample, keyed by sample
// id) need one endpoint for all slots.
#pragma once

#include <pipecodec/policy/policy.hpp>

#include <algorithm>
#include <memory>
#include <vector>

#include "stage_common.hpp"

namespace train {

namespace pc = pipecodec;

// Whether a direction keeps state shaped like the micro-batch, one per row.
inline bool per_slot_state(const pc::direction_policy& d) {
  return d.state.scheme == pc::state_scheme::ef21 ||
         (d.state.scheme == pc::state_scheme::ef && d.state.ef.scope == pc::ef_scope::batch);
}

template <class Sender, class Receiver>
class stage_endpoints {
 public:
  // make_options(cols) gives the endpoint options of a boundary of `cols` features.
  template <class MakeOptions>
  stage_endpoints(const pc::policy& pol, int s, int stages, int in, int out, int slots, MakeOptions make_options) {
    if (s > 0) {  // boundary s-1
      init(fwd_in_, pol, s - 1, pc::direction::fwd, slots, make_options(in), "fwd receiver", s);
      init(bwd_out_, pol, s - 1, pc::direction::bwd, slots, make_options(in), "bwd sender", s);
    }
    if (s < stages - 1) {  // boundary s
      init(fwd_out_, pol, s, pc::direction::fwd, slots, make_options(out), "fwd sender", s);
      init(bwd_in_, pol, s, pc::direction::bwd, slots, make_options(out), "bwd receiver", s);
    }
  }

  Receiver& fwd_in(int m) { return at(fwd_in_, m); }
  Sender& fwd_out(int m) { return at(fwd_out_, m); }
  Receiver& bwd_in(int m) { return at(bwd_in_, m); }
  Sender& bwd_out(int m) { return at(bwd_out_, m); }

  // Largest payload of each direction (0 where the stage has no such endpoint).
  size_t fwd_in_bytes() const { return bytes(fwd_in_); }
  size_t fwd_out_bytes() const { return bytes(fwd_out_); }
  size_t bwd_in_bytes() const { return bytes(bwd_in_); }
  size_t bwd_out_bytes() const { return bytes(bwd_out_); }

  // Encode counters of this stage's senders, summed over their slots.
  pc::endpoint_counters fwd_sent() const { return total(fwd_out_); }
  pc::endpoint_counters bwd_sent() const { return total(bwd_out_); }

  void set_inference(pc::inference_mode mode) {
    for (auto* v : {&fwd_in_, &bwd_in_})
      for (auto& e : *v) e->set_inference(mode);
    for (auto* v : {&fwd_out_, &bwd_out_})
      for (auto& e : *v) e->set_inference(mode);
  }

 private:
  template <class E>
  using list = std::vector<std::unique_ptr<E>>;

  template <class E, class Options>
  static void init(list<E>& v, const pc::policy& pol, int boundary, pc::direction d, int slots, const Options& o,
                   const char* what, int s) {
    const int n = per_slot_state(pol.at(uint32_t(boundary))[d]) ? slots : 1;
    for (int i = 0; i < n; ++i) {
      v.emplace_back(new E);
      check(v.back()->init(pol, uint32_t(boundary), d, o), what, s);
    }
  }
  template <class E>
  static E& at(list<E>& v, int m) {
    return *v[size_t(m) % v.size()];
  }
  template <class E>
  static size_t bytes(const list<E>& v) {
    return v.empty() ? 0 : v.front()->encoded_bytes();
  }
  template <class E>
  static pc::endpoint_counters total(const list<E>& v) {
    pc::endpoint_counters c;
    for (const auto& e : v) {
      const pc::endpoint_counters& x = e->counters();
      c.calls += x.calls;
      c.elements += x.elements;
      c.bytes_in += x.bytes_in;
      c.bytes_out += x.bytes_out;
      c.seconds += x.seconds;
    }
    return c;
  }

  list<Receiver> fwd_in_, bwd_in_;
  list<Sender> fwd_out_, bwd_out_;
};

}  // namespace train

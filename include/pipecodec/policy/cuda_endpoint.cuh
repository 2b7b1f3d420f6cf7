// CUDA-backend endpoints, the twins of host::sender_endpoint / host::receiver_endpoint
// (endpoint.hpp): same policy reading, same modes per step (endpoint_common.hpp), same payload
// bytes, so a host sender can feed a CUDA receiver and the other way round. Tensors and
// payload buffers are device pointers; state and workspaces live in the CUDA state owners
// (cuda/state_owners.cuh), allocated once by init() through the runtime's allocators.
//
//   pc::cuda::endpoint_options o;  o.max_shape = shp;  o.stream = s;
//   tx.init(pol, boundary, pc::direction::fwd, o);            // zeroes state on o.stream
//   tx.encode(d_x, step, d_payload, tx.encoded_bytes(), s, &len);   // ... send len bytes ...
//   rx.decode(d_payload, len, d_out, step, s);
//   if (!pc::ok(rx.last_status())) ...                        // syncs s: the device's verdict
//
// What differs from the host endpoints:
// - init() also checks that the device code compiled here encodes and decodes as the host
//   codec does (arithmetic_check.cuh): device_math_mismatch from a --use_fast_math or
//   -ftz=true build. The check synchronizes o.stream.
// - encode/decode are asynchronous on their stream: no allocation, no synchronization. The
//   returned status covers what the host can check; a receiver validates the payload on the
//   device, and last_status() (the one call that synchronizes: the stream of the last decode)
//   returns that verdict. A rejected payload leaves the output and the state untouched.
// - AQ-SGD: store=device keeps m in device memory, store=host in pinned host memory (with a
//   device staging buffer). The receiver needs step_info::sample_ids (the host receiver reads
//   them from the message) and commits the batch's new ids to its id table after the verdict:
//   in last_status() when it is success, or, when last_status() was not called, at the start
//   of the next AQ-SGD decode without looking at the verdict (a rejected message then leaves
//   the table ahead of the rows: call last_status() after each decode to keep the host's
//   all-or-nothing behaviour).
// - EF with scope=sample: store=device keeps the residuals in device memory, store=host in
//   pinned host memory (with a device staging buffer), as AQ-SGD's; the sender needs
//   step_info::sample_ids (host memory).
// - Shared mask (bwd mask=shared): the mask is the forward payload in device memory; the
//   device validates it and the values payload, so a wrong payload shows in last_status().
// - counters() count calls, elements and bytes; seconds stays 0 (timing a stream needs events
//   and a synchronization; time the stream around the calls if needed).
#pragma once

#include "../cuda/codec.cuh"
#include "../cuda/state_owners.cuh"
#include "arithmetic_check.cuh"
#include "endpoint_common.hpp"

namespace pipecodec::cuda {

struct endpoint_options {
  shape max_shape{};                        // largest tensor per call: rows (batch) x cols (features)
  dtype type = dtype::f32;                  // dtype of the tensors handed to encode / decode
  uint64_t samples = 0;                     // per-sample store capacity when the policy leaves it at 0
  allocator device = device_allocator();    // state, workspaces, staging
  allocator pinned = pinned_allocator();    // per-sample stores' pinned rows and plans, the verdict slot
  allocator host_mem = malloc_allocator();  // per-sample stores' id tables
  cudaStream_t stream = nullptr;            // init zeroes the state on it (stream-ordered)
};

namespace detail {

// g = T(x) (EF21 warm-up), skipped on the device when `guard_ws` holds a rejected decode.
inline status set_state(tensor_view g, const_tensor_view x, cudaStream_t stream, const void* guard_ws) {
  if (x.shp != g.shp) return status::state_mismatch;
  status_guard guard;
  if (guard_ws != nullptr) guard.s[0] = status_word(guard_ws);
  return for_each(g.shp.size(), convert_op{dyn(x.data, x.type), dyn(g.data, g.type)}, stream, guard);
}

class endpoint_base : public pipecodec::detail::endpoint_core {
 protected:
  [[nodiscard]] status setup(const pipecodec::policy& p, uint32_t boundary, direction d, const endpoint_options& o,
                             bool sender) {
    status st = configure(p, boundary, d, o.max_shape, o.type);
    if (!ok(st)) return st;
    const shape& m = o.max_shape;
    switch (dp_.state.scheme) {
      case state_scheme::none:
        break;
      case state_scheme::ef: {
        const ef_options& e = dp_.state.ef;
        if (!sender) break;
        if (e.scope == ef_scope::batch) {
          st = ef_.init(dp_.codec, m, e.storage, o.stream, o.device);
          break;
        }
        st = efs_.init(store_config(e.storage, e.capacity, o.samples), m.rows, e.store == store_location::host,
                       o.stream, o.device, o.pinned, o.host_mem);
        if (ok(st)) widen_capacity(efs_.payload_bytes());
        break;
      }
      case state_scheme::ef21:
        st = ef21_.init(dp_.codec, m, dtype::f32, o.stream, o.device);
        break;
      case state_scheme::aqsgd: {
        const aqsgd_options& a = dp_.state.aqsgd;
        st = aq_.init(store_config(a.storage, a.capacity, o.samples), m.rows, a.store == store_location::host, o.stream,
                      o.device, o.pinned, o.host_mem);
        if (ok(st)) widen_capacity(aq_.message_bytes());
        break;
      }
    }
    // Stateless and plain calls: the codec's workspace, or a plain decode's status area.
    const size_t ws = std::max({workspace_bytes(dp_.codec, m), workspace_bytes(plain_, m), size_t(16)});
    if (ok(st)) st = ws_.allocate(ws, o.device);
    if (ok(st) && sender && keyed_by_sample(dp_.codec)) st = ids_.init(m.rows, o.pinned);
    lowrank_q_.reset();
    if (ok(st) && codec_state_bytes(sender) > 0) {
      st = lowrank_q_.allocate(codec_state_bytes(sender), o.device);
      if (ok(st)) st = pipecodec::cuda::detail::zero_async(lowrank_q_.data(), lowrank_q_.size(), o.stream);
    }
    return ok(st) ? check_arithmetic(o) : st;
  }

  // The device code compiled here must compute what the host does (arithmetic_check.cuh):
  // device_math_mismatch from a fast-math or FTZ build, before any payload is made.
  static status check_arithmetic(const endpoint_options& o) {
    owned_bytes scratch;
    const status st = scratch.allocate(arithmetic_check_bytes(), o.device);
    return ok(st) ? check_device_arithmetic(scratch.data(), scratch.size(), o.stream) : st;
  }

  owned_bytes ws_;  // device workspace of stateless and plain calls
  owned_bytes lowrank_q_;  // lowrank's warm Q on the sender, for codec calls
  pinned_ids ids_;         // rng=sample codecs: the step's sample ids where kernels read them
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

  // Encodes the device tensor `in` for the step `at` into the device buffer `payload`
  // (capacity >= encoded_bytes()); `written` (host) is known when the call returns.
  // `mask`: the forward payload (device memory) of this boundary and step, when needs_mask();
  // the device checks it (the forward receiver's last_status() has already judged it).
  [[nodiscard]] status encode(const_tensor_view in, const step_info& at, void* payload, size_t capacity,
                              cudaStream_t stream, size_t* written = nullptr, payload_ref mask = {}) {
    status st = check(in.shp, in.type);
    if (!ok(st)) return st;
    size_t len = 0;
    st = run(in, at, mask, payload, capacity, stream, len);
    if (!ok(st)) return st;
    const uint64_t n = in.shp.size();
    count(n, n * dtype_bytes(in.type), len);
    if (written) *written = len;
    return st;
  }

 private:
  status run(const_tensor_view in, const step_info& at, payload_ref mask, void* payload, size_t cap,
             cudaStream_t stream, size_t& len) {
    const action a = sender_action_for(at);
    const auto keyed = [&](auto&& call) {  // call(randomness) with the step's ids readable by kernels
      return ids_.run(at.sample_ids, in.shp.rows, stream,
                      [&](const uint64_t* ids) { return call(randomness(seed(at), ids)); });
    };
    switch (a) {
      case action::codec: {
        const tensor_view q = codec_state(lowrank_q_.data(), at);
        if (q.data != nullptr)
          return pipecodec::cuda::lowrank_encode(dp_.codec, in, q, payload, cap, ws_.data(), ws_.size(), seed(at),
                                                 stream, &len);
        return keyed([&](randomness r) {
          return pipecodec::cuda::encode(dp_.codec, in, payload, cap, ws_.data(), ws_.size(), r, stream, &len);
        });
      }
      case action::codec_mask:
        if (mask.data == nullptr) return status::invalid_argument;
        return pipecodec::cuda::encode_shared(dp_.codec, in, mask.data, mask.size, payload, cap, ws_.data(),
                                              ws_.size(), seed(at), stream, &len);
      case action::aqsgd:
      case action::aqsgd_warm:
        return aq_.encode(at.sample_ids, in, a == action::aqsgd_warm, payload, cap, seed(at), stream, &len);
      case action::ef_sample:
        return efs_.encode(at.sample_ids, in, payload, cap, seed(at), stream, &len);
      case action::ef:
        return keyed([&](randomness r) { return ef_.encode(in, payload, cap, r, stream, &len); });
      case action::ef21:
        return keyed([&](randomness r) { return ef21_.encode(in, payload, cap, r, stream, &len); });
      case action::plain:
      case action::plain_ef21:
        break;
    }
    status st = pipecodec::cuda::encode(plain_, in, payload, cap, ws_.data(), ws_.size(), 0, stream, &len);
    if (ok(st) && a == action::plain_ef21)  // g = x, as the receiver does
      st = detail::set_state(ef21_.state(), in, stream, nullptr);
    return st;
  }
};

class receiver_endpoint : public detail::endpoint_base {
 public:
  [[nodiscard]] status init(const policy& p, uint32_t boundary, direction d, const endpoint_options& o) {
    status st = setup(p, boundary, d, o, false);
    if (ok(st)) st = verdict_.allocate(sizeof(status), o.pinned);
    if (ok(st)) *static_cast<status*>(verdict_.data()) = status::success;
    return st;
  }

  // Decodes a device payload made by the peer sender for the same step `at` into the device
  // tensor `out`. The payload's verdict: last_status(). `mask`: the forward payload (device
  // memory) of this boundary and step, when needs_mask().
  [[nodiscard]] status decode(const void* payload, size_t len, tensor_view out, const step_info& at,
                              cudaStream_t stream, payload_ref mask = {}) {
    status st = check(out.shp, out.type);
    if (!ok(st)) return st;
    if (verdict_.data() == nullptr) return status::invalid_argument;  // init() did not succeed
    const void* ws = nullptr;
    st = run(payload, len, out, at, mask, stream, ws);
    if (ok(st)) st = read_status(ws, static_cast<status*>(verdict_.data()), stream);
    if (!ok(st)) return st;
    last_stream_ = stream;
    const uint64_t n = out.shp.size();
    count(n, len, n * dtype_bytes(out.type));
    return st;
  }

  // Synchronizes the stream of the last decode and returns the device's verdict on its
  // payload (success before any decode). Commits a pending AQ-SGD batch when it is success.
  [[nodiscard]] status last_status() {
    if (cudaStreamSynchronize(last_stream_) != cudaSuccess) return status::cuda_error;
    const status v = verdict_.data() ? *static_cast<const status*>(verdict_.data()) : status::invalid_argument;
    if (pending_commit_) {
      pending_commit_ = false;
      if (ok(v)) return aq_.commit();
    }
    return v;
  }

 private:
  status run(const void* payload, size_t len, tensor_view out, const step_info& at, payload_ref mask,
             cudaStream_t stream, const void*& ws) {
    const action a = receiver_action_for(at);
    if (a == action::codec_mask) {  // the device validates both payloads (a plain one included)
      if (mask.data == nullptr) return status::invalid_argument;
      ws = ws_.data();
      return pipecodec::cuda::decode_shared(payload, len, mask.data, mask.size, out, ws_.data(), ws_.size(), stream);
    }
    if (a == action::aqsgd || a == action::aqsgd_warm) {
      if (pending_commit_) {  // last_status() was not asked: the previous batch is taken as accepted
        pending_commit_ = false;
        const status st = aq_.commit();
        if (!ok(st)) return st;
      }
      ws = aq_.workspace();
      const status st = aq_.decode(payload, len, at.sample_ids, out.shp.rows, a == action::aqsgd_warm, out, stream);
      pending_commit_ = ok(st);
      return st;
    }
    if (a == action::ef21) {
      ws = ef21_.workspace();
      return ef21_.decode(payload, len, out, stream);
    }
    // Both sides derive the action from the same step, so the payload's codec is known; the
    // device check gives state_mismatch for another codec, as the host's check_codec.
    ws = ws_.data();
    const codec_id want = expected_codec(a);
    status st = detail::decode_codec<false>(want, payload, len, out, ws_.data(), ws_.size(), stream, uint8_t(want));
    if (ok(st) && a == action::plain_ef21)  // g = x, only if the payload was accepted
      st = detail::set_state(ef21_.state(), out, stream, ws_.data());
    return st;
  }

  owned_bytes verdict_;  // pinned: the last decode's device status, copied on its stream
  cudaStream_t last_stream_ = nullptr;
  bool pending_commit_ = false;  // AQ-SGD: a decoded batch whose new ids are not in the table yet
};

}  // namespace pipecodec::cuda

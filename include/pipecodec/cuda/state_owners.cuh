// RAII owners of CUDA state, mirroring host::ef_state, host::ef_sample_state, host::ef21_state
// and host::aqsgd_state (host/ef.hpp, ef_sample.hpp, ef21.hpp, aqsgd.hpp): each allocates its
// state and workspace once in init() through pluggable allocators (allocators.cuh) and forwards
// every call to the caller-owned-memory functions of ef.cuh, ef_sample.cuh, ef21.cuh and
// aqsgd.cuh. encode/decode never allocate and never synchronize.
//
// init() is stream-ordered: the state is zeroed with cudaMemsetAsync on the stream given to
// init, so the first encode/decode must be on that stream or ordered after it (an event). A
// pinned per-sample store is host memory and is zeroed by the host in init.
#pragma once

#include <cstring>

#include "allocators.cuh"
#include "aqsgd.cuh"
#include "ef21.cuh"
#include "ef_sample.cuh"

namespace pipecodec::cuda {

namespace detail {

inline status zero_async(void* p, size_t bytes, cudaStream_t stream) {
  return cudaMemsetAsync(p, 0, bytes, stream) == cudaSuccess ? status::success : status::cuda_error;
}

// One state tensor of a fixed shape and its workspace, both device memory (EF, EF21).
class tensor_state {
 public:
  [[nodiscard]] status init(const spec& s, const shape& shp, dtype state_type, size_t workspace,
                            const allocator& device, cudaStream_t stream) {
    if (!valid_dtype(uint8_t(state_type))) return status::invalid_argument;
    if (encoded_bytes(s, shp) == 0) return status::invalid_spec;
    status st = state_.allocate(size_t(shp.size()) * dtype_bytes(state_type), device);
    if (ok(st)) st = ws_.allocate(workspace, device);
    if (ok(st)) st = zero_async(state_.data(), state_.size(), stream);
    if (!ok(st)) return st;
    spec_ = s;
    shp_ = shp;
    type_ = state_type;
    return status::success;
  }
  tensor_view view() const { return tensor_view{state_.data(), type_, shp_}; }
  const spec& codec() const { return spec_; }
  size_t payload_bytes() const { return encoded_bytes(spec_, shp_); }
  void* ws() const { return ws_.data(); }
  size_t ws_size() const { return ws_.size(); }
  size_t device_bytes() const { return state_.size() + ws_.size(); }

 private:
  spec spec_{};
  shape shp_{};
  dtype type_ = dtype::f32;
  owned_bytes state_, ws_;
};

// A CUDA event without timing, destroyed with its owner.
class owned_event {
 public:
  owned_event() = default;
  owned_event(const owned_event&) = delete;
  owned_event& operator=(const owned_event&) = delete;
  // Movable, so owners (and endpoints) move as the host ones do.
  owned_event(owned_event&& o) noexcept : e_(o.e_), recorded_(o.recorded_) { o.e_ = nullptr; }
  owned_event& operator=(owned_event&& o) noexcept {
    if (this != &o) {
      if (e_ != nullptr) (void)cudaEventDestroy(e_);
      e_ = o.e_;
      recorded_ = o.recorded_;
      o.e_ = nullptr;
    }
    return *this;
  }
  ~owned_event() {
    if (e_ != nullptr) (void)cudaEventDestroy(e_);
  }
  [[nodiscard]] status create() {
    if (e_ != nullptr) return status::success;
    return cudaEventCreateWithFlags(&e_, cudaEventDisableTiming) == cudaSuccess ? status::success : status::cuda_error;
  }
  [[nodiscard]] status record(cudaStream_t stream) {
    recorded_ = true;
    return cudaEventRecord(e_, stream) == cudaSuccess ? status::success : status::cuda_error;
  }
  // Waits (host) until the stream has passed the last record; at once if it already has.
  [[nodiscard]] status wait() const {
    if (!recorded_) return status::success;
    return cudaEventSynchronize(e_) == cudaSuccess ? status::success : status::cuda_error;
  }

 private:
  cudaEvent_t e_ = nullptr;
  bool recorded_ = false;
};

// Sample ids handed to kernels (rng=sample codecs) from pinned host memory, which they read
// through unified addressing: two buffers used in turn, each refilled only once the stream
// has passed the call that read it.
class pinned_ids {
 public:
  [[nodiscard]] status init(uint64_t max_rows, const allocator& pinned) {
    for (int b = 0; b < 2; ++b) {
      status st = buf_[b].allocate(size_t(std::max<uint64_t>(8 * max_rows, 16)), pinned);
      if (ok(st)) st = done_[b].create();
      if (!ok(st)) return st;
    }
    return status::success;
  }
  // Runs call(device-readable ids) with a copy of ids[0..rows) (host memory; nullptr passes
  // through, for the codec to reject where it needs ids).
  template <class Call>
  [[nodiscard]] status run(const uint64_t* ids, uint64_t rows, cudaStream_t stream, Call&& call) {
    if (ids == nullptr || buf_[0].data() == nullptr) return call(ids);
    if (8 * rows > buf_[0].size()) return status::invalid_argument;
    const int next = last_ ^ 1;
    status st = done_[next].wait();
    if (!ok(st)) return st;
    std::memcpy(buf_[next].data(), ids, size_t(8 * rows));
    st = call(static_cast<const uint64_t*>(buf_[next].data()));
    const status rec = done_[next].record(stream);
    last_ = next;
    return ok(st) ? rec : st;
  }

 private:
  owned_bytes buf_[2];
  owned_event done_[2];
  int last_ = 1;
};

}  // namespace detail

// Owner of an EF residual (device memory, zero at the start) and its workspace; sender only.
class ef_state {
 public:
  [[nodiscard]] status init(const spec& s, const shape& shp, dtype state_type, cudaStream_t stream,
                            const allocator& device = device_allocator()) {
    status st = st_.init(s, shp, state_type, pipecodec::cuda::ef_workspace_bytes(s, shp), device, stream);
    q_.reset();
    if (ok(st) && s.codec == codec_id::lowrank) {
      st = q_.allocate(size_t(lowrank_state_shape(s, shp).size()) * 4, device);
      if (ok(st)) st = detail::zero_async(q_.data(), q_.size(), stream);
    }
    return st;
  }
  [[nodiscard]] status encode(const_tensor_view x, void* payload, size_t capacity, randomness rnd, cudaStream_t stream,
                              size_t* written = nullptr) {
    return pipecodec::cuda::ef_encode(st_.codec(), x, residual(), lowrank_q(), payload, capacity, st_.ws(),
                                      st_.ws_size(), rnd, stream, written);
  }
  size_t payload_bytes() const { return st_.payload_bytes(); }
  tensor_view residual() const { return st_.view(); }
  // lowrank: the warm-start Q (device memory), as host::ef_state::lowrank_q.
  tensor_view lowrank_q() const {
    return q_.size() > 0 ? tensor_view{q_.data(), dtype::f32, lowrank_state_shape(st_.codec(), st_.view().shp)}
                         : tensor_view{};
  }
  const spec& codec() const { return st_.codec(); }
  size_t device_bytes() const { return st_.device_bytes() + q_.size(); }

 private:
  detail::tensor_state st_;
  owned_bytes q_;
};

// Owner of one side's EF21 g (device memory, zero at the start) and its workspace.
class ef21_state {
 public:
  [[nodiscard]] status init(const spec& s, const shape& shp, dtype state_type, cudaStream_t stream,
                            const allocator& device = device_allocator()) {
    return st_.init(s, shp, state_type, pipecodec::cuda::ef21_workspace_bytes(s, shp), device, stream);
  }
  [[nodiscard]] status encode(const_tensor_view x, void* payload, size_t capacity, randomness rnd, cudaStream_t stream,
                              size_t* written = nullptr) {
    return pipecodec::cuda::ef21_encode(st_.codec(), x, state(), payload, capacity, st_.ws(), st_.ws_size(), rnd,
                                        stream, written);
  }
  // Receiver step; the payload's verdict: read_status(workspace()) once the stream has run.
  [[nodiscard]] status decode(const void* payload, size_t len, tensor_view out, cudaStream_t stream) {
    return pipecodec::cuda::ef21_decode(st_.codec().codec, payload, len, state(), out, st_.ws(), st_.ws_size(), stream);
  }
  size_t payload_bytes() const { return st_.payload_bytes(); }
  tensor_view state() const { return st_.view(); }
  const spec& codec() const { return st_.codec(); }
  const void* workspace() const { return st_.ws(); }
  size_t device_bytes() const { return st_.device_bytes(); }

 private:
  detail::tensor_state st_;
};

namespace detail {

// One side's per-sample store for batches of up to max_rows samples (AQ-SGD m, per-sample EF
// residuals): the id table (host memory), the rows (device memory, or pinned host memory with
// a device staging buffer), the device workspace and two pinned plan buffers. The plans
// alternate, and a call that reuses one first waits for the stream to pass the call that last
// uploaded it (an event): the host blocks only when the stream is two calls behind. The
// owners below are this store with their scheme's calls.
class sample_store_owner {
 public:
  // Stages the next batch's known rows ahead (pinned store; aqsgd_prefetch).
  [[nodiscard]] status prefetch(const uint64_t* ids, uint64_t rows, cudaStream_t stream) {
    return pipecodec::cuda::aqsgd_prefetch(store_, ids, rows, stream);
  }
  const aqsgd_config& config() const { return cfg_; }
  const aqsgd_device_store& store() const { return store_; }
  bool pinned() const { return store_.pinned(); }
  uint64_t count() const { return store_.table.words ? store_.table.count() : 0; }

 protected:
  // message(c, rows): the scheme's largest message (0: the spec does not fit the shape);
  // workspace(c, rows): its device workspace.
  using size_fn = size_t (*)(const aqsgd_config&, uint64_t);
  [[nodiscard]] status init_store(const aqsgd_config& c, uint64_t max_rows, bool pinned_store, size_fn message,
                                  size_fn workspace, cudaStream_t stream, const allocator& device,
                                  const allocator& pinned, const allocator& host_mem) {
    status st = check_aqsgd_config(c);
    if (!ok(st)) return st;
    const size_t msg = message(c, max_rows);
    if (msg == 0) return status::invalid_spec;
    const size_t row_bytes = size_t(c.cols) * dtype_bytes(c.state_type);
    st = table_.allocate(size_t(aqsgd_table_bytes(c.capacity)), host_mem);
    if (ok(st)) st = rows_.allocate(size_t(aqsgd_rows_bytes(c)), pinned_store ? pinned : device);
    if (ok(st) && pinned_store) st = staging_.allocate(size_t(max_rows) * row_bytes, device);
    if (ok(st)) st = ws_.allocate(workspace(c, max_rows), device);
    for (int i = 0; i < 2 && ok(st); ++i) st = plan_[i].allocate(pipecodec::cuda::aqsgd_plan_bytes(max_rows), pinned);
    for (int i = 0; i < 2 && ok(st); ++i) st = done_[i].create();
    if (ok(st)) st = init_aqsgd_table(table_.data(), table_.size(), c.capacity, store_.table);
    if (!ok(st)) return st;
    if (pinned_store) {
      std::memset(rows_.data(), 0, rows_.size());  // fresh host memory: no stream work can touch it
    } else {
      st = zero_async(rows_.data(), rows_.size(), stream);
      if (!ok(st)) return st;
    }
    store_.rows = tensor_view{rows_.data(), c.state_type, shape(c.capacity, c.cols)};
    store_.staging = pinned_store ? tensor_view{staging_.data(), c.state_type, shape(max_rows, c.cols)} : tensor_view{};
    cfg_ = c;
    max_rows_ = max_rows;
    message_bytes_ = msg;
    return status::success;
  }

  // Runs call(plan, plan_size, workspace, workspace_size) with the plan buffer of this call
  // (not the last successful call's, which a receiver's commit may still read), once the
  // stream has passed that buffer's last upload. A failed call may have enqueued an upload
  // of its plan too: the event is recorded either way; only a successful call's plan is the
  // one last_plan() returns.
  template <class Call>
  [[nodiscard]] status run(cudaStream_t stream, Call&& call) {
    if (store_.table.words == nullptr) return status::invalid_argument;  // init() did not succeed
    const int next = last_ ^ 1;
    status st = done_[next].wait();
    if (!ok(st)) return st;
    st = call(plan_[next].data(), plan_[next].size(), ws_.data(), ws_.size());
    const status rec = done_[next].record(stream);
    if (!ok(st)) return st;
    last_ = next;
    return rec;
  }

  const void* last_plan() const { return plan_[last_].data(); }
  aqsgd_device_store& mutable_store() { return store_; }
  uint64_t max_rows() const { return max_rows_; }
  size_t message_bytes() const { return message_bytes_; }
  const void* workspace() const { return ws_.data(); }

 private:
  aqsgd_config cfg_{};
  uint64_t max_rows_ = 0;
  size_t message_bytes_ = 0;
  aqsgd_device_store store_{};
  owned_bytes table_, rows_, staging_, ws_, plan_[2];
  owned_event done_[2];
  int last_ = 1;
};

}  // namespace detail

// Owner of one side's AQ-SGD store (detail::sample_store_owner). The receiver's table takes
// the batch's new ids in commit(), once the device's verdict (read_status(workspace())) is
// success; commit before the next decode.
class aqsgd_state : public detail::sample_store_owner {
 public:
  [[nodiscard]] status init(const aqsgd_config& c, uint64_t max_rows, bool pinned_store, cudaStream_t stream,
                            const allocator& device = device_allocator(), const allocator& pinned = pinned_allocator(),
                            const allocator& host_mem = malloc_allocator()) {
    return init_store(c, max_rows, pinned_store, aqsgd_message_bytes, pipecodec::cuda::aqsgd_workspace_bytes,
                      stream, device, pinned, host_mem);
  }

  // Sender step (aqsgd_encode); ids in host memory.
  [[nodiscard]] status encode(const uint64_t* ids, const_tensor_view batch, bool warmup, void* message, size_t capacity,
                              uint64_t seed, cudaStream_t stream, size_t* written = nullptr) {
    return run(stream, [&](void* plan, size_t plan_size, void* ws, size_t ws_size) {
      return pipecodec::cuda::aqsgd_encode(config(), mutable_store(), ids, batch, warmup, message, capacity, plan,
                                           plan_size, ws, ws_size, seed, stream, written);
    });
  }
  // Receiver step (aqsgd_decode) for a batch of `rows` samples with host `expected_ids` and
  // the sender's warm-up flag; `out` (rows x cols, optional) receives m of the batch rows.
  [[nodiscard]] status decode(const void* message, size_t len, const uint64_t* expected_ids, uint64_t rows, bool warmup,
                              tensor_view out, cudaStream_t stream) {
    return run(stream, [&](void* plan, size_t plan_size, void* ws, size_t ws_size) {
      return pipecodec::cuda::aqsgd_decode(config(), mutable_store(), expected_ids, rows, warmup, message, len, out,
                                           plan, plan_size, ws, ws_size, stream);
    });
  }
  // Receiver: inserts the new ids of the last decode into the table (aqsgd_commit).
  [[nodiscard]] status commit() { return pipecodec::cuda::aqsgd_commit(store(), last_plan()); }

  using sample_store_owner::message_bytes;
  using sample_store_owner::workspace;
  // What init allocated (plan_bytes counts both plan buffers).
  aqsgd_cuda_memory memory() const {
    aqsgd_cuda_memory m = pipecodec::cuda::aqsgd_memory(config(), max_rows(), pinned());
    m.plan_bytes *= 2;
    return m;
  }
};

// Owner of a sender's per-sample EF residuals (ef_sample_encode) in a store like AQ-SGD's
// (detail::sample_store_owner); c.warmup is not used.
class ef_sample_state : public detail::sample_store_owner {
 public:
  [[nodiscard]] status init(const aqsgd_config& c, uint64_t max_rows, bool pinned_store, cudaStream_t stream,
                            const allocator& device = device_allocator(), const allocator& pinned = pinned_allocator(),
                            const allocator& host_mem = malloc_allocator()) {
    return init_store(c, max_rows, pinned_store, ef_sample_payload_bytes,
                      pipecodec::cuda::ef_sample_workspace_bytes, stream, device, pinned, host_mem);
  }
  // Sender step (ef_sample_encode); ids in host memory.
  [[nodiscard]] status encode(const uint64_t* ids, const_tensor_view batch, void* payload, size_t capacity,
                              uint64_t seed, cudaStream_t stream, size_t* written = nullptr) {
    return run(stream, [&](void* plan, size_t plan_size, void* ws, size_t ws_size) {
      return pipecodec::cuda::ef_sample_encode(config(), mutable_store(), ids, batch, payload, capacity, plan,
                                               plan_size, ws, ws_size, seed, stream, written);
    });
  }
  // Capacity a payload buffer needs for a batch of up to max_rows samples.
  size_t payload_bytes() const { return message_bytes(); }
};

}  // namespace pipecodec::cuda

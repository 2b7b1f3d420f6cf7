// RAII owners of CUDA state, mirroring host::ef_state, host::ef21_state and host::aqsgd_state
// (host/ef.hpp, host/ef21.hpp, host/aqsgd.hpp): each allocates its state and workspace once in
// init() through pluggable allocators (allocators.cuh) and forwards every call to the
// caller-owned-memory functions of ef.cuh, ef21.cuh and aqsgd.cuh. encode/decode never
// allocate and never synchronize.
//
// init() is stream-ordered: the state is zeroed with cudaMemsetAsync on the stream given to
// init, so the first encode/decode must be on that stream or ordered after it (an event). A
// pinned AQ-SGD store is host memory and is zeroed by the host in init.
#pragma once

#include <cstring>

#include "allocators.cuh"
#include "aqsgd.cuh"
#include "ef21.cuh"

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

}  // namespace detail

// Owner of an EF residual (device memory, zero at the start) and its workspace; sender only.
class ef_state {
 public:
  [[nodiscard]] status init(const spec& s, const shape& shp, dtype state_type, cudaStream_t stream,
                            const allocator& device = device_allocator()) {
    return st_.init(s, shp, state_type, pipecodec::cuda::ef_workspace_bytes(s, shp), device, stream);
  }
  [[nodiscard]] status encode(const_tensor_view x, void* payload, size_t capacity, uint64_t seed, cudaStream_t stream,
                              size_t* written = nullptr) {
    return pipecodec::cuda::ef_encode(st_.codec(), x, residual(), payload, capacity, st_.ws(), st_.ws_size(), seed,
                                      stream, written);
  }
  size_t payload_bytes() const { return st_.payload_bytes(); }
  tensor_view residual() const { return st_.view(); }
  const spec& codec() const { return st_.codec(); }
  size_t device_bytes() const { return st_.device_bytes(); }

 private:
  detail::tensor_state st_;
};

// Owner of one side's EF21 g (device memory, zero at the start) and its workspace.
class ef21_state {
 public:
  [[nodiscard]] status init(const spec& s, const shape& shp, dtype state_type, cudaStream_t stream,
                            const allocator& device = device_allocator()) {
    return st_.init(s, shp, state_type, pipecodec::cuda::ef21_workspace_bytes(s, shp), device, stream);
  }
  [[nodiscard]] status encode(const_tensor_view x, void* payload, size_t capacity, uint64_t seed, cudaStream_t stream,
                              size_t* written = nullptr) {
    return pipecodec::cuda::ef21_encode(st_.codec(), x, state(), payload, capacity, st_.ws(), st_.ws_size(), seed,
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

// Owner of one side's AQ-SGD store for batches of up to max_rows samples: the id table (host
// memory), the rows m (device memory, or pinned host memory with a device staging buffer),
// the device workspace and two pinned plan buffers. The plans alternate, and a call that
// reuses one first waits for the stream to pass the call that last uploaded it (an event):
// the host blocks only when the stream is two calls behind. The receiver's table takes the
// batch's new ids in commit(), once the device's verdict (read_status(workspace())) is
// success; commit before the next decode.
class aqsgd_state {
 public:
  [[nodiscard]] status init(const host::aqsgd_config& c, uint64_t max_rows, bool pinned_store, cudaStream_t stream,
                            const allocator& device = device_allocator(), const allocator& pinned = pinned_allocator(),
                            const allocator& host_mem = malloc_allocator()) {
    status st = host::detail::check_config(c);
    if (!ok(st)) return st;
    const size_t msg = host::aqsgd_message_bytes(c, max_rows);
    if (msg == 0) return status::invalid_spec;
    const size_t row_bytes = size_t(c.cols) * dtype_bytes(c.state_type);
    st = table_.allocate(size_t(aqsgd_table_bytes(c.capacity)), host_mem);
    if (ok(st)) st = rows_.allocate(size_t(host::aqsgd_rows_bytes(c)), pinned_store ? pinned : device);
    if (ok(st) && pinned_store) st = staging_.allocate(size_t(max_rows) * row_bytes, device);
    if (ok(st)) st = ws_.allocate(pipecodec::cuda::aqsgd_workspace_bytes(c, max_rows), device);
    for (int i = 0; i < 2 && ok(st); ++i) st = plan_[i].allocate(pipecodec::cuda::aqsgd_plan_bytes(max_rows), pinned);
    for (int i = 0; i < 2 && ok(st); ++i) st = done_[i].create();
    if (ok(st)) st = init_aqsgd_table(table_.data(), table_.size(), c.capacity, store_.table);
    if (!ok(st)) return st;
    if (pinned_store) {
      std::memset(rows_.data(), 0, rows_.size());  // fresh host memory: no stream work can touch it
    } else {
      st = detail::zero_async(rows_.data(), rows_.size(), stream);
      if (!ok(st)) return st;
    }
    store_.rows = tensor_view{rows_.data(), c.state_type, shape(c.capacity, c.cols)};
    store_.staging = pinned_store ? tensor_view{staging_.data(), c.state_type, shape(max_rows, c.cols)} : tensor_view{};
    cfg_ = c;
    max_rows_ = max_rows;
    message_bytes_ = msg;
    return status::success;
  }

  // Sender step (aqsgd_encode); ids in host memory.
  [[nodiscard]] status encode(const uint64_t* ids, const_tensor_view batch, bool warmup, void* message, size_t capacity,
                              uint64_t seed, cudaStream_t stream, size_t* written = nullptr) {
    void* plan = nullptr;
    const status st = next_plan(plan);
    if (!ok(st)) return st;
    return finish_call(
        pipecodec::cuda::aqsgd_encode(cfg_, store_, ids, batch, warmup, message, capacity, plan, plan_[next_].size(),
                                      ws_.data(), ws_.size(), seed, stream, written),
        stream);
  }
  // Receiver step (aqsgd_decode) for a batch of `rows` samples with host `expected_ids` and
  // the sender's warm-up flag; `out` (rows x cols, optional) receives m of the batch rows.
  [[nodiscard]] status decode(const void* message, size_t len, const uint64_t* expected_ids, uint64_t rows, bool warmup,
                              tensor_view out, cudaStream_t stream) {
    void* plan = nullptr;
    const status st = next_plan(plan);
    if (!ok(st)) return st;
    return finish_call(pipecodec::cuda::aqsgd_decode(cfg_, store_, expected_ids, rows, warmup, message, len, out, plan,
                                                     plan_[next_].size(), ws_.data(), ws_.size(), stream),
                       stream);
  }
  // Receiver: inserts the new ids of the last decode into the table (aqsgd_commit).
  [[nodiscard]] status commit() { return pipecodec::cuda::aqsgd_commit(store_, plan_[last_].data()); }
  // Pinned store: stages the next batch's known rows ahead (aqsgd_prefetch).
  [[nodiscard]] status prefetch(const uint64_t* ids, uint64_t rows, cudaStream_t stream) {
    return pipecodec::cuda::aqsgd_prefetch(store_, ids, rows, stream);
  }

  size_t message_bytes() const { return message_bytes_; }
  const host::aqsgd_config& config() const { return cfg_; }
  const aqsgd_device_store& store() const { return store_; }
  bool pinned() const { return store_.pinned(); }
  uint64_t count() const { return store_.table.words ? store_.table.count() : 0; }
  const void* workspace() const { return ws_.data(); }
  // What init allocated (plan_bytes counts both plan buffers).
  aqsgd_cuda_memory memory() const {
    aqsgd_cuda_memory m = pipecodec::cuda::aqsgd_memory(cfg_, max_rows_, pinned());
    m.plan_bytes *= 2;
    return m;
  }

 private:
  // The plan buffer of the next call (not the last successful call's, which commit() may
  // still read), once the stream has passed its last upload.
  status next_plan(void*& plan) {
    if (store_.table.words == nullptr) return status::invalid_argument;  // init() did not succeed
    next_ = last_ ^ 1;
    plan = plan_[next_].data();
    return done_[next_].wait();
  }
  // A failed call may have enqueued an upload of its plan too: the event is recorded either
  // way; only a successful call's plan is the one commit() reads.
  status finish_call(status st, cudaStream_t stream) {
    const status rec = done_[next_].record(stream);
    if (!ok(st)) return st;
    last_ = next_;
    return rec;
  }

  host::aqsgd_config cfg_{};
  uint64_t max_rows_ = 0;
  size_t message_bytes_ = 0;
  aqsgd_device_store store_{};
  owned_bytes table_, rows_, staging_, ws_, plan_[2];
  detail::owned_event done_[2];
  int last_ = 1, next_ = 0;
};

}  // namespace pipecodec::cuda

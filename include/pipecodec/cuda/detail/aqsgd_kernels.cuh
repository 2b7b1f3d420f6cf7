// Device side of CUDA AQ-SGD (cuda/aqsgd.cuh): batch rows gathered through the host's row
// plan (part row p -> batch row src[p], state row mrow[p]), the sample-id sections, and the
// receiver's frame check. Updates are the host's (host/aqsgd.hpp): m = T(fp32(m + d)) for
// delta rows, m = T(d) for warm rows.
#pragma once

#include "../../core/aqsgd_format.hpp"
#include "rotation_kernels.cuh"
#include "state_kernels.cuh"

namespace pipecodec::cuda::detail {

// Row indirection of a part: element i of the part tensor is column j of part row p.
struct part_rows {
  uint64_t cols;
  const uint64_t* src;   // batch row of each part row
  const uint64_t* mrow;  // state row of each part row
  __device__ __forceinline__ uint64_t batch_index(uint64_t i) const { return src[i / cols] * cols + i % cols; }
  __device__ __forceinline__ uint64_t state_index(uint64_t i) const { return mrow[i / cols] * cols + i % cols; }
};

// a of the part's rows.
struct batch_source {
  dyn_tensor a;
  part_rows pr;
  __device__ __forceinline__ float operator()(uint64_t i) const { return a.load(pr.batch_index(i)); }
};

// m of the part's rows.
struct state_source {
  dyn_tensor m;
  part_rows pr;
  __device__ __forceinline__ float operator()(uint64_t i) const { return m.load(pr.state_index(i)); }
};

// a - m of the part's rows (the delta the sender encodes).
struct delta_source {
  dyn_tensor a, m;
  part_rows pr;
  __device__ __forceinline__ float operator()(uint64_t i) const {
    return sub_rn(a.load(pr.batch_index(i)), m.load(pr.state_index(i)));
  }
};

// m += d for the part's rows (fused delta update).
struct row_accumulate_sink {
  dyn_tensor m;
  part_rows pr;
  __device__ __forceinline__ void operator()(uint64_t i, float, float d) const {
    const uint64_t k = pr.state_index(i);
    m.store(k, add_rn(m.load(k), d));
  }
};

// m = T(f32[i]) for the part's rows; when out.p is set, also out[batch row] = O(m) (the
// receiver's tensor, as host::aqsgd_decode fills it).
struct row_store {
  const float* f32;
  dyn_tensor m;
  part_rows pr;
  dyn_tensor out;
  __device__ __forceinline__ void operator()(uint64_t i) const {
    const uint64_t k = pr.state_index(i);
    m.store(k, f32[i]);
    if (out.p != nullptr) out.store(pr.batch_index(i), m.load(k));
  }
};

// The fused receiver's update of a delta row element from its decoded value d:
// m = T(fp32(m + d)) and, when out.p is set, out[batch row] = O(m) (row_store's result).
struct delta_apply_sink {
  dyn_tensor m;
  part_rows pr;
  dyn_tensor out;
  __device__ __forceinline__ void operator()(uint64_t i, float d) const {
    const uint64_t k = pr.state_index(i);
    m.store(k, add_rn(m.load(k), d));
    if (out.p != nullptr) out.store(pr.batch_index(i), m.load(k));
  }
};

// Fused AQ-SGD receiver, quantized delta part: one pass decodes each element of the part
// (validated into the status area `area` by launch_validation) and applies it. Runs only when
// `guard` (the whole message's verdict) passes, so a rejected message writes nothing.
template <uint32_t Threads>
__global__ void __launch_bounds__(Threads)
    aqsgd_delta_apply_kernel(const uint8_t* area, status_guard guard, delta_apply_sink sink) {
  PIPECODEC_SHARED(rotation_buffer, rotated);
  if (!guard.pass()) return;
  const quant_payload qp = *reinterpret_cast<const quant_payload*>(area + parsed_offset);
  decode_quant_elements(qp, rotated, sink);
}

// Pinned store: copies staged rows (device, batch order) to their slots in mapped pinned
// host memory, raw bytes; guarded, so a rejected message writes nothing back.
struct scatter_rows {
  const void* staging;
  void* host_rows;
  const uint64_t* slot;  // slot of each batch row
  uint64_t cols;
  uint32_t width;        // bytes per element
  __device__ __forceinline__ void operator()(uint64_t i) const {
    const uint64_t r = i / cols, j = i % cols;
    store_raw(host_rows, slot[r] * cols + j, width, load_raw(staging, i, width, true), true);
  }
};

// Appends the sample-id section to a part payload a codec kernel just wrote and zeroes the
// padding up to the next 16 bytes (core/sample_ids.hpp). One thread: a part has batch rows.
template <uint32_t Threads>
__global__ void __launch_bounds__(Threads) append_ids_kernel(uint8_t* part, uint64_t capacity, const uint64_t* ids) {
  if (threadIdx.x != 0) return;
  uint64_t total = 0;
  if (!ok(append_sample_ids(part, capacity, ids, &total))) return;  // sizes were checked on the host
  for (uint64_t b = total; b < align16(total); ++b) part[b] = 0;
}

// What the receiver's plan predicts (built on the host from its table and the schedule).
struct frame_expectation {
  const uint8_t* head;    // predicted frame header and row kinds
  const uint64_t* ids;    // expected ids, batch order
  const uint64_t* slot;   // slot of each batch row (new ids: >= known)
  uint64_t known;         // table count: slots below are samples seen before
  uint8_t warm_codec, delta_codec;
};

// The receiver's checks of host::aqsgd_decode, on the device: frame, part codecs, sample
// ids, delta rows of known samples; then that the frame is the predicted one (the parts'
// offsets and sizes the host launched the part decoders with).
__device__ inline status check_frame(const uint8_t* msg, uint64_t len, const frame_expectation& e) {
  aqsgd_frame f, want;
  status st = parse_aqsgd_frame(msg, len, f);
  if (!ok(st)) return st;
  want.rows = get_u64(e.head + 16);
  want.cols = get_u64(e.head + 24);
  want.warm_rows = get_u64(e.head + 32);
  want.warm_bytes = get_u64(e.head + 40);
  want.delta_bytes = get_u64(e.head + 48);
  if (f.cols != want.cols || f.rows != want.rows) return status::shape_mismatch;
  header hw, hd;
  const uint8_t* wid = nullptr;
  const uint8_t* did = nullptr;
  if (f.warm_rows > 0) {
    (void)read_header(msg + f.warm_offset(), f.warm_bytes, hw);  // parse_aqsgd_frame checked it
    if (uint8_t(hw.codec) != e.warm_codec) return status::state_mismatch;
    wid = sample_ids_section(msg + f.warm_offset(), hw);
  }
  if (f.rows > f.warm_rows) {
    (void)read_header(msg + f.delta_offset(), f.delta_bytes, hd);
    if (uint8_t(hd.codec) != e.delta_codec) return status::state_mismatch;
    did = sample_ids_section(msg + f.delta_offset(), hd);
  }
  const uint8_t* kinds = msg + f.kinds_offset();
  for (uint64_t r = 0, wr = 0, dr = 0; r < f.rows; ++r) {
    const uint64_t id = kinds[r] == aqsgd_row_warm ? sample_id(wid, wr++) : sample_id(did, dr++);
    if (id != e.ids[r]) return status::id_mismatch;
  }
  for (uint64_t r = 0; r < f.rows; ++r)
    if (kinds[r] == aqsgd_row_delta && e.slot[r] >= e.known) return status::id_mismatch;
  // A valid message the plan did not predict: the sender followed another warm-up schedule,
  // or encoded its parts with other codec parameters (other sizes).
  for (uint64_t r = 0; r < f.rows; ++r)
    if (kinds[r] != e.head[aqsgd_header_bytes + r]) return status::state_mismatch;
  if (f.warm_bytes != want.warm_bytes || f.delta_bytes != want.delta_bytes) return status::state_mismatch;
  return status::success;
}

template <uint32_t Threads>
__global__ void __launch_bounds__(Threads)
    aqsgd_frame_kernel(const uint8_t* msg, uint64_t len, frame_expectation e, status* code) {
  if (threadIdx.x == 0) *code = check_frame(msg, len, e);
}

// The message's verdict: the frame's, else the first rejected part's (host order).
template <uint32_t Threads>
__global__ void __launch_bounds__(Threads) combine_status_kernel(status* code, status_guard parts) {
  if (threadIdx.x != 0 || !ok(*code)) return;
  for (const status* p : parts.s)
    if (p != nullptr && !ok(*p)) {
      *code = *p;
      return;
    }
}

}  // namespace pipecodec::cuda::detail

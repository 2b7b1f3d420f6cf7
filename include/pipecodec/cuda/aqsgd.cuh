// AQ-SGD per-sample state on the device, byte-identical to host/aqsgd.hpp (same message,
// same table, same rows), so a host sender can feed a CUDA receiver and the other way round.
// The id table stays in host memory; each call plans the batch on the host (ids -> slots,
// row kinds, frame: detail/aqsgd_plan.cuh) into a caller plan buffer (pinned host memory)
// and uploads it with cudaMemcpyAsync; kernels then read the plan from the workspace.
// Sender: warm rows gather a -> cuda::encode(warm-up codec) -> decode -> m = T(d); delta rows
// with quantization are one fused pass (read a and m, write the payload and m += D);
// other codecs go through an fp32 scratch. Receiver: frame, ids and both parts validated on
// the device, then guarded passes write m (and `out`): with quantization the delta rows in
// one fused pass (read the payload and m, write m and out), other codecs through the fp32
// scratch; a rejected message leaves every row untouched. Rows live in device memory, or in
// pinned host memory (`staging` set: the batch's rows are gathered into a device staging
// buffer and written back; aqsgd_prefetch stages the next batch ahead). docs/STATE.md and
// docs/CUDA.md have the details.
#pragma once

#include "detail/aqsgd_pinned.cuh"

namespace pipecodec::cuda {

// One side's store. rows: capacity x cols of the state dtype, in device memory, or (pinned
// store) in pinned host memory from cudaMallocHost / cudaHostAlloc, which kernels reach
// through unified addressing. staging: pinned store only, device memory of at least the
// largest batch's rows x cols (state dtype). The prefetch fields are set by aqsgd_prefetch.
struct aqsgd_device_store {
  aqsgd_table table{};  // host memory
  tensor_view rows{};
  tensor_view staging{};
  bool prefetched = false;
  uint64_t prefetch_digest = 0, prefetch_known = 0;
  bool pinned() const { return staging.data != nullptr; }
};

// Host plan buffer bytes for a batch of `rows` samples (16-byte aligned, pinned host memory).
inline size_t aqsgd_plan_bytes(uint64_t rows) { return size_t(detail::plan_layout(rows).total); }

// Device workspace bytes for batches of up to `rows` samples (any alignment).
inline size_t aqsgd_workspace_bytes(const aqsgd_config& c, uint64_t rows) {
  const shape shp(rows, c.cols);
  return size_t(detail::workspace_request(detail::workspace_status_bytes + detail::plan_layout(rows).device_bytes +
                                          detail::align16(4 * rows * c.cols))) +
         workspace_bytes(c.warmup, shp) + workspace_bytes(c.codec, shp);
}

// Where a CUDA AQ-SGD side's memory lives, for a store of c.capacity samples and batches of
// up to max_rows (messages: aqsgd_message_bytes, the same format).
struct aqsgd_cuda_memory {
  uint64_t bytes_per_sample = 0;  // row of m plus its id table share
  uint64_t table_bytes = 0;       // host memory
  uint64_t rows_bytes = 0;        // device memory, or pinned host memory for a pinned store
  uint64_t staging_bytes = 0;     // device memory, pinned store only
  uint64_t workspace_bytes = 0;   // device memory
  uint64_t plan_bytes = 0;        // pinned host memory
};

inline aqsgd_cuda_memory aqsgd_memory(const aqsgd_config& c, uint64_t max_rows, bool pinned) {
  aqsgd_cuda_memory m;
  m.bytes_per_sample = aqsgd_memory_use(c, 0).bytes_per_sample;
  m.table_bytes = aqsgd_table_bytes(c.capacity);
  m.rows_bytes = aqsgd_rows_bytes(c);
  m.staging_bytes = pinned ? max_rows * c.cols * dtype_bytes(c.state_type) : 0;
  m.workspace_bytes = pipecodec::cuda::aqsgd_workspace_bytes(c, max_rows);
  m.plan_bytes = aqsgd_plan_bytes(max_rows);
  return m;
}

namespace detail {

struct aqsgd_dev_ws {
  uint8_t* result = nullptr;  // status area: the receiver's verdict (cuda::read_status)
  uint8_t* plan = nullptr;    // device copy of the plan's first device_bytes
  float* f32 = nullptr;       // warm rows, then delta rows
  void* ws[2] = {nullptr, nullptr};  // codec workspaces: warm part, delta part
  size_t ws_bytes[2] = {0, 0};
};

inline status check_device_store(const aqsgd_config& c, const aqsgd_device_store& s, uint64_t rows) {
  status st = check_aqsgd_config(c);
  if (ok(st)) st = check_store_layout(c, s.table, s.rows);
  if (!ok(st)) return st;
  if (s.pinned() && (s.staging.type != c.state_type || s.staging.shp.cols != c.cols || s.staging.shp.rows < rows))
    return status::state_mismatch;
  if (!element_aligned(s.rows.data, s.rows.type) || !element_aligned(s.staging.data, s.rows.type))
    return status::misaligned;
  return rows > max_elements / c.cols ? status::shape_mismatch : status::success;
}

inline status split_aqsgd_dev_ws(const aqsgd_config& c, uint64_t rows, void* ws, size_t size,
                                 aqsgd_dev_ws& w) {
  if (size < pipecodec::cuda::aqsgd_workspace_bytes(c, rows)) return status::workspace_too_small;
  if (ws == nullptr) return status::invalid_argument;
  const shape shp(rows, c.cols);
  uint8_t* base = align_workspace(ws);
  w.result = base;
  w.plan = base + workspace_status_bytes;
  w.f32 = reinterpret_cast<float*>(w.plan + plan_layout(rows).device_bytes);
  w.ws[0] = reinterpret_cast<uint8_t*>(w.f32) + align16(4 * rows * c.cols);
  w.ws_bytes[0] = workspace_bytes(c.warmup, shp);
  w.ws[1] = static_cast<uint8_t*>(w.ws[0]) + w.ws_bytes[0];
  w.ws_bytes[1] = workspace_bytes(c.codec, shp);
  return status::success;
}

inline status upload(void* dst, const void* src, uint64_t bytes, cudaStream_t stream) {
  return cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream) == cudaSuccess ? status::success
                                                                                         : status::cuda_error;
}

// Pinned store: stages the known rows of the batch not already staged by a prefetch of it.
inline status stage_batch(aqsgd_device_store& s, const aqsgd_planned& pl, uint64_t row_bytes, cudaStream_t stream) {
  if (!s.pinned()) return status::success;
  const bool hit = s.prefetched && s.prefetch_digest == ids_digest(pl.ids, pl.frame.rows);
  s.prefetched = false;
  const uint64_t* slot = pl.slot;
  return gather_rows(s.rows.data, s.staging.data, row_bytes, [slot](uint64_t r) { return slot[r]; },
                     pl.frame.rows, hit ? s.prefetch_known : 0, pl.known, stream);
}

inline status append_ids(uint8_t* part, uint64_t bytes, const uint64_t* ids, cudaStream_t stream) {
  launch<append_ids_kernel<32>>(1, 32, 0, stream, part, bytes, ids);
  return last_launch_status();
}

}  // namespace detail

// Pinned store: gathers, on `stream`, the rows of the next batch's ids that the table knows
// now into s.staging, so the copies overlap with work on other streams. The next
// aqsgd_encode / aqsgd_decode with the same ids (same order) then copies only rows inserted
// since. Enqueue it after the previous call on the same stream (or order it with an event):
// rows that call updates must be written back before they are staged again.
inline status aqsgd_prefetch(aqsgd_device_store& s, const uint64_t* ids, uint64_t rows, cudaStream_t stream) {
  if (!s.pinned() || s.table.words == nullptr || (ids == nullptr && rows > 0)) return status::invalid_argument;
  if (s.staging.shp.rows < rows) return status::state_mismatch;
  const uint64_t row_bytes = s.rows.shp.cols * dtype_bytes(s.rows.type);
  const aqsgd_table t = s.table;
  const status st = detail::gather_rows(s.rows.data, s.staging.data, row_bytes,
                                        [t, ids](uint64_t r) { return t.find(ids[r]); }, rows, 0, t.count(), stream);
  if (!ok(st)) return st;
  s.prefetched = true;
  s.prefetch_digest = detail::ids_digest(ids, rows);
  s.prefetch_known = t.count();
  return status::success;
}

// Sender step for a batch (device tensor, rows = samples, cols = c.cols) with host ids
// ids[0..rows); `warmup` sends every row with the warm-up codec. The message (device memory,
// capacity >= aqsgd_message_bytes) is the host's byte for byte; the table takes the
// batch's new ids when the call returns success.
inline status aqsgd_encode(const aqsgd_config& c, aqsgd_device_store& s, const uint64_t* ids,
                           const_tensor_view batch, bool warmup, void* message, size_t capacity, void* plan,
                           size_t plan_size, void* workspace, size_t workspace_size, uint64_t seed,
                           cudaStream_t stream, size_t* written = nullptr) {
  using namespace detail;
  const uint64_t rows = batch.shp.rows;
  status st = check_device_store(c, s, rows);
  if (!ok(st)) return st;
  if (batch.shp.cols != c.cols) return status::shape_mismatch;
  if ((batch.data == nullptr && rows > 0) || message == nullptr || !valid_dtype(uint8_t(batch.type)))
    return status::invalid_argument;
  if (!element_aligned(batch.data, batch.type)) return status::misaligned;
  aqsgd_planned pl;
  st = make_plan(c, s.table, ids, rows, warmup, s.pinned(), plan, plan_size, pl);
  if (!ok(st)) return st;
  const aqsgd_frame& f = pl.frame;
  if (capacity < f.total_bytes) return status::buffer_too_small;
  aqsgd_dev_ws w;
  st = split_aqsgd_dev_ws(c, rows, workspace, workspace_size, w);
  if (!ok(st)) return st;
  const uint64_t row_bytes = c.cols * dtype_bytes(c.state_type);
  void* m = s.pinned() ? s.staging.data : s.rows.data;
  if (pipecodec::detail::overlaps(workspace, workspace_size, message, capacity) ||
      pipecodec::detail::overlaps(m, (s.pinned() ? rows : c.capacity) * row_bytes, message, capacity))
    return status::aliasing;
  const aqsgd_plan_layout L = plan_layout(rows);
  uint8_t* msg = static_cast<uint8_t*>(message);
  st = upload(w.plan, plan, L.device_bytes, stream);
  if (ok(st)) st = upload(msg, plan, L.head, stream);
  if (ok(st)) st = stage_batch(s, pl, row_bytes, stream);
  if (!ok(st)) return st;
  const auto* dsrc = reinterpret_cast<const uint64_t*>(w.plan + L.src);
  const auto* dmrow = reinterpret_cast<const uint64_t*>(w.plan + L.mrow);
  const auto* dpids = reinterpret_cast<const uint64_t*>(w.plan + L.part_ids);
  const uint64_t wr = f.warm_rows, dr = rows - wr;
  const part_rows pw{c.cols, dsrc, dmrow}, pd{c.cols, dsrc + wr, dmrow + wr};
  float* fd = w.f32 + wr * c.cols;
  uint8_t* warm = msg + f.warm_offset();
  uint8_t* delta = msg + f.delta_offset();
  const dyn_tensor a = dyn(batch.data, batch.type), mt = dyn(m, c.state_type);
  size_t len = 0;
  if (wr > 0) {  // warm rows: m = T(D(W(a)))
    const shape ws(wr, c.cols);
    st = for_each(wr * c.cols, materialize<batch_source>{{a, pw}, w.f32}, stream);
    if (ok(st))
      st = encode_f32(c.warmup, w.f32, ws, warm, f.warm_bytes, w.ws[0], w.ws_bytes[0], randomness(seed, dpids), stream,
                      &len);
    if (ok(st) && len + sample_ids_bytes(wr) != f.warm_bytes) st = status::not_supported;  // variable-size codec
    if (ok(st)) st = append_ids(warm, f.warm_bytes, dpids, stream);
    if (ok(st)) st = decode_codec<false>(c.warmup.codec, warm, f.warm_bytes, tensor_view{w.f32, dtype::f32, ws},
                                         w.ws[0], w.ws_bytes[0], stream);
    status_guard g;
    g.s[0] = status_word(w.ws[0]);
    if (ok(st)) st = for_each(wr * c.cols, row_store{w.f32, mt, pw, {}}, stream, g);
  }
  const shape ds(dr, c.cols);
  const bool fused = c.codec.codec == codec_id::quant;
  if (ok(st) && dr > 0 && fused) {  // payload = C(a - m) and m += D(payload) in one pass
    quant_plan P;
    st = plan_quant(c.codec.quant, ds, batch.data, delta, f.delta_bytes, w.ws[1], w.ws_bytes[1], P);
    if (ok(st)) st = launch_quant(delta_source{a, mt, pd}, row_accumulate_sink{mt, pd}, c.codec.quant, P,
                                  dtype::f32, ds, delta, w.ws[1], randomness(seed, dpids + wr), stream);
    len = size_t(P.L.total);
  } else if (ok(st) && dr > 0) {
    st = for_each(dr * c.cols, materialize<delta_source>{{a, mt, pd}, fd}, stream);
    if (ok(st))
      st = encode_f32(c.codec, fd, ds, delta, f.delta_bytes, w.ws[1], w.ws_bytes[1], randomness(seed, dpids + wr),
                      stream, &len);
  }
  if (ok(st) && dr > 0 && len + sample_ids_bytes(dr) != f.delta_bytes) st = status::not_supported;
  if (ok(st) && dr > 0) st = append_ids(delta, f.delta_bytes, dpids + wr, stream);
  if (ok(st) && dr > 0 && !fused) {  // m = T(m + D(payload)) through the scratch
    st = for_each(dr * c.cols, materialize<state_source>{{mt, pd}, fd}, stream);
    if (ok(st)) st = decode_codec<true>(c.codec.codec, delta, f.delta_bytes, tensor_view{fd, dtype::f32, ds},
                                        w.ws[1], w.ws_bytes[1], stream);
    status_guard g;
    g.s[0] = status_word(w.ws[1]);
    if (ok(st)) st = for_each(dr * c.cols, row_store{fd, mt, pd, {}}, stream, g);
  }
  if (ok(st) && s.pinned())
    st = scatter_rows_back(c.state_type, s.staging.data, s.rows.data,
                           reinterpret_cast<const uint64_t*>(w.plan + L.slot), rows, c.cols, stream, {});
  if (ok(st)) st = commit_plan(s.table, pl);
  if (ok(st) && written) *written = size_t(f.total_bytes);
  return st;
}

// Receiver step: validates the message against the batch's expected ids (host, rows of
// them) and the same warm-up flag the sender used, then applies it; `out` (rows x c.cols,
// any dtype, optional) receives m of the batch rows. Host-checkable errors return at once
// (duplicate ids: id_mismatch; too many new ids: capacity_exceeded); the device's verdict is
// read with cuda::read_status(workspace). The table is not touched: after the verdict is
// success, call aqsgd_commit (before planning the next batch on this store).
inline status aqsgd_decode(const aqsgd_config& c, aqsgd_device_store& s, const uint64_t* expected_ids,
                           uint64_t rows, bool warmup, const void* message, size_t len, tensor_view out, void* plan,
                           size_t plan_size, void* workspace, size_t workspace_size, cudaStream_t stream) {
  using namespace detail;
  status st = check_device_store(c, s, rows);
  if (!ok(st)) return st;
  if (message == nullptr || (expected_ids == nullptr && rows > 0)) return status::invalid_argument;
  if (out.data != nullptr && (out.shp.rows != rows || out.shp.cols != c.cols)) return status::shape_mismatch;
  if (out.data != nullptr && !valid_dtype(uint8_t(out.type))) return status::not_supported;
  if (out.data != nullptr && !element_aligned(out.data, out.type)) return status::misaligned;
  aqsgd_planned pl;
  st = make_plan(c, s.table, expected_ids, rows, warmup, s.pinned(), plan, plan_size, pl);
  if (st == status::invalid_argument && plan != nullptr && plan_size >= aqsgd_plan_bytes(rows))
    return status::id_mismatch;  // duplicate ids, as host::aqsgd_decode reports them
  if (!ok(st)) return st;
  const aqsgd_frame& f = pl.frame;
  aqsgd_dev_ws w;
  st = split_aqsgd_dev_ws(c, rows, workspace, workspace_size, w);
  if (!ok(st)) return st;
  const uint64_t row_bytes = c.cols * dtype_bytes(c.state_type);
  void* m = s.pinned() ? s.staging.data : s.rows.data;
  const uint64_t m_bytes = (s.pinned() ? rows : c.capacity) * row_bytes;
  if (pipecodec::detail::overlaps(workspace, workspace_size, message, len) ||
      pipecodec::detail::overlaps(m, m_bytes, message, len) ||
      (out.data != nullptr && pipecodec::detail::overlaps(out.data, rows * c.cols * dtype_bytes(out.type), message, len)))
    return status::aliasing;
  const aqsgd_plan_layout L = plan_layout(rows);
  st = upload(w.plan, plan, L.device_bytes, stream);
  if (ok(st) && cudaMemsetAsync(w.result, 0, sizeof(status_area), stream) != cudaSuccess) st = status::cuda_error;
  if (ok(st)) st = stage_batch(s, pl, row_bytes, stream);
  if (!ok(st)) return st;
  status* verdict = reinterpret_cast<status*>(w.result);
  const dyn_tensor mt = dyn(m, c.state_type);
  const frame_expectation e{w.plan, reinterpret_cast<const uint64_t*>(w.plan + L.batch_ids),
                            reinterpret_cast<const uint64_t*>(w.plan + L.slot), pl.known,
                            uint8_t(c.warmup.codec), uint8_t(c.codec.codec)};
  launch<aqsgd_frame_kernel<32>>(1, 32, 0, stream, static_cast<const uint8_t*>(message), len, e, verdict);
  st = last_launch_status();
  const auto* dsrc = reinterpret_cast<const uint64_t*>(w.plan + L.src);
  const auto* dmrow = reinterpret_cast<const uint64_t*>(w.plan + L.mrow);
  const uint64_t wr = f.warm_rows, dr = rows - wr;
  const uint8_t* msg = static_cast<const uint8_t*>(message);
  status_guard parts;
  // A quantized delta part is validated here and decoded by one fused pass after the verdict;
  // other codecs decode into the fp32 scratch (m + D) and share the warm rows' store pass.
  const bool fused = c.codec.codec == codec_id::quant;
  uint8_t* delta_area = align_workspace(w.ws[1]);
  // Part decoders run only where the predicted parts lie inside the buffer; otherwise the
  // frame check has already failed (it sees the real sizes).
  if (ok(st) && len >= f.total_bytes && wr > 0) {
    st = decode_codec<false>(c.warmup.codec, msg + f.warm_offset(), f.warm_bytes,
                             tensor_view{w.f32, dtype::f32, shape(wr, c.cols)}, w.ws[0], w.ws_bytes[0], stream,
                             uint8_t(c.warmup.codec));
    parts.s[0] = status_word(w.ws[0]);
  }
  device_grid dg;
  if (ok(st)) st = current_device(dg);
  if (ok(st) && len >= f.total_bytes && dr > 0) {
    if (fused) {
      st = launch_validation(msg + f.delta_offset(), f.delta_bytes, shape(dr, c.cols), delta_area, dg,
                             uint8_t(c.codec.codec), stream);
    } else {
      float* fd = w.f32 + wr * c.cols;
      st = for_each(dr * c.cols, materialize<state_source>{{mt, {c.cols, dsrc + wr, dmrow + wr}}, fd}, stream);
      if (ok(st)) st = decode_codec<true>(c.codec.codec, msg + f.delta_offset(), f.delta_bytes,
                                          tensor_view{fd, dtype::f32, shape(dr, c.cols)}, w.ws[1], w.ws_bytes[1],
                                          stream, uint8_t(c.codec.codec));
    }
    parts.s[1] = status_word(w.ws[1]);
  }
  if (!ok(st)) return st;
  launch<combine_status_kernel<32>>(1, 32, 0, stream, verdict, parts);
  st = last_launch_status();
  status_guard accepted;
  accepted.s[0] = verdict;
  const dyn_tensor o = dyn(out.data, out.type);
  const uint64_t scratch_rows = fused ? wr : rows;
  if (ok(st))
    st = for_each(scratch_rows * c.cols, row_store{w.f32, mt, {c.cols, dsrc, dmrow}, o}, stream, accepted);
  if (ok(st) && fused && dr > 0) {
    launch_over<aqsgd_delta_apply_kernel<block_threads>>(dr * c.cols, 32 * block_warps, dg, block_threads, 0, stream,
                                                         delta_area, accepted,
                                                         delta_apply_sink{mt, {c.cols, dsrc + wr, dmrow + wr}, o});
    st = last_launch_status();
  }
  if (ok(st) && s.pinned())
    st = scatter_rows_back(c.state_type, s.staging.data, s.rows.data,
                           reinterpret_cast<const uint64_t*>(w.plan + L.slot), rows, c.cols, stream, accepted);
  return st;
}

// Inserts the new ids of the batch planned in `plan` into the table (receiver, after an
// accepted message). state_mismatch if the table changed since the plan was made.
inline status aqsgd_commit(const aqsgd_device_store& s, const void* plan) {
  detail::aqsgd_planned pl;
  const status st = detail::read_plan(plan, pl);
  return ok(st) ? detail::commit_plan(s.table, pl) : st;
}

}  // namespace pipecodec::cuda

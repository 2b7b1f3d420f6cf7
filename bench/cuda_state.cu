// CUDA stateful schemes against a copy of the same traffic measured in the same run (the
// method of bench/cuda_quant.cu: warm-up, cold L2 before each timed run, CUDA events, median).
//   ef/quant4       fused EF + 4-bit (read x and e, write payload and e), n = 2^LOG2N
//   ef21/quant4     fused EF21 sender (read x and g, write payload and g)
//   ef21_recv/quant4  validate + accumulate-decode into g
//   ef/topk10       EF with TopK 10% per row of 4096 (three passes, not fused)
//   aqsgd/quant4    AQ-SGD sender, every row a delta row (fused), device store, 4096 columns;
//                   the time includes the host's planning of the batch (ids -> slots)
//   aqsgd_recv/quant4  AQ-SGD receiver of that message (fused since 2026-12-02: validate,
//                   then read the payload and m, write m), no output tensor, planning included
//   ef_sample/quant4  per-sample EF sender, every sample seen before (fused: read x and e(xi),
//                   write payload and e(xi)), device store, 4096 columns, planning included
//   pinned gather / scatter: a batch's rows between a pinned host store and the device, as
//                   one run of consecutive slots and as shuffled slots (one copy per row),
//                   against one cudaMemcpyAsync of the same bytes (ratio = bandwidth fraction)
//   PIPECODEC_BENCH_LOG2N (default 28), PIPECODEC_BENCH_REPS (default 15)
#include <functional>
#include <string>
#include <vector>

#include "cuda_timing.cuh"
#include "pipecodec/cuda/aqsgd.cuh"
#include "pipecodec/cuda/ef21.cuh"
#include "pipecodec/cuda/ef_sample.cuh"
#include "pipecodec/policy/spec_string.hpp"

namespace pc = pipecodec;
using namespace cudabench;

namespace {

struct dbuf {
  void* p = nullptr;
  explicit dbuf(size_t n, bool pinned = false) {
    if (pinned ? cudaMallocHost(&p, n) != cudaSuccess : cudaMalloc(&p, n) != cudaSuccess) p = nullptr;
    pinned_ = pinned;
  }
  ~dbuf() { pinned_ ? (void)cudaFreeHost(p) : (void)cudaFree(p); }
  dbuf(const dbuf&) = delete;
  dbuf& operator=(const dbuf&) = delete;
  bool pinned_ = false;
};

enum class scheme { ef, ef21, ef21_recv };

void bench_ef(benchmark::State& st, scheme sc, const char* text, pc::dtype t) {
  if (!timer().ready) return st.SkipWithError("device setup failed");
  pc::spec s;
  if (!pc::ok(pc::parse_spec(text, s))) return st.SkipWithError("spec");
  const uint64_t n = uint64_t(1) << env_int("PIPECODEC_BENCH_LOG2N", 28);
  const pc::shape shp(n / 4096, 4096);
  const size_t cap = pc::encoded_bytes(s, shp), wsb = pc::cuda::ef_workspace_bytes(s, shp);
  const size_t eb = n * pc::dtype_bytes(t);
  dbuf x(eb), e(eb), pay(cap), ws(wsb), big(3 * eb + cap + 16);
  if (!x.p || !e.p || !pay.p || !ws.p || !big.p) return st.SkipWithError("cudaMalloc failed");
  cudaStream_t str = timer().stream;
  fill(x.p, n, t);
  cudaMemsetAsync(e.p, 0, eb, str);
  const pc::const_tensor_view xv(x.p, t, shp);
  const pc::tensor_view ev{e.p, t, shp};
  std::function<bool()> op;
  double traffic = 3.0 * double(eb) + double(cap);  // read x, read + write the state, payload
  if (sc == scheme::ef)
    op = [&] { return pc::ok(pc::cuda::ef_encode(s, xv, ev, pay.p, cap, ws.p, wsb, 1, str)); };
  else if (sc == scheme::ef21)
    op = [&] { return pc::ok(pc::cuda::ef21_encode(s, xv, ev, pay.p, cap, ws.p, wsb, 1, str)); };
  else {
    if (!pc::ok(pc::cuda::ef21_encode(s, xv, ev, pay.p, cap, ws.p, wsb, 1, str))) return st.SkipWithError("encode");
    op = [&] { return pc::ok(pc::cuda::ef21_decode(s.codec, pay.p, cap, ev, {}, ws.p, wsb, str)); };
    traffic = 2.0 * double(eb) + double(cap);
  }
  report(st, op, traffic, big.p, static_cast<uint8_t*>(big.p) + size_t(traffic / 2));
}

enum class store_op { aqsgd_send, aqsgd_recv, ef_sample };

// A per-sample store's step, device store, every sample of the batch seen before (fused
// 4-bit path): AQ-SGD sender (all delta rows) or receiver, or per-sample EF.
void bench_sample_store(benchmark::State& st, store_op kind) {
  const bool ef = kind == store_op::ef_sample;
  if (!timer().ready) return st.SkipWithError("device setup failed");
  const uint64_t n = uint64_t(1) << env_int("PIPECODEC_BENCH_LOG2N", 28), cols = 4096, rows = n / cols;
  pc::aqsgd_config c;
  if (!pc::ok(pc::parse_spec("quant:bits=4", c.codec))) return st.SkipWithError("spec");
  c.cols = cols;
  c.state_type = pc::dtype::bf16;
  c.capacity = rows;
  std::vector<uint64_t> table(pc::aqsgd_table_bytes(rows) / 8), ids(rows);
  pc::cuda::aqsgd_device_store store;
  if (!pc::ok(pc::init_aqsgd_table(table.data(), table.size() * 8, rows, store.table)))
    return st.SkipWithError("table");
  for (uint64_t r = 0; r < rows; ++r) (void)store.table.insert_new(ids[r] = 7 * r + 1);  // all seen before
  const size_t cap = ef ? pc::ef_sample_payload_bytes(c, rows) : pc::aqsgd_message_bytes(c, rows);
  const size_t wsb = ef ? pc::cuda::ef_sample_workspace_bytes(c, rows) : pc::cuda::aqsgd_workspace_bytes(c, rows);
  dbuf m(n * 2), a(n * 2), msg(cap), ws(wsb), plan(pc::cuda::aqsgd_plan_bytes(rows), true), big(3 * n * 2 + cap);
  if (!m.p || !a.p || !msg.p || !ws.p || !plan.p || !big.p) return st.SkipWithError("allocation failed");
  store.rows = pc::tensor_view{m.p, c.state_type, pc::shape(rows, cols)};
  cudaStream_t str = timer().stream;
  fill(a.p, n, pc::dtype::bf16);
  cudaMemsetAsync(m.p, 0, n * 2, str);
  const pc::const_tensor_view av(a.p, pc::dtype::bf16, pc::shape(rows, cols));
  const size_t plan_bytes = pc::cuda::aqsgd_plan_bytes(rows);
  size_t len = 0;
  auto send = [&] {
    return pc::ok(ef ? pc::cuda::ef_sample_encode(c, store, ids.data(), av, msg.p, cap, plan.p, plan_bytes, ws.p, wsb,
                                                  1, str, &len)
                     : pc::cuda::aqsgd_encode(c, store, ids.data(), av, false, msg.p, cap, plan.p, plan_bytes, ws.p,
                                              wsb, 1, str, &len));
  };
  if (kind != store_op::aqsgd_recv) {
    report(st, send, 3.0 * double(n) * 2 + double(cap), big.p, static_cast<uint8_t*>(big.p) + size_t(3 * n + cap / 2));
    return;
  }
  // The receiver decodes the message again each time (its table already knows every id).
  if (!send()) return st.SkipWithError("encode");
  auto recv = [&] {
    return pc::ok(pc::cuda::aqsgd_decode(c, store, ids.data(), rows, false, msg.p, len, {}, plan.p, plan_bytes, ws.p,
                                         wsb, str));
  };
  report(st, recv, 2.0 * double(n) * 2 + double(cap), big.p, static_cast<uint8_t*>(big.p) + size_t(2 * n + cap / 2));
}

// Pinned store gather (prefetch) and scatter of a batch, against one copy of the same bytes.
void bench_pinned(benchmark::State& st, bool gather, bool shuffled) {
  if (!timer().ready) return st.SkipWithError("device setup failed");
  const uint64_t cols = 4096, rows = 4096, capacity = 2 * rows;
  const size_t row_bytes = cols * 2, bytes = rows * row_bytes;
  std::vector<uint64_t> table(pc::aqsgd_table_bytes(capacity) / 8), ids(rows), slot(rows);
  pc::cuda::aqsgd_device_store s;
  if (!pc::ok(pc::init_aqsgd_table(table.data(), table.size() * 8, capacity, s.table))) return st.SkipWithError("table");
  for (uint64_t i = 0; i < capacity; ++i) (void)s.table.insert_new(i);
  for (uint64_t r = 0; r < rows; ++r) ids[r] = shuffled ? (r * 2654435761u) % capacity : r;
  std::sort(ids.begin(), ids.end());
  if (shuffled) std::reverse(ids.begin(), ids.end());  // descending slots: no two rows in one run
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  const uint64_t nrows = ids.size();
  for (uint64_t r = 0; r < nrows; ++r) slot[r] = s.table.find(ids[r]);
  dbuf host_rows(capacity * row_bytes, true), staging(bytes), dslot(rows * 8);
  if (!host_rows.p || !staging.p || !dslot.p) return st.SkipWithError("allocation failed");
  s.rows = pc::tensor_view{host_rows.p, pc::dtype::bf16, pc::shape(capacity, cols)};
  s.staging = pc::tensor_view{staging.p, pc::dtype::bf16, pc::shape(rows, cols)};
  cudaMemcpy(dslot.p, slot.data(), nrows * 8, cudaMemcpyHostToDevice);
  cudaStream_t str = timer().stream;
  std::function<bool()> op;
  if (gather)
    op = [&] { return pc::ok(pc::cuda::aqsgd_prefetch(s, ids.data(), nrows, str)); };
  else
    op = [&] {
      return pc::ok(pc::cuda::detail::scatter_rows_back(pc::dtype::bf16, staging.p, host_rows.p,
                                                       static_cast<const uint64_t*>(dslot.p), nrows, cols, str, {}));
    };
  const size_t moved = nrows * row_bytes;
  auto copy = [&] {
    return cudaMemcpyAsync(gather ? staging.p : host_rows.p, gather ? host_rows.p : staging.p, moved,
                           gather ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, str) == cudaSuccess;
  };
  float ms = 0, copy_ms = 0;
  for (auto _ : st) {
    if (!median_ms(op, ms) || !median_ms(copy, copy_ms)) return st.SkipWithError("a CUDA call failed");
    st.SetIterationTime(ms / 1e3);
  }
  st.counters["GB/s"] = double(moved) / (ms * 1e6);
  st.counters["copy_GB/s"] = double(moved) / (copy_ms * 1e6);
  st.counters["ratio"] = copy_ms / ms;
  st.counters["bytes"] = double(moved);
}

}  // namespace

int main(int argc, char** argv) {
  for (pc::dtype t : {pc::dtype::f32, pc::dtype::bf16}) {
    const std::string d = pc::to_string(t);
    add("ef/quant4/" + d, bench_ef, scheme::ef, "quant:bits=4", t);
    add("ef21/quant4/" + d, bench_ef, scheme::ef21, "quant:bits=4", t);
    add("ef21_recv/quant4/" + d, bench_ef, scheme::ef21_recv, "quant:bits=4", t);
  }
  add("ef/topk10/row4096/f32", bench_ef, scheme::ef, "topk:ratio=0.1,scope=row", pc::dtype::f32);
  add("aqsgd/quant4/delta/bf16", bench_sample_store, store_op::aqsgd_send);
  add("aqsgd_recv/quant4/delta/bf16", bench_sample_store, store_op::aqsgd_recv);
  add("ef_sample/quant4/bf16", bench_sample_store, store_op::ef_sample);
  for (bool gather : {true, false})
    for (bool shuffled : {false, true})
      add(std::string("pinned/") + (gather ? "gather" : "scatter") + (shuffled ? "/shuffled" : "/contiguous"),
          bench_pinned, gather, shuffled);
  return run(argc, argv, "cuda_state bench");
}

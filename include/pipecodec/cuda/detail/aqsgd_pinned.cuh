// The host-pinned AQ-SGD store's data movement: a batch's rows are gathered from pinned host
// memory into a device staging buffer (batch order) with one cudaMemcpyAsync per run of
// consecutive slots, and written back by a guarded kernel through the pinned memory's device
// mapping (unified addressing), so a rejected message writes nothing back.
#pragma once

#include "aqsgd_kernels.cuh"
#include "aqsgd_plan.cuh"

namespace pipecodec::cuda::detail {

// A 64-bit digest of a batch's ids, to recognise the batch a prefetch staged.
inline uint64_t ids_digest(const uint64_t* ids, uint64_t rows) {
  uint64_t h = mix_id(rows);
  for (uint64_t r = 0; r < rows; ++r) h = mix_id(h ^ ids[r]);
  return h;
}

// Copies the rows r with lo <= slot(r) < hi (samples stored in pinned memory) to
// staging[r]; consecutive rows with consecutive slots travel in one copy.
template <class SlotOf>
inline status gather_rows(const void* host_rows, void* staging, uint64_t row_bytes, SlotOf slot, uint64_t rows,
                          uint64_t lo, uint64_t hi, cudaStream_t stream) {
  const uint8_t* src = static_cast<const uint8_t*>(host_rows);
  uint8_t* dst = static_cast<uint8_t*>(staging);
  for (uint64_t r = 0; r < rows;) {
    const uint64_t s0 = slot(r);
    if (s0 < lo || s0 >= hi) {
      ++r;
      continue;
    }
    uint64_t e = r + 1;
    while (e < rows && slot(e) == s0 + (e - r) && slot(e) < hi) ++e;
    if (cudaMemcpyAsync(dst + r * row_bytes, src + s0 * row_bytes, (e - r) * row_bytes,
                        cudaMemcpyHostToDevice, stream) != cudaSuccess)
      return status::cuda_error;
    r = e;
  }
  return status::success;
}

// Writes staging rows back to their slots unless `guard` fails on the device.
inline status scatter_rows_back(dtype t, const void* staging, void* host_rows, const uint64_t* dev_slot,
                                uint64_t rows, uint64_t cols, cudaStream_t stream, status_guard guard) {
  return for_each(rows * cols, scatter_rows{staging, host_rows, dev_slot, cols, dtype_bytes(t)}, stream, guard);
}

}  // namespace pipecodec::cuda::detail

// Device and pinned memory are host heap blocks (so AddressSanitizer sees their ends), filled
// with the poison byte, and registered so that copies can check their direction and bounds.
// Copies and memsets follow CUDA's host synchronization rules: a copy from pageable memory to
// the device is staged at once and may run later; a copy to pageable memory waits for its
// stream; cudaMemset and a device-to-device cudaMemcpy return before they run.
#include <cstdlib>
#include <cstring>
#include <map>

#include "queue.hpp"

namespace pipecodec_emu::detail {

namespace {

enum class space { pageable, pinned, device };

struct allocation {
  size_t bytes;
  space where;
};

std::map<uintptr_t, allocation>& allocations() {
  static std::map<uintptr_t, allocation> m;
  return m;
}

// Where [p, p + bytes) lives; ok is false when it starts inside an allocation and runs past its end.
space classify(const void* p, size_t bytes, bool& ok) {
  ok = true;
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  auto& m = allocations();
  auto it = m.upper_bound(a);
  if (it == m.begin()) return space::pageable;
  --it;
  if (a >= it->first + it->second.bytes && !(a == it->first && it->second.bytes == 0)) return space::pageable;
  ok = bytes <= it->first + it->second.bytes - a;
  return it->second.where;
}

cudaError_t allocate(void** p, size_t bytes, size_t align, space where) {
  if (p == nullptr) return fail(cudaErrorInvalidValue);
  *p = nullptr;
  if (bytes == 0) return cudaSuccess;
  if (const cudaError_t e = check_not_capturing(); e != cudaSuccess) return e;
  if (posix_memalign(p, align, bytes) != 0) {
    *p = nullptr;
    return fail(cudaErrorMemoryAllocation);
  }
  std::memset(*p, config().poison, bytes);  // contents are undefined on a GPU
  allocations()[reinterpret_cast<uintptr_t>(*p)] = allocation{bytes, where};
  return cudaSuccess;
}

cudaError_t release(void* p, space where) {
  if (p == nullptr) return cudaSuccess;
  if (const cudaError_t e = check_not_capturing(); e != cudaSuccess) return e;
  auto& m = allocations();
  auto it = m.find(reinterpret_cast<uintptr_t>(p));
  if (it == m.end() || it->second.where != where) return fail(cudaErrorInvalidValue);
  wait_all();  // cudaFree and cudaFreeHost synchronize the device
  m.erase(it);
  std::free(p);
  return cudaSuccess;
}

// Checks a copy's bounds and direction; `kind` is resolved when it is cudaMemcpyDefault.
cudaError_t check_copy(void* dst, const void* src, size_t bytes, cudaMemcpyKind& kind, space& ds, space& ss) {
  bool dst_ok = true, src_ok = true;
  ds = classify(dst, bytes, dst_ok);
  ss = classify(src, bytes, src_ok);
  if (!dst_ok || !src_ok || dst == nullptr || src == nullptr) return cudaErrorInvalidValue;
  const bool dd = ds == space::device, sd = ss == space::device;
  const cudaMemcpyKind actual = dd ? (sd ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
                                   : (sd ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
  if (kind != cudaMemcpyDefault && kind != actual) return cudaErrorInvalidValue;
  kind = actual;
  return cudaSuccess;
}

cudaError_t copy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t handle, bool async) {
  std::lock_guard<std::recursive_mutex> lock(api_lock());
  stream* s = resolve(async ? handle : nullptr);
  if (s == nullptr) return fail(cudaErrorInvalidResourceHandle);
  if (bytes == 0) return cudaSuccess;
  space ds, ss;
  if (const cudaError_t e = check_copy(dst, src, bytes, kind, ds, ss); e != cudaSuccess) return fail(e);
  // Pageable host memory: a copy from it is staged now, a copy into it completes before the
  // call returns; a synchronous call waits unless it only reads pageable memory or stays on
  // the device.
  const bool staged = ss == space::pageable;
  const bool waits = ds == space::pageable || (!async && kind != cudaMemcpyDeviceToDevice && !staged);
  if ((staged || waits) && s->capture) {
    s->capture_invalid = true;
    return fail(cudaErrorStreamCaptureUnsupported);
  }
  if (!async || waits)
    if (const cudaError_t e = check_not_capturing(); e != cudaSuccess) return e;
  std::function<void()> body;
  if (staged) {
    auto buf = std::make_shared<std::vector<unsigned char>>(static_cast<const unsigned char*>(src),
                                                           static_cast<const unsigned char*>(src) + bytes);
    body = [dst, buf] { std::memcpy(dst, buf->data(), buf->size()); };
  } else {
    body = [dst, src, bytes] { std::memcpy(dst, src, bytes); };
  }
  op_ptr o;
  if (const cudaError_t e = enqueue(s, async ? "cudaMemcpyAsync" : "cudaMemcpy", std::move(body), &o); e != cudaSuccess)
    return e;
  if (waits) wait_for(o);
  return cudaSuccess;
}

cudaError_t set(void* dst, int value, size_t bytes, cudaStream_t handle, bool async) {
  std::lock_guard<std::recursive_mutex> lock(api_lock());
  stream* s = resolve(async ? handle : nullptr);
  if (s == nullptr) return fail(cudaErrorInvalidResourceHandle);
  if (bytes == 0) return cudaSuccess;
  bool ok = true;
  const space ds = classify(dst, bytes, ok);
  if (!ok || ds == space::pageable) return fail(cudaErrorInvalidValue);
  const bool waits = !async && ds == space::pinned;  // a memset of pinned memory is synchronous
  if (!async || waits)
    if (const cudaError_t e = check_not_capturing(); e != cudaSuccess) return e;
  op_ptr o;
  const cudaError_t e = enqueue(s, async ? "cudaMemsetAsync" : "cudaMemset",
                                [dst, value, bytes] { std::memset(dst, value, bytes); }, &o);
  if (e == cudaSuccess && waits) wait_for(o);
  return e;
}

}  // namespace

std::vector<std::pair<uintptr_t, uintptr_t>> memory_ranges() {
  std::lock_guard<std::recursive_mutex> lock(api_lock());
  std::vector<std::pair<uintptr_t, uintptr_t>> out;
  for (const auto& [start, a] : allocations())
    if (a.where != space::pageable) out.emplace_back(start, start + a.bytes);
  return out;
}

}  // namespace pipecodec_emu::detail

using namespace pipecodec_emu::detail;

cudaError_t cudaMalloc(void** p, size_t bytes) {
  std::lock_guard<std::recursive_mutex> lock(api_lock());
  return allocate(p, bytes, 256, space::device);
}

cudaError_t cudaFree(void* p) {
  std::lock_guard<std::recursive_mutex> lock(api_lock());
  return release(p, space::device);
}

cudaError_t cudaMallocHost(void** p, size_t bytes) {
  std::lock_guard<std::recursive_mutex> lock(api_lock());
  return allocate(p, bytes, 4096, space::pinned);
}

cudaError_t cudaHostAlloc(void** p, size_t bytes, unsigned int) { return cudaMallocHost(p, bytes); }

cudaError_t cudaFreeHost(void* p) {
  std::lock_guard<std::recursive_mutex> lock(api_lock());
  return release(p, space::pinned);
}

// Stream-ordered allocation: the memory is reserved at once and freed when the stream gets there.
cudaError_t cudaMallocAsync(void** p, size_t bytes, cudaStream_t handle) {
  std::lock_guard<std::recursive_mutex> lock(api_lock());
  if (resolve(handle) == nullptr) return fail(cudaErrorInvalidResourceHandle);
  if (p == nullptr) return fail(cudaErrorInvalidValue);
  *p = nullptr;
  if (bytes == 0) return cudaSuccess;
  if (posix_memalign(p, 256, bytes) != 0) return fail(cudaErrorMemoryAllocation);
  std::memset(*p, config().poison, bytes);
  allocations()[reinterpret_cast<uintptr_t>(*p)] = allocation{bytes, space::device};
  return cudaSuccess;
}

cudaError_t cudaFreeAsync(void* p, cudaStream_t handle) {
  std::lock_guard<std::recursive_mutex> lock(api_lock());
  if (p == nullptr) return cudaSuccess;
  auto& m = allocations();
  if (!m.count(reinterpret_cast<uintptr_t>(p))) return fail(cudaErrorInvalidValue);
  return enqueue(resolve(handle), "cudaFreeAsync", [p] {
    allocations().erase(reinterpret_cast<uintptr_t>(p));
    std::free(p);
  });
}

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attr, const void* p) {
  std::lock_guard<std::recursive_mutex> lock(api_lock());
  if (attr == nullptr) return fail(cudaErrorInvalidValue);
  bool ok = true;
  const space where = classify(p, 0, ok);
  attr->type = where == space::device ? 2 : where == space::pinned ? 1 : 0;
  attr->device = 0;
  attr->devicePointer = where == space::pageable ? nullptr : const_cast<void*>(p);
  attr->hostPointer = where == space::device ? nullptr : const_cast<void*>(p);
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  return copy(dst, src, bytes, kind, nullptr, false);
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream) {
  return copy(dst, src, bytes, kind, stream, true);
}

cudaError_t cudaMemset(void* dst, int value, size_t bytes) { return set(dst, value, bytes, nullptr, false); }

cudaError_t cudaMemsetAsync(void* dst, int value, size_t bytes, cudaStream_t stream) {
  return set(dst, value, bytes, stream, true);
}

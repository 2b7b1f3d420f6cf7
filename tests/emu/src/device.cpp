// The emulated device: one sm_90-like GPU with a configurable number of multiprocessors
// (small by default, so that grid-stride loops wrap and multi-block paths run at test
// sizes), the launch limits of a real one, error codes and the last-error slot.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>

#include "queue.hpp"

namespace pipecodec_emu::detail {

namespace {

constexpr int shared_default_limit = 48 << 10;
constexpr int shared_optin_limit = 227 << 10;
constexpr int l2_bytes = 50 << 20;

thread_local cudaError_t tl_last_error = cudaSuccess;

[[noreturn]] void bad_setting(const char* name, const char* value) {
  std::fprintf(stderr, "pipecodec-emu: %s=%s is not a valid setting (docs/CUDA.md)\n", name, value);
  std::exit(2);
}

settings read_settings() {
  settings s;
  s.workers = int(std::min(4u, std::max(1u, std::thread::hardware_concurrency())));
  if (const char* v = std::getenv("PIPECODEC_EMU_SMS")) {
    s.sms = std::atoi(v);
    if (s.sms < 1 || s.sms > 1024) bad_setting("PIPECODEC_EMU_SMS", v);
  }
  if (const char* v = std::getenv("PIPECODEC_EMU_WORKERS")) {
    s.workers = std::atoi(v);
    if (s.workers < 1 || s.workers > 64) bad_setting("PIPECODEC_EMU_WORKERS", v);
  }
  if (const char* v = std::getenv("PIPECODEC_EMU_POISON")) {
    char* end = nullptr;
    const unsigned long b = std::strtoul(v, &end, 0);
    if (end == v || *end != 0 || b > 255) bad_setting("PIPECODEC_EMU_POISON", v);
    s.poison = uint8_t(b);
  }
  s.stats = std::getenv("PIPECODEC_EMU_STATS");
  if (const char* v = std::getenv("PIPECODEC_EMU_RESIDENT_BLOCKS")) {
    s.resident_blocks = std::atoi(v);
    if (s.resident_blocks < 1 || s.resident_blocks > 32) bad_setting("PIPECODEC_EMU_RESIDENT_BLOCKS", v);
  }
  if (const char* v = std::getenv("PIPECODEC_EMU_FTZ")) {
    if (std::strcmp(v, "0") != 0 && std::strcmp(v, "1") != 0) bad_setting("PIPECODEC_EMU_FTZ", v);
    s.ftz = *v == '1';
  }
  if (const char* v = std::getenv("PIPECODEC_EMU_SCHEDULE")) {
    const std::string t(v);
    if (t == "forward") s.schedule = order::forward;
    else if (t == "reverse") s.schedule = order::reverse;
    else if (t.rfind("shuffle", 0) == 0) {
      s.schedule = order::shuffle;
      if (t.size() > 7) {
        if (t[7] != ':') bad_setting("PIPECODEC_EMU_SCHEDULE", v);
        s.seed = std::strtoull(t.c_str() + 8, nullptr, 0);
      }
    } else {
      bad_setting("PIPECODEC_EMU_SCHEDULE", v);
    }
  }
  return s;
}

std::map<const void*, int>& dynamic_shared_limits() {
  static std::map<const void*, int> m;
  return m;
}

struct kernel_count {
  uint64_t launches = 0, blocks = 0, threads = 0;
};

// Written at exit: which kernels the run reached, and how often.
struct launch_stats {
  std::map<std::string, kernel_count> kernels;
  ~launch_stats() {
    if (config().stats == nullptr) return;
    FILE* f = std::fopen(config().stats, "w");
    if (f == nullptr) return;
    for (const auto& [name, c] : kernels)
      std::fprintf(f, "%llu %llu %llu %s\n", static_cast<unsigned long long>(c.launches),
                   static_cast<unsigned long long>(c.blocks), static_cast<unsigned long long>(c.threads), name.c_str());
    std::fclose(f);
  }
};

std::vector<kernel_counter*>& kernel_registry() {
  static std::vector<kernel_counter*> all;  // filled before main, read after
  return all;
}

}  // namespace

kernel_counter::kernel_counter(const char* kernel) : name(kernel) { kernel_registry().push_back(this); }

void count_launch(const kernel_launch& k) {
  if (config().stats == nullptr) return;
  static launch_stats stats;
  kernel_count& c = stats.kernels[k.name];
  const uint64_t blocks = uint64_t(k.grid.x) * k.grid.y * k.grid.z;
  c.launches += 1;
  c.blocks += blocks;
  c.threads += blocks * k.block.x * k.block.y * k.block.z;
}

const settings& config() {
  static const settings s = read_settings();
  return s;
}

cudaError_t fail(cudaError_t e) {
  tl_last_error = e;
  return e;
}

cudaError_t validate_launch(const kernel_launch& k) {
  const dim3 b = k.block, g = k.grid;
  if (b.x == 0 || b.y == 0 || b.z == 0 || b.x > 1024 || b.y > 1024 || b.z > 64 || uint64_t(b.x) * b.y * b.z > 1024)
    return cudaErrorInvalidConfiguration;
  if (g.x == 0 || g.y == 0 || g.z == 0 || g.x > 0x7FFFFFFFu || g.y > 65535 || g.z > 65535)
    return cudaErrorInvalidConfiguration;
  if (k.dynamic_shared > size_t(shared_default_limit)) {
    auto it = dynamic_shared_limits().find(k.entry);
    if (it == dynamic_shared_limits().end() || k.dynamic_shared > size_t(it->second)) return cudaErrorInvalidValue;
  }
  return cudaSuccess;
}

std::string kernel_name_from(const char* pretty) {
  const char* start = std::strstr(pretty, "Kernel = ");
  if (start == nullptr) return pretty;
  start += 9;
  std::string name(start);
  if (!name.empty() && name.back() == ']') name.pop_back();
  return name;
}

}  // namespace pipecodec_emu::detail

std::vector<std::pair<std::string, uint64_t>> pipecodec_emu::kernel_launches() {
  std::vector<std::pair<std::string, uint64_t>> out;
  for (const detail::kernel_counter* k : detail::kernel_registry()) out.emplace_back(k->name, k->launches.load());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::pair<std::string, uint64_t>> pipecodec_emu::take_largest_grids() {
  std::vector<std::pair<std::string, uint64_t>> out;
  for (detail::kernel_counter* k : detail::kernel_registry())
    if (const uint64_t blocks = k->largest_grid.exchange(0))
      out.emplace_back(k->name, blocks);
  std::sort(out.begin(), out.end());
  return out;
}

using namespace pipecodec_emu::detail;

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, const void* kernel, int block_size,
                                                          size_t dynamic_shared) {
  constexpr int sm_threads = 2048, sm_blocks = 32, sm_shared = 228 << 10, reserved_per_block = 1 << 10;
  if (blocks == nullptr || kernel == nullptr || block_size <= 0 || block_size > 1024)
    return fail(cudaErrorInvalidValue);
  if (config().resident_blocks > 0) {
    *blocks = config().resident_blocks;
    return cudaSuccess;
  }
  const int warps = (block_size + 31) / 32;
  const int by_shared = int(sm_shared / (dynamic_shared + reserved_per_block));
  *blocks = std::min({sm_threads / (32 * warps), sm_blocks, by_shared});
  return cudaSuccess;
}

cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return fail(cudaErrorInvalidValue);
  *count = 1;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  if (device == nullptr) return fail(cudaErrorInvalidValue);
  *device = 0;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) { return device == 0 ? cudaSuccess : fail(cudaErrorInvalidDevice); }

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (value == nullptr) return fail(cudaErrorInvalidValue);
  if (device != 0) return fail(cudaErrorInvalidDevice);
  switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock:
    case cudaDevAttrMaxBlockDimX: *value = 1024; break;
    case cudaDevAttrMaxGridDimX: *value = 0x7FFFFFFF; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *value = shared_default_limit; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = shared_optin_limit; break;
    case cudaDevAttrWarpSize: *value = 32; break;
    case cudaDevAttrMultiProcessorCount: *value = config().sms; break;
    case cudaDevAttrComputeCapabilityMajor: *value = 9; break;
    case cudaDevAttrComputeCapabilityMinor: *value = 0; break;
    case cudaDevAttrL2CacheSize: *value = l2_bytes; break;
    default: return fail(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int device) {
  if (p == nullptr) return fail(cudaErrorInvalidValue);
  if (device != 0) return fail(cudaErrorInvalidDevice);
  std::memset(p, 0, sizeof *p);
  std::snprintf(p->name, sizeof p->name, "pipecodec emulated GPU (CPU, %d SMs)", config().sms);
  p->totalGlobalMem = size_t(16) << 30;
  p->sharedMemPerBlock = size_t(shared_default_limit);
  p->sharedMemPerBlockOptin = size_t(shared_optin_limit);
  p->warpSize = 32;
  p->maxThreadsPerBlock = 1024;
  p->maxThreadsDim[0] = p->maxThreadsDim[1] = 1024;
  p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 0x7FFFFFFF;
  p->maxGridSize[1] = p->maxGridSize[2] = 65535;
  p->major = 9;
  p->minor = 0;
  p->multiProcessorCount = config().sms;
  p->l2CacheSize = l2_bytes;
  return cudaSuccess;
}

cudaError_t cudaFuncSetAttribute(const void* kernel, cudaFuncAttribute attr, int value) {
  std::lock_guard<std::recursive_mutex> lock(api_lock());
  if (kernel == nullptr || attr != cudaFuncAttributeMaxDynamicSharedMemorySize || value < 0 ||
      value > shared_optin_limit)
    return fail(cudaErrorInvalidValue);
  dynamic_shared_limits()[kernel] = value;
  return cudaSuccess;
}

cudaError_t cudaGetLastError() {
  const cudaError_t e = tl_last_error;
  tl_last_error = cudaSuccess;
  return e;
}

cudaError_t cudaPeekAtLastError() { return tl_last_error; }

const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInitializationError: return "cudaErrorInitializationError";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    case cudaErrorIllegalAddress: return "cudaErrorIllegalAddress";
    case cudaErrorLaunchOutOfResources: return "cudaErrorLaunchOutOfResources";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
    case cudaErrorNotSupported: return "cudaErrorNotSupported";
    case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated: return "cudaErrorStreamCaptureInvalidated";
    case cudaErrorStreamCaptureImplicit: return "cudaErrorStreamCaptureImplicit";
    case cudaErrorStreamCaptureWrongThread: return "cudaErrorStreamCaptureWrongThread";
    case cudaErrorUnknown: return "cudaErrorUnknown";
  }
  return "unrecognized error code";
}

const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture";
    case cudaErrorStreamCaptureImplicit: return "operation would make the legacy stream depend on a capturing blocking stream";
    default: return cudaGetErrorName(e);
  }
}

// Kernel launches and shared memory of the emulated build. launch<Kernel>() copies the
// arguments into the kernel's parameter types (as a launch does) and enqueues the grid on the
// stream; shared(site) hands each block its own storage for a PIPECODEC_SHARED declaration.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "types.hpp"

namespace pipecodec_emu {
namespace detail {

struct kernel_launch {
  const char* name = nullptr;     // the kernel, as the compiler spells its instantiation
  const void* entry = nullptr;    // its address (cudaFuncSetAttribute's key)
  dim3 grid, block;
  size_t dynamic_shared = 0;
  void (*body)(const void* params) = nullptr;  // runs the kernel in the calling emulated thread
  std::shared_ptr<const void> params;
};

// Checks the configuration (cudaGetLastError reports a bad one) and enqueues the grid.
void submit(cudaStream_t stream, kernel_launch&& k);

// "[with auto K = ns::kernel<256>]" -> "ns::kernel<256>".
std::string kernel_name_from(const char* pretty);

template <auto Kernel>
const char* kernel_name() {
  static const std::string name = kernel_name_from(__PRETTY_FUNCTION__);
  return name.c_str();
}

// Every kernel instantiation the program contains (launch<K> names it) registers itself
// before main; launch() counts its launches. kernel_launches() lists them all.
struct kernel_counter {
  const char* name;
  std::atomic<uint64_t> launches{0};
  std::atomic<uint64_t> largest_grid{0};  // blocks, since take_largest_grids
  explicit kernel_counter(const char* kernel);  // registers (src/device.cpp)
};
template <auto Kernel>
inline kernel_counter kernel_launch_counter{kernel_name<Kernel>()};

template <class F>
struct kernel_params;
template <class... P>
struct kernel_params<void (*)(P...)> {
  using tuple = std::tuple<std::decay_t<P>...>;
};

template <auto Kernel, class Tuple>
void invoke(const void* params) {
  std::apply(Kernel, *static_cast<const Tuple*>(params));
}

// One PIPECODEC_SHARED declaration (per kernel instantiation: a static of the macro's lambda).
struct shared_site {
  const char* name;
  const char* file;
  int line;
  size_t bytes, align;
};
void* block_shared(const shared_site& site);

}  // namespace detail

template <auto Kernel, class... Args>
void launch(dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t stream, const Args&... args) {
  using tuple = typename detail::kernel_params<decltype(Kernel)>::tuple;
  static_assert(std::tuple_size_v<tuple> == sizeof...(Args), "wrong number of kernel arguments");
  detail::kernel_launch k;
  k.name = detail::kernel_name<Kernel>();
  k.entry = reinterpret_cast<const void*>(Kernel);
  k.grid = grid;
  k.block = block;
  k.dynamic_shared = shared_bytes;
  k.body = &detail::invoke<Kernel, tuple>;
  k.params = std::make_shared<const tuple>(args...);
  detail::kernel_launch_counter<Kernel>.launches.fetch_add(1, std::memory_order_relaxed);
  const uint64_t blocks = uint64_t(grid.x) * grid.y * grid.z;
  std::atomic<uint64_t>& largest = detail::kernel_launch_counter<Kernel>.largest_grid;
  for (uint64_t seen = largest.load(); blocks > seen && !largest.compare_exchange_weak(seen, blocks);) {
  }
  // GCC 12 does not instantiate a kernel template named only as a template argument inside
  // another template (launch<kernel<block_threads>> in a function template): a call it
  // cannot prove dead makes it odr-used.
  if (k.body == nullptr) Kernel(args...);
  detail::submit(stream, std::move(k));
}

}  // namespace pipecodec_emu

#define PIPECODEC_EMU_SHARED(T, name)                                                                  \
  (*static_cast<T*>(::pipecodec_emu::detail::block_shared(                                           \
      []() -> const ::pipecodec_emu::detail::shared_site& {                                            \
        static const ::pipecodec_emu::detail::shared_site site{#name, __FILE__, __LINE__, sizeof(T), alignof(T)}; \
        return site;                                                                                 \
      }())))

namespace pipecodec_emu {
inline void* dynamic_shared() { return detail::dynamic_shared(); }

// Each kernel instantiation of the program, as the compiler spells it, with its launches so
// far (a graph's kernels count once, when captured), sorted by name.
std::vector<std::pair<std::string, uint64_t>> kernel_launches();
// The most blocks a launch of each kernel instantiation had since the last call (kernels not
// launched since then are left out), sorted by name; and starts again.
std::vector<std::pair<std::string, uint64_t>> take_largest_grids();

// Memory traffic of each kernel that ran while counting was on (src/traffic.cpp), in device and
// pinned memory: the 32-byte sectors it read and wrote, each once per launch (what DRAM moves
// when L2 keeps what a grid touched), the bytes its lanes asked for, and its requests (a
// warp-level load or store) with the distinct sectors each touched and the fewest its
// distinct bytes need; watched_read: the bytes of bytes_read inside the range count_traffic
// watches (an input, to count how often a kernel reads it). Counted only where clang compiled
// the kernels with -fsanitize-coverage=trace-loads,trace-stores (tools/kernel-traffic);
// elsewhere nothing is.
struct kernel_traffic {
  std::string name;
  uint64_t launches = 0, bytes_read = 0, bytes_written = 0, watched_read = 0, lane_bytes = 0;
  uint64_t requests = 0, request_sectors = 0, ideal_sectors = 0;
};
void count_traffic(bool on, const void* watch = nullptr, size_t watch_bytes = 0);
std::vector<kernel_traffic> take_traffic();  // and starts the totals again
}  // namespace pipecodec_emu

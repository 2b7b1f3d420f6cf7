// What every CUDA binding call does first: find the one device its arrays live on and run
// there (the framework's current device may be another), on the stream the caller gave.
#pragma once

#include <cuda_runtime.h>

#include <string>
#include <tuple>

#include "arrays.hpp"

namespace pcpy {

class device_guard {
 public:
  explicit device_guard(int device) {
    if (cudaGetDevice(&previous_) != cudaSuccess || cudaSetDevice(device) != cudaSuccess)
      raise(pc::status::cuda_error, "cudaSetDevice");
  }
  ~device_guard() { cudaSetDevice(previous_); }
  device_guard(const device_guard&) = delete;
  device_guard& operator=(const device_guard&) = delete;

 private:
  int previous_ = 0;
};

template <class... A>
int device_of(const char* call, const A&... arrays) {
  if (common_place(call, arrays...) != place::cuda)
    throw nb::value_error((std::string(call) + ": expected CUDA arrays").c_str());
  const int id = std::get<0>(std::forward_as_tuple(arrays...)).device_id();
  if (((arrays.device_id() != id) || ...))
    throw nb::value_error((std::string(call) + ": all arrays must be on the same device").c_str());
  return id;
}

inline cudaStream_t stream_of(uintptr_t s) { return reinterpret_cast<cudaStream_t>(s); }

}  // namespace pcpy

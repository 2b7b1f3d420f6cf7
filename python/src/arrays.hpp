// What the binding needs from a DLPack array: its dtype, shape and memory as a pipecodec
// view, checked first. Any framework's array arrives as nb::ndarray (NumPy, PyTorch, CuPy,
// JAX, ... through DLPack or the buffer protocol); the codec then reads and writes that
// memory in place, so every array must be C-contiguous: a strided one is refused with a
// clear error rather than copied behind the caller's back (an output copy would be lost).
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <string>

#include "pipecodec/pipecodec.hpp"

namespace pcpy {

namespace nb = nanobind;
namespace pc = pipecodec;

using in_array = nb::ndarray<nb::ro>;  // read by the codec (read-only arrays accepted)
using out_array = nb::ndarray<>;       // written by the codec (must be writable)

// A failed pipecodec call; the module turns it into pipecodec.CodecError(message, status).
struct codec_error {
  pc::status st;
  std::string message;
};

[[noreturn]] inline void raise(pc::status st, const std::string& call) {
  throw codec_error{st, call + ": " + pc::to_string(st)};
}
inline void check(pc::status st, const char* call) {
  if (!pc::ok(st)) raise(st, call);
}

// Runs a codec call with the GIL released (it touches no Python object) and raises
// CodecError when it fails.
template <class F>
void run_unlocked(const char* call, F&& f) {
  pc::status st;
  {
    nb::gil_scoped_release unlocked;
    st = f();
  }
  check(st, call);
}

// Where the arrays of one call live: host memory, or (CUDA builds) one CUDA device.
enum class place { host, cuda };

template <class A>
place place_of(const A& a, const char* name) {
  const int dev = a.device_type();
  if (dev == nb::device::cpu::value) return place::host;
  if (dev == nb::device::cuda::value) return place::cuda;
  throw nb::value_error((std::string(name) + ": arrays on this device type are not supported").c_str());
}

template <class A>
void require_contiguous(const A& a, const char* name) {
  if (a.size() == 0) return;  // no element is addressed: any strides will do
  int64_t expect = 1;
  for (size_t i = a.ndim(); i-- > 0;) {
    if (a.shape(i) != 1 && a.stride(i) != expect)
      throw nb::value_error((std::string(name) + " must be C-contiguous (the codec works in place; pass "
                                                 "np.ascontiguousarray(a) or t.contiguous())")
                                .c_str());
    expect *= int64_t(a.shape(i));
  }
}

template <class A>
pc::dtype tensor_dtype(const A& a, const char* name) {
  const nb::dlpack::dtype t = a.dtype();
  if (t.lanes == 1 && t.bits == 32 && t.code == uint8_t(nb::dlpack::dtype_code::Float)) return pc::dtype::f32;
  if (t.lanes == 1 && t.bits == 16 && t.code == uint8_t(nb::dlpack::dtype_code::Float)) return pc::dtype::f16;
  if (t.lanes == 1 && t.bits == 16 && t.code == uint8_t(nb::dlpack::dtype_code::Bfloat)) return pc::dtype::bf16;
  throw nb::type_error((std::string(name) + " must be float32, float16 or bfloat16").c_str());
}

// 1-D: n elements; N-D: rows = the product of the leading dimensions, cols = the last one
// (a (batch, seq, hidden) activation is batch*seq rows of hidden features). dim(i): size i.
template <class Dim>
pc::shape rows_by_last(size_t ndim, Dim dim, const char* name) {
  if (ndim == 0) throw nb::value_error((std::string(name) + " must have at least one dimension").c_str());
  if (ndim == 1) return pc::shape(dim(0));
  uint64_t rows = 1;
  for (size_t i = 0; i + 1 < ndim; ++i) rows *= dim(i);
  return pc::shape(rows, dim(ndim - 1));
}

template <class A>
pc::shape tensor_shape(const A& a, const char* name) {
  return rows_by_last(
      a.ndim(), [&](size_t i) { return uint64_t(a.shape(i)); }, name);
}

inline pc::const_tensor_view input_view(const in_array& a, const char* name) {
  require_contiguous(a, name);
  return pc::const_tensor_view{a.data(), tensor_dtype(a, name), tensor_shape(a, name)};
}

inline pc::tensor_view output_view(const out_array& a, const char* name) {
  require_contiguous(a, name);
  return pc::tensor_view{a.data(), tensor_dtype(a, name), tensor_shape(a, name)};
}

// A byte buffer (payload, mask, workspace): contiguous, one byte per element.
template <class A>
void require_bytes(const A& a, const char* name) {
  const nb::dlpack::dtype t = a.dtype();
  if (t.bits != 8 || t.lanes != 1 || t.code != uint8_t(nb::dlpack::dtype_code::UInt))
    throw nb::type_error((std::string(name) + " must be a uint8 array").c_str());
  require_contiguous(a, name);
}

struct bytes_in {
  const void* data;
  size_t size;
};
inline bytes_in input_bytes(const in_array& a, const char* name) {
  require_bytes(a, name);
  return {a.data(), a.size()};
}

struct bytes_out {
  void* data;
  size_t size;
};
inline bytes_out output_bytes(const out_array& a, const char* name) {
  require_bytes(a, name);
  return {a.data(), a.size()};
}

// Sample ids: one per row, uint64 or int64 (PyTorch's index dtype; read as the same bits).
inline const uint64_t* sample_ids(const in_array& a, uint64_t rows) {
  const nb::dlpack::dtype t = a.dtype();
  const bool int64 =
      t.bits == 64 && t.lanes == 1 &&
      (t.code == uint8_t(nb::dlpack::dtype_code::UInt) || t.code == uint8_t(nb::dlpack::dtype_code::Int));
  if (!int64) throw nb::type_error("sample_ids must be a uint64 or int64 array");
  require_contiguous(a, "sample_ids");
  if (a.size() != rows) throw nb::value_error("sample_ids must hold one id per row");
  return static_cast<const uint64_t*>(a.data());
}

// The same device for every array of a call.
template <class... A>
place common_place(const char* call, const A&... arrays) {
  const place first = place_of(std::get<0>(std::forward_as_tuple(arrays...)), call);
  if (((place_of(arrays, call) != first) || ...))
    throw nb::value_error((std::string(call) + ": all arrays must be on the same device").c_str());
  return first;
}

// The host backend's calls take host arrays. Device arrays go to the CUDA backend's
// stateless calls in a CUDA build (cuda_py.cu); the stateful objects are host-only.
template <class... A>
void require_host(const char* call, const A&... arrays) {
  if (common_place(call, arrays...) != place::host)
    throw nb::value_error((std::string(call) +
                           ": host arrays only here (device arrays: the stateless calls of a build with "
                           "the CUDA backend, pip install . -Csetup-args=-Dcuda=enabled)")
                              .c_str());
}

pc::dtype parse_dtype(const std::string& s);
const char* dtype_name(pc::dtype t);

}  // namespace pcpy

// Test builds only (-Dpython_cuda_emulated=true, tools/test-python): device memory of the
// emulated GPU (tests/emu) handed to Python as DLPack capsules of device type CUDA, so that
// python/tests/test_cuda_emulated.py drives the CUDA binding (cuda_py.cu,
// cuda_endpoint_py.cu, compiled by the host compiler against the emulator) without a GPU
// or a CUDA framework. Never part of a wheel anyone installs.
#include <cuda_runtime.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <string>
#include <vector>

#include "bindings.hpp"

namespace pcpy {
namespace {

// DLPack's ABI (dlpack.h, version 0.x "dltensor" capsules), as every framework reads it.
struct dl_device {
  int32_t type, id;
};
struct dl_dtype {
  uint8_t code, bits;
  uint16_t lanes;
};
struct dl_tensor {
  void* data;
  dl_device device;
  int32_t ndim;
  dl_dtype dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
};
struct dl_managed {
  dl_tensor t;
  void* ctx;
  void (*deleter)(dl_managed*);
};

// Keeps the Python owner of the memory alive while a consumer holds the tensor.
struct capsule_ctx {
  std::vector<int64_t> shape;
  PyObject* owner;
};

dl_dtype dtype_of(const std::string& name) {
  if (name == "float32") return {2, 32, 1};
  if (name == "float16") return {2, 16, 1};
  if (name == "bfloat16") return {4, 16, 1};
  if (name == "uint8") return {1, 8, 1};
  if (name == "int64") return {0, 64, 1};
  throw nb::value_error(("emu_dlpack: unsupported dtype " + name).c_str());
}

void delete_managed(dl_managed* m) {
  auto* ctx = static_cast<capsule_ctx*>(m->ctx);
  {
    PyGILState_STATE gil = PyGILState_Ensure();  // consumers may release it from any thread
    Py_DECREF(ctx->owner);
    PyGILState_Release(gil);
  }
  delete ctx;
  delete m;
}

void delete_unused_capsule(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, "dltensor"))  // never consumed: still ours
    delete_managed(static_cast<dl_managed*>(PyCapsule_GetPointer(capsule, "dltensor")));
}

nb::object emu_dlpack(uintptr_t ptr, const std::vector<int64_t>& shape, const std::string& dtype, nb::handle owner) {
  auto* ctx = new capsule_ctx{shape, owner.ptr()};
  Py_INCREF(ctx->owner);
  auto* m = new dl_managed{};
  m->t.data = reinterpret_cast<void*>(ptr);
  m->t.device = {2, 0};  // kDLCUDA, device 0
  m->t.ndim = int32_t(shape.size());
  m->t.dtype = dtype_of(dtype);
  m->t.shape = ctx->shape.data();
  m->ctx = ctx;
  m->deleter = delete_managed;
  return nb::steal(PyCapsule_New(m, "dltensor", delete_unused_capsule));
}

uintptr_t emu_malloc(size_t bytes) {
  void* p = nullptr;
  if (cudaMalloc(&p, bytes ? bytes : 1) != cudaSuccess) raise(pc::status::cuda_error, "emu_malloc");
  return reinterpret_cast<uintptr_t>(p);
}

void emu_free(uintptr_t ptr) { (void)cudaFree(reinterpret_cast<void*>(ptr)); }

void emu_write(uintptr_t ptr, nb::bytes data) {
  if (cudaMemcpy(reinterpret_cast<void*>(ptr), data.c_str(), data.size(), cudaMemcpyHostToDevice) != cudaSuccess)
    raise(pc::status::cuda_error, "emu_write");
}

nb::bytes emu_read(uintptr_t ptr, size_t bytes) {
  std::string host(bytes, '\0');
  if (cudaMemcpy(host.data(), reinterpret_cast<const void*>(ptr), bytes, cudaMemcpyDeviceToHost) != cudaSuccess)
    raise(pc::status::cuda_error, "emu_read");
  return nb::bytes(host.data(), host.size());
}

}  // namespace

void bind_emulated_device(nb::module_& m) {
  m.attr("emulated") = true;
  m.def("emu_malloc", &emu_malloc);
  m.def("emu_free", &emu_free);
  m.def("emu_write", &emu_write);
  m.def("emu_read", &emu_read);
  m.def("emu_dlpack", &emu_dlpack, nb::arg("ptr"), nb::arg("shape"), nb::arg("dtype"), nb::arg("owner"));
}

}  // namespace pcpy

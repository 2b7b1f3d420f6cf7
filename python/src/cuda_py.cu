// The CUDA backend for device arrays (PyTorch CUDA tensors, CuPy arrays), built when the
// package is built with -Dcuda=enabled. Every call enqueues on the caller's stream (the Python
// layer passes the framework's current stream) and adds no synchronization. Decoding is
// validated on the device: a rejected payload leaves `out` untouched, and the verdict waits in
// the workspace's status word until cuda_status() (which synchronizes) reads it.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <optional>

#include "bindings.hpp"
#include "cuda_device.cuh"
#include "pipecodec/cuda/codec.cuh"

namespace pcpy {
namespace {

namespace cuda = pc::cuda;

size_t cuda_encode_into(const pc::spec& s, const in_array& x, const out_array& out, const out_array& workspace,
                        uint64_t seed, uintptr_t stream, const std::optional<in_array>& ids) {
  device_guard on(ids ? device_of("encode", x, out, workspace, *ids) : device_of("encode", x, out, workspace));
  const pc::const_tensor_view in = input_view(x, "x");
  const bytes_out dst = output_bytes(out, "out");
  const bytes_out ws = output_bytes(workspace, "workspace");
  const pc::randomness rnd(seed, ids ? sample_ids(*ids, in.shp.rows) : nullptr);
  size_t written = 0;
  run_unlocked("encode", [&] {
    return cuda::encode(s, in, dst.data, dst.size, ws.data, ws.size, rnd, stream_of(stream), &written);
  });
  return written;
}

size_t cuda_encode_shared_into(const pc::spec& s, const in_array& x, const in_array& mask, const out_array& out,
                               const out_array& workspace, uint64_t seed, uintptr_t stream) {
  device_guard on(device_of("encode_shared", x, mask, out, workspace));
  const pc::const_tensor_view in = input_view(x, "x");
  const bytes_in m = input_bytes(mask, "mask");
  const bytes_out dst = output_bytes(out, "out");
  const bytes_out ws = output_bytes(workspace, "workspace");
  size_t written = 0;
  run_unlocked("encode_shared", [&] {
    return cuda::encode_shared(s, in, m.data, m.size, dst.data, dst.size, ws.data, ws.size, seed, stream_of(stream),
                               &written);
  });
  return written;
}

// The device cannot tell the host which codec a payload holds without a synchronization, so
// the caller names the spec it configured (cuda/codec.cuh).
void cuda_decode_into(const pc::spec& s, const in_array& payload, const out_array& out, const out_array& workspace,
                      bool accumulate, uintptr_t stream) {
  const char* call = accumulate ? "decode_accumulate" : "decode";
  device_guard on(device_of(call, payload, out, workspace));
  const bytes_in p = input_bytes(payload, "payload");
  const pc::tensor_view o = output_view(out, "out");
  const bytes_out ws = output_bytes(workspace, "workspace");
  const bool sparse = s.codec == pc::codec_id::topk || s.codec == pc::codec_id::randk;
  run_unlocked(call, [&] {
    const cudaStream_t q = stream_of(stream);
    if (sparse)
      return accumulate ? cuda::decode_topk_accumulate(p.data, p.size, o, ws.data, ws.size, q, s.codec)
                        : cuda::decode_topk(p.data, p.size, o, ws.data, ws.size, q, s.codec);
    else
      return accumulate ? cuda::decode_accumulate(p.data, p.size, o, ws.data, ws.size, q)
                        : cuda::decode(p.data, p.size, o, ws.data, ws.size, q);
  });
}

void cuda_decode_shared_into(const in_array& values, const in_array& mask, const out_array& out,
                             const out_array& workspace, bool accumulate, uintptr_t stream) {
  const char* call = accumulate ? "decode_shared_accumulate" : "decode_shared";
  device_guard on(device_of(call, values, mask, out, workspace));
  const bytes_in v = input_bytes(values, "payload");
  const bytes_in m = input_bytes(mask, "mask");
  const pc::tensor_view o = output_view(out, "out");
  const bytes_out ws = output_bytes(workspace, "workspace");
  run_unlocked(call, [&] {
    const cudaStream_t q = stream_of(stream);
    return accumulate ? cuda::decode_shared_accumulate(v.data, v.size, m.data, m.size, o, ws.data, ws.size, q)
                      : cuda::decode_shared(v.data, v.size, m.data, m.size, o, ws.data, ws.size, q);
  });
}

// Waits for `stream`, then names the verdict of the last device validation on `workspace`
// ("success", "corrupt_payload", ...).
std::string cuda_status(const out_array& workspace, uintptr_t stream) {
  device_guard on(device_of("cuda_status", workspace));
  const bytes_out ws = output_bytes(workspace, "workspace");
  pc::status verdict = pc::status::success;
  run_unlocked("cuda_status", [&] {
    const pc::status st = cuda::read_status(ws.data, &verdict, stream_of(stream));
    if (pc::ok(st) && cudaStreamSynchronize(stream_of(stream)) != cudaSuccess) return pc::status::cuda_error;
    return st;
  });
  return pc::status_name(verdict);
}

}  // namespace

void bind_cuda(nb::module_& m) {
  m.def("cuda_encode_into", &cuda_encode_into, nb::arg("spec"), nb::arg("x"), nb::arg("out"), nb::arg("workspace"),
        nb::arg("seed"), nb::arg("stream"), nb::arg("sample_ids") = nb::none());
  m.def("cuda_encode_shared_into", &cuda_encode_shared_into, nb::arg("spec"), nb::arg("x"), nb::arg("mask"),
        nb::arg("out"), nb::arg("workspace"), nb::arg("seed"), nb::arg("stream"));
  m.def("cuda_decode_into", &cuda_decode_into, nb::arg("spec"), nb::arg("payload"), nb::arg("out"),
        nb::arg("workspace"), nb::arg("accumulate"), nb::arg("stream"));
  m.def("cuda_decode_shared_into", &cuda_decode_shared_into, nb::arg("payload"), nb::arg("mask"), nb::arg("out"),
        nb::arg("workspace"), nb::arg("accumulate"), nb::arg("stream"));
  m.def("cuda_status", &cuda_status, nb::arg("workspace"), nb::arg("stream"));
}

}  // namespace pcpy

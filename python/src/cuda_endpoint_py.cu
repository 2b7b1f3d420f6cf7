// The CUDA endpoints (policy/cuda_endpoint.cuh) for device tensors: CudaSender / CudaReceiver,
// built with the CUDA backend. Payloads, tensors and masks are device memory on one device;
// sample ids stay in host memory (the per-sample stores plan each batch on the host). A
// receiver's verdict on its last payload (and an AQ-SGD receiver's commit of that batch)
// waits for last_status(), which synchronizes that call's stream.
#include "cuda_device.cuh"
#include "endpoint_args.hpp"
#include "pipecodec/policy/cuda_endpoint.cuh"

namespace pcpy {
namespace {

namespace cuda = pc::cuda;

void require_host_ids(const std::optional<in_array>& ids) {
  if (ids && place_of(*ids, "sample_ids") != place::host)
    throw nb::value_error("sample_ids must be in host memory (a CPU tensor or a NumPy array)");
}

size_t sender_encode(cuda::sender_endpoint& e, const in_array& x, const out_array& out, uint64_t step, uint64_t epoch,
                     bool training, const std::optional<in_array>& ids, uint64_t seed,
                     const std::optional<in_array>& mask, uintptr_t stream) {
  device_guard on(mask ? device_of("encode", x, out, *mask) : device_of("encode", x, out));
  require_host_ids(ids);
  const pc::const_tensor_view in = input_view(x, "x");
  const bytes_out dst = output_bytes(out, "out");
  const step_args a(step, epoch, training, seed, ids, in.shp.rows, mask);
  size_t written = 0;
  run_unlocked("encode", [&] { return e.encode(in, a.at, dst.data, dst.size, stream_of(stream), &written, a.mask); });
  return written;
}

void receiver_decode(cuda::receiver_endpoint& e, const in_array& payload, const out_array& out, uint64_t step,
                     uint64_t epoch, bool training, const std::optional<in_array>& ids, uint64_t seed,
                     const std::optional<in_array>& mask, uintptr_t stream) {
  device_guard on(mask ? device_of("decode", payload, out, *mask) : device_of("decode", payload, out));
  require_host_ids(ids);
  const bytes_in p = input_bytes(payload, "payload");
  const pc::tensor_view o = output_view(out, "out");
  const step_args a(step, epoch, training, seed, ids, o.shp.rows, mask);
  run_unlocked("decode", [&] { return e.decode(p.data, p.size, o, a.at, stream_of(stream), a.mask); });
}

std::string last_status(cuda::receiver_endpoint& e) {
  pc::status st;
  {
    nb::gil_scoped_release unlocked;
    st = e.last_status();
  }
  return pc::status_name(st);
}

}  // namespace

void bind_cuda_endpoints(nb::module_& m) {
  auto tx = nb::class_<cuda::sender_endpoint>(m, "CudaSender");
  endpoint_common<cuda::sender_endpoint, cuda::endpoint_options>(tx);
  tx.def("encode_into", &sender_encode, nb::arg("x"), nb::arg("out"), nb::arg("step"), nb::arg("epoch"),
         nb::arg("training"), nb::arg("sample_ids").none(), nb::arg("seed"), nb::arg("mask").none(), nb::arg("stream"));

  auto rx = nb::class_<cuda::receiver_endpoint>(m, "CudaReceiver");
  endpoint_common<cuda::receiver_endpoint, cuda::endpoint_options>(rx);
  rx.def("decode_into", &receiver_decode, nb::arg("payload"), nb::arg("out"), nb::arg("step"), nb::arg("epoch"),
         nb::arg("training"), nb::arg("sample_ids").none(), nb::arg("seed"), nb::arg("mask").none(), nb::arg("stream"))
      .def("last_status", &last_status);
}

}  // namespace pcpy

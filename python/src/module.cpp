// pipecodec._core: the compiled half of the Python package (pipecodec/__init__.py is the
// other). A failed codec call raises pipecodec.CodecError, a ValueError whose `status` is the
// status's name ("bad_magic", "corrupt_payload", ...); argument errors raise TypeError or
// ValueError before any codec runs.
#include <nanobind/stl/string.h>

#include "bindings.hpp"

namespace pcpy {

pc::dtype parse_dtype(const std::string& s) {
  if (s == "f32" || s == "fp32" || s == "float32") return pc::dtype::f32;
  if (s == "f16" || s == "fp16" || s == "float16") return pc::dtype::f16;
  if (s == "bf16" || s == "bfloat16") return pc::dtype::bf16;
  throw nb::value_error(("unknown dtype '" + s + "' (float32, float16 or bfloat16)").c_str());
}

const char* dtype_name(pc::dtype t) {
  switch (t) {
    case pc::dtype::f32:
      return "float32";
    case pc::dtype::f16:
      return "float16";
    case pc::dtype::bf16:
      return "bfloat16";
  }
  return "unknown";
}

nb::ndarray<nb::numpy> state_view(pc::tensor_view v) {
  const bool bf16 = v.type == pc::dtype::bf16;
  const nb::dlpack::dtype t{uint8_t(bf16 ? nb::dlpack::dtype_code::UInt : nb::dlpack::dtype_code::Float),
                            uint8_t(8 * pc::dtype_bytes(v.type)), 1};
  const size_t dims[2] = {size_t(v.shp.rows), size_t(v.shp.cols)};
  const bool flat = v.shp.ndim == 1;
  return nb::ndarray<nb::numpy>(v.data, flat ? 1 : 2, flat ? dims + 1 : dims, nb::handle(), nullptr, t);
}

}  // namespace pcpy

NB_MODULE(_core, m) {
  using namespace pcpy;
  m.doc() = "pipecodec's compiled codecs (use the pipecodec package, not this module)";
  static nb::object codec_error_type = nb::steal(PyErr_NewExceptionWithDoc(
      "pipecodec.CodecError", "A pipecodec call failed; `status` names why (e.g. 'corrupt_payload').", PyExc_ValueError,
      nullptr));
  m.attr("CodecError") = codec_error_type;
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const codec_error& e) {
      nb::object err = codec_error_type(nb::str(e.message.c_str()));
      nb::setattr(err, "status", nb::str(pc::status_name(e.st)));
      PyErr_SetObject(codec_error_type.ptr(), err.ptr());
    }
  });
  bind_codecs(m);
  bind_states(m);
  bind_endpoints(m);
#ifdef PIPECODEC_PY_CUDA
  bind_cuda(m);
  bind_cuda_endpoints(m);
  m.attr("has_cuda") = true;
#else
  m.attr("has_cuda") = false;
#endif
#ifdef PIPECODEC_PY_EMULATED
  bind_emulated_device(m);
#endif
}

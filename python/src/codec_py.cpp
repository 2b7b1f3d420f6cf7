// Stateless codecs: Spec, sizes, encode / decode (plain and accumulating), shared-mask TopK,
// and info(). Each call checks its arrays, then runs the host backend with the GIL released.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <vector>

#include "arrays.hpp"
#include "bindings.hpp"

namespace pcpy {

pc::spec parse_spec_text(const std::string& text) {
  pc::spec s;
  std::string error;
  if (!pc::ok(pc::parse_spec(text, s, &error)))
    throw nb::value_error(("invalid spec '" + text + "': " + error).c_str());
  return s;
}

namespace {

pc::shape shape_of(const std::vector<uint64_t>& dims) {
  return rows_by_last(
      dims.size(), [&](size_t i) { return dims[i]; }, "shape");
}

size_t encoded_bytes_of(const pc::spec& s, const pc::shape& shp) {
  const size_t n = pc::encoded_bytes(s, shp);
  if (n == 0) raise(pc::status::invalid_shape, "encoded_bytes (shape does not fit the spec)");
  return n;
}

// A workspace for one call: the caller's, or one allocated for it when none was given.
struct call_workspace {
  std::vector<uint8_t> own;
  void* data = nullptr;
  size_t size = 0;

  call_workspace(const std::optional<out_array>& given, size_t needed) {
    if (given) {
      const bytes_out b = output_bytes(*given, "workspace");
      data = b.data;
      size = b.size;
    } else if (needed > 0) {
      own.resize(needed);
      data = own.data();
      size = needed;
    }
  }
};

size_t encode_into(const pc::spec& s, const in_array& x, const out_array& out, uint64_t seed,
                   const std::optional<out_array>& workspace, const std::optional<in_array>& ids) {
  require_host("encode", x, out);
  if (ids) require_host("encode", *ids);
  const pc::const_tensor_view in = input_view(x, "x");
  const bytes_out dst = output_bytes(out, "out");
  call_workspace ws(workspace, pc::host::encode_workspace_bytes(s, in.shp));
  const pc::randomness rnd(seed, ids ? sample_ids(*ids, in.shp.rows) : nullptr);
  size_t written = 0;
  run_unlocked("encode", [&] { return pc::host::encode(s, in, dst.data, dst.size, ws.data, ws.size, rnd, &written); });
  return written;
}

size_t encode_shared_into(const pc::spec& s, const in_array& x, const in_array& mask, const out_array& out,
                          uint64_t seed, const std::optional<out_array>& workspace) {
  require_host("encode_shared", x, mask, out);
  const pc::const_tensor_view in = input_view(x, "x");
  const bytes_in m = input_bytes(mask, "mask");
  const bytes_out dst = output_bytes(out, "out");
  call_workspace ws(workspace, pc::host::encode_workspace_bytes(s, in.shp));
  size_t written = 0;
  run_unlocked("encode_shared", [&] {
    return pc::host::encode_shared(s, in, m.data, m.size, dst.data, dst.size, ws.data, ws.size, seed, &written);
  });
  return written;
}

// A RandK decode re-selects the positions; a workspace makes it faster (host/codec.hpp), so
// one is made for a RandK payload when the caller gave none.
size_t decode_workspace_bytes(const bytes_in& p) {
  pc::payload_info info;
  if (!pc::ok(pc::inspect(p.data, p.size, info)) || info.codec_spec.codec != pc::codec_id::randk) return 0;
  return pc::workspace_bytes(info.codec_spec, info.hdr.shp);
}

void decode_into(const in_array& payload, const out_array& out, bool accumulate,
                 const std::optional<out_array>& workspace) {
  const char* call = accumulate ? "decode_accumulate" : "decode";
  require_host(call, payload, out);
  const bytes_in p = input_bytes(payload, "payload");
  const pc::tensor_view o = output_view(out, "out");
  call_workspace ws(workspace, workspace ? 0 : decode_workspace_bytes(p));
  run_unlocked(call, [&] {
    return accumulate ? pc::host::decode_accumulate(p.data, p.size, o, ws.data, ws.size)
                      : pc::host::decode(p.data, p.size, o, ws.data, ws.size);
  });
}

void decode_shared_into(const in_array& values, const in_array& mask, const out_array& out, bool accumulate) {
  const char* call = accumulate ? "decode_shared_accumulate" : "decode_shared";
  require_host(call, values, mask, out);
  const bytes_in v = input_bytes(values, "payload");
  const bytes_in m = input_bytes(mask, "mask");
  const pc::tensor_view o = output_view(out, "out");
  run_unlocked(call, [&] {
    return accumulate ? pc::host::decode_shared_accumulate(v.data, v.size, m.data, m.size, o)
                      : pc::host::decode_shared(v.data, v.size, m.data, m.size, o);
  });
}

nb::dict info(const in_array& payload) {
  require_host("info", payload);
  const bytes_in p = input_bytes(payload, "payload");
  pc::payload_info i;
  check(pc::inspect(p.data, p.size, i), "info");
  nb::dict d;
  d["version"] = i.hdr.version;
  d["codec"] = pc::to_string(i.hdr.codec);
  d["spec"] = pc::to_string(i.codec_spec);
  d["dtype"] = dtype_name(i.hdr.type);
  d["shape"] = i.hdr.shp.ndim == 1 ? nb::cast(nb::make_tuple(i.hdr.shp.cols))
                                   : nb::cast(nb::make_tuple(i.hdr.shp.rows, i.hdr.shp.cols));
  d["bytes"] = i.hdr.total_bytes;
  d["seed"] = i.seed;
  d["shared_mask"] =
      (i.hdr.codec == pc::codec_id::topk || i.hdr.codec == pc::codec_id::randk) && i.codec_spec.topk.shared_mask;
  return d;
}

}  // namespace

void bind_codecs(nb::module_& m) {
  nb::class_<pc::spec>(m, "Spec",
                       "A codec and its parameters, parsed from spec text such as "
                       "'quant:bits=4,group=128'. Immutable.")
      .def(
          "__init__", [](pc::spec* s, const std::string& text) { new (s) pc::spec(parse_spec_text(text)); },
          nb::arg("text"))
      .def("__str__", [](const pc::spec& s) { return pc::to_string(s); })
      .def("__repr__", [](const pc::spec& s) { return "Spec('" + pc::to_string(s) + "')"; })
      .def("__eq__", [](const pc::spec& a, const pc::spec& b) { return pc::to_string(a) == pc::to_string(b); })
      .def("__hash__", [](const pc::spec& s) { return nb::hash(nb::str(pc::to_string(s).c_str())); })
      .def_prop_ro("codec", [](const pc::spec& s) { return pc::to_string(s.codec); })
      .def(
          "encoded_bytes",
          [](const pc::spec& s, const std::vector<uint64_t>& dims) { return encoded_bytes_of(s, shape_of(dims)); },
          nb::arg("shape"), "Exact payload size for a tensor of this shape.")
      .def(
          "workspace_bytes",
          [](const pc::spec& s, const std::vector<uint64_t>& dims) { return pc::workspace_bytes(s, shape_of(dims)); },
          nb::arg("shape"), "Workspace an encode of this shape needs (0: none).");

  m.def("encode_into", &encode_into, nb::arg("spec"), nb::arg("x"), nb::arg("out"), nb::arg("seed") = 0,
        nb::arg("workspace") = nb::none(), nb::arg("sample_ids") = nb::none());
  m.def("encode_shared_into", &encode_shared_into, nb::arg("spec"), nb::arg("x"), nb::arg("mask"), nb::arg("out"),
        nb::arg("seed") = 0, nb::arg("workspace") = nb::none());
  m.def("decode_into", &decode_into, nb::arg("payload"), nb::arg("out"), nb::arg("accumulate") = false,
        nb::arg("workspace") = nb::none());
  m.def("decode_shared_into", &decode_shared_into, nb::arg("payload"), nb::arg("mask"), nb::arg("out"),
        nb::arg("accumulate") = false);
  m.def("info", &info, nb::arg("payload"));
  // The CUDA backend's decode workspace (status word; TopK / RandK: grid state and RandK's
  // candidates), smaller than an encode's workspace_bytes().
  m.def(
      "device_decode_workspace_bytes",
      [](uint64_t n, bool sparse, bool shared) {
        using namespace pc::detail;
        return size_t(workspace_request(sparse || shared ? topk_decode_workspace(n, shared) : workspace_status_bytes));
      },
      nb::arg("n"), nb::arg("sparse"), nb::arg("shared"));
}

}  // namespace pcpy

// The policy layer: Policy (parsed from the same text as the C++ policy strings), and the
// Sender / Receiver endpoints a runtime holds per boundary and direction. Both sides of a
// boundary are given the same step, epoch, training flag, sample ids and seed; each decides
// from them on its own how the payload is made (warm-up, compressed, inference).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <vector>

#include "bindings.hpp"

namespace pcpy {
namespace {

namespace host = pc::host;

pc::policy parse_policy_text(const std::string& text) {
  pc::policy p;
  std::string error;
  if (!pc::ok(pc::parse_policy(text, p, &error)))
    throw nb::value_error(("invalid policy '" + text + "': " + error).c_str());
  return p;
}

pc::direction direction_arg(const std::string& d) {
  if (d == "fwd") return pc::direction::fwd;
  if (d == "bwd") return pc::direction::bwd;
  throw nb::value_error("direction must be 'fwd' or 'bwd'");
}

host::endpoint_options options(const std::vector<uint64_t>& max_shape, const std::string& dtype, uint64_t samples) {
  if (max_shape.size() != 2) throw nb::value_error("max_shape must be (rows, cols)");
  host::endpoint_options o;
  o.max_shape = pc::shape(max_shape[0], max_shape[1]);
  o.type = parse_dtype(dtype);
  o.samples = samples;
  return o;
}

// What both sides of a call agree on, from the keyword arguments.
struct step_args {
  pc::step_info at{};
  pc::payload_ref mask{};
  step_args(uint64_t step, uint64_t epoch, bool training, uint64_t seed, const std::optional<in_array>& ids,
            uint64_t rows, const std::optional<in_array>& mask_array) {
    at.step = step;
    at.epoch = epoch;
    at.training = training;
    at.seed = seed;
    if (ids) at.sample_ids = sample_ids(*ids, rows);
    if (mask_array) {
      const bytes_in m = input_bytes(*mask_array, "mask");
      mask = {m.data, m.size};
    }
  }
};

template <class E>
nb::dict counters(const E& e) {
  const pc::endpoint_counters& c = e.counters();
  nb::dict d;
  d["calls"] = c.calls;
  d["elements"] = c.elements;
  d["bytes_in"] = c.bytes_in;
  d["bytes_out"] = c.bytes_out;
  d["seconds"] = c.seconds;
  return d;
}

template <class E>
void init_endpoint(E* e, const pc::policy& p, uint32_t boundary, const std::string& d,
                   const std::vector<uint64_t>& max_shape, const std::string& dtype, uint64_t samples) {
  new (e) E();
  check(e->init(p, boundary, direction_arg(d), options(max_shape, dtype, samples)), "init");
}

size_t sender_encode(host::sender_endpoint& e, const in_array& x, const out_array& out, uint64_t step,
                     uint64_t epoch, bool training, const std::optional<in_array>& ids, uint64_t seed,
                     const std::optional<in_array>& mask) {
  require_host("encode", x, out);
  const pc::const_tensor_view in = input_view(x, "x");
  const bytes_out dst = output_bytes(out, "out");
  const step_args a(step, epoch, training, seed, ids, in.shp.rows, mask);
  size_t written = 0;
  pc::status st;
  {
    nb::gil_scoped_release unlocked;
    st = e.encode(in, a.at, dst.data, dst.size, &written, a.mask);
  }
  check(st, "encode");
  return written;
}

void receiver_decode(host::receiver_endpoint& e, const in_array& payload, const out_array& out, uint64_t step,
                     uint64_t epoch, bool training, const std::optional<in_array>& ids, uint64_t seed,
                     const std::optional<in_array>& mask) {
  require_host("decode", payload, out);
  const bytes_in p = input_bytes(payload, "payload");
  const pc::tensor_view o = output_view(out, "out");
  const step_args a(step, epoch, training, seed, ids, o.shp.rows, mask);
  pc::status st;
  {
    nb::gil_scoped_release unlocked;
    st = e.decode(p.data, p.size, o, a.at, a.mask);
  }
  check(st, "decode");
}

template <class E, class C>
void endpoint_common(C& c) {
  c.def("__init__", &init_endpoint<E>, nb::arg("policy"), nb::arg("boundary"), nb::arg("direction"),
        nb::arg("max_shape"), nb::arg("dtype") = "float32", nb::arg("samples") = 0)
      .def_prop_ro("encoded_bytes", &E::encoded_bytes, "Largest payload of any mode for max_shape.")
      .def_prop_ro("needs_mask", &E::needs_mask)
      .def_prop_ro("counters", &counters<E>)
      .def("reset_counters", &E::reset_counters)
      .def("set_inference", [](E& e, const std::string& mode) {
             if (mode != "compress" && mode != "plain") throw nb::value_error("mode must be 'compress' or 'plain'");
             e.set_inference(mode == "plain" ? pc::inference_mode::plain : pc::inference_mode::compress);
           }, nb::arg("mode"));
}

}  // namespace

void bind_endpoints(nb::module_& m) {
  nb::class_<pc::policy>(m, "Policy", "Per-boundary codecs, state schemes and schedules, parsed from "
                                      "policy text such as 'fwd=topk:ratio=0.1+aqsgd; warmup=1epoch'.")
      .def("__init__", [](pc::policy* p, const std::string& t) { new (p) pc::policy(parse_policy_text(t)); },
           nb::arg("text"))
      .def("__str__", [](const pc::policy& p) { return pc::to_string(p); })
      .def("__repr__", [](const pc::policy& p) { return "Policy('" + pc::to_string(p) + "')"; })
      .def("__eq__", [](const pc::policy& a, const pc::policy& b) { return a == b; });

  auto tx = nb::class_<host::sender_endpoint>(m, "Sender");
  endpoint_common<host::sender_endpoint>(tx);
  tx.def("encode_into", &sender_encode, nb::arg("x"), nb::arg("out"), nb::arg("step") = 0, nb::arg("epoch") = 0,
         nb::arg("training") = true, nb::arg("sample_ids") = nb::none(), nb::arg("seed") = 0,
         nb::arg("mask") = nb::none());

  auto rx = nb::class_<host::receiver_endpoint>(m, "Receiver");
  endpoint_common<host::receiver_endpoint>(rx);
  rx.def("decode_into", &receiver_decode, nb::arg("payload"), nb::arg("out"), nb::arg("step") = 0,
         nb::arg("epoch") = 0, nb::arg("training") = true, nb::arg("sample_ids") = nb::none(), nb::arg("seed") = 0,
         nb::arg("mask") = nb::none());
}

}  // namespace pcpy

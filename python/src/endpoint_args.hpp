// What the host and CUDA endpoint bindings share: policy text, the step arguments both sides
// of a boundary are given, counters and the common members.
#pragma once

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <vector>

#include "bindings.hpp"

namespace pcpy {

inline pc::policy parse_policy_text(const std::string& text) {
  pc::policy p;
  std::string error;
  if (!pc::ok(pc::parse_policy(text, p, &error)))
    throw nb::value_error(("invalid policy '" + text + "': " + error).c_str());
  return p;
}

inline pc::direction direction_arg(const std::string& d) {
  if (d == "fwd") return pc::direction::fwd;
  if (d == "bwd") return pc::direction::bwd;
  throw nb::value_error("direction must be 'fwd' or 'bwd'");
}

template <class Options>
Options endpoint_options(const std::vector<uint64_t>& max_shape, const std::string& dtype, uint64_t samples) {
  if (max_shape.size() != 2) throw nb::value_error("max_shape must be (rows, cols)");
  Options o;
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

template <class E, class Options>
void init_endpoint(E* e, const pc::policy& p, uint32_t boundary, const std::string& d,
                   const std::vector<uint64_t>& max_shape, const std::string& dtype, uint64_t samples) {
  new (e) E();
  const pc::status st = e->init(p, boundary, direction_arg(d), endpoint_options<Options>(max_shape, dtype, samples));
  if (!pc::ok(st)) {
    e->~E();  // nanobind does not destroy an object whose __init__ raised: free what init took
    raise(st, "init of the " + d + " endpoint at boundary " + std::to_string(boundary));
  }
}

// Options: the backend's endpoint_options.
template <class E, class Options, class C>
void endpoint_common(C& c) {
  c.def("__init__", &init_endpoint<E, Options>, nb::arg("policy"), nb::arg("boundary"), nb::arg("direction"),
        nb::arg("max_shape"), nb::arg("dtype") = "float32", nb::arg("samples") = 0)
      .def_prop_ro("encoded_bytes", &E::encoded_bytes, "Largest payload of any mode for max_shape.")
      .def_prop_ro("needs_mask", &E::needs_mask)
      .def_prop_ro("counters", &counters<E>)
      .def("reset_counters", &E::reset_counters)
      .def(
          "set_inference",
          [](E& e, const std::string& mode) {
            if (mode != "compress" && mode != "plain") throw nb::value_error("mode must be 'compress' or 'plain'");
            e.set_inference(mode == "plain" ? pc::inference_mode::plain : pc::inference_mode::compress);
          },
          nb::arg("mode"));
}

}  // namespace pcpy

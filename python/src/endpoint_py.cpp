// The policy layer: Policy (parsed from the same text as the C++ policy strings), and the
// Sender / Receiver endpoints a runtime holds per boundary and direction. Both sides of a
// boundary are given the same step, epoch, training flag, sample ids and seed; each decides
// from them on its own how the payload is made (warm-up, compressed, inference).
#include "endpoint_args.hpp"

namespace pcpy {
namespace {

namespace host = pc::host;

size_t sender_encode(host::sender_endpoint& e, const in_array& x, const out_array& out, uint64_t step, uint64_t epoch,
                     bool training, const std::optional<in_array>& ids, uint64_t seed,
                     const std::optional<in_array>& mask) {
  require_host("encode", x, out);
  const pc::const_tensor_view in = input_view(x, "x");
  const bytes_out dst = output_bytes(out, "out");
  const step_args a(step, epoch, training, seed, ids, in.shp.rows, mask);
  size_t written = 0;
  run_unlocked("encode", [&] { return e.encode(in, a.at, dst.data, dst.size, &written, a.mask); });
  return written;
}

void receiver_decode(host::receiver_endpoint& e, const in_array& payload, const out_array& out, uint64_t step,
                     uint64_t epoch, bool training, const std::optional<in_array>& ids, uint64_t seed,
                     const std::optional<in_array>& mask) {
  require_host("decode", payload, out);
  const bytes_in p = input_bytes(payload, "payload");
  const pc::tensor_view o = output_view(out, "out");
  const step_args a(step, epoch, training, seed, ids, o.shp.rows, mask);
  run_unlocked("decode", [&] { return e.decode(p.data, p.size, o, a.at, a.mask); });
}

}  // namespace

void bind_endpoints(nb::module_& m) {
  nb::class_<pc::policy>(m, "Policy",
                         "Per-boundary codecs, state schemes and schedules, parsed from "
                         "policy text such as 'fwd=topk:ratio=0.1+aqsgd; warmup=1epoch'.")
      .def(
          "__init__", [](pc::policy* p, const std::string& t) { new (p) pc::policy(parse_policy_text(t)); },
          nb::arg("text"))
      .def("__str__", [](const pc::policy& p) { return pc::to_string(p); })
      .def("__repr__", [](const pc::policy& p) { return "Policy('" + pc::to_string(p) + "')"; })
      .def("__eq__", [](const pc::policy& a, const pc::policy& b) { return a == b; });

  auto tx = nb::class_<host::sender_endpoint>(m, "Sender");
  endpoint_common<host::sender_endpoint, host::endpoint_options>(tx);
  tx.def("encode_into", &sender_encode, nb::arg("x"), nb::arg("out"), nb::arg("step") = 0, nb::arg("epoch") = 0,
         nb::arg("training") = true, nb::arg("sample_ids") = nb::none(), nb::arg("seed") = 0,
         nb::arg("mask") = nb::none());

  auto rx = nb::class_<host::receiver_endpoint>(m, "Receiver");
  endpoint_common<host::receiver_endpoint, host::endpoint_options>(rx);
  rx.def("decode_into", &receiver_decode, nb::arg("payload"), nb::arg("out"), nb::arg("step") = 0, nb::arg("epoch") = 0,
         nb::arg("training") = true, nb::arg("sample_ids") = nb::none(), nb::arg("seed") = 0,
         nb::arg("mask") = nb::none());
}

}  // namespace pcpy

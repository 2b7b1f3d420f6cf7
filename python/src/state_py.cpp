// The stateful schemes as objects: EF (residual per batch), EFSample (residual per sample
// id), EF21 (g on each side) and AQSGD (m per sample id on each side), each owning its state
// and workspace, with state_dict() / load_state_dict() over pipecodec's checkpoint format
// (host/checkpoint.hpp), so a state saved here restores in C++ and the other way round.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <optional>
#include <vector>

#include "bindings.hpp"

namespace pcpy {
namespace {

namespace host = pc::host;
using pc::checkpoint_kind;

const char* kind_name(checkpoint_kind k) {
  switch (k) {
    case checkpoint_kind::ef_residual:
      return "ef_residual";
    case checkpoint_kind::ef21_state:
      return "ef21_state";
    case checkpoint_kind::aqsgd_store:
      return "aqsgd_store";
    case checkpoint_kind::ef_sample_store:
      return "ef_sample_store";
    case checkpoint_kind::lowrank_q:
      return "lowrank_q";
  }
  return "unknown";
}

// {"kind": ..., "checkpoint": bytes}: a dict, as torch's state_dict(), that pickles and
// torch.save()s as it is.
template <class Save>
nb::dict state_dict(checkpoint_kind k, size_t bytes, Save&& save) {
  std::vector<uint8_t> buf(bytes);
  host::memory_sink sink{buf.data(), buf.size()};
  check(save(sink), "state_dict");
  nb::dict d;
  d["kind"] = kind_name(k);
  d["checkpoint"] = nb::bytes(reinterpret_cast<const char*>(buf.data()), sink.used);
  return d;
}

nb::bytes checkpoint_of(const nb::dict& d, checkpoint_kind k) {
  if (!d.contains("kind") || !d.contains("checkpoint") || nb::cast<std::string>(d["kind"]) != kind_name(k))
    throw nb::value_error(
        (std::string("load_state_dict: expected a state_dict of kind '") + kind_name(k) + "'").c_str());
  return nb::cast<nb::bytes>(d["checkpoint"]);
}

pc::shape shape_arg(const std::vector<uint64_t>& dims) {
  if (dims.size() == 1) return pc::shape(dims[0]);
  if (dims.size() == 2) return pc::shape(dims[0], dims[1]);
  throw nb::value_error("shape must be (n,) or (rows, cols)");
}

// The tensor schemes: one state tensor of a fixed shape.
template <class State, checkpoint_kind Kind>
struct tensor_scheme {
  State s;
  tensor_scheme(const std::string& spec, const std::vector<uint64_t>& shape, const std::string& storage) {
    check(s.init(parse_spec_text(spec), shape_arg(shape), parse_dtype(storage)), "init");
  }
  size_t encode_into(const in_array& x, const out_array& out, uint64_t seed, const std::optional<in_array>& ids) {
    require_host("encode", x, out);
    if (ids) require_host("encode", *ids);
    const pc::const_tensor_view in = input_view(x, "x");
    const bytes_out dst = output_bytes(out, "out");
    const pc::randomness rnd(seed, ids ? sample_ids(*ids, in.shp.rows) : nullptr);
    size_t written = 0;
    run_unlocked("encode", [&] { return s.encode(in, dst.data, dst.size, rnd, &written); });
    return written;
  }
  pc::tensor_view state() const;
  pc::tensor_view lowrank_q() const;  // EF with lowrank: the warm Q beside the residual
  nb::dict save() const {
    nb::dict d = save_tensor(Kind, state());
    if (const pc::tensor_view q = lowrank_q(); q.data != nullptr) d["lowrank_q"] = save_tensor(checkpoint_kind::lowrank_q, q);
    return d;
  }
  void load(const nb::dict& d) {
    const pc::tensor_view q = lowrank_q();
    if (q.data != nullptr && !d.contains("lowrank_q"))
      throw nb::value_error("load_state_dict: a lowrank EF state_dict holds 'lowrank_q'");
    const nb::bytes b = checkpoint_of(d, Kind);
    // Both checkpoints are validated before either state changes.
    std::vector<uint8_t> q_before(size_t(q.shp.size()) * 4);
    if (q.data != nullptr) {
      std::memcpy(q_before.data(), q.data, q_before.size());
      const nb::bytes qb = checkpoint_of(nb::cast<nb::dict>(d["lowrank_q"]), checkpoint_kind::lowrank_q);
      check(host::restore_checkpoint(qb.c_str(), qb.size(), checkpoint_kind::lowrank_q, q), "load_state_dict");
    }
    const pc::status st = host::restore_checkpoint(b.c_str(), b.size(), Kind, state());
    if (!pc::ok(st) && q.data != nullptr) std::memcpy(q.data, q_before.data(), q_before.size());
    check(st, "load_state_dict");
  }

 private:
  static nb::dict save_tensor(checkpoint_kind k, const pc::tensor_view& v) {
    return state_dict(k, host::checkpoint_bytes(v), [&](host::memory_sink& sink) { return host::save_checkpoint(k, v, sink); });
  }
};

using ef = tensor_scheme<host::ef_state, checkpoint_kind::ef_residual>;
using ef21 = tensor_scheme<host::ef21_state, checkpoint_kind::ef21_state>;
template <>
pc::tensor_view ef::state() const {
  return s.residual();
}
template <>
pc::tensor_view ef21::state() const {
  return s.state();
}
template <>
pc::tensor_view ef::lowrank_q() const {
  return s.lowrank_q();
}
template <>
pc::tensor_view ef21::lowrank_q() const {
  return {};
}

// The per-sample schemes: a store of `capacity` rows of `cols` features, keyed by sample id.
template <class State, checkpoint_kind Kind>
struct sample_scheme {
  State s;
  sample_scheme(const std::string& spec, uint64_t cols, uint64_t capacity, uint64_t max_rows,
                const std::string& storage) {
    host::aqsgd_config c;
    c.codec = parse_spec_text(spec);
    c.cols = cols;
    c.capacity = capacity;
    c.state_type = parse_dtype(storage);
    check(s.init(c, max_rows), "init");
  }
  nb::dict save() const {
    const host::aqsgd_config& c = s.config();
    return state_dict(Kind, host::checkpoint_bytes(c, s.store()),
                      [&](host::memory_sink& sink) { return host::save_checkpoint(Kind, c, s.store(), sink); });
  }
  void load(const nb::dict& d) {
    const nb::bytes b = checkpoint_of(d, Kind);
    check(host::restore_checkpoint(b.c_str(), b.size(), Kind, s.config(), s.store()), "load_state_dict");
  }
  nb::dict memory() const {
    const host::aqsgd_memory m = s.memory();
    nb::dict d;
    d["bytes_per_sample"] = m.bytes_per_sample;
    d["total_bytes"] = m.total_bytes;
    d["used_bytes"] = m.used_bytes;
    return d;
  }
};

using ef_sample = sample_scheme<host::ef_sample_state, checkpoint_kind::ef_sample_store>;
using aqsgd = sample_scheme<host::aqsgd_state, checkpoint_kind::aqsgd_store>;

// A per-sample sender's call: the batch, one id per row, the payload buffer.
struct sample_batch {
  pc::const_tensor_view in;
  const uint64_t* ids;
  bytes_out dst;
};

sample_batch checked_batch(const in_array& ids, const in_array& x, const out_array& out) {
  require_host("encode", ids, x, out);
  const pc::const_tensor_view in = input_view(x, "x");
  return {in, sample_ids(ids, in.shp.rows), output_bytes(out, "out")};
}

size_t ef_sample_encode(ef_sample& e, const in_array& ids, const in_array& x, const out_array& out, uint64_t seed) {
  const sample_batch b = checked_batch(ids, x, out);
  size_t written = 0;
  run_unlocked("encode", [&] { return e.s.encode(b.ids, b.in, b.dst.data, b.dst.size, seed, &written); });
  return written;
}

size_t aqsgd_encode(aqsgd& a, const in_array& ids, const in_array& x, const out_array& out, bool warmup,
                    uint64_t seed) {
  const sample_batch b = checked_batch(ids, x, out);
  size_t written = 0;
  run_unlocked("encode", [&] { return a.s.encode(b.ids, b.in, warmup, b.dst.data, b.dst.size, seed, &written); });
  return written;
}

// The receiver's m(xi) += D(payload); `out` receives the reconstructed batch (its rows say
// how many ids the payload must carry).
void aqsgd_decode(aqsgd& a, const in_array& payload, const in_array& ids, const out_array& out) {
  require_host("decode", payload, ids, out);
  const bytes_in p = input_bytes(payload, "payload");
  const pc::tensor_view o = output_view(out, "out");
  const uint64_t* id = sample_ids(ids, o.shp.rows);
  run_unlocked("decode", [&] { return a.s.decode(p.data, p.size, id, o); });
}

void ef21_decode(ef21& e, const in_array& payload, const std::optional<out_array>& out) {
  out ? require_host("decode", payload, *out) : require_host("decode", payload);
  const bytes_in p = input_bytes(payload, "payload");
  pc::tensor_view o{};
  if (out) o = output_view(*out, "out");
  run_unlocked("decode", [&] { return e.s.decode(p.data, p.size, o); });
}

template <class T, class C>
void tensor_common(C& c) {
  c.def(nb::init<const std::string&, const std::vector<uint64_t>&, const std::string&>(), nb::arg("spec"),
        nb::arg("shape"), nb::arg("storage") = "float32")
      .def_prop_ro("payload_bytes", [](const T& t) { return t.s.payload_bytes(); })
      .def_prop_ro("spec", [](const T& t) { return pc::to_string(t.s.codec()); })
      .def("encode_into", &T::encode_into, nb::arg("x"), nb::arg("out"), nb::arg("seed") = 0,
           nb::arg("sample_ids") = nb::none())
      .def("state_dict", &T::save)
      .def("load_state_dict", &T::load, nb::arg("state"));
}

template <class T, class C>
void sample_common(C& c) {
  c.def(nb::init<const std::string&, uint64_t, uint64_t, uint64_t, const std::string&>(), nb::arg("spec"),
        nb::arg("cols"), nb::arg("capacity"), nb::arg("max_rows"), nb::arg("storage") = "float32")
      .def_prop_ro("count", [](const T& t) { return t.s.count(); })
      .def_prop_ro("memory", &T::memory)
      .def_prop_ro("spec", [](const T& t) { return pc::to_string(t.s.config().codec); })
      .def("state_dict", &T::save)
      .def("load_state_dict", &T::load, nb::arg("state"));
}

}  // namespace

void bind_states(nb::module_& m) {
  auto ef_c = nb::class_<ef>(m, "EF");
  tensor_common<ef>(ef_c);
  ef_c.def_prop_ro(
      "residual", [](const ef& e) { return state_view(e.state()); }, nb::rv_policy::reference_internal);

  auto ef21_c = nb::class_<ef21>(m, "EF21");
  tensor_common<ef21>(ef21_c);
  ef21_c
      .def_prop_ro(
          "state", [](const ef21& e) { return state_view(e.state()); }, nb::rv_policy::reference_internal)
      .def("decode", &ef21_decode, nb::arg("payload"), nb::arg("out") = nb::none());

  auto efs_c = nb::class_<ef_sample>(m, "EFSample");
  sample_common<ef_sample>(efs_c);
  efs_c.def_prop_ro("payload_bytes", [](const ef_sample& e) { return e.s.payload_bytes(); })
      .def("encode_into", &ef_sample_encode, nb::arg("sample_ids"), nb::arg("x"), nb::arg("out"), nb::arg("seed") = 0);

  auto aq_c = nb::class_<aqsgd>(m, "AQSGD");
  sample_common<aqsgd>(aq_c);
  aq_c.def_prop_ro("payload_bytes", [](const aqsgd& a) { return a.s.message_bytes(); })
      .def("encode_into", &aqsgd_encode, nb::arg("sample_ids"), nb::arg("x"), nb::arg("out"), nb::arg("warmup") = false,
           nb::arg("seed") = 0)
      .def("decode", &aqsgd_decode, nb::arg("payload"), nb::arg("sample_ids"), nb::arg("out"));
}

}  // namespace pcpy

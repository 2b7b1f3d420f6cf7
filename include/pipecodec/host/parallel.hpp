// Encode and decode of a large tensor split over the caller's threads. The library starts no
// thread and keeps no pool: the caller passes `run`, anything callable as run(parts, task)
// that calls task(0) .. task(parts - 1), each exactly once, in any order or concurrently (a
// thread pool's parallel-for, an OpenMP loop, std::thread), and returns when all have
// returned. Quantization without rotation is split by groups, in batches of 16, and gives the
// payload host::encode gives, byte for byte; every other spec runs on the calling thread.
#pragma once

#include <algorithm>

#include "codec.hpp"

namespace pipecodec::host {

// A non-owning reference to the work of one part, task(i) for i < parts: what `run` calls.
class task_ref {
 public:
  template <class F>
  explicit task_ref(const F& f)
      : obj_(&f), call_([](const void* o, size_t i) { (*static_cast<const F*>(o))(i); }) {}
  void operator()(size_t i) const { call_(obj_, i); }

 private:
  const void* obj_;
  void (*call_)(const void*, size_t);
};

namespace detail {

// Groups [begin, end) of part k of `parts` over `groups` groups, whole batches of 16.
inline void part_groups(uint64_t groups, size_t parts, size_t k, uint64_t& begin, uint64_t& end) {
  const uint64_t batches = (groups + 15) / 16, per = (batches + parts - 1) / parts;
  begin = k * per * 16 < groups ? k * per * 16 : groups;
  end = (k + 1) * per * 16 < groups ? (k + 1) * per * 16 : groups;
}

// Parts worth running: at most one per batch of 16 groups, at least one.
inline size_t useful_parts(uint64_t groups, size_t parts) {
  return size_t(std::max<uint64_t>(1, std::min<uint64_t>(parts, (groups + 15) / 16)));
}

}  // namespace detail

// host::encode with the work in `parts` parts that `run` executes (see above).
template <class Run>
inline status encode_parallel(const spec& s, const_tensor_view in, void* payload, size_t capacity, void* workspace,
                              size_t workspace_size, randomness rnd, size_t* written, size_t parts, Run&& run) {
  using namespace detail;
  if (s.codec != codec_id::quant || s.quant.rotate != rotation::none || !valid_dtype(uint8_t(in.type)))
    return encode(s, in, payload, capacity, workspace, workspace_size, rnd, written);
  const quant_params& q = s.quant;
  quant_layout L;
  const status bad = check_quant_encode(q, in, payload, capacity, rnd, L);
  if (!ok(bad)) return bad;
  uint8_t* p = static_cast<uint8_t*>(payload);
  write_quant_frame(p, q, in, L, rnd.seed);
  parts = useful_parts(L.groups, parts);
  const auto task = [&](size_t k) {
    uint64_t g0 = 0, g1 = 0;
    part_groups(L.groups, parts, k, g0, g1);
    (void)dispatch_dtype_bits(in.type, q.bits, [&](auto tc, auto bc) {
      encode_groups<decltype(tc)::value, decltype(bc)::value>(in.data, 0, q, L, g0, g1, rnd, p);
      return status::success;
    });
  };
  run(parts, task_ref(task));
  if (written) *written = size_t(L.total);
  return status::success;
}

// host::decode with the work in `parts` parts that `run` executes (see above). The whole
// payload is validated on the calling thread first: on any error `out` is left untouched.
template <class Run>
inline status decode_parallel(const void* payload, size_t len, tensor_view out, void* workspace,
                              size_t workspace_size, size_t parts, Run&& run) {
  using namespace detail;
  header h;
  if (!valid_dtype(uint8_t(out.type)) || !ok(read_header(static_cast<const uint8_t*>(payload), len, h)) ||
      h.codec != codec_id::quant)
    return decode(payload, len, out, workspace, workspace_size);
  quant_payload qp;
  const status st = check_quant_payload(payload, len, out, qp);
  if (!ok(st)) return st;
  if (qp.q.rotate != rotation::none) return decode(payload, len, out, workspace, workspace_size);
  parts = useful_parts(qp.layout.groups, parts);
  const auto task = [&](size_t k) {
    uint64_t g0 = 0, g1 = 0;
    part_groups(qp.layout.groups, parts, k, g0, g1);
    (void)dispatch_dtype_bits(out.type, qp.q.bits, [&](auto tc, auto bc) {
      for (uint64_t g = g0; g < g1; ++g) decode_group<decltype(tc)::value, decltype(bc)::value, false>(qp, g, out.data);
      return status::success;
    });
  };
  run(parts, task_ref(task));
  return status::success;
}

}  // namespace pipecodec::host

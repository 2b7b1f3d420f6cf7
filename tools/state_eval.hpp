// Driver behind `pipecodec eval --state ef|ef-sample|ef21|aqsgd`: runs a sender and a receiver of a
// stateful scheme over successive step tensors of one boundary and reports, per step, the
// bytes on the wire and the relative L2 error of the receiver's tensor, then whether the two
// sides' states ended bit-identical. Loading .npy files is the CLI's job, not this header's.
#pragma once

#include <cmath>
#include <cstdio>
#include <unordered_set>
#include <vector>

#include "pipecodec/host/aqsgd.hpp"
#include "pipecodec/host/ef.hpp"
#include "pipecodec/host/ef21.hpp"
#include "pipecodec/host/ef_sample.hpp"

namespace pipecodec::tools {

enum class state_scheme { ef, ef_sample, ef21, aqsgd };

struct state_eval_options {
  state_scheme scheme = state_scheme::ef21;
  spec codec{};
  spec warmup = host::aqsgd_config::plain_f32();  // AQ-SGD only
  uint64_t warmup_steps = 0;                       // AQ-SGD: first steps sent all warm-up
  dtype state_type = dtype::f32;
  uint64_t seed = 0;  // step i (0-based) encodes with seed + i (stochastic rounding, RandK)
};

struct state_eval_step {
  uint64_t step = 0;   // 1-based
  uint64_t bytes = 0;  // payload (EF, EF21) or message (AQ-SGD) size
  double rel_l2_err = 0;
};

struct state_eval_result {
  std::vector<state_eval_step> steps;
  // EF21, AQ-SGD: sender and receiver state equal byte for byte. EF (either kind) has no
  // receiver state: reported true once every payload decoded.
  bool state_equal = false;
};

namespace detail {

inline double rel_l2(const_tensor_view ref, const std::vector<float>& got) {
  double num = 0, den = 0;
  const status st = pipecodec::detail::dispatch_dtype(ref.type, [&](auto tc) {
    for (size_t i = 0; i < got.size(); ++i) {
      const double x = pipecodec::detail::load<decltype(tc)::value>(ref.data, i);
      num += (x - got[i]) * (x - got[i]);
      den += x * x;
    }
    return status::success;
  });
  (void)st;
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

inline bool same_bytes(const void* a, const void* b, uint64_t n) { return n == 0 || memcmp(a, b, n) == 0; }

inline status eval_tensor_scheme(const state_eval_options& o, const std::vector<const_tensor_view>& steps,
                                 state_eval_result& res) {
  const shape shp = steps.front().shp;
  for (const auto& s : steps)
    if (s.shp != shp) return status::shape_mismatch;
  host::ef_state ef;
  host::ef21_state tx, rx;
  status st = o.scheme == state_scheme::ef ? ef.init(o.codec, shp, o.state_type) : tx.init(o.codec, shp, o.state_type);
  if (ok(st) && o.scheme == state_scheme::ef21) st = rx.init(o.codec, shp, o.state_type);
  if (!ok(st)) return st;
  std::vector<uint8_t> payload(encoded_bytes(o.codec, shp));
  std::vector<float> out(shp.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    size_t len = 0;
    const tensor_view ov{out.data(), dtype::f32, shp};
    if (o.scheme == state_scheme::ef) {
      st = ef.encode(steps[i], payload.data(), payload.size(), o.seed + i, &len);
      if (ok(st)) st = host::decode(payload.data(), len, ov);
    } else {
      st = tx.encode(steps[i], payload.data(), payload.size(), o.seed + i, &len);
      if (ok(st)) st = rx.decode(payload.data(), len, ov);
    }
    if (!ok(st)) return st;
    res.steps.push_back({i + 1, len, rel_l2(steps[i], out)});
  }
  const uint64_t state_bytes = shp.size() * dtype_bytes(o.state_type);
  res.state_equal = o.scheme == state_scheme::ef || same_bytes(tx.state().data, rx.state().data, state_bytes);
  return status::success;
}

// The per-sample store's config for AQ-SGD or per-sample EF: capacity = distinct ids seen.
inline status sample_config(const state_eval_options& o, const std::vector<const_tensor_view>& steps,
                            const std::vector<const uint64_t*>& ids, host::aqsgd_config& c, uint64_t& max_rows) {
  if (ids.size() != steps.size()) return status::invalid_argument;
  c.codec = o.codec;
  c.warmup = o.warmup;
  c.cols = steps.front().shp.cols;
  c.state_type = o.state_type;
  std::unordered_set<uint64_t> distinct;
  max_rows = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].shp.cols != c.cols) return status::shape_mismatch;
    if (ids[i] == nullptr && steps[i].shp.rows > 0) return status::invalid_argument;
    max_rows = std::max(max_rows, steps[i].shp.rows);
    distinct.insert(ids[i], ids[i] + steps[i].shp.rows);
  }
  c.capacity = std::max<uint64_t>(1, distinct.size());
  return status::success;
}

inline status eval_ef_sample(const state_eval_options& o, const std::vector<const_tensor_view>& steps,
                             const std::vector<const uint64_t*>& ids, state_eval_result& res) {
  host::aqsgd_config c;
  uint64_t max_rows = 0;
  status st = sample_config(o, steps, ids, c, max_rows);
  host::ef_sample_state ef;
  if (ok(st)) st = ef.init(c, max_rows);
  if (!ok(st)) return st;
  std::vector<uint8_t> payload(ef.payload_bytes());
  for (size_t i = 0; i < steps.size(); ++i) {
    const shape shp(steps[i].shp.rows, c.cols);
    std::vector<float> out(shp.size());
    size_t len = 0;
    st = ef.encode(ids[i], const_tensor_view(steps[i].data, steps[i].type, shp), payload.data(), payload.size(),
                   o.seed + i, &len);
    if (ok(st)) st = host::decode(payload.data(), len, tensor_view{out.data(), dtype::f32, shp});
    if (!ok(st)) return st;
    res.steps.push_back({i + 1, len, rel_l2(steps[i], out)});
  }
  res.state_equal = true;
  return status::success;
}

inline status eval_aqsgd(const state_eval_options& o, const std::vector<const_tensor_view>& steps,
                         const std::vector<const uint64_t*>& ids, state_eval_result& res) {
  host::aqsgd_config c;
  uint64_t max_rows = 0;
  const status cs = sample_config(o, steps, ids, c, max_rows);
  if (!ok(cs)) return cs;
  host::aqsgd_state tx, rx;
  status st = tx.init(c, max_rows);
  if (ok(st)) st = rx.init(c, max_rows);
  if (!ok(st)) return st;
  std::vector<uint8_t> msg(tx.message_bytes());
  for (size_t i = 0; i < steps.size(); ++i) {
    const shape shp(steps[i].shp.rows, c.cols);
    std::vector<float> out(shp.size());
    size_t len = 0;
    st = tx.encode(ids[i], const_tensor_view(steps[i].data, steps[i].type, shp), i < o.warmup_steps, msg.data(),
                   msg.size(), o.seed + i, &len);
    if (ok(st)) st = rx.decode(msg.data(), len, ids[i], tensor_view{out.data(), dtype::f32, shp});
    if (!ok(st)) return st;
    res.steps.push_back({i + 1, len, rel_l2(steps[i], out)});
  }
  const uint64_t table = aqsgd_table_bytes(c.capacity);
  res.state_equal = same_bytes(tx.store().table.words, rx.store().table.words, table) &&
                    same_bytes(tx.store().rows.data, rx.store().rows.data, host::aqsgd_rows_bytes(c));
  return status::success;
}

}  // namespace detail

// Runs the scheme over `steps` (EF, EF21: all of one shape; AQ-SGD, per-sample EF: rows =
// samples, same cols, ids[i] holds steps[i].shp.rows sample ids; the store's capacity is the
// number of distinct ids). On error `res` holds the steps completed so far.
inline status state_eval(const state_eval_options& o, const std::vector<const_tensor_view>& steps,
                         const std::vector<const uint64_t*>& ids, state_eval_result& res) {
  res = state_eval_result{};
  if (steps.empty()) return status::invalid_argument;
  if (o.scheme == state_scheme::aqsgd) return detail::eval_aqsgd(o, steps, ids, res);
  if (o.scheme == state_scheme::ef_sample) return detail::eval_ef_sample(o, steps, ids, res);
  return detail::eval_tensor_scheme(o, steps, res);
}

// The CLI's output: "step: N bytes: B rel_l2_err: E" per step, then "state_equal: yes|no".
inline void print_state_eval(std::FILE* f, const state_eval_result& res) {
  for (const auto& s : res.steps)
    std::fprintf(f, "step: %llu bytes: %llu rel_l2_err: %.6g\n", static_cast<unsigned long long>(s.step),
                 static_cast<unsigned long long>(s.bytes), s.rel_l2_err);
  std::fprintf(f, "state_equal: %s\n", res.state_equal ? "yes" : "no");
}

}  // namespace pipecodec::tools

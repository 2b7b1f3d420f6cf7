// The library calls the CLI makes, turning every non-success status into a cli::error
// whose message names what failed.
#pragma once

#include <chrono>
#include <cstring>
#include <string>
#include <unordered_set>
#include <vector>

#include "../output_limit.hpp"
#include "describe.hpp"
#include "pipecodec/core/inspect.hpp"
#include "pipecodec/pipecodec.hpp"
#include "tensor_io.hpp"

namespace cli {

inline pipecodec::spec parse_spec_option(const args& a) {
  if (!a.has("spec")) throw error("missing --spec (e.g. --spec quant:bits=4,group=128)");
  pipecodec::spec s;
  std::string why;
  if (!pipecodec::ok(pipecodec::parse_spec(a.get("spec"), s, &why))) throw error("bad spec: " + why);
  return s;
}

inline uint64_t seed_option(const args& a) { return a.has("seed") ? parse_uint("seed", a.get("seed")) : 0; }

// IDS.npy: '<i8', steps x rows, every step's rows matching its tensor's rows, ids >= 0.
// Returned as uint64 (the library's id type), row-major, one row of ids per step.
inline std::vector<uint64_t> load_ids(const std::string& path, const std::vector<tensor>& steps) {
  const std::vector<uint8_t> file = read_file(path);
  if (!npy::has_magic(file)) throw error("--ids '" + path + "' is not a .npy file");
  npy::header_info h;
  try {
    h = npy::parse_i8(file);
  } catch (const npy::error& e) {
    throw error("--ids '" + path + "': " + e.what());
  }
  if (h.shp.ndim != 2 || h.shp.rows != steps.size())
    throw error("--ids '" + path + "' has shape " + shape_text(h.shp) + ", need " + std::to_string(steps.size()) +
                "xROWS (one row of ids per step)");
  for (size_t i = 0; i < steps.size(); ++i)
    if (steps[i].shp.rows != h.shp.cols)
      throw error("--ids '" + path + "' has " + std::to_string(h.shp.cols) + " ids per step, step " +
                  std::to_string(i + 1) + " has " + std::to_string(steps[i].shp.rows) + " rows");
  std::vector<uint64_t> ids(h.shp.size());
  if (!ids.empty()) std::memcpy(ids.data(), file.data() + h.data_offset, ids.size() * 8);
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] >> 63)
      throw error("--ids '" + path + "': id " + std::to_string(int64_t(ids[i])) + " at step " +
                  std::to_string(i / h.shp.cols + 1) + " is negative");
  // AQ-SGD rejects a batch holding a sample twice; say which id, not just the status.
  for (size_t i = 0; i < steps.size(); ++i) {
    std::unordered_set<uint64_t> seen;
    for (size_t r = 0; r < h.shp.cols; ++r)
      if (!seen.insert(ids[i * h.shp.cols + r]).second)
        throw error("--ids '" + path + "': id " + std::to_string(ids[i * h.shp.cols + r]) + " appears twice in step " +
                    std::to_string(i + 1));
  }
  return ids;
}

// encode/eval --ids IDS.npy ('<i8', 1 x rows) for specs with rng=sample; empty without --ids.
inline std::vector<uint64_t> ids_option(const args& a, const pipecodec::spec& s, const tensor& t) {
  if (!a.has("ids")) return {};
  if (!pipecodec::keyed_by_sample(s)) throw error("option '--ids' needs a spec with rng=sample, or --state aqsgd|ef-sample");
  return load_ids(a.get("ids"), {t});
}

inline pipecodec::randomness draws(uint64_t seed, const std::vector<uint64_t>& ids) {
  return pipecodec::randomness(seed, ids.empty() ? nullptr : ids.data());
}

inline std::vector<uint8_t> encode(const pipecodec::spec& s, const tensor& t, pipecodec::randomness rnd) {
  const size_t cap = pipecodec::encoded_bytes(s, t.shp);
  if (cap == 0) throw error("spec " + pipecodec::to_string(s) + " cannot encode this shape");
  std::vector<uint8_t> ws(pipecodec::workspace_bytes(s, t.shp));
  std::vector<uint8_t> payload(cap);
  size_t written = 0;
  const pipecodec::status st =
      pipecodec::host::encode(s, t.view(), payload.data(), cap, ws.data(), ws.size(), rnd, &written);
  if (st == pipecodec::status::invalid_argument && pipecodec::keyed_by_sample(s) && rnd.sample_ids == nullptr)
    throw error("encode failed: rng=sample needs --ids IDS.npy (one sample id per row)");
  if (!pipecodec::ok(st)) throw error(std::string("encode failed: ") + pipecodec::to_string(st));
  payload.resize(written);
  return payload;
}

inline pipecodec::payload_info inspect(const std::vector<uint8_t>& payload) {
  if (payload.empty()) throw error("bad payload: empty file");
  pipecodec::payload_info info;
  const pipecodec::status st = pipecodec::inspect(payload.data(), payload.size(), info);
  if (!pipecodec::ok(st)) throw error(std::string("bad payload: ") + pipecodec::to_string(st));
  return info;
}

// Decodes into `out`, which already has the payload's shape and the wanted dtype.
inline void decode_into(const std::vector<uint8_t>& payload, tensor& out) {
  const pipecodec::status st = pipecodec::host::decode(payload.data(), payload.size(), out.mutable_view());
  if (!pipecodec::ok(st)) throw error(std::string("bad payload: ") + pipecodec::to_string(st));
}

// Decodes into a new tensor of shape `shp` (decode checks that the payload's shape agrees).
// A shape taken from the payload's header must pass the output limit first (decode below).
inline tensor decode_as(const std::vector<uint8_t>& payload, pipecodec::shape shp, pipecodec::dtype type) {
  tensor out;
  out.type = type;
  out.shp = shp;
  out.bytes.resize(shp.size() * pipecodec::dtype_bytes(type));
  decode_into(payload, out);
  return out;
}

// --max-elements N, or the default cap on outputs allocated from a payload's header.
inline uint64_t max_elements_option(const args& a) {
  return a.has("max-elements") ? parse_uint("max-elements", a.get("max-elements"))
                               : pipecodec::tools::default_max_output_elements;
}

// Decodes into a new tensor of the payload's declared shape, refusing (before allocating) a
// shape above `max_elements`: the header is untrusted, and a valid tiny payload can declare
// billions of elements.
inline tensor decode(const std::vector<uint8_t>& payload, pipecodec::dtype type, uint64_t max_elements) {
  const pipecodec::payload_info info = inspect(payload);
  if (!pipecodec::tools::output_fits(info.hdr.shp, max_elements))
    throw limit_error("payload declares " + std::to_string(info.hdr.shp.size()) + " elements (shape " +
                      shape_text(info.hdr.shp) + "), above the output limit of " + std::to_string(max_elements) +
                      " elements (raise it with --max-elements N)");
  return decode_as(payload, info.hdr.shp, type);
}

// Fastest of repeated runs of f: at least `min_runs`, until `min_seconds` have passed.
template <class F>
double best_seconds(F&& f, int min_runs = 3, double min_seconds = 0.2) {
  using clock = std::chrono::steady_clock;
  double best = 1e300, total = 0;
  for (int run = 0; run < min_runs || total < min_seconds; ++run) {
    const auto t0 = clock::now();
    f();
    const double s = std::chrono::duration<double>(clock::now() - t0).count();
    best = s < best ? s : best;
    total += s;
  }
  return best;
}

}  // namespace cli

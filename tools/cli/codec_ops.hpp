// The library calls the CLI makes, turning every non-success status into a cli::error
// whose message names what failed.
#pragma once

#include <chrono>
#include <string>
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

inline std::vector<uint8_t> encode(const pipecodec::spec& s, const tensor& t, uint64_t seed) {
  const size_t cap = pipecodec::encoded_bytes(s, t.shp);
  if (cap == 0) throw error("spec " + pipecodec::to_string(s) + " cannot encode this shape");
  std::vector<uint8_t> ws(pipecodec::workspace_bytes(s, t.shp));
  std::vector<uint8_t> payload(cap);
  size_t written = 0;
  const pipecodec::status st =
      pipecodec::host::encode(s, t.view(), payload.data(), cap, ws.data(), ws.size(), seed, &written);
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

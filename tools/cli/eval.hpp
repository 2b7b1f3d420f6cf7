// The `eval` command.
#pragma once

#include <cstdio>

#include "../metrics.hpp"
#include "codec_ops.hpp"
#include "describe.hpp"
#include "eval_state.hpp"

namespace cli {

// eval --spec SPEC [--seed N] [--ids IDS.npy] [--dtype T --shape S] IN: size and error of one round trip
// (decoded into the input's dtype) and the best-of-runs encode/decode throughput, counted
// in input bytes per second.
// With --state ef|ef-sample|ef21|aqsgd the stateful evaluation over several steps runs instead
// (eval_state.hpp); its options are refused without --state.
inline void run_eval(int argc, char** argv) {
  const args a =
      parse_args(argc, argv, 2, {"spec", "seed", "dtype", "shape", "state", "ids", "state-dtype", "warmup-steps"});
  if (a.has("state")) return run_eval_state(a);
  for (const char* k : {"state-dtype", "warmup-steps"})
    if (a.has(k)) throw error(std::string("option '--") + k + "' needs --state");
  expect_positional(a, 1, "IN");
  const pipecodec::spec s = parse_spec_option(a);
  const uint64_t seed = seed_option(a);
  const tensor t = load_tensor(a.positional[0], a);
  const std::vector<uint64_t> ids = ids_option(a, s, t);
  std::vector<uint8_t> payload = encode(s, t, draws(seed, ids));
  tensor out = decode_as(payload, t.shp, t.type);
  const metrics::error_stats e =
      metrics::compare(t.size(), [&](uint64_t i) { return t.at(i); }, [&](uint64_t i) { return out.at(i); });

  const double enc_s = best_seconds([&] { payload = encode(s, t, draws(seed, ids)); });
  const double dec_s = best_seconds([&] { decode_into(payload, out); });
  const double n = double(t.size()), in_bytes = double(t.bytes.size());
  std::printf("spec: %s\n", pipecodec::to_string(s).c_str());
  std::printf("dtype: %s\n", pipecodec::to_string(t.type));
  std::printf("shape: %s\n", shape_text(t.shp).c_str());
  std::printf("elements: %llu\n", static_cast<unsigned long long>(t.size()));
  std::printf("input_bytes: %zu\n", t.bytes.size());
  std::printf("payload_bytes: %zu\n", payload.size());
  std::printf("bits_per_element: %.6g\n", n > 0 ? 8.0 * double(payload.size()) / n : 0.0);
  std::printf("ratio: %.6g\n", in_bytes / double(payload.size()));
  std::printf("max_abs_err: %.6g\n", e.max_abs);
  std::printf("rmse: %.6g\n", e.rmse);
  std::printf("rel_l2_err: %.6g\n", e.rel_l2);
  std::printf("nonfinite_inputs: %llu\n", static_cast<unsigned long long>(e.skipped));
  std::printf("encode_GBps: %.4g\n", in_bytes / enc_s / 1e9);
  std::printf("decode_GBps: %.4g\n", in_bytes / dec_s / 1e9);
}

}  // namespace cli

// The `encode` and `decode` commands.
#pragma once

#include "codec_ops.hpp"

namespace cli {

// encode --spec SPEC [--seed N] [--ids IDS.npy] [--dtype T --shape S] IN OUT
inline void run_encode(int argc, char** argv) {
  const args a = parse_args(argc, argv, 2, {"spec", "seed", "ids", "dtype", "shape"});
  expect_positional(a, 2, "IN OUT");
  const pipecodec::spec s = parse_spec_option(a);
  const uint64_t seed = seed_option(a);
  const tensor t = load_tensor(a.positional[0], a);
  const std::vector<uint64_t> ids = ids_option(a, s, t);
  const std::vector<uint8_t> payload = encode(s, t, draws(seed, ids));
  write_file(a.positional[1], payload.data(), payload.size());
}

// decode [--dtype T] [--max-elements N] IN OUT: OUT is .npy (fp32/fp16) or raw (bf16); dtype
// defaults to the dtype that was encoded. The only command that allocates from a header.
inline void run_decode(int argc, char** argv) {
  const args a = parse_args(argc, argv, 2, {"dtype", "max-elements"});
  expect_positional(a, 2, "IN OUT");
  const uint64_t max_elements = max_elements_option(a);
  const std::vector<uint8_t> payload = read_file(a.positional[0]);
  const pipecodec::dtype type = a.has("dtype") ? parse_dtype_option(a.get("dtype")) : inspect(payload).hdr.type;
  save_tensor(a.positional[1], decode(payload, type, max_elements));
}

}  // namespace cli

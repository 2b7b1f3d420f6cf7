// The `info` command.
#pragma once

#include <cstdio>

#include "codec_ops.hpp"
#include "describe.hpp"

namespace cli {

// info IN: header fields and the spec that produced the payload, one `key: value` a line.
inline void run_info(int argc, char** argv) {
  const args a = parse_args(argc, argv, 2, {});
  expect_positional(a, 1, "IN");
  const std::vector<uint8_t> payload = read_file(a.positional[0]);
  const pipecodec::payload_info info = inspect(payload);
  const pipecodec::header& h = info.hdr;
  const uint64_t n = h.shp.size();
  std::printf("format_version: %u\n", unsigned(h.version));
  std::printf("codec: %s\n", pipecodec::to_string(h.codec));
  std::printf("spec: %s\n", pipecodec::to_string(info.codec_spec).c_str());
  std::printf("seed: %llu\n", static_cast<unsigned long long>(info.seed));
  std::printf("dtype: %s\n", pipecodec::to_string(h.type));
  std::printf("ndim: %u\n", unsigned(h.shp.ndim));
  std::printf("shape: %s\n", shape_text(h.shp).c_str());
  std::printf("elements: %llu\n", static_cast<unsigned long long>(n));
  std::printf("sample_ids: %s\n", (h.flags & pipecodec::flag_sample_ids) ? "yes" : "no");
  std::printf("total_bytes: %llu\n", static_cast<unsigned long long>(h.total_bytes));
  std::printf("file_bytes: %zu\n", payload.size());
  if (n > 0) {
    std::printf("bits_per_element: %.6g\n", 8.0 * double(h.total_bytes) / double(n));
    std::printf("ratio: %.6g\n", double(n) * pipecodec::dtype_bytes(h.type) / double(h.total_bytes));
  }
}

}  // namespace cli

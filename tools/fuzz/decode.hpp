// Harness (a): arbitrary bytes as a payload of any codec, through host::decode and
// host::decode_accumulate into every dtype. Properties: no crash, over-read (the payload is
// an exact-size heap copy) or UB; a rejected payload leaves the output untouched; a payload
// accepted into a mismatched shape is a bug; a quant payload decodes to finite fp32 values.
#pragma once

#include "../output_limit.hpp"
#include "common.hpp"

namespace pcfuzz {

// Largest declared tensor the harness allocates an output for, under the tools' rule
// (output_limit.hpp): far below the CLI's default, since every input allocates it six times
// and libFuzzer's memory limit is 2 GB. A TopK payload of 96 bytes can declare 2^32 elements.
constexpr uint64_t decode_max_elements = uint64_t(1) << 22;
static_assert(decode_max_elements <= pipecodec::tools::default_max_output_elements, "the tools' cap");

inline pipecodec::status decode_checked(const std::vector<uint8_t>& payload, pipecodec::shape shp,
                                        pipecodec::dtype t, bool accumulate) {
  using namespace pipecodec;
  const uint64_t bytes = shp.size() * dtype_bytes(t);
  std::vector<uint8_t> out(bytes), before(bytes);
  for (uint64_t i = 0; i < bytes; ++i) out[i] = uint8_t(i * 37 + 11);
  before = out;
  const tensor_view v{out.data(), t, shp};
  const status st = accumulate ? host::decode_accumulate(payload.data(), payload.size(), v)
                               : host::decode(payload.data(), payload.size(), v);
  if (!ok(st)) PCFUZZ_CHECK(out == before, "rejected payload (%s) wrote to the output", to_string(st));
  return st;
}

inline int fuzz_decode(const uint8_t* data, size_t size) {
  using namespace pipecodec;
  const auto payload = exact_copy(data, size);
  header h;
  shape shp(16);
  const bool readable = ok(read_header(payload.data(), payload.size(), h));
  // The declared shape only when the buffer could hold such a payload: otherwise the decode
  // is rejected on size anyway, and allocating a large output would just slow the fuzzer.
  if (readable && h.total_bytes <= size && tools::output_fits(h.shp, decode_max_elements)) shp = h.shp;
  for (uint8_t ti = 0; ti < 3; ++ti) {
    const dtype t = dtype_from(ti);
    const status st = decode_checked(payload, shp, t, false);
    const status sa = decode_checked(payload, shp, t, true);
    PCFUZZ_CHECK(ok(st) == ok(sa), "decode %s but decode_accumulate %s", to_string(st), to_string(sa));
    if (ok(st) && t == dtype::f32 && h.codec == codec_id::quant) {
      std::vector<float> x(shp.size());
      PCFUZZ_CHECK(ok(host::decode(payload.data(), payload.size(), tensor_view{x.data(), t, shp})), "repeat");
      for (size_t i = 0; i < x.size(); ++i) PCFUZZ_CHECK(detail::is_finite(x[i]), "element %zu not finite", i);
    }
  }
  if (readable) {
    // The same element count in the other rank must be rejected.
    const shape other = shp.ndim == 1 ? shape(1, shp.cols) : shape(shp.rows * shp.cols);
    if (tools::output_fits(other, decode_max_elements))
      PCFUZZ_CHECK(!ok(decode_checked(payload, other, dtype::f32, false)), "accepted a mismatched shape");
  }
  return 0;
}

}  // namespace pcfuzz

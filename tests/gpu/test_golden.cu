// Golden payloads on the GPU: every case of tests/common/golden_cases.hpp must encode with
// the CUDA backend to tests/golden/<name>.bin byte for byte, and decoding that file on the
// device (into every dtype, plain and accumulating) must match the host decode bit for bit.
// PIPECODEC_GOLDEN_DIR names the directory (set by meson, as for the host golden test).
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "../common/golden_cases.hpp"
#include "../common/print.hpp"
#include "gpu_backend.hpp"

using namespace pipecodec;

namespace {

std::vector<uint8_t> read_golden(const char* name) {
  const char* d = std::getenv("PIPECODEC_GOLDEN_DIR");
  const std::string path = std::string(d ? d : "tests/golden") + "/" + name + ".bin";
  std::ifstream f(path, std::ios::binary);
  REQUIRE_MESSAGE(f.good(), "missing golden file " << path);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// A fixed, non-zero base for accumulating decodes.
std::vector<uint8_t> base_tensor(dtype t, shape shp) {
  return testdata::as_bytes(testdata::uniform(shp.size(), 99), t);
}

}  // namespace

TEST_CASE("gpu: every golden case encodes to its golden file byte for byte") {
  testg::gpu_backend gpu;
  for (const auto& c : golden::cases()) {
    CAPTURE_TEXT(c.name);
    const auto want = read_golden(c.name);
    REQUIRE(!want.empty());
    std::vector<uint8_t> got;
    std::vector<uint64_t> ids;
    REQUIRE(ok(gpu.encode(golden::spec_of(c), golden::input_bytes(c), c.in, c.shp, golden::randomness_of(c, ids), got)));
    CHECK(got == want);
  }
}

TEST_CASE("gpu: every golden file decodes on the device as on the host") {
  testg::gpu_backend gpu;
  for (const auto& c : golden::cases()) {
    CAPTURE_TEXT(c.name);
    const auto payload = read_golden(c.name);
    REQUIRE(!payload.empty());
    for (dtype t : {dtype::f32, dtype::f16, dtype::bf16}) {
      for (bool acc : {false, true}) {
        CAPTURE(int(t));
        CAPTURE(acc);
        std::vector<uint8_t> host_out = acc ? base_tensor(t, c.shp) : std::vector<uint8_t>(c.shp.size() * dtype_bytes(t), 0xA5);
        std::vector<uint8_t> dev_out = host_out;
        const tensor_view v{host_out.data(), t, c.shp};
        REQUIRE(ok(acc ? host::decode_accumulate(payload.data(), payload.size(), v)
                       : host::decode(payload.data(), payload.size(), v)));
        REQUIRE(ok(gpu.decode(payload, payload.size(), t, c.shp, dev_out, acc)));
        CHECK(dev_out == host_out);
      }
    }
  }
}

// libFuzzer entry point; tools/fuzz/run builds it once per harness with
// -DPCFUZZ_TARGET=fuzz_<name>.
#include "harnesses.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return pcfuzz::PCFUZZ_TARGET(data, size);
}

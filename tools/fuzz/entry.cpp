// libFuzzer entry point; tools/fuzz/run builds it once per harness with
// -DPCFUZZ_TARGET=fuzz_<name> (and -DPCFUZZ_DEVICE for a device harness, whose body is
// linked from device_harnesses.cpp).
#if defined(PCFUZZ_DEVICE)
#include "device_harnesses.hpp"
#else
#include "harnesses.hpp"
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return pcfuzz::PCFUZZ_TARGET(data, size);
}

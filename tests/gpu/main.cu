// The gpu suite: exits 77 (meson: skipped) when no CUDA device is present.
#define DOCTEST_CONFIG_IMPLEMENT
#include <cuda_runtime.h>
#include "../common/run_selected.hpp"

#include <cstdio>
#include <cstdlib>

#if defined(PIPECODEC_EMU)
#include "../emu/kernel_coverage.hpp"
#endif

int main(int argc, char** argv) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("gpu suite: no CUDA device, skipped\n");
    return 77;
  }
  doctest::Context ctx(argc, argv);
  const int rc = testsel::run(ctx);
#if defined(PIPECODEC_EMU)
  if (const char* list = std::getenv("PIPECODEC_EMU_UNLAUNCHED"); list != nullptr && !ctx.shouldExit())
    return rc | testemu::check_kernel_coverage(list);
#endif
  return rc;
}

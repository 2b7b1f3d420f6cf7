// The device arithmetic check (policy/arithmetic_check.cuh) and the CUDA endpoints' init that
// runs it: success where the device computes as the host does; device_math_mismatch where it
// flushes subnormals, which the emulated GPU does with PIPECODEC_EMU_FTZ=1 (the effect of
// --use_fast_math or -ftz=true; meson test 'device arithmetic check (emulated, subnormals
// flushed)' runs this file's cases so).
#include <cstdlib>
#include <cstring>

#include "../common/policy_check.hpp"
#include "../common/print.hpp"
#include "pipecodec/policy/cuda_endpoint.cuh"
#include "state_common.hpp"

using namespace pipecodec;
using tgs::dmem;
namespace pcc = pipecodec::cuda;

namespace {

status expected() {
  const char* ftz = std::getenv("PIPECODEC_EMU_FTZ");
  return ftz != nullptr && std::strcmp(ftz, "1") == 0 ? status::device_math_mismatch : status::success;
}

}  // namespace

TEST_CASE("device arithmetic check: the device's payloads and values against the host's") {
  const size_t need = pcc::arithmetic_check_bytes();
  dmem scratch(need + 16);
  cudaStream_t s = nullptr;
  testg::check_cuda(cudaStreamCreate(&s), "stream");
  CHECK(pcc::check_device_arithmetic(scratch.p, need, s) == expected());
  CHECK(pcc::check_device_arithmetic(scratch.p, need + 16, nullptr) == expected());  // the legacy stream
  CHECK(pcc::check_device_arithmetic(nullptr, need, s) == status::invalid_argument);
  CHECK(pcc::check_device_arithmetic(scratch.p, need - 1, s) == status::invalid_argument);
  CHECK(pcc::check_device_arithmetic(static_cast<uint8_t*>(scratch.p) + 8, need, s) == status::misaligned);
  testg::check_cuda(cudaStreamDestroy(s), "stream");
}

TEST_CASE("device arithmetic check: CUDA endpoints' init runs it") {
  const policy p = tpolicy::policy_of("fwd=quant:bits=4,group=64; bwd=topk:ratio=0.1");
  pcc::endpoint_options o;
  o.max_shape = shape(4, 128);
  for (direction d : {direction::fwd, direction::bwd}) {
    pcc::sender_endpoint tx;
    pcc::receiver_endpoint rx;
    CHECK(tx.init(p, 0, d, o) == expected());
    CHECK(rx.init(p, 0, d, o) == expected());
  }
}

// Grid sizes of the CUDA backend: a kernel whose loops stride over its grid gets as many
// blocks as its work needs, at most as many as the device holds resident at once at the
// kernel's occupancy (detail::grid_for), so a large grid never queues blocks in waves.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "../common/data.hpp"
#include "gpu_backend.hpp"
#include "pipecodec/cuda/detail/launch.cuh"

using namespace pipecodec;
namespace cd = pipecodec::cuda::detail;

namespace {

__global__ void __launch_bounds__(cd::block_threads) count_kernel(uint32_t* hits, uint64_t n) {
  for (uint64_t i = cd::global_thread(); i < n; i += cd::thread_count()) hits[i] += 1;
}

int occupancy(int threads, size_t smem) {
  int blocks = 0;
  testg::check_cuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, count_kernel, threads, smem), "occupancy");
  return blocks;
}

}  // namespace

TEST_CASE("grids: at most the device's resident blocks at the kernel's occupancy, fewer for less work") {
  cd::device_grid dg;
  REQUIRE(cd::current_device(dg) == status::success);
  REQUIRE(dg.sms > 0);
  const uint64_t resident = uint64_t(dg.sms) * uint64_t(occupancy(cd::block_threads, 0));
  REQUIRE(resident > 0);
  CHECK(cd::grid_for<count_kernel>(uint64_t(1) << 40, 1, dg) == resident);
  CHECK(cd::grid_for<count_kernel>(uint64_t(1) << 40, 1, dg) == resident);  // the kept answer
  CHECK(cd::grid_for<count_kernel>(resident - 1, 1, dg) == resident - 1);
  CHECK(cd::grid_for<count_kernel>(0, 1, dg) == 1);  // block 0 of a header writer always runs
  CHECK(cd::grid_for<count_kernel>(10 * cd::block_threads + 1, cd::block_threads, dg) ==
        std::min<uint64_t>(11, resident));
  // Dynamic shared memory lowers the occupancy, and the grid with it.
  const size_t smem = 40 << 10;
  CHECK(cd::grid_for<count_kernel>(uint64_t(1) << 40, 1, dg, dim3(cd::block_threads), smem) ==
        uint64_t(dg.sms) * uint64_t(occupancy(cd::block_threads, smem)));

  // The grid-stride loop covers every element of work far larger than the grid.
  const uint64_t n = resident * cd::block_threads * 3 + 17;
  testg::device_buffer hits;
  hits.reserve(n * 4);
  testg::check_cuda(cudaMemset(hits.ptr, 0, n * 4), "zero");
  cd::launch_over<count_kernel>(n, cd::block_threads, dg, dim3(cd::block_threads), 0, nullptr,
                                static_cast<uint32_t*>(hits.ptr), n);
  testg::check_cuda(cudaGetLastError(), "launch");
  std::vector<uint32_t> got(n);
  testg::check_cuda(cudaMemcpy(got.data(), hits.ptr, n * 4, cudaMemcpyDeviceToHost), "copy");
  uint64_t wrong = 0;
  for (uint32_t h : got) wrong += h != 1;
  CHECK(wrong == 0);
}

#if defined(PIPECODEC_EMU)
// The codecs' launches follow the occupancy the device reports. Run by meson test 'grid sizes
// (emulated, 3 blocks per SM)' with PIPECODEC_EMU_RESIDENT_BLOCKS=3 (the answer for every
// kernel, as registers might make it on a GPU; a process keeps each kernel's answer, hence a
// run of its own): no launch of a large encode or decode has more blocks than the device then
// holds, and each codec has a launch with exactly that many.
TEST_CASE("grids: the codecs' grids follow the occupancy the device reports (emulated)" * doctest::skip()) {
  const char* forced = std::getenv("PIPECODEC_EMU_RESIDENT_BLOCKS");
  REQUIRE(forced != nullptr);
  cd::device_grid dg;
  REQUIRE(cd::current_device(dg) == status::success);
  const uint64_t resident = uint64_t(dg.sms) * uint64_t(std::atoi(forced));
  (void)pipecodec_emu::take_largest_grids();
  const shape shp(64, 1024);
  const auto x = testdata::as_bytes(testdata::uniform(shp.size(), 5), dtype::f32);
  for (const std::string text : {"quant:bits=8,group=128", "quant:bits=4,group=32,round=stochastic",
                                 "fp8:format=e4m3", "plain:dtype=fp16", "topk:ratio=0.01"}) {
    CAPTURE(text);
    spec s;
    REQUIRE(parse_spec(text, s) == status::success);
    testg::gpu_backend b;
    std::vector<uint8_t> bytes, y(x.size());
    REQUIRE(b.encode(s, x, dtype::f32, shp, randomness{7}, bytes) == status::success);
    REQUIRE((s.codec == codec_id::topk ? b.decode_topk(bytes, nullptr, dtype::f32, shp, y, false)
                                       : b.decode(bytes, bytes.size(), dtype::f32, shp, y, false)) == status::success);
    bool reached = false;
    for (const auto& [name, blocks] : pipecodec_emu::take_largest_grids()) {
      CAPTURE(name);
      // A block per compaction chunk or position chunk, whatever the occupancy.
      bool per_chunk = false;
      for (const char* k : {"topk_grid_count", "topk_grid_emit", "topk_grid_rank", "topk_validate", "topk_scatter"})
        per_chunk = per_chunk || name.find(k) != std::string::npos;
      if (!per_chunk) CHECK(blocks <= resident);
      reached = reached || blocks == resident;
    }
    CHECK(reached);
  }
}
#endif

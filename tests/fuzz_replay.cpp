// Runs every fuzz harness body (tools/fuzz/harnesses.hpp) over its committed corpus, its
// extra seed directory and its saved crash inputs, built with the regular compiler: the
// properties the fuzzers check stay checked in every build, with or without clang. Built
// with -DPCFUZZ_DEVICE and the emulated GPU, the device harnesses (device_harnesses.hpp).
// A harness with no input at all fails the test (nothing would have been checked).
// Usage: fuzz_replay REPO_ROOT
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#if defined(PCFUZZ_DEVICE)
#include "device_harnesses.hpp"
#define PCFUZZ_TABLE PCFUZZ_DEVICE_HARNESSES
#else
#include "harnesses.hpp"
#define PCFUZZ_TABLE PCFUZZ_HARNESSES
#endif

namespace fs = std::filesystem;

namespace {

// Runs `body` over every regular file under `dir`; returns how many it ran.
template <class Body>
size_t replay_dir(const fs::path& dir, Body body) {
  if (!fs::is_directory(dir)) return 0;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().filename().string()[0] != '.') files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    body(bytes.data(), bytes.size());
  }
  return files.size();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_replay REPO_ROOT\n");
    return 2;
  }
  const fs::path root = argv[1];
  int failed = 0;
#define PCFUZZ_REPLAY(name, extra)                                                              \
  {                                                                                             \
    const size_t corpus = replay_dir(root / "tools/fuzz/corpus" / #name, pcfuzz::fuzz_##name);  \
    const size_t seeds = std::string(extra).empty() ? 0 : replay_dir(root / extra, pcfuzz::fuzz_##name); \
    const size_t regress = replay_dir(root / "tools/fuzz/regressions" / #name, pcfuzz::fuzz_##name); \
    std::printf("%-18s corpus %zu, extra seeds %zu, regressions %zu\n", #name, corpus, seeds, regress); \
    if (corpus + seeds + regress == 0) {                                                        \
      std::printf("  FAIL: no inputs for %s\n", #name);                                         \
      ++failed;                                                                                 \
    }                                                                                           \
  }
  PCFUZZ_TABLE(PCFUZZ_REPLAY)
#undef PCFUZZ_REPLAY
  std::printf("%s\n", failed ? "FAILED" : "all harness inputs replayed without a failed check");
  return failed;
}
